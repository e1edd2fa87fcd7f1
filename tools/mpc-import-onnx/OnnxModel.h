//===- OnnxModel.h - an ONNX model read, checked and typed ------*- C++ -*-===//
//
// The importer's view of an ONNX model, in plain C++ types: what the ONNX
// library (protobuf, exceptions) says about the file, with nothing of it
// leaking into the MLIR side. OnnxModel.cpp reads the file, runs ONNX's
// checker, converts it to kOpset, binds the dimensions the user gives,
// runs ONNX's shape inference and copies the graph out; every failure is
// an error message, never an exception or a crash.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TOOLS_IMPORT_ONNX_ONNXMODEL_H
#define MPC_TOOLS_IMPORT_ONNX_ONNXMODEL_H

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mpc::onnx_import {

/// The opset every model is converted to before import.
constexpr int kOpset = 17;

/// A tensor type: an ONNX element type name ("float", "int64", ...) and
/// dims, -1 where a dimension is unknown.
struct TensorType {
  std::string element;
  std::vector<int64_t> dims;
  bool hasShape = false;
};

/// A tensor value (an initializer, a Constant's value, test data), its
/// elements little-endian as ONNX stores them.
struct TensorValue {
  std::string name;
  TensorType type;
  std::vector<char> bytes;
};

struct Attribute {
  enum Kind { Int, Float, String, Ints, Floats, Tensor, Other } kind = Other;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  TensorValue tensor;
};

struct Node {
  std::string name, opType, domain;
  /// The since-version of the op's schema at kOpset (0: no schema).
  int sinceVersion = 0;
  std::vector<std::string> inputs, outputs; // "" for an absent optional
  std::map<std::string, Attribute> attributes;
  /// The node as ONNX serializes it (for inferNode).
  std::string proto;
};

struct Graph {
  std::vector<std::pair<std::string, TensorType>> inputs, outputs;
  std::vector<TensorValue> initializers;
  std::vector<Node> nodes;
  /// Every value's type after shape inference.
  std::map<std::string, TensorType> types;
  int64_t originalOpset = 0;
  /// The files its external data was read from (beside the model).
  std::set<std::string> dataFiles;
};

/// Reads, checks, converts and types the model at `path`; `shapes` binds
/// graph inputs' dimensions (NAME -> dims). Returns an error message, or
/// "" with `graph` filled.
std::string loadModel(const std::string &path,
                      const std::map<std::string, std::vector<int64_t>> &shapes,
                      Graph &graph);

/// ONNX's shape inference of `node` alone, at kOpset, from the types of its
/// inputs (`inputTypes`, one per input; an absent optional input's is
/// ignored) and the values of those given in `inputValues` (null where
/// not): the types of the outputs ONNX's inference of the whole graph left
/// unknown behind values the importer folds. `outputs` gets one type per
/// output, without a shape where ONNX says nothing. Returns an error
/// message (ONNX's inference refuses the node, or crashed), or "".
std::string inferNode(const Node &node,
                      const std::vector<TensorType> &inputTypes,
                      const std::vector<const TensorValue *> &inputValues,
                      std::vector<TensorType> &outputs);

/// Reads one serialized TensorProto (ONNX's test data), or an error.
std::string loadTensor(const std::string &path, TensorValue &value);

/// Whether an ONNX element type name is one of the floats mpc imports
/// (float, double, float16, bfloat16).
bool isFloat(const std::string &element);

/// Bytes per element of an ONNX element type name (0: not supported).
int elementBytes(const std::string &element);

} // namespace mpc::onnx_import

#endif
