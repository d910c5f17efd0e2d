//===- Pipelines.cpp - Lower phase pass pipelines -------------------------===//

#include "dtrain/Lower/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;

/// The pipeline in textual form, so that `dtrain-compile -v` and
/// `--dtrain-lower-to-llvm` show exactly what runs.
static constexpr llvm::StringLiteral kLowerToLLVMPipeline =
    // The model ABI around @forward, then one function holding the model.
    "dtrain-emit-model-entry,inline,symbol-dce,"
    // nn to linalg on tensors and kernel calls; elementwise chains fused
    // into single loop nests before buffers exist. No CSE before
    // bufferization: a kernel's operand is read through the
    // `bufferization.to_buffer` just before its call, and merging two of
    // them would move the second call's read past in-place writes that
    // bufferization cannot see.
    "dtrain-lower-nn,convert-elementwise-to-linalg,canonicalize,"
    "linalg-fuse-elementwise-ops,canonicalize,"
    // Buffers: in place where possible, the rest in one static arena;
    // whatever the arena cannot take is freed by the deallocation pipeline.
    "eliminate-empty-tensors,one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "canonicalize,cse,dtrain-elide-slot-copies,dtrain-plan-buffers,"
    "buffer-deallocation-pipeline,"
    "convert-bufferization-to-memref,dtrain-lower-comm-to-runtime,"
    "dtrain-lower-strided-copies,dtrain-flatten-elementwise,"
    // Loops and LLVM.
    "convert-linalg-to-loops,expand-strided-metadata,lower-affine,"
    "convert-scf-to-cf,canonicalize,cse,finalize-memref-to-llvm,"
    "convert-math-to-llvm,convert-math-to-libm,convert-to-llvm,"
    "reconcile-unrealized-casts,canonicalize,cse";

void mlir::dtrain::lower::buildLowerToLLVMPipeline(OpPassManager &pm) {
  if (failed(parsePassPipeline(kLowerToLLVMPipeline, pm)))
    llvm::report_fatal_error("dtrain: the built-in lowering pipeline does "
                             "not parse");
}

void mlir::dtrain::lower::registerLowerToLLVMPipeline() {
  PassPipelineRegistration<>(
      "dtrain-lower-to-llvm",
      "Lower a module with func.func @forward on tensors to the LLVM dialect, "
      "with the compiled-model ABI of dtrain_rt.h (what dtrain-compile runs)",
      buildLowerToLLVMPipeline);
}
