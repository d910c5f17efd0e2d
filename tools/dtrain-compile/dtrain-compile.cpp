//===- dtrain-compile.cpp - ONNX models to native executables -------------===//
//
// The compiler driver. It imports an ONNX model (or parses a .mlir module),
// lowers it to the LLVM dialect with dtrain's pipeline, translates it to LLVM
// IR, optimizes it for the host CPU, emits an object file and links that with
// the C compiler driver against libdtrain_runtime into an executable (whose
// main is the runtime's dtrain_rt_model_main). --emit stops at an earlier
// stage.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Dist/Passes.h"
#include "dtrain/Import/ONNXImporter.h"
#include "dtrain/InitAll.h"
#include "dtrain/Lower/Passes.h"
#include "dtrain/Lower/Pipelines.h"
#include "dtrain/Train/Passes.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/IPO/LoopExtractor.h"

using namespace mlir;
namespace cl = llvm::cl;

static constexpr llvm::StringLiteral kToolName = "dtrain-compile";

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

// --help shows these categories only: hundreds of LLVM options are registered
// by the shared libraries and none of them matters here.
static cl::OptionCategory compileCategory("Compilation options");
static cl::OptionCategory importCategory("ONNX import options (.onnx input)");
static cl::OptionCategory
    mlirCategory("MLIR options (to debug the lowering pipeline)");

static cl::opt<std::string> inputFilename(cl::Positional, cl::Required,
                                          cl::desc("<MODEL.onnx|MODULE.mlir>"),
                                          cl::cat(compileCategory));

static cl::opt<std::string> outputFilename(
    "o", cl::Required,
    cl::desc("Output file; '-' writes to stdout (not with --emit=exe)"),
    cl::value_desc("OUT"), cl::cat(compileCategory));

namespace {
enum class Mode { Train, Infer, Step };
enum class Target { CPU, CUDA };
enum class Emit { MLIR, LLVM, Obj, Exe };
enum OptLevel : unsigned { O0, O1, O2, O3 };
} // namespace

static cl::opt<Mode>
    mode("mode", cl::desc("What to compile (default: train)"),
         cl::values(clEnumValN(Mode::Train, "train",
                               "a trainer (--loss, --optimizer, --lr, ...): "
                               "./trainer --data train.npz --val val.npz "
                               "--epochs E (see its --help)"),
                    clEnumValN(Mode::Infer, "infer",
                               "the forward pass, for inference"),
                    clEnumValN(Mode::Step, "step",
                               "one training step (--loss, --optimizer, "
                               "--lr, --momentum, --weight-decay) per run "
                               "of the executable: reads inputs and labels, "
                               "writes the updated parameters and the "
                               "loss")),
         cl::init(Mode::Train), cl::cat(compileCategory));

static cl::opt<std::string> lossName(
    "loss",
    cl::desc("--mode=train|step: the loss, softmax-xent (integer labels: "
             "one per sample, or one per position of N x T x V logits; "
             "default) or mse (targets of the output's shape)"),
    cl::init("softmax-xent"), cl::cat(compileCategory));
static cl::opt<std::string> optimizerName(
    "optimizer",
    cl::desc(
        "--mode=train|step: sgd (default), momentum, nesterov, adam, adamw or "
        "lars"),
    cl::init("sgd"), cl::cat(compileCategory));
static cl::opt<double>
    momentum("momentum",
             cl::desc("--mode=train|step: momentum of momentum and nesterov "
                      "(default 0.9)"),
             cl::init(0.9), cl::cat(compileCategory));
static cl::opt<double> trustCoefficient(
    "trust-coefficient",
    cl::desc("--mode=train|step: LARS trust coefficient eta (default 0.001)"),
    cl::init(0.001), cl::cat(compileCategory));
static cl::opt<std::string> scheduleName(
    "schedule",
    cl::desc("--mode=train|step: learning-rate schedule: constant (default), "
             "step (--gamma every --step-size steps) or cosine (to 0 over "
             "--total-steps)"),
    cl::init("constant"), cl::cat(compileCategory));
static cl::opt<int64_t> stepSize("step-size",
                                 cl::desc("--schedule=step: steps per decay "
                                          "(default 1000)"),
                                 cl::init(1000), cl::cat(compileCategory));
static cl::opt<double> decayGamma("gamma",
                                  cl::desc("--schedule=step: decay factor "
                                           "(default 0.1)"),
                                  cl::init(0.1), cl::cat(compileCategory));
static cl::opt<int64_t> totalSteps("total-steps",
                                   cl::desc("--schedule=cosine: steps of the "
                                            "half cosine (default 1000)"),
                                   cl::init(1000), cl::cat(compileCategory));
