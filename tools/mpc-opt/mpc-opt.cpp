//===- mpc-opt.cpp - the mpc optimizer driver -----------------------------===//

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::mpc::registerMPCPasses();
  mlir::mpc::registerMPCPipelines();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<mlir::mpc::MPCDialect>();

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "mpc optimizer driver: training graphs and AMP passes\n",
      registry));
}
