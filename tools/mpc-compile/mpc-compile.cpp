//===- mpc-compile.cpp - a training graph to a training executable --------===//
//
//   mpc-compile model.mlir -o train [--backend=cpu] [--amp=O2 --dtype=f16]
//                                   [--emit=mlir|llvm|obj|exe] [--save-temps]
//
// Runs the pipeline (verify, precision assignment when asked, cast cleanup,
// memory planning, lowering to the runtime ABI, upstream lowering to the
// LLVM dialect), emits the object in-process through an LLVM TargetMachine
// and links it with the chosen runtime and the runner main.
//
//===----------------------------------------------------------------------===//

#include "mpc/Dialect/MPC/IR/InputLimits.h"
#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"
#include "mpc/Dialect/MPC/Transforms/Pipeline.h"
#include "mpc/Support/Files.h"

#include "CompileConfig.h"
#include "Model.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/AsmParser/AsmParserState.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#if MPC_LINK_IN_PROCESS
#include "lld/Common/Driver.h"
LLD_HAS_DRIVER(elf)
#endif

#include <optional>
#include <tuple>
#include <vector>

using namespace mlir;
namespace config = ::mpc::config;
namespace cl = llvm::cl;

static cl::OptionCategory category("mpc-compile options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.mlir>"),
                                      cl::Required, cl::cat(category));
static cl::opt<std::string> outputFile("o",
                                       cl::desc("Output file (required "
                                                "unless --print-pipeline)"),
                                       cl::value_desc("FILE"),
                                       cl::cat(category));
static cl::opt<std::string>
    backend("backend", cl::desc("Runtime to link: cpu (reference) or cuda"),
            cl::init("cpu"), cl::cat(category));
static cl::opt<std::string>
    amp("amp",
        cl::desc("Mixed-precision level O0..O3 (default: the graph's own "
                 "precision, no pass)"),
        cl::init(""), cl::cat(category));
static cl::opt<std::string> dtype("dtype",
                                  cl::desc("Low-precision type: f16 or bf16"),
                                  cl::init("f16"), cl::cat(category));
static cl::opt<std::string>
    entry("entry", cl::desc("The training step function (default train_step)"),
          cl::init("train_step"), cl::cat(category));
static cl::opt<std::string>
    emit("emit", cl::desc("What to write: mlir, llvm, obj or exe"),
         cl::init("exe"), cl::cat(category));
static cl::opt<bool> saveTemps(
    "save-temps",
    cl::desc("Keep OUTPUT.mpc.mlir (after the mpc passes), OUTPUT.ll and "
             "OUTPUT.o next to the output"),
    cl::init(false), cl::cat(category));
static cl::opt<bool>
    train("train",
          cl::desc("Build the training step: --mpc-autodiff of the --loss "
                   "function into --entry, then --mpc-optimizer"),
          cl::init(false), cl::cat(category));
static cl::opt<std::string>
    lossFunction("loss", cl::desc("The loss function (with --train)"),
                 cl::init("loss"), cl::cat(category));
static cl::opt<std::string>
    optimizer("optimizer",
              cl::desc("Options of --mpc-optimizer (with --train), e.g. "
                       "\"kind=momentum lr=0.01\""),
              cl::init("kind=sgd lr=0.01"), cl::cat(category));
static cl::opt<std::string> lossScaling(
    "loss-scaling",
    cl::desc("Options of --mpc-loss-scaling (with --train), e.g. "
             "\"mode=dynamic init-scale=65536\"; default mode=auto: dynamic "
             "when the step computes in f16"),
    cl::init("mode=auto"), cl::cat(category));
static cl::opt<std::string> clipGradNorm(
    "clip-grad-norm",
    cl::desc("Clip the unscaled gradients' global 2-norm to MAX (with "
             "--train; --mpc-loss-scaling's clip-grad-norm), as PyTorch's "
             "clip_grad_norm_ after GradScaler.unscale_"),
    cl::value_desc("MAX"), cl::init(""), cl::cat(category));
static cl::opt<int64_t> accumulate(
    "accumulate",
    cl::desc("Gradient accumulation (with --train; "
             "--mpc-accumulate-gradients): K micro-batches of the compiled "
             "batch per optimizer step, the loss divided by K, one check, "
             "scale update and optimizer step per K"),
    cl::value_desc("K"), cl::init(1), cl::cat(category));
static cl::opt<std::string> evalPrecision(
    "eval-precision",
    cl::desc("The evaluation step built beside the training step (with "
             "--train; --mpc-eval-step): f32 (default: the f32 master "
             "weights, f32 compute) or amp (the training level)"),
    cl::init("f32"), cl::cat(category));
static cl::opt<bool> noEval("no-eval",
                            cl::desc("Build no evaluation step (with --train)"),
                            cl::init(false), cl::cat(category));
static cl::opt<bool>
    noFuse("no-fuse",
           cl::desc("Do not fuse attention, residual norms, or linear "
                    "layers' bias, activation and bias gradient into their "
                    "GEMMs (--mpc-fuse runs by default)"),
           cl::init(false), cl::cat(category));

static cl::opt<bool> noFoldCasts(
    "no-fold-casts",
    cl::desc("Keep the f16/bf16 <-> f32 casts and the constant scales "
             "around softmaxes and dropout as kernels of their own "
             "(--mpc-fuse's casts=false scales=false; folded, the values are "
             "the same, or differ by one rounding of a scale that is not a "
             "power of two)"),
    cl::init(false), cl::cat(category));

static cl::opt<bool> keepProbabilities(
    "keep-probabilities",
    cl::desc("Keep an unfused attention's softmax probabilities and dropout "
             "mask for the backward pass, as separate ops (--mpc-fuse's "
             "softmax-dropout=false recompute=false), instead of one "
             "mpc.softmax_dropout whose backward computes them again from "
             "the scores; the same values, more memory"),
    cl::cat(category));
static cl::opt<bool> noRecomputeInBackward(
    "no-recompute-in-backward",
    cl::desc("Compute an unfused attention's dropped probabilities for the "
             "values' gradient product by a copy of its "
             "mpc.softmax_dropout placed before that product (--mpc-fuse's "
             "recompute-in-backward=false), instead of having the "
             "softmax_dropout's backward write them; the same values, one "
             "more pass over the scores"),
    cl::cat(category));