static cl::opt<int64_t>
    warmupSteps("warmup-steps",
                cl::desc("--mode=train|step: linear learning-rate warm-up "
                         "over the first N steps (default 0: none)"),
                cl::init(0), cl::cat(compileCategory));
static cl::opt<double> learningRate("lr",
                                    cl::desc("--mode=train|step: learning rate "
                                             "(default 0.01)"),
                                    cl::init(0.01), cl::cat(compileCategory));
static cl::opt<double>
    weightDecay("weight-decay",
                cl::desc("--mode=train|step: weight decay, not applied to 1-D "
                         "parameters (default 0)"),
                cl::init(0.0), cl::cat(compileCategory));

static cl::opt<bool> dataParallel(
    "data-parallel",
    cl::desc("--mode=train|step: average every gradient over the ranks "
             "while the backward pass runs (--dtrain-data-parallel); the "
             "program then runs under mpirun, each rank on its own shard of "
             "the data. Default: on for trainers, off for --mode=step; "
             "--data-parallel=false for a trainer without MPI"),
    cl::init(false), cl::cat(compileCategory));

static cl::opt<std::string> exchangeSchedule(
    "exchange-schedule",
    cl::desc("With --data-parallel: when the gradients' exchanges start: "
             "wfbp (each as soon as its gradient exists, overlapping the "
             "rest of the backward pass; default) or after-backward (all "
             "once the backward pass is done: the baseline)"),
    cl::init("wfbp"), cl::cat(compileCategory));

static cl::opt<std::string> mergeStrategy(
    "merge",
    cl::desc("With --data-parallel: merge the gradients' exchanges into "
             "buckets, one all-reduce each (--dtrain-merge-gradients "
             "strategy): none (default), threshold, mgwfbp or optimal"),
    cl::init("none"), cl::cat(compileCategory));

static cl::opt<std::string> mergeOptions(
    "merge-options",
    cl::desc("With --merge: more --dtrain-merge-gradients options, as "
             "key=value pairs: threshold-bytes=N first-bucket-bytes=N "
             "startup=S per-byte=S profile=FILE.json ..."),
    cl::init(""), cl::cat(compileCategory));

static cl::opt<std::string> sparsifyOptions(
    "sparsify",
    cl::desc("With --data-parallel: send only the largest entries of each "
             "gradient exchange, keeping the rest as residuals "
             "(--dtrain-sparsify); the value is that pass's options as "
             "key=value pairs, e.g. --sparsify=\"density=0.001 "
             "select=gaussian aggregate=gtopk\" (\"\" for its defaults)"),
    cl::ValueRequired, cl::cat(compileCategory));

static cl::opt<std::string> wireType(
    "wire",
    cl::desc("With --data-parallel: the float type the dense gradient "
             "exchanges travel in (--dtrain-mixed-precision wire): f32 "
             "(default), bf16 or f16; half the bytes in 16 bits, with f32 "
             "master weights and optimizer state"),
    cl::init("f32"), cl::cat(compileCategory));

static cl::opt<std::string> precision(
    "precision",
    cl::desc("The float type the forward and backward passes compute in "
             "(--dtrain-mixed-precision compute): f32 (default), bf16 or "
             "f16; batch norm, softmax, the loss and reductions stay f32 "
             "(keep-f32 in --mixed-precision-options), and so do the "
             "parameters the optimizer updates"),
    cl::init("f32"), cl::cat(compileCategory));

static cl::opt<std::string> lossScale(
    "loss-scale",
    cl::desc("In a training step: scale the loss for the backward pass and "
             "skip, on every rank, a step whose gradients overflow "
             "(--dtrain-mixed-precision loss-scale): none (default), "
             "dynamic (from 2^16, halved on overflow, doubled after 2000 "
             "clean steps) or static:<s>"),
    cl::init("none"), cl::cat(compileCategory));

static cl::opt<std::string> mixedPrecisionOptions(
    "mixed-precision-options",
    cl::desc("More --dtrain-mixed-precision options, as key=value pairs: "
             "init-scale=S growth-factor=F backoff-factor=F "
             "growth-interval=N min-scale=S"),
    cl::init(""), cl::cat(compileCategory));

static cl::opt<bool> channelsLast(
    "channels-last",
    cl::desc("Run convolutions, pooling and batch norms on NHWC activations "
             "and OHWI weights (--dtrain-channels-last), as --target=cuda's "
             "tensor-core convolutions take them, with transposes only "
             "where the layout changes (each weight and its gradient among "
             "them, which on the CPU can cost more than NHWC saves); the "
             "model's inputs, weights and checkpoints stay NCHW/OIHW"),
    cl::init(false), cl::cat(compileCategory));

