//===- Passes.h - Lower phase passes ----------------------------*- C++ -*-===//

#ifndef DTRAIN_LOWER_PASSES_H
#define DTRAIN_LOWER_PASSES_H

#include "dtrain_rt.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dtrain::lower {

/// All-reduce implementations of the runtime, with the runtime's codes.
enum class AllReduceAlgorithm : int32_t {
  Default = DTRAIN_RT_ALLREDUCE_DEFAULT,
  Mpi = DTRAIN_RT_ALLREDUCE_MPI,
  Ring = DTRAIN_RT_ALLREDUCE_RING,
};

/// The unit attribute of a runtime function that enqueues its device work on
/// the step stream and returns without waiting for it (the CUDA heavy-op
/// kernels): --dtrain-chain-gpu-launches keeps such calls in a chain.
inline constexpr llvm::StringLiteral kStepStreamAttrName = "dtrain.step_stream";

/// The unit attribute of a runtime function that needs no wait for the
/// kernels queued on the step stream: it touches no buffer they may use,
/// or has its accesses wait for them itself (the runtime's collectives,
/// through its buffer fence). --dtrain-chain-gpu-launches calls it without
/// ending the open chain.
inline constexpr llvm::StringLiteral kStreamIndependentAttrName =
    "dtrain.stream_independent";

/// The unit attribute of a runtime function that, across one rank, does no
/// device work and touches no buffer (the communicator's queries, dense
/// all-reduces, waits): a step whose other host code only queues work may
/// then be replayed as a CUDA graph (--dtrain-register-graph-steps).
inline constexpr llvm::StringLiteral kInertOnOneRankAttrName =
    "dtrain.inert_on_one_rank";

#define GEN_PASS_DECL
#include "dtrain/Lower/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dtrain/Lower/Passes.h.inc"

} // namespace mlir::dtrain::lower

#endif // DTRAIN_LOWER_PASSES_H
