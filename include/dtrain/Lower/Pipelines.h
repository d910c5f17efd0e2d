//===- Pipelines.h - Lower phase pass pipelines -----------------*- C++ -*-===//

#ifndef DTRAIN_LOWER_PIPELINES_H
#define DTRAIN_LOWER_PIPELINES_H

#include "mlir/Pass/PassManager.h"

namespace mlir::dtrain::lower {

/// Lowers a module with one `func.func @forward` on tensors (nn, train and
/// comm ops, as the importer and the Train/Dist passes leave it) to the LLVM
/// dialect: nn to linalg and runtime kernel calls, elementwise fusion,
/// one-shot bufferization, the step's buffers planned into one static arena,
/// then LLVM. The result defines the model ABI of dtrain_rt.h
/// (`dtrain_model_info`, `dtrain_model_run`, `main`), ready for
/// translation to LLVM IR. Every shape must be static. The pipeline names
/// upstream and dtrain passes, so the tool must have registered them
/// (mlir::registerAllPasses and dtrain::registerAllPasses).
void buildLowerToLLVMPipeline(OpPassManager &pm);

/// Registers the pipeline as `--dtrain-lower-to-llvm`.
void registerLowerToLLVMPipeline();

} // namespace mlir::dtrain::lower

#endif // DTRAIN_LOWER_PIPELINES_H
