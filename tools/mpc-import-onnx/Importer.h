//===- Importer.h - an ONNX graph as mpc dialect text -----------*- C++ -*-===//

#ifndef MPC_TOOLS_IMPORT_ONNX_IMPORTER_H
#define MPC_TOOLS_IMPORT_ONNX_IMPORTER_H

#include "OnnxModel.h"

#include <string>

namespace mpc::onnx_import {

struct ImportOptions {
  /// The emitted function's name.
  std::string function = "loss";
  /// "" (return the graph's outputs) or "cross_entropy".
  std::string loss;
  /// The graph input holding the integer class labels (with --loss); it
  /// becomes the function's last argument, tensor<B x i32>.
  std::string labels;
  /// Float initializers whose names match become trainable globals; the
  /// others become constants.
  std::string trainable = ".*";
  /// The source file, for the ops' locations.
  std::string sourceName;
};

/// The graph as the text of an MLIR module (func, ml_program and mpc
/// dialects), or an error message naming the node, its op type and opset.
std::string importGraph(const Graph &graph, const ImportOptions &options,
                        std::string &mlir);

} // namespace mpc::onnx_import

#endif
