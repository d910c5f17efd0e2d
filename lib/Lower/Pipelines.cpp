//===- Pipelines.cpp - Lower phase pass pipelines -------------------------===//

#include "dtrain/Lower/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>

using namespace mlir;

// The pipelines in textual form, so that `dtrain-compile -v` and
// `dtrain-opt --dtrain-lower-to-llvm` show exactly what runs.

/// Both targets: the model ABI, nn lowered, buffers.
static constexpr llvm::StringLiteral kLowerToBuffers =
    // The model ABI around @forward, then one function holding the model.
    "dtrain-emit-model-entry{target=%s},inline,symbol-dce,"
    // nn to linalg on tensors and kernel calls; elementwise chains fused
    // into single loop nests before buffers exist. No CSE before
    // bufferization: a kernel's operand is read through the
    // `bufferization.to_buffer` just before its call, and merging two of
    // them would move the second call's read past in-place writes that
    // bufferization cannot see. Then the target's own tensor passes.
    "dtrain-lower-nn{target=%s},%sconvert-elementwise-to-linalg,canonicalize,"
    "linalg-fuse-elementwise-ops,canonicalize,"
    // Buffers: in place where possible.
    "eliminate-empty-tensors,one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "canonicalize,cse,dtrain-elide-slot-copies,";

/// Both targets, after the buffers are placed: deallocation, runtime calls.
/// The CUDA target's loop nests copy contiguous buffers too (a kernel,
/// where a host memcpy would wait for the GPU): %s is the copies' option.
static constexpr llvm::StringLiteral kLowerBuffers =
    "buffer-deallocation-pipeline,"
    "convert-bufferization-to-memref,dtrain-lower-comm-to-runtime,"
    "dtrain-lower-strided-copies%s,dtrain-flatten-elementwise,";

/// The CPU: the buffers in one static arena where possible; loops, the
/// large ones run on the runtime's threads (their stores checked first for
/// a race between iterations); f32 math functions approximated (%s:
/// dtrain-approximate-math, left out with exact-math); LLVM.
static constexpr llvm::StringLiteral kCPUPlacement = "dtrain-plan-buffers,";
static constexpr llvm::StringLiteral kCPULoops =
    "convert-linalg-to-parallel-loops,func.func(dtrain-check-parallel-stores),"
    "dtrain-outline-parallel-loops,%s"
    "expand-strided-metadata,lower-affine,"
    "convert-scf-to-cf,canonicalize,cse,finalize-memref-to-llvm,"
    "convert-math-to-llvm,convert-math-to-libm,convert-to-llvm,"
    "reconcile-unrealized-casts,canonicalize,cse";

/// The CUDA target's loop transformations, after the buffers are lowered:
/// every loop nest an scf.parallel whose parallel dimensions are outermost
/// (serial work given a parallel loop); then the fills of reductions'
/// outputs moved into the reductions, element-wise nests given 16 bytes
/// of vectors an iteration, runs of independent 1-D nests merged,
/// the innermost dimension tiled by 256 (a block's threads).
/// The CPU runs the same nests with `cuda-loops` (one iteration after
/// another), which checks what the kernels compute without a GPU, and
/// checks the parallel loops' stores before their shapes change.
static constexpr llvm::StringLiteral kCUDAParallelLoops =
    "func.func(dtrain-parallelize-serial-generics,"
    "dtrain-interchange-parallel-outer),"
    "convert-linalg-to-parallel-loops,";
static constexpr llvm::StringLiteral kCUDAKernelShapes =
    "func.func(dtrain-fuse-fills-into-parallel-loops,"
    "dtrain-vectorize-parallel-loops,"
    "dtrain-fuse-sibling-parallel-loops{max-parameter-bytes=%s},"
    "dtrain-tile-parallel-loops-for-gpu),";

/// The PTX features of chips up to sm_90a where none are given: PTX 8.1
/// targets them all, and lets a kernel take 32764 bytes of parameters
/// (ptxas refuses more than 4352 with 8.0).
static constexpr llvm::StringLiteral kDefaultPTXFeatures = "+ptx81";