/// --data-parallel as given, else the mode's default.
static bool isDataParallel() {
  return dataParallel.getNumOccurrences() ? bool(dataParallel)
                                          : mode == Mode::Train;
}

static cl::opt<Target>
    target("target", cl::desc("Device the model runs on (default: cpu)"),
           cl::values(clEnumValN(Target::CPU, "cpu", "the host CPU"),
                      clEnumValN(Target::CUDA, "cuda",
                                 "NVIDIA GPUs: loop nests become CUDA "
                                 "kernels for --gpu-arch, buffers live in "
                                 "managed memory (needs a dtrain built "
                                 "with CUDA; the trainer needs a GPU)")),
           cl::init(Target::CPU), cl::cat(compileCategory));

static cl::opt<std::string> cudaLoopsOrder(
    "cuda-loops",
    cl::desc("--target=cpu: transform the loop nests as --target=cuda does "
             "for its kernels (serial work parallelized, small nests merged, "
             "16-byte vectors, 256-thread tiles), and run them on the CPU one "
             "iteration after another, with its heavy-op calls (on "
             "libdtrain_runtime_cuda_loops): checks what the CUDA trainer's "
             "kernels compute without a GPU (slower than the CPU's loops). "
             "=reverse runs each parallel loop's iterations from the last to "
             "the first: a result that depends on their order (a race "
             "between a kernel's threads) then differs from the forward "
             "run's"),
    cl::ValueOptional, cl::value_desc("forward|reverse"),
    cl::cat(compileCategory));

static cl::opt<bool> exactMath(
    "exact-math",
    cl::desc("--target=cpu: call libm for f32 erf, exp and tanh, one "
             "element at a time, rather than computing them with "
             "polynomials that vectorize (--dtrain-approximate-math: within "
             "a few units in the last place; exp's subnormal results "
             "flushed to 0)"),
    cl::init(false), cl::cat(compileCategory));

enum class CUDALoops { None, Forward, Reverse };
/// --cuda-loops as given (without a value: forward), set by compile().
static CUDALoops cudaLoops = CUDALoops::None;

static cl::opt<std::string>
    gpuArch("gpu-arch",
            cl::desc("--target=cuda: the GPU architecture to compile kernels "
                     "for (default sm_90)"),
            cl::init("sm_90"), cl::cat(compileCategory));

static cl::opt<std::string> gpuFeatures(
    "gpu-features",
    cl::desc("--target=cuda: PTX features, e.g. +ptx86 (default: +ptx81 "
             "up to sm_90a, the least PTX version --gpu-arch needs after)"),
    cl::init(""), cl::cat(compileCategory));

static cl::opt<Emit> emit(
    "emit", cl::desc("What to write to OUT (default: exe)"),
    cl::values(clEnumValN(Emit::MLIR, "mlir",
                          "the lowered module in the LLVM dialect"),
               clEnumValN(Emit::LLVM, "llvm", "optimized LLVM IR (.ll)"),
               clEnumValN(Emit::Obj, "obj", "an object file"),
               clEnumValN(Emit::Exe, "exe",
                          "an executable linked against libdtrain_runtime")),
    cl::init(Emit::Exe), cl::cat(compileCategory));

// -O2 by default: LLVM's -O3 fully unrolls loops twice as large, which on
// the small loops of a training step (biases, batch-norm and layer-norm
// parameters, small activations) made straight-line blocks whose scheduling
// is superlinear in their size: shufflenet_v2's step compiled in 17 s at
// -O3 and 6 s at -O2, vit's and gpt's in 8 and 7 s rather than 5, and the
// steps ran as fast (mlp to mobilenet_v2 within the noise of 5%).
static cl::opt<OptLevel> optLevel(
    cl::desc("Optimization level of LLVM IR and code generation (default: "
             "-O2):"),
    cl::values(clEnumVal(O0, "no optimization"),
               clEnumVal(O1, "light optimization"),
               clEnumVal(O2, "standard optimization"),
               clEnumVal(O3, "aggressive optimization")),
    cl::init(O2), cl::cat(compileCategory));

static cl::opt<std::string>
    mcpu("mcpu",
         cl::desc("CPU to generate code for: 'native' (the host's CPU and "
                  "all its features) or an LLVM CPU name such as x86-64-v3 "
                  "or skylake-avx512 (default: native)"),
         cl::value_desc("native|NAME"), cl::init("native"),
         cl::cat(compileCategory));

static cl::opt<std::string> runtimeDir(
    "runtime-dir",
    cl::desc("Directory of libdtrain_runtime.so, to link against and to "
             "record as the executable's rpath (default: $DTRAIN_RUNTIME_DIR, "
             "else ../lib beside the dtrain-compile executable)"),
    cl::value_desc("DIR"), cl::cat(compileCategory));