static cl::opt<bool> noRecomputeMoves(
    "no-recompute-moves",
    cl::desc("Keep the results of concatenations, upsamplings, transposes, "
             "slices, broadcasts and casts that the backward pass reads "
             "(--mpc-fuse's recompute-moves=false), instead of computing "
             "them again there, or only there, from operands kept anyway; "
             "the same values, more memory, one kernel fewer for each "
             "copy"),
    cl::cat(category));
static cl::opt<bool> noConcatConvs(
    "no-concat-convs",
    cl::desc("Write a channel concatenation that only convolutions read (a "
             "U-Net's skip connection) and convolve it (--mpc-fuse's "
             "concat-convs=false), instead of convolving its parts, each "
             "adding to the one before; the same values to one rounding of "
             "a partial sum, more memory traffic"),
    cl::cat(category));
static cl::opt<bool> noRowTransposes(
    "no-row-transposes",
    cl::desc("Leave a transpose that keeps the innermost dimension (a "
             "batch-first swap) where the model put it (--mpc-fuse's "
             "row-transposes=false), instead of moving it through the "
             "row-wise ops around it to the heads' transposes it composes "
             "with; the same values to rounding (the products take their "
             "rows in another order), more copies"),
    cl::cat(category));
static cl::opt<bool> noHeadProducts(
    "no-head-products",
    cl::desc("Copy the heads' transposes around an unfused attention's "
             "products (--mpc-fuse's head-products=false), instead of having "
             "the products read and write the [B, S, H, D] rows in place "
             "(mpc.heads_matmul); the same values, a copy more for each"),
    cl::cat(category));
static cl::opt<bool> noNormBiasGrads(
    "no-norm-bias-grads",
    cl::desc("Sum the bias gradient of a linear layer before a residual "
             "layer norm in a reduction of its own, reading the input "
             "gradient again (--mpc-fuse's norm-bias-grads=false), instead "
             "of in the norm backward's column reduction; the same values"),
    cl::cat(category));
static cl::opt<bool> noSiblingBiasGrads(
    "no-sibling-bias-grads",
    cl::desc("Sum the bias gradients of linear layers that read one input "
             "(an attention's query, key and value projections) in a "
             "reduction each (--mpc-fuse's sibling-bias-grads=false), "
             "instead of in one mpc.column_sums (one launch on CUDA); the "
             "same values"),
    cl::cat(category));
static cl::opt<bool> noFuseWeightGradSums(
    "no-fuse-weight-grad-sums",
    cl::desc("Round each weight gradient to f16/bf16 before adding it to its "
             "f32 accumulator (--mpc-fuse's weight-grad-sums=false), as "
             "PyTorch AMP does, so that a scaled f16 weight gradient past "
             "65504 skips the step as GradScaler's would; by default the "
             "GEMM adds its f32 product to the accumulator, rounded once "
             "(the flag also keeps the biases', norms' and embeddings' "
             "gradients apart from their accumulators, added by separate "
             "kernels: the same values)"),
    cl::cat(category));
static cl::opt<bool> fuseAttention(
    "fuse-attention",
    cl::desc("Fuse attention into mpc.attention (default: on the cpu "
             "backend; on cuda only when given, until its Tensor Core path "
             "is measured on a GPU)"),
    cl::init(false), cl::cat(category));

static cl::opt<int64_t> opsPerPart(
    "ops-per-part",
    cl::desc("Ops of the step lowered into one generated function (default "
             "2000; 0: one function, whose code generation is superlinear in "
             "its length)"),
    cl::init(2000), cl::cat(category));

static cl::opt<bool>
    timing("timing",
           cl::desc("Print the time of each compiler pass, of the "
                    "translation to LLVM IR, code generation and linking "
                    "(standard error, when the compiler exits)"),
           cl::init(false), cl::cat(category));

static cl::opt<bool> printPipeline(
    "print-pipeline",
    cl::desc("Print the pass pipeline the options give, as mpc-opt's "
             "--pass-pipeline takes it, and stop (standard output; the "
             "input is read and checked, nothing is compiled)"),
    cl::init(false), cl::cat(category));

static cl::opt<std::string> fusionReport(
    "fusion-report",
    cl::desc("Write what --mpc-fuse fused (each fused op's function, kind, "
             "location and the ops it replaced) as JSON to FILE ('-': "
             "stdout)"),
    cl::value_desc("FILE"), cl::init(""), cl::cat(category));

static cl::opt<bool> emulateCuda(
    "emulate-cuda",
    cl::desc("With --backend=cuda: link the CUDA backend with its kernels, "
             "cuBLASLt's plain GEMMs and cuDNN's convolutions emulated on "
             "the host instead of the CUDA runtime (docs/CUDA.md): the "
             "executable runs the CUDA backend's code without a GPU, "
             "slowly; for testing. With --data-parallel, the ranks' "
             "collectives go through shared memory instead of NCCL"),
    cl::init(false), cl::cat(category));

static cl::opt<bool> racecheck(
    "racecheck",
    cl::desc("With --emulate-cuda: the emulated kernels check every access "
             "to device and shared memory for data races between their "
             "threads, and the executable stops at the first one with the "
             "hazard, the threads and the kernel's source line "
             "(docs/CUDA.md); slower still"),
    cl::init(false), cl::cat(category));

static cl::opt<std::string> padForTensorCores(
    "pad-for-tensor-cores",
    cl::desc("Pad f16/bf16 matmuls and convolutions whose dimensions are not "
             "multiples of 8 with zeros (with --amp; "
             "--mpc-pad-for-tensor-cores). Optionally the pass's options, "
             "e.g. --pad-for-tensor-cores=max-extra-work=2"),
    cl::value_desc("OPTIONS"), cl::ValueOptional, cl::init(""),
    cl::cat(category));
static cl::opt<std::string> dataParallel(
    "data-parallel",
    cl::desc("Data-parallel training over the ranks of an mpirun job (with "
             "--train; --mpc-data-parallel): gradients summed in buckets, "
             "the same update on every rank. Optionally the pass's options, "
             "e.g. --data-parallel=\"bucket-bytes=4194304 bf16-reduce=bf16\", "
             "or --data-parallel=sync-batch-norm=true (batch norms with "
             "every rank's statistics, PyTorch's SyncBatchNorm)"),
    cl::value_desc("OPTIONS"), cl::ValueOptional, cl::init(""),
    cl::cat(category));