/// The number of CHIP, sm_NN[a]: NN.
static std::optional<unsigned> getSMVersion(llvm::StringRef chip) {
  unsigned sm = 0;
  if (!chip.consume_front("sm_") ||
      chip.take_while(llvm::isDigit).getAsInteger(10, sm))
    return std::nullopt;
  return sm;
}

/// The most bytes of buffers and values that a merged loop's kernel may take
/// as parameters for CHIP with FEATURES (resolved: see resolveNVPTXTarget),
/// 256 below ptxas's limit: 32764 bytes from PTX 8.1 on sm_70 and newer,
/// which a newer chip than sm_90a always needs, else 4352.
static int64_t getKernelParameterBudget(llvm::StringRef chip,
                                        llvm::StringRef features) {
  std::optional<unsigned> sm = getSMVersion(chip);
  if (!sm)
    return 4352 - 256;
  unsigned ptx = *sm > 90 ? 86 : 0;
  llvm::SmallVector<llvm::StringRef> items;
  features.split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    unsigned version = 0;
    if (item.consume_front("+ptx") && !item.getAsInteger(10, version))
      ptx = std::max(ptx, version);
  }
  return (ptx >= 81 && *sm >= 70 ? 32764 : 4352) - 256;
}

/// CUDA: every loop nest a kernel, outlined into gpu.modules compiled to a
/// fatbin for CHIP with FEATURES, with the constants and index computations
/// it uses sunk into it (its launch sizes made constants first): a kernel
/// takes only its buffers as parameters, and knows its sizes; the host's
/// allocations through MLIR's generic allocation functions, which
/// libdtrain_runtime_cuda defines over managed memory, and constant globals
/// copied into such buffers, so that kernels reach every buffer. Launches and
/// heavy-op kernels are queued on one stream, which the host waits for only
/// before its own code that touches memory (after the last canonicalization:
/// see dtrain-chain-gpu-launches); @main tells the runtime which run
/// functions CUDA graphs may replay (dtrain-register-graph-steps).
static constexpr llvm::StringLiteral kCUDAPlacement =
    "func.func(dtrain-copy-constant-globals),";
static constexpr llvm::StringLiteral kCUDAKernels =
    "func.func(gpu-map-parallel-loops),"
    "convert-parallel-loops-to-gpu,canonicalize,"
    "gpu-launch-sink-index-computations,"
    "gpu-kernel-outlining,canonicalize,cse,"
    "nvvm-attach-target{chip=%s features=%s},"
    "convert-linalg-to-loops,expand-strided-metadata,lower-affine,"
    "convert-scf-to-cf,canonicalize,cse,dtrain-chain-gpu-launches,"
    "dtrain-register-graph-steps,"
    "gpu.module(convert-gpu-to-nvvm,canonicalize,cse,"
    "reconcile-unrealized-casts),"
    "finalize-memref-to-llvm{use-generic-functions=true},"
    "convert-math-to-llvm,convert-math-to-libm,convert-func-to-llvm,"
    "convert-arith-to-llvm,convert-index-to-llvm,convert-cf-to-llvm,"
    "gpu-to-llvm,gpu-module-to-binary{format=fatbin toolkit=%s},"
    "reconcile-unrealized-casts,canonicalize,cse";

static void addPipeline(OpPassManager &pm, const std::string &pipeline) {
  if (failed(parsePassPipeline(pipeline, pm)))
    llvm::report_fatal_error("dtrain: the built-in lowering pipeline does "
                             "not parse");
}

static std::string format(llvm::StringLiteral text,
                          std::initializer_list<llvm::StringRef> values) {
  std::string result;
  auto value = values.begin();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 1 < text.size() && text[i + 1] == 's') {
      result += *value++;
      ++i;
    } else {
      result += text[i];
    }
  }
  return result;
}

/// kLowerBuffers for the CPU's loops or (CUDA_LOOPS) the CUDA target's.
static std::string lowerBuffers(bool cudaLoops) {
  return format(kLowerBuffers, {cudaLoops ? "{contiguous=true}" : ""});
}

/// kCUDAKernelShapes for kernels of CHIP with FEATURES.
static std::string getKernelShapes(llvm::StringRef chip,
                                   llvm::StringRef features) {
  return format(kCUDAKernelShapes,
                {std::to_string(getKernelParameterBudget(chip, features))});
}