static cl::opt<bool>
    verbose("v",
            cl::desc("Print the lowering pipeline and the link command to "
                     "stderr"),
            cl::cat(compileCategory));

static const char *const kOverview =
    "dtrain compiler: ONNX model -> native executable\n\n"
    "  dtrain-compile model.onnx --batch-size 32 --optimizer momentum "
    "--lr 0.05 -o trainer\n"
    "  ./trainer --data train.npz --val val.npz --epochs 10\n"
    "  dtrain-compile model.onnx --mode=infer --batch-size 8 -o model\n"
    "  ./model --input x.npy --output y.npy\n\n"
    "The input is an ONNX model (.onnx; its weights stay in the file, whose\n"
    "absolute path the executable records) or an MLIR module (.mlir, as\n"
    "dtrain-translate --import-onnx writes it). The C compiler driver links\n"
    "the executable: $DTRAIN_CC if set, else " DTRAIN_DEFAULT_CC ".\n";

/// Moves the options that `registerOptions` registers into `category`, so
/// that cl::HideUnrelatedOptions keeps them in --help.
static void
registerOptionsInCategory(llvm::function_ref<void()> registerOptions,
                          cl::OptionCategory &category) {
  auto &options = cl::getRegisteredOptions();
  llvm::StringSet<> before;
  for (const auto &[name, option] : options)
    before.insert(name);
  registerOptions();
  for (const auto &[name, option] : options)
    if (!before.contains(name))
      option->addCategory(category);
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

static LogicalResult error(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), kToolName) << message << "\n";
  return failure();
}

static std::string makeAbsolute(StringRef path) {
  SmallString<256> absolute(path);
  llvm::sys::fs::make_absolute(absolute);
  llvm::sys::path::remove_dots(absolute, /*remove_dot_dot=*/true);
  return std::string(absolute);
}

/// The directory holding libdtrain_runtime.so, as an absolute path (it
/// becomes the executable's rpath).
static FailureOr<std::string> findRuntimeDir(const char *argv0) {
  std::string dir = runtimeDir;
  if (dir.empty())
    dir = llvm::sys::Process::GetEnv("DTRAIN_RUNTIME_DIR").value_or("");
  if (dir.empty()) {
    // build/bin/dtrain-compile links against build/lib/libdtrain_runtime.so.
    static int anchor;
    SmallString<256> path(llvm::sys::fs::getMainExecutable(argv0, &anchor));
    llvm::sys::path::remove_filename(path);
    llvm::sys::path::append(path, "..", "lib");
    dir = std::string(path);
  }
  dir = makeAbsolute(dir);
  SmallString<256> library(dir);
  llvm::sys::path::append(library, "libdtrain_runtime.so");
  if (!llvm::sys::fs::exists(library))
    return error("libdtrain_runtime.so not found in '" + dir +
                 "'; give its directory with --runtime-dir or "
                 "DTRAIN_RUNTIME_DIR");
  SmallString<256> cudaLibrary(dir);
  llvm::sys::path::append(cudaLibrary, "libdtrain_runtime_cuda.so");
  if (target == Target::CUDA && !llvm::sys::fs::exists(cudaLibrary))
    return error("--target=cuda needs libdtrain_runtime_cuda.so, which is "
                 "not in '" +
                 dir +
                 "': this dtrain was built without CUDA (configure it where "
                 "the CUDA toolkit is found, or with -DDTRAIN_ENABLE_CUDA=ON)");
  SmallString<256> cudaLoopsLibrary(dir);
  llvm::sys::path::append(cudaLoopsLibrary, "libdtrain_runtime_cuda_loops.so");
  if (cudaLoops != CUDALoops::None && !llvm::sys::fs::exists(cudaLoopsLibrary))
    return error("--cuda-loops needs libdtrain_runtime_cuda_loops.so, which "
                 "is not in '" +
                 dir + "'");
  return dir;
}

/// The C compiler driver that links executables: $DTRAIN_CC, else the one
/// this build was configured with; a name without '/' is looked up in PATH.
static FailureOr<std::string> findCCompiler() {
  std::string cc = llvm::sys::Process::GetEnv("DTRAIN_CC").value_or("");
  if (cc.empty())
    cc = DTRAIN_DEFAULT_CC;
  llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(cc);
  if (!path || !llvm::sys::fs::can_execute(*path))
    return error("cannot find the C compiler '" + cc +
                 "' that links the executable; set DTRAIN_CC to a C compiler "
                 "driver (clang, gcc)");
  return *path;
}