static cl::opt<std::string> checkNumerics(
    "check-numerics",
    cl::desc("Check every floating-point result of the step on the device "
             "(--mpc-check-numerics): the first op that held an inf or NaN "
             "is reported with its location, and --numerics-report writes "
             "each op's range. Optionally the phases to check (state, "
             "forward, backward, optimizer, eval; all by default), e.g. "
             "--check-numerics=forward,backward"),
    cl::value_desc("PHASES"), cl::ValueOptional, cl::init(""),
    cl::cat(category));
static cl::opt<bool> gradStats(
    "grad-stats",
    cl::desc("Gradient diagnostics (--mpc-grad-stats): the fractions of "
             "zero, f16-underflowing and non-finite gradient elements on "
             "every metrics line"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string> memoryReport(
    "memory-report",
    cl::desc("Write the memory plan's report (JSON) to FILE ('-': stdout)"),
    cl::value_desc("FILE"), cl::init(""), cl::cat(category));
static cl::opt<bool> noMemoryReuse(
    "no-memory-reuse",
    cl::desc("Give every value of the step its own buffer (--mpc-plan-memory "
             "reuse=false): nothing in place, no views; the same results "
             "in more memory, to check the reusing plan against"),
    cl::init(false), cl::cat(category));
static cl::opt<int64_t> arenaGuards(
    "arena-guards",
    cl::desc("Leave BYTES after every buffer of the step (--mpc-plan-memory "
             "guard=BYTES) and have the runner check, around every step, "
             "that no kernel wrote into them; it stops naming the op whose "
             "result comes before the changed bytes (a debugging build: "
             "the runner synchronises after each step)"),
    cl::value_desc("BYTES"), cl::init(0), cl::cat(category));
static cl::opt<std::string> precisionReport(
    "precision-report",
    cl::desc("Write the precision assignment's report to FILE (with --amp)"),
    cl::value_desc("FILE"), cl::init(""), cl::cat(category));
static cl::opt<unsigned> optLevel(
    "O",
    cl::desc("LLVM optimisation level of the step's code (default 0: the "
             "step is a sequence of calls into the precompiled runtime, "
             "which optimisation barely speeds up, and at 0 compile time "
             "stays linear in the length of the step)"),
    cl::init(0), cl::Prefix, cl::cat(category));

/// The folder `path` is written in ("." for a bare file name).
static SmallString<256> folderOf(StringRef path) {
  SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  return dir;
}

/// Removes what a linker killed while writing `output` left beside it:
/// lld writes "NAME.tmpXXXXXXX" (7 hex digits) and renames it to NAME at
/// the end.
static void removeLinkerTemporaries(StringRef output) {
  SmallString<256> dir = folderOf(output);
  std::string prefix = (llvm::sys::path::filename(output) + ".tmp").str();
  std::error_code ec;
  SmallVector<std::string> leftovers;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    if (!name.consume_front(prefix) || name.size() != 7)
      continue;
    if (llvm::all_of(name, [](char c) { return llvm::isHexDigit(c); }))
      leftovers.push_back(it->path());
  }
  for (const std::string &path : leftovers)
    llvm::sys::fs::remove(path);
}

/// Runs lld's ELF driver on `argv` (argv[0] names the linker) in this
/// process: its exit code. Only where the build links lld's library.
static int linkInProcess(ArrayRef<const char *> argv) {
#if MPC_LINK_IN_PROCESS
  return lld::lldMain(argv, llvm::outs(), llvm::errs(),
                      {{lld::Gnu, &lld::elf::link}})
      .retCode;
#else
  (void)argv;
  return 1;
#endif
}

static int fail(const Twine &message) {
  llvm::errs() << "mpc-compile: error: " << message << "\n";
  return 1;
}

/// VALUE as one pass-option value. MLIR splits a pass's options at spaces
/// and reads quotes and braces as brackets, so a value holding one is
/// quoted (the parser drops the quotes and trims what they held);
/// std::nullopt where no quoting keeps it whole.
static std::optional<std::string> optionValue(StringRef value) {
  if (value.find_first_of(" \t\r\n\"'{}") == StringRef::npos)
    return value.str();
  if (value.trim() != value)
    return std::nullopt;
  if (!value.contains('"'))
    return "\"" + value.str() + "\"";
  if (!value.contains('\''))
    return "'" + value.str() + "'";
  return std::nullopt;
}

/// Adds STAGE's pass to PM. Options it refuses are the user's where one of
/// FLAGS, given, is among them: the error names the flags given and the
/// parser's reason (a bad value's reason is printed by the parser itself,
/// before).
static LogicalResult addStage(PassManager &pm,
                              const mlir::mpc::PipelineStage &stage,
                              ArrayRef<const cl::Option *> flags) {
  std::string why;
  if (succeeded(mlir::mpc::addPipelineStage(pm, stage, why)))
    return success();
  std::string given;
  for (const cl::Option *flag : flags)
    if (flag->getNumOccurrences() > 0)
      given += (given.empty() ? "" : ", ") + ("--" + flag->ArgStr).str();
  if (!PassInfo::lookup(stage.pass) || given.empty()) {
    fail("internal error: --" + stage.pass + " refused its options '" +
         stage.options + "'" + (why.empty() ? "" : ": " + why));
    return failure();
  }
  fail(given + ": --" + stage.pass + " refused the options '" + stage.options +
       "': " + (why.empty() ? "a value above is invalid" : why) +
       " (`mpc-opt --help` lists each pass's options)");
  return failure();
}

/// `printed` (a pass manager's textual pipeline) with each number given
/// in `stages`' options written as given where MLIR printed another: MLIR
/// prints a pass's floating-point options to 7 significant digits, so
/// lr=0.0001234567891 printed as 1.234568e-04, which reads back as
/// another rate. The k-th stage of a pass is the k-th "PASS{" printed.
static std::string
restoreGivenNumbers(std::string printed,
                    ArrayRef<mlir::mpc::PipelineStage> stages) {
  llvm::StringMap<size_t> seen; // the stages of each pass so far
  for (const mlir::mpc::PipelineStage &stage : stages) {
    size_t occurrence = seen[stage.pass]++;
    std::string head = stage.pass + "{";
    size_t begin = std::string::npos;
    for (size_t from = 0, k = 0;; ++k) {
      size_t at = printed.find(head, from);
      while (at != std::string::npos && at > 0 && printed[at - 1] != '(' &&
             printed[at - 1] != ',')
        at = printed.find(head, at + 1);
      if (at == std::string::npos || k == occurrence) {
        begin = at;
        break;
      }
      from = at + 1;
    }
    if (begin == std::string::npos)
      continue;
    begin += head.size();
    SmallVector<StringRef> words;
    StringRef(stage.options).split(words, ' ', -1, /*KeepEmpty=*/false);
    for (StringRef word : words) {
      auto [key, given] = word.split('=');
      double givenValue, printedValue;
      if (given.empty() || given.getAsDouble(givenValue))
        continue; // not a number
      size_t end = printed.find('}', begin);
      if (end == std::string::npos)
        break;
      std::string pattern = (key + "=").str();
      size_t at = begin;
      while ((at = printed.find(pattern, at)) != std::string::npos &&
             at < end && printed[at - 1] != '{' && printed[at - 1] != ' ')
        ++at;
      if (at == std::string::npos || at >= end)
        continue;
      size_t valueBegin = at + pattern.size();
      size_t valueEnd = printed.find_first_of(" }", valueBegin);
      StringRef value(printed.data() + valueBegin, valueEnd - valueBegin);
      if (value.getAsDouble(printedValue) || printedValue == givenValue)
        continue;
      printed.replace(valueBegin, valueEnd - valueBegin, given.str());
    }
  }
  return printed;
}

/// Names the entry function's arguments after their SSA names in the source
/// (`%x` -> mpc.name = "x"), the names the runner looks for in the data.
static void nameArguments(ModuleOp module, const AsmParserState &state) {
  for (const AsmParserState::BlockDefinition &def : state.getBlockDefs()) {
    Block *block = def.block;
    auto func = dyn_cast_or_null<func::FuncOp>(block->getParentOp());
    if (!func || block != &func.getBody().front())
      continue;
    for (auto [i, arg] : llvm::enumerate(def.arguments)) {
      if (i >= func.getNumArguments() || func.getArgAttr(i, "mpc.name") ||
          !arg.loc.isValid())
        continue;
      // The definition starts at the SSA name, `%x`; the name is an MLIR
      // suffix-id (letters, digits, and $._-).
      const char *p = arg.loc.Start.getPointer();
      if (*p != '%')
        continue;
      const char *end = ++p;
      while (llvm::isAlnum(*end) || StringRef("$._-").contains(*end))
        ++end;
      StringRef text(p, end - p);
      if (!text.empty())
        func.setArgAttr(i, "mpc.name",
                        StringAttr::get(module.getContext(), text));
    }
  }
}

static LogicalResult writeFile(StringRef path,
                               function_ref<void(llvm::raw_ostream &)> write) {
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file) {
    llvm::errs() << "mpc-compile: error: " << error << "\n";
    return failure();
  }
  write(file->os());
  // Not kept where it is incomplete: the partial file is removed.
  if (!mlir::mpc::wroteAll(file->os(), path, "mpc-compile", llvm::errs()))
    return failure();
  file->keep();
  return success();
}

