//===- Importer.h - an ONNX graph as mpc dialect text -----------*- C++ -*-===//

#ifndef MPC_TOOLS_IMPORT_ONNX_IMPORTER_H
#define MPC_TOOLS_IMPORT_ONNX_IMPORTER_H

#include "OnnxModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mpc::onnx_import {

struct ImportOptions {
  /// The emitted function's name.
  std::string function = "loss";
  /// "" (return the graph's outputs) or "cross_entropy".
  std::string loss;
  /// The graph input holding the integer class labels (with --loss); it
  /// becomes the function's last argument, tensor<B x i32>.
  std::string labels;
  /// With --loss: the outputs the loss is of and each one's weight (the
  /// loss is the weighted sum, all against the same labels); empty: the
  /// graph's single output, weight 1.
  std::vector<std::pair<std::string, double>> lossOutputs;
  /// With --loss cross_entropy: its label_smoothing and ignore_index.
  double labelSmoothing = 0;
  std::optional<int64_t> ignoreIndex;
  /// Float initializers whose names match become trainable globals; the
  /// others become constants.
  std::string trainable = ".*";
  /// Of those, the ones whose names match stay globals marked mpc.frozen
  /// (checkpointed, never trained: PyTorch's buffers); "" matches none.
  std::string frozen;
  /// Embedding tables (initializer names) and the row of each that gets
  /// no gradient (PyTorch's padding_idx, which ONNX does not record).
  std::map<std::string, int64_t> paddingIdx;
  /// The source file, for the ops' locations.
  std::string sourceName;
  /// A test case (ONNX's test_data_set_N): when set, the graph's inputs
  /// are these constants, each output is stored to a global
  /// "output:NAME" beside "expected:NAME" holding testOutputs' value, and
  /// the function takes one unused f32 argument and returns 0, so that a
  /// compiled step computes the case once and its checkpoint holds both.
  bool testCase = false;
  std::vector<TensorValue> testInputs, testOutputs;
  /// With testCase: the float inputs become trainable globals
  /// "input:NAME" (their values also kept in frozen globals
  /// "initial:NAME"), and the function returns a loss of the first float
  /// output, sum(output * w) with fixed weights w in +-[0.25, 1] (the
  /// others, such as a layer norm's mean, may have no gradient),
  /// so that one SGD step with lr = 1 leaves each input's gradient in the
  /// checkpoint as initial - input (the gradient checks).
  bool testGradients = false;
};

/// The graph as the text of an MLIR module (func, ml_program and mpc
/// dialects), or an error message naming the node, its op type and opset.
/// The float initializers' values in it are placeholders (dense<0.0>)
/// marked with kWeightMarker: fillWeights puts their values in after
/// parsing. `notes`, where given, gets what the import decided that the
/// user should hear of (an initializer of infinities kept frozen).
std::string importGraph(const Graph &graph, const ImportOptions &options,
                        std::string &mlir,
                        std::vector<std::string> *notes = nullptr);

/// The attribute (an index into Graph::initializers) that marks a
/// placeholder value in what importGraph wrote.
constexpr const char *kWeightMarker = "mpc.import_weight";

/// Replaces each marked placeholder in `module` (parsed from what
/// importGraph wrote for `graph`) with its initializer's bytes, and drops
/// the marks: "" or an error message.
std::string fillWeights(mlir::ModuleOp module, const Graph &graph);

/// The resource keys standing in for the weights printWithWeights writes
/// (kWeightKey and a number), each with its index into
/// Graph::initializers, in the order of their ops.
using WeightKeys = std::vector<std::pair<std::string, int64_t>>;
constexpr const char *kWeightKey = "mpc_import_weight_";

/// As fillWeights, except for the weights MLIR's printer would write as
/// hex (over 1 KiB and not a splat): those get a `dense_resource` without
/// data, whose key goes to `keys`, so that the context never holds a copy
/// of them. "" or an error message (and nothing is written).
std::string placeWeights(mlir::ModuleOp module, const Graph &graph,
                         WeightKeys &keys);

/// Prints `module` (after placeWeights) to `os` as MLIR's printer would
/// print it after fillWeights, byte for byte: each key's weight written
/// as hex straight from the graph's bytes, a piece at a time, where the
/// printer would build the hex of a whole weight in memory (twice).
void printWithWeights(mlir::ModuleOp module, const Graph &graph,
                      const WeightKeys &keys, mlir::OpPrintingFlags flags,
                      llvm::raw_ostream &os);

/// Parses and verifies what importGraph wrote, in `context` (the mpc,
/// func and ml_program dialects loaded): "" and `module`, or an error
/// message naming the node whose ops do not verify (Verify.cpp).
std::string parseImported(const std::string &text,
                          const std::string &sourceName,
                          mlir::MLIRContext &context,
                          mlir::OwningOpRef<mlir::ModuleOp> &module);

} // namespace mpc::onnx_import

#endif