/// Reads the input into a module: an ONNX model is imported, a .mlir file
/// parsed. Errors are reported through the context's diagnostic handler.
static OwningOpRef<ModuleOp> loadModule(MLIRContext &context,
                                        llvm::SourceMgr &sourceMgr) {
  StringRef extension = llvm::sys::path::extension(inputFilename);
  if (extension != ".onnx" && extension != ".mlir") {
    (void)error("unknown input extension of '" + inputFilename +
                "': expected MODEL.onnx or MODULE.mlir");
    return nullptr;
  }
  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(inputFilename, &message);
  if (!file) {
    (void)error(message);
    return nullptr;
  }

  OwningOpRef<ModuleOp> module;
  if (extension == ".onnx") {
    FailureOr<dtrain::ONNXImportOptions> options =
        dtrain::getONNXImportOptionsFromCL(
            FileLineColLoc::get(&context, inputFilename, 0, 0));
    if (failed(options))
      return nullptr;
    module = dtrain::importONNX(*file, &context, *options);
  } else {
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  }
  if (!module)
    return nullptr;

  // The executable reads its weights from this path at run time, from any
  // working directory. A relative path in a .mlir input is, like the one
  // dtrain-translate records, relative to the current directory.
  if (auto path = (*module)->getAttrOfType<StringAttr>("train.onnx_model"))
    (*module)->setAttr("train.onnx_model",
                       StringAttr::get(&context, makeAbsolute(path)));
  return module;
}

