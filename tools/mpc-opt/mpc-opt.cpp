//===- mpc-opt.cpp - the mpc optimizer driver -----------------------------===//
//
// mlir-opt with the mpc dialect and passes; the input's bracket nesting
// (and what else crashes MLIR's parser) is checked before the parser sees
// it (InputLimits.h).
//
//===----------------------------------------------------------------------===//

#include "mpc/Dialect/MPC/IR/InputLimits.h"
#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"
#include "mpc/Support/Files.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  ::mpc::files::reportFatalErrorsAs("mpc-opt");
  registerAllPasses();
  mlir::mpc::registerMPCPasses();
  mlir::mpc::registerMPCPipelines();

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<mlir::mpc::MPCDialect>();

  auto [inputFile, outputFile] = registerAndParseCLIOptions(
      argc, argv, "mpc optimizer driver: training graphs and AMP passes\n",
      registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  // Listing dialects or passes reads no input.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFile, outputFile, registry));

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::mpc::openSourceFile(inputFile, &error);
  if (!input) {
    llvm::errs() << "mpc-opt: error: " << error << "\n";
    return 1;
  }
  {
    llvm::SourceMgr check;
    check.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer(input->getBuffer(),
                                         input->getBufferIdentifier(),
                                         /*RequiresNullTerminator=*/false),
        llvm::SMLoc());
    if (failed(mlir::mpc::checkBeforeParsing(check, llvm::errs())))
      return 1;
  }
  // Opening the output empties it: never the input, which the parser may
  // read from a mapping of the file (a bus error), and which is the
  // user's.
  if (inputFile != "-" && outputFile != "-" &&
      mlir::mpc::sameFile(outputFile, inputFile)) {
    llvm::errs() << "mpc-opt: error: -o " << outputFile
                 << " is the input file: mpc-opt would write over it; name "
                    "another file\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << "mpc-opt: error: " << error << "\n";
    return 1;
  }
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  // Not kept where it is incomplete (a full disk): the partial file is
  // removed.
  if (!mlir::mpc::wroteAll(output->os(), outputFile, "mpc-opt", llvm::errs()))
    return 1;
  output->keep();
  return 0;
}