/// kLowerToBuffers for the model ABI's TARGET (cpu, cuda) and the kernels
/// of KERNELS (--dtrain-lower-nn's: cpu, cuda). With CUDA_LOOPS, the
/// scalar code on 0-d tensors goes into generics too, which become
/// one-thread kernels rather than host code that waits for the kernels.
static std::string lowerToBuffers(llvm::StringRef target,
                                  llvm::StringRef kernels, bool cudaLoops) {
  return format(kLowerToBuffers,
                {target, kernels,
                 cudaLoops ? "func.func(dtrain-scalar-code-to-linalg)," : ""});
}

std::string
mlir::dtrain::lower::getLowerToLLVMPipeline(const LowerToLLVMOptions &options) {
  const bool cudaLoops = options.cudaLoops || options.cudaLoopsReversed;
  // The CUDA target's kernel calls too, which libdtrain_runtime_cuda_loops
  // runs on the CPU's kernels, and its buffers, each allocation one of its
  // own rather than a view of the CPU's arena: the loop passes follow
  // accesses to allocations, and transform the nests as they do there.
  return lowerToBuffers("cpu", cudaLoops ? "cuda" : "cpu", cudaLoops) +
         (cudaLoops ? lowerBuffers(true) + kCUDAPlacement.str()
                    : kCPUPlacement.str() + lowerBuffers(false)) +
         (cudaLoops ? kCUDAParallelLoops.str() +
                          "func.func(dtrain-check-parallel-stores)," +
                          getKernelShapes(LowerToNVVMOptions().chip.getValue(),
                                          kDefaultPTXFeatures)
                    : "") +
         (options.cudaLoopsReversed
              ? "func.func(dtrain-reverse-parallel-loops),"
              : "") +
         format(kCPULoops,
                {options.exactMath ? "" : "dtrain-approximate-math,"});
}

/// The toolkit for ptxas: the option, else $CUDA_HOME, else the one CMake
/// found; with where it came from, for messages.
static std::pair<std::string, llvm::StringRef>
getCUDAToolkit(const dtrain::lower::LowerToNVVMOptions &options) {
  if (!options.toolkit.empty())
    return {options.toolkit, "toolkit="};
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    return {home, "$CUDA_HOME"};
#ifdef DTRAIN_CUDA_TOOLKIT_DIR
  return {DTRAIN_CUDA_TOOLKIT_DIR, "the toolkit found when dtrain was built"};
#else
  return {"", ""};
#endif
}

LogicalResult mlir::dtrain::lower::resolveCUDAToolkit(
    LowerToNVVMOptions &options,
    llvm::function_ref<void(const llvm::Twine &)> report) {
  const auto [toolkit, source] = getCUDAToolkit(options);
  const std::string hint =
      ("; give a CUDA toolkit's directory (such as /usr/local/cuda) in " +
       (source == "toolkit=" ? source : "$CUDA_HOME"))
          .str();
  // The kernels' compilation (MLIR's NVVM target) links the toolkit's
  // libdevice and runs its ptxas and fatbinary, else those on PATH.
  if (!toolkit.empty()) {
    if (!llvm::sys::fs::is_directory(toolkit)) {
      report("the CUDA toolkit '" + toolkit + "' (" + source +
             ") is not a directory" + hint);
      return failure();
    }
    llvm::SmallString<256> libdevice(toolkit);
    llvm::sys::path::append(libdevice, "nvvm", "libdevice", "libdevice.10.bc");
    if (!llvm::sys::fs::is_regular_file(libdevice)) {
      report("the CUDA toolkit '" + toolkit + "' (" + source +
             ") has no nvvm/libdevice/libdevice.10.bc" + hint);
      return failure();
    }
  }
  for (llvm::StringRef tool : {"ptxas", "fatbinary"}) {
    llvm::SmallString<256> path(toolkit);
    llvm::sys::path::append(path, "bin", tool);
    if ((!toolkit.empty() && llvm::sys::fs::can_execute(path)) ||
        llvm::sys::Process::FindInEnvPath("PATH", tool))
      continue;
    report(toolkit.empty()
               ? "no CUDA toolkit, and no " + tool + " on PATH" + hint
               : "the CUDA toolkit '" + toolkit + "' (" + source +
                     ") has no bin/" + tool + ", nor has PATH one" + hint);
    return failure();
  }
  options.toolkit = toolkit;
  return success();
}