/// Runs dtrain's lowering to the LLVM dialect, with the MLIR pass-manager
/// options of the command line (--mlir-print-ir-after-all, --mlir-timing).
static LogicalResult lowerToLLVMDialect(ModuleOp module) {
  MLIRContext *context = module.getContext();
  // Anchored on the module, so that -v prints a pipeline that
  // mlir-opt --pass-pipeline accepts as is.
  auto pm = PassManager::on<ModuleOp>(context);
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope timing = timingManager.getRootScope();
  pm.enableTiming(timing);
  // A .mlir input may hold the @train_step already.
  if ((mode == Mode::Step || mode == Mode::Train) &&
      !module.lookupSymbol("train_step")) {
    dtrain::train::BuildTrainingOptions options;
    options.loss = lossName;
    options.optimizer = optimizerName;
    options.momentum = momentum;
    options.trustCoefficient = trustCoefficient;
    options.withEval = mode == Mode::Train;
    options.schedule = scheduleName;
    options.stepSize = stepSize;
    options.gamma = decayGamma;
    options.totalSteps = totalSteps;
    options.warmupSteps = warmupSteps;
    options.learningRate = learningRate;
    options.weightDecay = weightDecay;
    pm.addPass(dtrain::train::createBuildTraining(options));
  }
  // PASS with OPTIONS (what the user gave as FLAG='GIVEN'), per function.
  auto addConfigured = [&](std::unique_ptr<Pass> pass,
                           const std::string &options, StringRef flag,
                           const std::string &given) {
    if (failed(pass->initializeOptions(options, [&](const Twine &message) {
          // llvm::cl has printed what is wrong with the value.
          std::string text = message.str();
          return error(flag + " '" + given + "' is not valid" +
                       (text.empty() ? "" : ": ") + text +
                       " (the options of --" + pass->getArgument() +
                       ": dtrain-opt --help)");
        })))
      return failure();
    pm.addNestedPass<func::FuncOp>(std::move(pass));
    return success();
  };
  // Where the user gave both a flag and a pass option that sets the same
  // key, the option would silently win.
  auto givenTwice = [&](const cl::opt<std::string> &owner, StringRef key,
                        const cl::opt<std::string> &options) {
    if (!owner.getNumOccurrences())
      return false;
    SmallVector<StringRef> pairs;
    StringRef(options).split(pairs, ' ', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
    return llvm::any_of(
        pairs, [&](StringRef pair) { return pair.split('=').first == key; });
  };
  for (auto [owner, key, options] :
       {std::tuple(&mergeStrategy, "strategy", &mergeOptions),
        std::tuple(&precision, "compute", &mixedPrecisionOptions),
        std::tuple(&wireType, "wire", &mixedPrecisionOptions),
        std::tuple(&lossScale, "loss-scale", &mixedPrecisionOptions)})
    if (givenTwice(*owner, key, *options))
      return error("--" + options->ArgStr + " sets " + key + "=, which --" +
                   owner->ArgStr + " sets too: give one of them");
  if (isDataParallel()) {
    dtrain::dist::DataParallelOptions options;
    options.schedule = exchangeSchedule;
    pm.addNestedPass<func::FuncOp>(dtrain::dist::createDataParallel(options));
    if ((mergeStrategy != "none" || !mergeOptions.empty()) &&
        failed(addConfigured(dtrain::dist::createMergeGradients(),
                             "strategy=" + mergeStrategy + " " + mergeOptions,
                             "--merge-options", mergeOptions)))
      return failure();
    if (sparsifyOptions.getNumOccurrences() &&
        failed(addConfigured(dtrain::dist::createSparsify(), sparsifyOptions,
                             "--sparsify", sparsifyOptions)))
      return failure();
  }
  if (precision.getNumOccurrences() || wireType.getNumOccurrences() ||
      lossScale.getNumOccurrences() || !mixedPrecisionOptions.empty()) {
    std::string options = "compute=" + precision + " wire=" + wireType +
                          " loss-scale=" + lossScale + " " +
                          mixedPrecisionOptions;
    if (failed(addConfigured(dtrain::dist::createMixedPrecision(), options,
                             "--mixed-precision-options", options)))
      return failure();
  }
  if (channelsLast)
    pm.addNestedPass<func::FuncOp>(dtrain::lower::createChannelsLast());
  if (target == Target::CUDA) {
    dtrain::lower::LowerToNVVMOptions options;
    options.chip = gpuArch;
    options.features = gpuFeatures;
    LogicalResult resolved =
        dtrain::lower::resolveNVPTXTarget(options, [](const Twine &message) {
          (void)error("--gpu-arch/--gpu-features: " + message);
        });
    if (failed(resolved))
      return failure();
    resolved =
        dtrain::lower::resolveCUDAToolkit(options, [](const Twine &message) {
          (void)error("--target=cuda: " + message);
        });
    if (failed(resolved))
      return failure();
    dtrain::lower::buildLowerToNVVMPipeline(pm, options);
  } else {
    dtrain::lower::LowerToLLVMOptions options;
    options.cudaLoops = cudaLoops == CUDALoops::Forward;
    options.cudaLoopsReversed = cudaLoops == CUDALoops::Reverse;
    options.exactMath = exactMath;
    dtrain::lower::buildLowerToLLVMPipeline(pm, options);
  }
  if (verbose) {
    llvm::errs() << kToolName << ": pipeline: ";
    pm.printAsTextualPipeline(llvm::errs());
    llvm::errs() << "\n";
  }

  // A pass may fail without a diagnostic: then say at least which step.
  bool reportedError = false;
  ScopedDiagnosticHandler errorSeen(context, [&](Diagnostic &diagnostic) {
    reportedError |= diagnostic.getSeverity() == DiagnosticSeverity::Error;
    return failure(); // also print it, through the SourceMgr handler
  });
  if (succeeded(pm.run(module)))
    return success();
  if (!reportedError)
    (void)error("lowering to the LLVM dialect failed");
  return failure();
}

/// A target machine for the host triple and the CPU of --mcpu.
static std::unique_ptr<llvm::TargetMachine> createTargetMachine() {
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string message;
  const llvm::Target *llvmTarget =
      llvm::TargetRegistry::lookupTarget(triple, message);
  if (!llvmTarget) {
    (void)error("no LLVM target for " + triple.str() + ": " + message);
    return nullptr;
  }
  std::string cpu = mcpu;
  llvm::SubtargetFeatures features;
  if (cpu == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features.AddFeature(feature.getKey(), feature.getValue());
  } else {
    std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
        llvmTarget->createMCSubtargetInfo(triple, "", ""));
    if (!subtarget->isCPUStringValid(cpu)) {
      (void)error("unknown CPU '" + cpu + "' for " + triple.str() +
                  " (--mcpu takes 'native' or an LLVM CPU name)");
      return nullptr;
    }
  }
  static constexpr llvm::CodeGenOptLevel codeGenLevels[] = {
      llvm::CodeGenOptLevel::None, llvm::CodeGenOptLevel::Less,
      llvm::CodeGenOptLevel::Default, llvm::CodeGenOptLevel::Aggressive};
  // Position-independent: the C compiler driver links PIE executables by
  // default. On x86-64 the medium code model (-mcmodel=medium): a large
  // model's buffer arena (resnet50's training step at batch 32: 2.7 GB)
  // goes to .lbss, addressed with 64-bit offsets, where the small model's
  // 32-bit ones cannot reach past 2 GB and the link fails.
  std::optional<llvm::CodeModel::Model> codeModel;
  if (triple.getArch() == llvm::Triple::x86_64)
    codeModel = llvm::CodeModel::Medium;
  return std::unique_ptr<llvm::TargetMachine>(llvmTarget->createTargetMachine(
      triple, cpu, features.getString(), llvm::TargetOptions(),
      llvm::Reloc::PIC_, codeModel, codeGenLevels[optLevel]));
}

