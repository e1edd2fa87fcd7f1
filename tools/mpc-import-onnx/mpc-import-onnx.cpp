//===- mpc-import-onnx.cpp - an ONNX model to an mpc training graph -------===//
//
//   mpc-import-onnx model.onnx -o model.mlir --input-shape x=8x784 \
//       --loss cross_entropy --labels y
//
// Reads, checks, converts (to opset 17) and types the model with the ONNX
// library (OnnxModel.cpp), writes its graph as mpc dialect text
// (Importer.cpp), then parses and verifies that text with mpc's dialect
// before writing it: what is written is a valid mpc module.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"
#include "OnnxModel.h"

#include "mpc/Dialect/MPC/IR/InputLimits.h"
#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Support/Files.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cmath>

using namespace mpc::onnx_import;
namespace cl = llvm::cl;

static cl::OptionCategory category("Import options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::Required, cl::cat(category));
static cl::opt<std::string> outputFile("o",
                                       cl::desc("Output file ('-': stdout)"),
                                       cl::value_desc("FILE"), cl::init("-"),
                                       cl::cat(category));
static cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Bind an input's dimensions, e.g. x=8x3x224x224 (repeatable)"),
    cl::value_desc("NAME=DxD..."), cl::cat(category));
static cl::opt<std::string> loss(
    "loss",
    cl::desc("Append a loss to the (single) output: cross_entropy (integer "
             "class labels), mse or bce_with_logits (float targets shaped "
             "like the output)"),
    cl::init(""), cl::cat(category));
static cl::opt<std::string> labels(
    "labels",
    cl::desc("With --loss: the name of the class labels, the function's "
             "last argument (i32, one per row of the logits); a graph input "
             "of that name is replaced by it"),
    cl::init(""), cl::cat(category));
static cl::list<std::string> lossOutputs(
    "loss-output",
    cl::desc("With --loss: an output the loss is of, and its weight (default "
             "1); the loss is the weighted sum over the outputs named, all "
             "against the same labels (an auxiliary head: "
             "--loss-output logits --loss-output aux=0.4). Without it the "
             "graph must have one output (repeatable)"),
    cl::value_desc("NAME[=WEIGHT]"), cl::cat(category));
static cl::opt<double> labelSmoothing(
    "label-smoothing",
    cl::desc("With --loss cross_entropy: PyTorch's label_smoothing, in [0, 1] "
             "(ONNX has none to export)"),
    cl::init(0), cl::cat(category));
static cl::opt<int64_t> ignoreIndex(
    "ignore-index",
    cl::desc("With --loss cross_entropy: the label whose rows add nothing "
             "(PyTorch's ignore_index, e.g. -100)"),
    cl::cat(category));
static cl::opt<std::string> trainable(
    "trainable",
    cl::desc("Regex over initializer names: the float ones that match become "
             "trainable globals, the others constants (default: all)"),
    cl::init(".*"), cl::cat(category));
static cl::opt<std::string> frozen(
    "frozen",
    cl::desc("Regex over initializer names: of the --trainable ones, those "
             "that match are kept as frozen globals (mpc.frozen: in "
             "checkpoints, never trained), as PyTorch's buffers are "
             "(default: none; one holding infinities or NaNs, a mask, is "
             "kept frozen anyway, with a note)"),
    cl::init(""), cl::cat(category));
static cl::list<std::string> paddingIdx(
    "padding-idx",
    cl::desc("TABLE=INDEX: the row of the embedding table TABLE (an "
             "initializer's name) that gets no gradient, as PyTorch's "
             "nn.Embedding(padding_idx=INDEX), which ONNX does not record "
             "(repeatable)"),
    cl::value_desc("TABLE=INDEX"), cl::cat(category));
static cl::opt<std::string> function("function",
                                     cl::desc("The function's name (default "
                                              "loss, mpc-compile's --loss)"),
                                     cl::init("loss"), cl::cat(category));