/// What the training executable's runner refuses at start-up, refused now
/// with the same check (batchSizeOf, lib/Runtime/Runner) and words.
static LogicalResult checkRunnable(ModuleOp module) {
  auto descriptor = module.lookupSymbol<LLVM::GlobalOp>("mpc_model");
  auto text = descriptor
                  ? dyn_cast_or_null<StringAttr>(descriptor.getValueOrNull())
                  : StringAttr();
  if (!text)
    return success(); // not a lowered step (--emit=mlir of another graph)
  llvm::Expected<::mpc::runner::Model> model =
      ::mpc::runner::parseModel(text.getValue().rtrim(StringRef("\0", 1)));
  if (!model) {
    llvm::consumeError(model.takeError());
    return success();
  }
  llvm::Expected<int64_t> batch = ::mpc::runner::batchSizeOf(*model);
  if (!batch)
    return mlir::emitError(module.getLoc()) << toString(batch.takeError());
  return success();
}

/// Parses and verifies the input, runs the pipeline and translates the
/// result to LLVM IR (`llvmModule`, in `llvmContext`), in an MLIR context
/// of its own that is gone when this returns: with it go the module's
/// copies of the weights (the parsed values and their flat arrays, twice
/// the weights' size). An exit code where the compile ends here (an
/// error, --print-pipeline, --emit=mlir), none to go on. `stem` names the
/// temporary files.
static std::optional<int> toLLVMIR(bool parallel, TimingScope &timeRoot,
                                   llvm::LLVMContext &llvmContext,
                                   std::unique_ptr<llvm::Module> &llvmModule,
                                   std::string &stem) {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registry.insert<mlir::mpc::MPCDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // An error names its op and location; the whole module is not printed.
  context.printOpOnDiagnostic(false);

  TimingScope parseTime = timeRoot.nest("parsing and verification");
  std::string error;
  auto buffer = mlir::mpc::openSourceFile(inputFile, &error);
  if (!buffer)
    return fail(error);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  if (failed(mlir::mpc::checkBeforeParsing(sourceMgr, llvm::errs())))
    return 1;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  Block block;
  AsmParserState asmState;
  ParserConfig config(&context);
  if (failed(parseAsmSourceFile(sourceMgr, &block, config, &asmState)))
    return 1;
  // A file of top-level ops is an implicit module, as in mlir-opt.
  OwningOpRef<ModuleOp> module;
  if (block.getOperations().size() == 1 && isa<ModuleOp>(block.front())) {
    module = cast<ModuleOp>(block.front());
    module->getOperation()->remove();
  } else {
    module = ModuleOp::create(FileLineColLoc::get(&context, inputFile, 1, 1));
    module->getBody()->getOperations().splice(module->getBody()->begin(),
                                              block.getOperations());
  }
  if (failed(verify(*module)))
    return 1;
  parseTime.stop();
  // The names the training passes give the functions they add: taken
  // already, the passes' own errors would name their options, not ours.
  if (train && module->lookupSymbol(entry))
    return fail("the model already defines @" + entry +
                "; name the training step with --entry=NAME");
  if (train && !noEval && module->lookupSymbol("eval_step"))
    return fail("the model already defines @eval_step, the name of the "
                "evaluation step; rename it or pass --no-eval");
  nameArguments(*module, asmState);

  // The pipeline, as mpc-opt's passes, each added on its own: a flag's
  // words reach only their pass (they cannot close its options and name
  // another), and a bad one is reported with the flag that gave it.
  PassManager pm(&context);
  TimingScope passTime = timeRoot.nest("mpc passes");
  pm.enableTiming(passTime);
  // Names and file names as option values (quoted where they hold a space
  // or a bracket); a name no quoting keeps whole is refused.
  std::string loss, name, precisionReportValue, fusionReportValue,
      memoryReportValue;
  for (auto [flag, text, value] :
       {std::tuple<const cl::Option *, StringRef, std::string *>{
            &lossFunction, lossFunction, &loss},
        {&entry, entry, &name},
        {&precisionReport, precisionReport, &precisionReportValue},
        {&fusionReport, fusionReport, &fusionReportValue},
        {&memoryReport, memoryReport, &memoryReportValue}}) {
    std::optional<std::string> quoted = optionValue(text);
    if (!quoted)
      return fail("--" + flag->ArgStr + "='" + text +
                  "': a name that holds both kinds of quote, or begins or "
                  "ends with a space, is not supported");
    *value = *quoted;
  }
  // The step's name is mpc-compile's to give (--entry), not the user's.
  for (const cl::opt<std::string> *flag :
       {&optimizer, &lossScaling, &dataParallel}) {
    StringRef text = *flag;
    if (llvm::any_of(llvm::split(text, ' '), [](StringRef word) {
          return word.trim() == "func" || word.trim().starts_with("func=");
        }))
      return fail("--" + flag->ArgStr + "='" + text +
                  "': 'func' is set by mpc-compile (--entry); drop it");
  }
  mlir::mpc::StepPipelineOptions step;
  step.train = train;
  step.loss = loss;
  step.step = name;
  step.accumulate = accumulate;
  step.optimizer = optimizer;
  if (train && !noEval) {
    step.eval = "eval_step";
    step.evalPrecision = evalPrecision;
  }
  step.lossScaling = lossScaling;
  step.clipGradNorm = clipGradNorm;
  step.level = amp;
  step.dtype = dtype;
  step.precisionOptions =
      "alignment-remarks=false" + (precisionReport.empty()
                                       ? std::string()
                                       : " report=" + precisionReportValue);
  step.dataParallel = parallel;
  step.dataParallelOptions = dataParallel;
  step.gradStats = gradStats;
  // On CUDA attention stays unfused unless asked for: its first kernels
  // (CUDA cores) made BERT's fused step 25x slower than the unfused one on
  // an H100 (docs/Benchmarks.md), and the flash kernels that replaced them
  // (cuBLASLt products for other types and head sizes) are not yet
  // measured on a GPU; the other fusions stay.
  step.fuse = !noFuse;
  bool attention =
      fuseAttention.getNumOccurrences() > 0 ? fuseAttention : backend != "cuda";
  std::string both = attention ? "" : "attention=false";
  if (noFoldCasts)
    both += " casts=false scales=false";
  if (keepProbabilities)
    both += " softmax-dropout=false recompute=false";
  if (noRowTransposes)
    both += " row-transposes=false";
  step.fuseOptions = both;
  // Moves computed again, concatenations' convolutions split and weight
  // gradients' sums fused only in the second fusion anyway: these options
  // go to it alone.
  std::string later =
      fusionReport.empty() ? std::string() : "report=" + fusionReportValue;
  if (noRecomputeMoves)
    later += " recompute-moves=false";
  if (noRecomputeInBackward)
    later += " recompute-in-backward=false";
  if (noConcatConvs)
    later += " concat-convs=false";
  if (noFuseWeightGradSums)
    later += " weight-grad-sums=false";
  if (noNormBiasGrads)
    later += " norm-bias-grads=false";
  if (noSiblingBiasGrads)
    later += " sibling-bias-grads=false";
  if (noHeadProducts)
    later += " head-products=false";
  step.laterFuseOptions = later;
  if (padForTensorCores.getNumOccurrences() > 0)
    step.pad = padForTensorCores;
  if (checkNumerics.getNumOccurrences() > 0)
    step.checkNumerics = checkNumerics.empty()
                             ? std::string()
                             : "phases=" + checkNumerics.getValue();
  if (!memoryReport.empty())
    step.planOptions += "report=" + memoryReportValue + " ";
  if (noMemoryReuse)
    step.planOptions += "reuse=false ";
  if (arenaGuards.getNumOccurrences() > 0)
    step.planOptions += "guard=" + std::to_string(arenaGuards) + " ";
  step.backend = backend;
  step.lowerOptions = "ops-per-part=" + std::to_string(opsPerPart);

  // Each pass with the flags whose words are among its options.
  using Role = mlir::mpc::PipelineStage::Role;
  auto flagsOf = [&](Role role) -> std::vector<const cl::Option *> {
    switch (role) {
    case Role::Autodiff:
      return {&lossFunction};
    case Role::Optimizer:
      return {&optimizer};
    case Role::Precision:
      return {&precisionReport};
    case Role::DataParallel:
      return {&dataParallel};
    case Role::LossScaling:
      return {&lossScaling, &clipGradNorm};
    case Role::Fuse:
      return {&fusionReport};
    case Role::Pad:
      return {&padForTensorCores};
    case Role::CheckNumerics:
      return {&checkNumerics};
    case Role::PlanMemory:
      return {&memoryReport};
    default:
      return {};
    }
  };
  bool added = true; // until a pass refuses its options
  std::vector<mlir::mpc::PipelineStage> stages = mlir::mpc::stepPipeline(step);
  for (const mlir::mpc::PipelineStage &stage : stages)
    added = added && succeeded(addStage(pm, stage, flagsOf(stage.role)));
  if (!added)
    return 1;
  if (printPipeline) {
    // Printed only where the text reads back as the same passes: MLIR
    // prints an option's value as it is, so a value holding the pipeline
    // syntax's braces or commas would read back as other passes.
    std::string printed, again;
    llvm::raw_string_ostream os(printed), reprinted(again);
    pm.printAsTextualPipeline(os);
    std::string text = restoreGivenNumbers(printed, stages);
    std::string reason;
    llvm::raw_string_ostream why(reason);
    FailureOr<OpPassManager> parsed = parsePassPipeline(text, why);
    if (succeeded(parsed))
      parsed->printAsTextualPipeline(reprinted);
    if (failed(parsed) || again != printed)
      return fail("--print-pipeline: an option's value holds the "
                  "pipeline syntax's braces or commas, so the printed "
                  "pipeline would read back as other passes; nothing is "
                  "printed");
    llvm::outs() << text << "\n";
    return 0;
  }
  if (failed(pm.run(*module)))
    return 1;
  passTime.stop();
  if (failed(checkRunnable(*module)))
    return 1;
  stem = outputFile;
  if (saveTemps &&
      failed(writeFile(stem + ".mpc.mlir",
                       [&](llvm::raw_ostream &os) { module->print(os); })))
    return 1;

  PassManager toLLVM(&context);
  TimingScope convertTime = timeRoot.nest("conversion to the LLVM dialect");
  toLLVM.enableTiming(convertTime);
  // The func conversion first, on its own: its call lowering then finds
  // callees through one symbol table, where --convert-to-llvm's scans the
  // module for each call (quadratic: a step's calls times the module's
  // symbols, its declarations and constant arrays).
  if (failed(parsePassPipeline("convert-func-to-llvm,convert-to-llvm,"
                               "reconcile-unrealized-casts",
                               toLLVM)) ||
      failed(toLLVM.run(*module)))
    return 1;
  convertTime.stop();
  if (emit == "mlir")
    return failed(writeFile(outputFile,
                            [&](llvm::raw_ostream &os) { module->print(os); }));

  TimingScope translateTime = timeRoot.nest("translation to LLVM IR");
  llvmModule = translateModuleToLLVMIR(*module, llvmContext, "mpc-model");
  translateTime.stop();
  if (!llvmModule)
    return fail("translation to LLVM IR failed");
  return std::nullopt;
}