/// Moves each top-level loop of MODULE's functions into a function of its
/// own, never inlined. A model's step is one function of every loop nest
/// in it, and LLVM's loop passes (IndVarSimplify, LoopVectorize) and code
/// generation take more than linear time in a function's size:
/// densenet121's forward (96,000 lines of optimized IR) compiled in 29 s,
/// in 9 s with its 717 loops outlined; its trainer in 71 s, then 26 s. The
/// steps run as fast (resnet18, mobilenet_v2 and densenet121 on the CPU).
static void outlineLoops(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::StringSet<> before;
  for (llvm::Function &function : module)
    before.insert(function.getName());
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  llvm::ModulePassManager passes;
  passes.addPass(llvm::LoopExtractorPass());
  passes.run(module, modules);
  for (llvm::Function &function : module)
    if (!function.isDeclaration() && !before.contains(function.getName()))
      function.addFnAttr(llvm::Attribute::NoInline);
}

static LogicalResult emitObject(llvm::TargetMachine &machine,
                                llvm::Module &module,
                                llvm::raw_pwrite_stream &os) {
  llvm::legacy::PassManager codeGen;
  if (machine.addPassesToEmitFile(codeGen, os, nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return error("the target cannot emit object files");
  codeGen.run(module);
  return success();
}

/// Links `object` into the executable `output` with the C compiler driver.
static LogicalResult link(StringRef cc, StringRef object, StringRef rtDir) {
  std::string libraryDir = ("-L" + rtDir).str();
  std::string rpath = ("-Wl,-rpath," + rtDir).str();
  SmallVector<StringRef> args = {
      cc,    object, "-o", outputFilename, libraryDir, "-ldtrain_runtime",
      rpath, "-lm"};
  if (target == Target::CUDA)
    args.push_back("-ldtrain_runtime_cuda");
  if (cudaLoops != CUDALoops::None)
    args.push_back("-ldtrain_runtime_cuda_loops");
  if (verbose) {
    llvm::errs() << kToolName << ": link:";
    for (StringRef arg : args) {
      llvm::errs() << " ";
      llvm::sys::printArg(llvm::errs(), arg,
                          /*Quote=*/arg.find_first_of(" \t\"'\\$") !=
                              StringRef::npos);
    }
    llvm::errs() << "\n";
  }
  std::string message;
  bool executionFailed = false;
  int status = llvm::sys::ExecuteAndWait(cc, args, std::nullopt, {}, 0, 0,
                                         &message, &executionFailed);
  if (executionFailed)
    return error("cannot run the C compiler '" + cc + "': " + message);
  if (status != 0)
    return error("linking '" + outputFilename + "' failed (" + cc +
                 " exited with status " + llvm::Twine(status) + ")");
  return success();
}

static LogicalResult compile(const char *argv0) {
  if (!isDataParallel() && (mergeStrategy != "none" || !mergeOptions.empty()))
    return error("--merge needs --data-parallel (a trainer's default)");
  if (!isDataParallel() && sparsifyOptions.getNumOccurrences())
    return error("--sparsify needs --data-parallel (a trainer's default)");
  if (!isDataParallel() && wireType.getNumOccurrences())
    return error("--wire needs --data-parallel (a trainer's default)");
  if (mode == Mode::Infer && lossScale.getNumOccurrences())
    return error("--loss-scale needs --mode=train or --mode=step (a forward "
                 "pass has no backward pass to scale)");
  if (target != Target::CUDA &&
      (gpuArch.getNumOccurrences() || gpuFeatures.getNumOccurrences()))
    return error("--gpu-arch and --gpu-features need --target=cuda");
  if (!cudaLoopsOrder.getNumOccurrences())
    cudaLoops = CUDALoops::None;
  else if (cudaLoopsOrder.empty() || cudaLoopsOrder == "forward")
    cudaLoops = CUDALoops::Forward;
  else if (cudaLoopsOrder == "reverse")
    cudaLoops = CUDALoops::Reverse;
  else
    return error("--cuda-loops=" + cudaLoopsOrder +
                 " is not valid (accepted: forward, reverse, or no value for "
                 "forward)");
  if (target == Target::CUDA && cudaLoops != CUDALoops::None)
    return error("--cuda-loops is for --target=cpu: --target=cuda runs these "
                 "loops as GPU kernels");
  if (target == Target::CUDA && exactMath)
    return error("--exact-math is for --target=cpu: --target=cuda's kernels "
                 "call libdevice's functions");
  if (isDataParallel() && mode == Mode::Infer)
    return error("--data-parallel needs --mode=train or --mode=step (a "
                 "forward pass has no gradients to average)");

  // Find the linker's inputs before the (long) compilation.
  std::string rtDir, cc;
  if (emit == Emit::Exe) {
    if (outputFilename == "-")
      return error("cannot write an executable to stdout; give -o FILE or "
                   "another --emit");
    // The linker writes it only after the whole compilation.
    StringRef directory = llvm::sys::path::parent_path(outputFilename);
    if (directory.empty())
      directory = ".";
    if (llvm::sys::fs::is_directory(outputFilename))
      return error("cannot write the executable '" + outputFilename +
                   "': it is a directory");
    if (llvm::sys::fs::access(directory, llvm::sys::fs::AccessMode::Write))
      return error("cannot write the executable '" + outputFilename +
                   "': no writable directory '" + directory + "'");
    FailureOr<std::string> dir = findRuntimeDir(argv0);
    if (failed(dir))
      return failure();
    FailureOr<std::string> compiler = findCCompiler();
    if (failed(compiler))
      return failure();
    rtDir = *dir;
    cc = *compiler;
  }

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  dtrain::registerAllDialects(registry);
  // The host's translation, and the kernels' (gpu-module-to-binary).
  registerAllGPUToLLVMIRTranslations(registry);
  MLIRContext context(registry);
  // Diagnostics are for users of models: no IR dump attached to each (for
  // an error on the module, the whole model) unless asked for.
  if (!cl::getRegisteredOptions()
           .lookup("mlir-print-op-on-diagnostic")
           ->getNumOccurrences())
    context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  OwningOpRef<ModuleOp> module = loadModule(context, sourceMgr);
  if (!module || failed(lowerToLLVMDialect(*module)))
    return failure();

  std::string message;
  std::unique_ptr<llvm::ToolOutputFile> output;
  if (emit != Emit::Exe) {
    output = openOutputFile(outputFilename, &message);
    if (!output)
      return error(message);
  }
  if (emit == Emit::MLIR) {
    module->print(output->os());
    output->keep();
    return success();
  }

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::unique_ptr<llvm::TargetMachine> machine = createTargetMachine();
  if (!machine)
    return failure();
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmContext, inputFilename);
  if (!llvmModule)
    return error("cannot translate the lowered module to LLVM IR");
  llvmModule->setTargetTriple(machine->getTargetTriple());
  llvmModule->setDataLayout(machine->createDataLayout());
  // The CPU goes into the IR as well, so that --emit=llvm output means the
  // same to other LLVM tools.
  for (llvm::Function &function : *llvmModule) {
    if (function.isDeclaration())
      continue;
    function.addFnAttr("target-cpu", machine->getTargetCPU());
    if (!machine->getTargetFeatureString().empty())
      function.addFnAttr("target-features", machine->getTargetFeatureString());
  }
  if (optLevel > 0)
    outlineLoops(*llvmModule, *machine);
  if (llvm::Error err = makeOptimizingTransformer(
          optLevel, /*sizeLevel=*/0, machine.get())(llvmModule.get()))
    return error("optimizing LLVM IR failed: " +
                 llvm::toString(std::move(err)));

  if (emit == Emit::LLVM) {
    llvmModule->print(output->os(), nullptr);
    output->keep();
    return success();
  }
  if (emit == Emit::Obj) {
    if (failed(emitObject(*machine, *llvmModule, output->os())))
      return failure();
    output->keep();
    return success();
  }

  // --emit=exe: a temporary object, linked, then removed.
  int fd;
  SmallString<128> objectPath;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "dtrain-compile", "o", fd, objectPath))
    return error("cannot create a temporary object file: " + ec.message());
  llvm::FileRemover removeObject(objectPath);
  {
    llvm::raw_fd_ostream object(fd, /*shouldClose=*/true);
    if (failed(emitObject(*machine, *llvmModule, object)))
      return failure();
    object.close();
    if (object.has_error())
      return error("cannot write '" + objectPath +
                   "': " + object.error().message());
  }
  return link(cc, objectPath, rtDir);
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // The lowering pipeline is built from its textual form: every pass it
  // names must be registered.
  registerAllPasses();
  dtrain::registerAllPasses();
  registerOptionsInCategory(dtrain::registerONNXImportCLOptions,
                            importCategory);
  registerOptionsInCategory(
      [] {
        registerMLIRContextCLOptions();
        registerPassManagerCLOptions();
        registerAsmPrinterCLOptions();
        registerDefaultTimingManagerCLOptions();
      },
      mlirCategory);
  cl::HideUnrelatedOptions({&compileCategory, &importCategory, &mlirCategory});
  cl::ParseCommandLineOptions(argc, argv, kOverview);
  return succeeded(compile(argv[0])) ? EXIT_SUCCESS : EXIT_FAILURE;
}