static cl::opt<std::string> testData(
    "test-data",
    cl::desc("An ONNX test case folder (input_N.pb, output_N.pb): import it "
             "as a step that computes the case and keeps the outputs and "
             "the expected values as globals (the conformance tests)"),
    cl::value_desc("DIR"), cl::init(""), cl::cat(category));

static cl::opt<bool> testGradients(
    "test-gradients",
    cl::desc("With --test-data: the float inputs become trainable globals "
             "'input:NAME' (and frozen copies 'initial:NAME'), and the "
             "function returns sum(output * w), fixed weights w, of the first "
             "float output: one SGD step with lr=1 leaves each input's "
             "gradient in the checkpoint (the gradient checks)"),
    cl::init(false), cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "mpc-import-onnx: error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  ::mpc::files::reportFatalErrorsAs("mpc-import-onnx");
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "mpc-import-onnx: an ONNX model to an mpc "
                              "training graph\n");

  if (outputFile != "-" && inputFile != "-" &&
      ::mpc::files::sameFile(outputFile, inputFile))
    return fail("-o " + outputFile +
                " is the model's file: the import would write over it; name "
                "another file");
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const std::string &spec : inputShapes) {
    auto [name, dims] = llvm::StringRef(spec).split('=');
    if (name.empty() || dims.empty())
      return fail("--input-shape expects NAME=DxD..., not '" + spec + "'");
    std::vector<int64_t> parsed;
    for (llvm::StringRef d : llvm::split(dims, 'x')) {
      int64_t v;
      if (d.getAsInteger(10, v) || v <= 0 || v > (int64_t(1) << 40))
        return fail("--input-shape '" + spec +
                    "': each dimension must be a positive integer");
      parsed.push_back(v);
    }
    shapes[name.str()] = parsed;
  }
  if (!loss.empty() && loss != "cross_entropy" && loss != "mse" &&
      loss != "bce_with_logits")
    return fail("--loss must be cross_entropy, mse or bce_with_logits, not '" +
                loss + "'");
  if (!loss.empty() && labels.empty())
    return fail("--loss needs --labels NAME (the labels' or targets' input)");
  if (loss.empty() && !labels.empty())
    return fail("--labels needs --loss (the loss the labels feed)");
  if (loss.empty() && !lossOutputs.empty())
    return fail("--loss-output needs --loss (the loss of the outputs named)");
  // The function's name as MLIR writes a symbol bare (and mpc-compile's
  // --loss and --entry take it): a letter or '_', then letters, digits,
  // '_', '$' or '.'.
  auto symbolChar = [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.';
  };
  if (function.empty() ||
      !(llvm::isAlpha(function.front()) || function.front() == '_') ||
      !llvm::all_of(function.getValue(), symbolChar))
    return fail("--function '" + function +
                "' is not a function name: a letter or '_', then letters, "
                "digits, '_', '$' or '.'");
  bool smoothing = labelSmoothing.getNumOccurrences() > 0,
       ignoring = ignoreIndex.getNumOccurrences() > 0;
  if ((smoothing || ignoring) && loss != "cross_entropy")
    return fail(
        std::string(smoothing ? "--label-smoothing" : "--ignore-index") +
        " needs --loss cross_entropy");
  if (!(labelSmoothing >= 0 && labelSmoothing <= 1))
    return fail("--label-smoothing must be in [0, 1], not " +
                std::to_string(labelSmoothing.getValue()));
  if (ignoring && (ignoreIndex < INT32_MIN || ignoreIndex > INT32_MAX))
    return fail("--ignore-index must fit the 32-bit labels, not " +
                std::to_string(ignoreIndex.getValue()));

  Graph graph;
  if (std::string err = loadModel(inputFile, shapes, graph); !err.empty())
    return fail(err);
  ImportOptions options;
  options.function = function;
  options.loss = loss;
  options.labels = labels;
  options.labelSmoothing = labelSmoothing;
  for (const std::string &spec : lossOutputs) {
    auto [name, weightText] = llvm::StringRef(spec).split('=');
    double weight = 1;
    if (name.empty() || (spec.find('=') != std::string::npos &&
                         (weightText.trim().getAsDouble(weight) ||
                          !std::isfinite(weight) || weight <= 0)))
      return fail("--loss-output expects NAME or NAME=WEIGHT (a finite "
                  "weight > 0), not '" +
                  spec + "'");
    for (const auto &[seen, unused] : options.lossOutputs)
      if (seen == name)
        return fail("--loss-output names '" + name + "' twice");
    options.lossOutputs.emplace_back(name.str(), weight);
  }
  if (ignoring)
    options.ignoreIndex = ignoreIndex;
  options.trainable = trainable;
  options.frozen = frozen;
  for (const std::string &spec : paddingIdx) {
    auto [name, index] = llvm::StringRef(spec).rsplit('=');
    int64_t row;
    if (name.empty() || index.getAsInteger(10, row) || row < 0)
      return fail("--padding-idx expects TABLE=INDEX (a row index >= 0), "
                  "not '" +
                  spec + "'");
    options.paddingIdx[name.str()] = row;
  }
  options.sourceName = llvm::sys::path::filename(inputFile).str();
  if (testGradients && testData.empty())
    return fail("--test-gradients needs --test-data");
  std::vector<std::string> testFiles;
  if (!testData.empty()) {
    options.testCase = true;
    options.testGradients = testGradients;
    options.function = "step";
    for (auto [prefix, into] : {std::pair{"input_", &options.testInputs},
                                std::pair{"output_", &options.testOutputs}})
      for (int i = 0;; ++i) {
        llvm::SmallString<256> path(testData.getValue());
        llvm::sys::path::append(path, prefix + std::to_string(i) + ".pb");
        if (!llvm::sys::fs::exists(path))
          break;
        TensorValue value;
        if (std::string err = loadTensor(path.str().str(), value); !err.empty())
          return fail(err);
        into->push_back(std::move(value));
        testFiles.push_back(path.str().str());
      }
  }
  // Nor over a file the model's weights or test data were read from.
  if (outputFile != "-") {
    for (const std::string &file : graph.dataFiles)
      if (::mpc::files::sameFile(outputFile, file))
        return fail("-o " + outputFile + " is the model's external data file " +
                    file +
                    ": the import would write over it; name another "
                    "file");
    for (const std::string &file : testFiles)
      if (::mpc::files::sameFile(outputFile, file))
        return fail("-o " + outputFile + " is the test data file " + file +
                    ": the import would write over it; name another file");
  }
  std::string text;
  std::vector<std::string> notes;
  if (std::string err = importGraph(graph, options, text, &notes); !err.empty())
    return fail(inputFile + ": " + err);
  for (const std::string &note : notes)
    llvm::errs() << "mpc-import-onnx: note: " << inputFile << ": " << note
                 << "\n";

  mlir::DialectRegistry registry;
  registry.insert<mlir::mpc::MPCDialect, mlir::func::FuncDialect,
                  mlir::ml_program::MLProgramDialect>();
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (std::string err =
          parseImported(text, options.sourceName, context, module);
      !err.empty())
    return fail(inputFile + ": " + err);
  std::string().swap(text);
  WeightKeys keys;
  if (std::string err = placeWeights(*module, graph, keys); !err.empty())
    return fail(inputFile + ": " + err);

  std::string error;
  auto output = mlir::openOutputFile(outputFile, &error);
  if (!output)
    return fail(error);
  // With the ONNX node names and positions as locations: what
  // --check-numerics and diagnostics name. The large weights go from the
  // graph's bytes to the file: no copy of them in the context, no hex of
  // them in memory.
  printWithWeights(*module, graph, keys,
                   mlir::OpPrintingFlags().enableDebugInfo(/*enable=*/true,
                                                           /*pretty=*/false),
                   output->os());
  // Not kept where it is incomplete (a full disk): the partial file is
  // removed.
  if (!mlir::mpc::wroteAll(output->os(), outputFile, "mpc-import-onnx",
                           llvm::errs()))
    return 1;
  output->keep();
  return 0;
}