static int compile(int argc, char **argv);

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  ::mpc::files::reportFatalErrorsAs("mpc-compile");
  int status = compile(argc, argv);
  // What went to standard output (--print-pipeline, --emit=... -o -)
  // reached it, or an error: a failed stream aborts when it closes.
  if (!mlir::mpc::wroteAll(llvm::outs(), "standard output", "mpc-compile",
                           llvm::errs()))
    return 1;
  return status;
}

static int compile(int argc, char **argv) {
  registerAllPasses();
  mlir::mpc::registerMPCPasses();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "mpc-compile: compiles a training graph into a standalone training "
      "executable\n");

  if (backend != "cpu" && backend != "cuda")
    return fail("unknown backend '" + backend + "' (expected cpu or cuda)");
  // What this build lacks matters only to what it links: a printed
  // pipeline needs none of it.
  const bool links = !printPipeline;
  if (links && emulateCuda && !config::haveCudaEmulation)
    return fail("--emulate-cuda: the host emulation of the CUDA backend is "
                "not part of this build (CUDA's headers were not found)");
  if (links && backend == "cuda" && !config::haveCudaRuntime && !emulateCuda)
    return fail(std::string("the CUDA backend (libmpcrt-cuda) is not part "
                            "of this build; use --backend=cpu") +
                (config::haveCudaEmulation
                     ? ", or --emulate-cuda to run its code on the host"
                     : ""));
  if (!amp.empty() && amp != "O0" && amp != "O1" && amp != "O2" && amp != "O3")
    return fail("unknown --amp level '" + amp + "' (expected O0..O3)");
  if (dtype != "f16" && dtype != "bf16")
    return fail("unknown --dtype '" + dtype + "' (expected f16 or bf16)");
  if (evalPrecision != "f32" && evalPrecision != "amp")
    return fail("unknown --eval-precision '" + evalPrecision +
                "' (expected f32 or amp)");
  if (noEval && evalPrecision.getNumOccurrences() > 0)
    return fail("--eval-precision and --no-eval contradict each other");
  if (noFuse && fusionReport.getNumOccurrences() > 0)
    return fail("--fusion-report and --no-fuse contradict each other");
  if (noFuse && fuseAttention)
    return fail("--fuse-attention and --no-fuse contradict each other");
  if (noFuse && noRecomputeMoves)
    return fail("--no-recompute-moves and --no-fuse contradict each other");
  if (noFuse && noRowTransposes)
    return fail("--no-row-transposes and --no-fuse contradict each other");
  if (noFuse && noHeadProducts)
    return fail("--no-head-products and --no-fuse contradict each other");
  if (noFuse && noNormBiasGrads)
    return fail("--no-norm-bias-grads and --no-fuse contradict each other");
  if (noFuse && noSiblingBiasGrads)
    return fail("--no-sibling-bias-grads and --no-fuse contradict each other");
  if (noFuse && noConcatConvs)
    return fail("--no-concat-convs and --no-fuse contradict each other");
  if (noFuse && keepProbabilities)
    return fail("--keep-probabilities and --no-fuse contradict each other");
  if (noFuse && noRecomputeInBackward)
    return fail(
        "--no-recompute-in-backward and --no-fuse contradict each other");
  if (keepProbabilities && noRecomputeInBackward)
    return fail("--no-recompute-in-backward and --keep-probabilities "
                "contradict each other (kept probabilities are not computed "
                "again)");
  if (noFuse && noFuseWeightGradSums)
    return fail(
        "--no-fuse-weight-grad-sums and --no-fuse contradict each other");
  if (arenaGuards.getNumOccurrences() > 0 &&
      (arenaGuards < 1 || arenaGuards > (int64_t(1) << 30)))
    return fail("--arena-guards must be between 1 and 1073741824 bytes, "
                "got " +
                std::to_string(arenaGuards));
  if (opsPerPart < 0)
    return fail("--ops-per-part must be 0 (one function) or positive, got " +
                std::to_string(opsPerPart));
  if (optLevel > 3)
    return fail("-O must be 0, 1, 2 or 3, got " + std::to_string(optLevel));
  if (outputFile.getNumOccurrences() == 0 && !printPipeline)
    return fail("no output file: give -o FILE");
  // Nothing is written over the model or another output.
  {
    std::vector<std::pair<std::string, std::string>> outputs;
    if (!printPipeline && outputFile != "-")
      outputs.push_back({"-o", outputFile});
    for (auto [flag, path] : {std::pair{"--fusion-report", &fusionReport},
                              {"--memory-report", &memoryReport},
                              {"--precision-report", &precisionReport}})
      if (!path->empty() && *path != "-")
        outputs.push_back({flag, *path});
    for (size_t i = 0; i < outputs.size(); ++i) {
      const auto &[flag, path] = outputs[i];
      if (inputFile != "-" && ::mpc::files::sameFile(path, inputFile))
        return fail(flag + " " + path +
                    " is the input file: the compile would write over it; "
                    "name another file");
      for (size_t j = 0; j < i; ++j)
        if (::mpc::files::sameFile(path, outputs[j].second))
          return fail(flag + " " + path + " is also " + outputs[j].first +
                      "'s file; name another file");
    }
  }
  // The output's folder, checked before the compile rather than by the
  // first file written into it (the object, OUT.o, named in that error).
  if (!printPipeline && outputFile != "-") {
    StringRef dir = llvm::sys::path::parent_path(outputFile.getValue());
    if (!dir.empty() && !llvm::sys::fs::is_directory(dir))
      return fail("-o " + outputFile + ": the folder " + dir +
                  " does not exist");
    if (llvm::sys::fs::is_directory(outputFile.getValue()))
      return fail("-o " + outputFile + " is a folder; name a file");
  }
  if (printPipeline) {
    // Options that shape only what is written after the passes are left
    // out of a printed pipeline; the user hears which, so a compile line
    // with --print-pipeline added still prints, and says what it skipped.
    std::string ignored;
    for (cl::Option *option : std::initializer_list<cl::Option *>{
             &outputFile, &emit, &saveTemps, &optLevel, &emulateCuda,
             &racecheck})
      if (option->getNumOccurrences() > 0)
        ignored += (ignored.empty() ? "-" : ", -") +
                   std::string(option->ArgStr.size() > 1 ? "-" : "") +
                   option->ArgStr.str();
    if (!ignored.empty())
      llvm::errs() << "mpc-compile: warning: --print-pipeline compiles "
                      "nothing; ignored: "
                   << ignored << " (they shape what is built after the "
                   << "passes)\n";
  }
  if (emit != "mlir" && emit != "llvm" && emit != "obj" && emit != "exe")
    return fail("unknown --emit '" + emit +
                "' (expected mlir, llvm, obj or exe)");
  // Options that only mean something with another one are not ignored.
  for (auto [option, needs, name] :
       {std::tuple<cl::Option *, bool, const char *>{&dtype, !amp.empty(),
                                                     "--amp"},
        {&precisionReport, !amp.empty(), "--amp"},
        {&padForTensorCores, !amp.empty(), "--amp"},
        {&optimizer, train, "--train"},
        {&lossScaling, train, "--train"},
        {&clipGradNorm, train, "--train"},
        {&accumulate, train, "--train"},
        {&evalPrecision, train, "--train"},
        {&noEval, train, "--train"},
        {&lossFunction, train, "--train"},
        {&dataParallel, train, "--train"}})
    if (option->getNumOccurrences() > 0 && !needs)
      return fail("--" + option->ArgStr + " applies only with " + name +
                  "; add " + name + " or drop it");
  // O0 computes everything in f32: a low-precision type would be ignored.
  if (amp == "O0" && dtype.getNumOccurrences() > 0)
    return fail("--dtype applies only with --amp=O1, O2 or O3 (O0 computes "
                "in f32); drop --dtype or pick a level that uses it");

  bool parallel = dataParallel.getNumOccurrences() > 0;
  if (links && parallel && backend == "cpu" && !config::haveMpi)
    return fail("--data-parallel on the CPU backend needs MPI, which this "
                "build did not find (install libopenmpi-dev and "
                "reconfigure)");
  if (racecheck && !emulateCuda)
    return fail("--racecheck needs --emulate-cuda");
  if (links && racecheck && StringRef(config::runtimeCudaRacecheckLibs).empty())
    return fail("--racecheck: the race check of the CUDA emulation is not "
                "part of this build (it is left out beside other "
                "sanitizers)");
  if (emulateCuda && backend != "cuda")
    return fail("--emulate-cuda needs --backend=cuda");
  if (links && emulateCuda && parallel &&
      StringRef(config::commNcclEmulatedLib).empty())
    return fail("--emulate-cuda --data-parallel needs NCCL's header "
                "(nccl.h), which this build did not find");
  if (links && parallel && backend == "cuda" && !emulateCuda &&
      !config::haveNccl)
    return fail("--data-parallel on the CUDA backend needs NCCL's header "
                "(nccl.h), which this build did not find");

  // Timing of every phase (--timing): printed when `timer` goes.
  DefaultTimingManager timer;
  timer.setEnabled(timing);
  TimingScope timeRoot = timer.getRootScope();

  // LLVM IR, optimised for the host. Its context goes after code
  // generation: the weights' constant array with it.
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto llvmContext = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> llvmModule;
  std::string stem;
  if (std::optional<int> rc =
          toLLVMIR(parallel, timeRoot, *llvmContext, llvmModule, stem))
    return *rc;
  std::string error;
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return fail(error);
  // Code generation follows -O too. The step is a long sequence of calls
  // into the precompiled runtime: at -O0 instruction selection and register
  // allocation stay linear in its length.
  llvm::CodeGenOptLevel codegenLevel =
      optLevel == 0   ? llvm::CodeGenOptLevel::None
      : optLevel == 1 ? llvm::CodeGenOptLevel::Less
      : optLevel == 2 ? llvm::CodeGenOptLevel::Default
                      : llvm::CodeGenOptLevel::Aggressive;
  // The medium code model: constants past 64 KiB (the initial weights
  // copied from read-only data) go to .lrodata, addressed with 64 bits,
  // which the linker places apart from the code. With the small model,
  // 2 GiB of weights put the runtime's own constants out of reach of its
  // code (a relocation out of range at the link).
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, "generic", "", llvm::TargetOptions(), llvm::Reloc::PIC_,
      llvm::CodeModel::Medium, codegenLevel));
  machine->setLargeDataThreshold(64 << 10);
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(triple);
  TimingScope optimizeTime = timeRoot.nest("LLVM optimisation");
  if (auto err = makeOptimizingTransformer(optLevel, 0,
                                           machine.get())(llvmModule.get()))
    return fail("LLVM optimisation failed: " + toString(std::move(err)));
  optimizeTime.stop();
  if (saveTemps || emit == "llvm") {
    std::string path = emit == "llvm" ? outputFile.getValue() : stem + ".ll";
    if (failed(writeFile(path, [&](llvm::raw_ostream &os) {
          llvmModule->print(os, nullptr);
        })))
      return 1;
    if (emit == "llvm")
      return 0;
  }

  // The object to link: a file of its own beside the output
  // (mpc-compile-XXXXXXXX.o), not OUT.o, which may be a file of the
  // user's (or the model) that the compile would overwrite and remove;
  // OUT.o only where --save-temps asks for it.
  std::string objectPath = emit == "obj" ? outputFile.getValue() : stem + ".o";
  int objectFd = -1;
  if (emit != "obj" && !saveTemps) {
    SmallString<256> pattern = folderOf(outputFile), unique;
    llvm::sys::path::append(pattern, "mpc-compile-%%%%%%%%.o");
    if (std::error_code ec =
            llvm::sys::fs::createUniqueFile(pattern, objectFd, unique))
      return fail(pattern + ": " + ec.message());
    objectPath = unique.str().str();
  }
  {
    std::error_code ec;
    std::optional<llvm::ToolOutputFile> object;
    if (objectFd >= 0)
      object.emplace(objectPath, objectFd);
    else
      object.emplace(objectPath, ec, llvm::sys::fs::OF_None);
    if (ec)
      return fail(objectPath + ": " + ec.message());
    TimingScope codegenTime = timeRoot.nest("code generation");
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, object->os(), nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
      return fail("the target cannot emit object files");
    codegen.run(*llvmModule);
    if (!mlir::mpc::wroteAll(object->os(), objectPath, "mpc-compile",
                             llvm::errs()))
      return 1;
    object->keep();
  }
  // The object holds everything now; the link needs the memory more.
  llvmModule.reset();
  llvmContext.reset();
  if (emit == "obj")
    return 0;

  // Link: the model object, the runner main, the comm ABI (a job of one,
  // or MPI), the runtime (the CPU's with OpenBLAS), LLVM Support (the runner's
  // JSON), system libraries.
  SmallVector<std::string> inputs{objectPath, config::runnerLib};
  // The comm ABI before the runtime it uses (f16 conversions).
  for (StringRef lib :
       llvm::split(!parallel           ? StringRef(config::commSingleLib)
                   : emulateCuda       ? StringRef(config::commNcclEmulatedLib)
                   : backend == "cuda" ? StringRef(config::commNcclLib)
                                       : StringRef(config::commMpiLibs),
                   ';'))
    if (!lib.empty())
      inputs.push_back(lib.str());
  StringRef runtime = backend == "cpu" ? config::runtimeCpuLibs
                      : racecheck      ? config::runtimeCudaRacecheckLibs
                      : emulateCuda    ? config::runtimeCudaEmulatedLibs
                                       : config::runtimeCudaLibs;
  for (StringRef lib : llvm::split(runtime, ';'))
    if (!lib.empty())
      inputs.push_back(lib.str());
  for (StringRef lib : llvm::split(StringRef(config::runnerLinkLibs), ';'))
    if (!lib.empty())
      inputs.push_back(lib.str());
  // The linker itself, on the command line the compiler driver gave it at
  // configuration (the start-up files, the C++ and C runtimes) with the
  // output and inputs in the placeholders' places; the driver where that
  // line was not captured (tools/mpc-compile/CMakeLists.txt).
  SmallVector<std::string> args;
  if (StringRef(config::linkerCommand).empty()) {
    args.push_back(config::linkDriver);
    for (StringRef flag : llvm::split(StringRef(config::linkDriverFlags), ';'))
      args.push_back(flag.str());
    args.append({"-o", outputFile});
    args.append(inputs.begin(), inputs.end());
  } else {
    for (StringRef arg : llvm::split(StringRef(config::linkerCommand), ';')) {
      if (arg == "mpc-link-output")
        args.push_back(outputFile);
      else if (arg == "mpc-link-inputs.o")
        args.append(inputs.begin(), inputs.end());
      else
        args.push_back(arg.str());
    }
  }
  std::string linkError;
  // What is read after the link, read before it: lld's driver resets every
  // command-line option of the process to its default.
  std::string output = outputFile;
  bool keepObject = saveTemps;
  // lld's ELF driver in this process where the build links it as a
  // library: the same command line, without a second process that would
  // load LLVM again (about 0.05 s of a small compile's 0.26 s).
  // MPC_LINK_IN_PROCESS=0 runs the linker as a process instead.
  const char *inProcessEnv = std::getenv("MPC_LINK_IN_PROCESS");
  // lld writes the executable through a mapping of the file (its
  // --no-mmap-output-file does not change that): on a full disk a write
  // there is a SIGBUS. Where little space is left the link runs as a
  // process of its own, whose crash is reported below, not this
  // process's.
  std::optional<uint64_t> freeBytes;
  if (llvm::ErrorOr<llvm::sys::fs::space_info> space =
          llvm::sys::fs::disk_space(folderOf(outputFile)))
    freeBytes = space->available;
  constexpr uint64_t kLinkHeadroom = uint64_t(1) << 30;
  bool inProcess = MPC_LINK_IN_PROCESS &&
                   !StringRef(config::linkerCommand).empty() &&
                   !(inProcessEnv && StringRef(inProcessEnv) == "0") &&
                   (!freeBytes || *freeBytes >= kLinkHeadroom);
  TimingScope linkTime =
      timeRoot.nest(inProcess ? "linking (lld in process)" : "linking");
  int rc;
  if (inProcess) {
    SmallVector<const char *> linkArgv;
    for (const std::string &arg : args)
      linkArgv.push_back(arg.c_str());
    rc = linkInProcess(linkArgv);
  } else {
    SmallVector<StringRef> argRefs(args.begin(), args.end());
    rc = llvm::sys::ExecuteAndWait(args.front(), argRefs, std::nullopt, {}, 0,
                                   0, &linkError);
  }
  linkTime.stop();
  if (!keepObject)
    llvm::sys::fs::remove(objectPath);
  if (rc != 0) {
    // A linker that crashed leaves its temporary output (lld's
    // "NAME.tmp" and 7 hex digits, beside NAME): removed.
    removeLinkerTemporaries(output);
    std::string space;
    if (freeBytes && *freeBytes < kLinkHeadroom)
      space = " (" + std::to_string(*freeBytes >> 10) +
              " KiB free where it is written: the disk may be full)";
    return fail("linking " + output + " failed" +
                (linkError.empty() ? "" : ": " + linkError) + space);
  }
  return 0;
}