LogicalResult mlir::dtrain::lower::resolveNVPTXTarget(
    LowerToNVVMOptions &options,
    llvm::function_ref<void(const llvm::Twine &)> report) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTargetMC();
  const llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    report("the LLVM NVPTX target is missing: " + error);
    return failure();
  }
  // The generic processor's subtarget: one of an unknown chip warns on
  // stderr.
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(triple, "", ""));
  const std::string chip = options.chip;
  if (!info->isCPUStringValid(chip)) {
    report("chip '" + chip +
           "' is not a GPU architecture LLVM's NVPTX target knows (e.g. "
           "sm_80, sm_90, sm_100)");
    return failure();
  }
  const std::string features = options.features;
  llvm::SmallVector<llvm::StringRef> items;
  llvm::StringRef(features).split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    llvm::StringRef name = item;
    if (!name.consume_front("+"))
      name.consume_front("-");
    if (llvm::none_of(info->getAllProcessorFeatures(),
                      [&](const llvm::SubtargetFeatureKV &feature) {
                        return name == feature.Key;
                      })) {
      report("feature '" + item +
             "' is not one LLVM's NVPTX target knows (e.g. +ptx80)");
      return failure();
    }
  }
  // A newer chip than sm_90a needs a newer PTX version than the default,
  // which the NVPTX target picks where the features name none.
  std::optional<unsigned> sm = getSMVersion(chip);
  if (features.empty() && sm && *sm <= 90)
    options.features = kDefaultPTXFeatures.str();
  return success();
}

std::string
mlir::dtrain::lower::getLowerToNVVMPipeline(const LowerToNVVMOptions &options) {
  return lowerToBuffers("cuda", "cuda", /*cudaLoops=*/true) +
         lowerBuffers(true) + kCUDAPlacement.str() + kCUDAParallelLoops.str() +
         getKernelShapes(options.chip, options.features) +
         format(kCUDAKernels, {options.chip, options.features,
                               getCUDAToolkit(options).first});
}

void mlir::dtrain::lower::buildLowerToLLVMPipeline(
    OpPassManager &pm, const LowerToLLVMOptions &options) {
  addPipeline(pm, getLowerToLLVMPipeline(options));
}

void mlir::dtrain::lower::buildLowerToNVVMPipeline(
    OpPassManager &pm, const LowerToNVVMOptions &options) {
  addPipeline(pm, getLowerToNVVMPipeline(options));
}

void mlir::dtrain::lower::registerLowerPipelines() {
  PassPipelineRegistration<LowerToLLVMOptions>(
      "dtrain-lower-to-llvm",
      "Lower a module with func.func @forward on tensors to the LLVM dialect, "
      "with the compiled-model ABI of dtrain_rt.h (what dtrain-compile runs)",
      [](OpPassManager &pm, const LowerToLLVMOptions &options) {
        buildLowerToLLVMPipeline(pm, options);
      });
  // Registered by hand, to report an unknown chip or feature before
  // anything compiles.
  registerPassPipeline(
      "dtrain-lower-to-nvvm",
      "The same for --target=cuda: loop nests become GPU kernels, compiled "
      "to a fatbin for `chip`; buffers in CUDA managed memory (what "
      "dtrain-compile --target=cuda runs)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        LowerToNVVMOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        LogicalResult resolved =
            resolveNVPTXTarget(options, [&](const Twine &message) {
              (void)errorHandler("--dtrain-lower-to-nvvm: " + message);
            });
        if (failed(resolved))
          return failure();
        resolved = resolveCUDAToolkit(options, [&](const Twine &message) {
          (void)errorHandler("--dtrain-lower-to-nvvm: " + message);
        });
        if (failed(resolved))
          return failure();
        buildLowerToNVVMPipeline(pm, options);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optionsHandler) {
        optionsHandler(LowerToNVVMOptions());
      });
}
