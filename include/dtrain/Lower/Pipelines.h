//===- Pipelines.h - Lower phase pass pipelines -----------------*- C++ -*-===//
//
// The pipelines that take a model (func.func @forward on tensors, or a
// training step) to the LLVM dialect: for the host CPU, and for CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_LOWER_PIPELINES_H
#define DTRAIN_LOWER_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir::dtrain::lower {

/// The options of --dtrain-lower-to-llvm.
struct LowerToLLVMOptions : public PassPipelineOptions<LowerToLLVMOptions> {
  PassOptions::Option<bool> cudaLoops{
      *this, "cuda-loops",
      llvm::cl::desc(
          "Place the buffers and transform the loop nests as "
          "--dtrain-lower-to-nvvm does for its kernels, and run them on the "
          "CPU one iteration after another, "
          "with its heavy-op calls (dtrain_rt_cuda_*, which "
          "libdtrain_runtime_cuda_loops runs on the CPU): checks what the "
          "CUDA target's kernels compute without a GPU"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> cudaLoopsReversed{
      *this, "cuda-loops-reversed",
      llvm::cl::desc("The loop nests of cuda-loops, each parallel loop's "
                     "iterations in reverse order "
                     "(--dtrain-reverse-parallel-loops): a result that "
                     "depends on the order in which a kernel's threads run "
                     "differs from the run in order"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> exactMath{
      *this, "exact-math",
      llvm::cl::desc("Call libm for f32 erf, exp and tanh, one element "
                     "at a time, rather than computing them with "
                     "vectorizable polynomials (--dtrain-approximate-math)"),
      llvm::cl::init(false)};
};

/// The options of --dtrain-lower-to-nvvm.
struct LowerToNVVMOptions : public PassPipelineOptions<LowerToNVVMOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("GPU architecture (default sm_90)"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features, e.g. +ptx86 (default: +ptx81 up to "
                     "sm_90a, the least PTX version the chip needs after)"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit whose ptxas compiles the kernels "
                     "(default: $CUDA_HOME, else the one found when dtrain "
                     "was configured)"),
      llvm::cl::init("")};
};

/// Checks OPTIONS' chip and features against LLVM's NVPTX target, and
/// reports an unknown one through REPORT (the kernels' compilation would
/// fail on it, once for each kernel). Empty features become +ptx81 up to
/// sm_90a (PTX 8.1: kernels of up to 32764 bytes of parameters), and for
/// newer chips stay empty: the least PTX version the chip needs.
LogicalResult
resolveNVPTXTarget(LowerToNVVMOptions &options,
                   llvm::function_ref<void(const llvm::Twine &)> report);

/// Sets OPTIONS' toolkit to the one the kernels' compilation will use (the
/// option, else $CUDA_HOME, else the toolkit found when dtrain was built),
/// and checks that it is a directory with libdevice, and that ptxas and
/// fatbinary are in its bin/ or on PATH; reports what is missing through
/// REPORT (the compilation would fail on it, once for each kernel).
LogicalResult
resolveCUDAToolkit(LowerToNVVMOptions &options,
                   llvm::function_ref<void(const llvm::Twine &)> report);

/// The textual pipelines (for -v and for tests).
std::string getLowerToLLVMPipeline(const LowerToLLVMOptions &options);
std::string getLowerToNVVMPipeline(const LowerToNVVMOptions &options);

void buildLowerToLLVMPipeline(OpPassManager &pm,
                              const LowerToLLVMOptions &options);
void buildLowerToNVVMPipeline(OpPassManager &pm,
                              const LowerToNVVMOptions &options);

void registerLowerPipelines();

} // namespace mlir::dtrain::lower

#endif // DTRAIN_LOWER_PIPELINES_H
