//===- ParallelLoops.h - what the GPU loop passes ask of a loop -*- C++ -*-===//
//
// The shape of scf.parallel loops that the passes preparing kernels
// (--dtrain-fuse-fills-into-parallel-loops,
// --dtrain-fuse-sibling-parallel-loops, --dtrain-vectorize-parallel-loops,
// --dtrain-tile-parallel-loops-for-gpu) rewrite or check
// (--dtrain-check-parallel-stores), and the buffers they access.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_LIB_LOWER_PARALLELLOOPS_H
#define DTRAIN_LIB_LOWER_PARALLELLOOPS_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <optional>

namespace mlir::dtrain::lower {

/// LOOP's trip counts, one a dimension, when it is a kernel's nest:
/// outermost, each dimension from 0 to a constant in steps of 1, without
/// results.
std::optional<SmallVector<int64_t>> getKernelTripCounts(scf::ParallelOp loop);

/// LOOP's trip count when it is a kernel's loop over one range: a 1-D nest
/// of getKernelTripCounts.
std::optional<int64_t> getKernelTripCount(scf::ParallelOp loop);

/// The trip count of a loop from LOWER to UPPER by STEP where all three are
/// constants and STEP is positive.
std::optional<int64_t> getStaticTripCount(Value lower, Value upper, Value step);

/// The trip count of LOOP's dimension DIM where its bounds and step are
/// constants.
std::optional<int64_t> getStaticTripCount(scf::ParallelOp loop, unsigned dim);

/// The buffer that MEMREF views: through view-like ops to a memref.alloc
/// or memref.alloca, or to an unrealized cast (a compiled model's slot,
/// which --dtrain-emit-model-entry makes of the buffer table); else null.
/// Distinct allocations, and distinct slots, are distinct buffers: the one
/// buffer that the runtime passes for a parameter and for its updated
/// output (dtrain_rt.h) is reached through the parameter's slot alone
/// (--dtrain-emit-model-entry does not load the output's).
Value getViewedBuffer(Value memref);

/// The buffers (see getViewedBuffer) that the ops nested in an op read and
/// write.
struct BufferAccesses {
  llvm::SmallPtrSet<Value, 4> reads, writes;

  /// Whether they read or write BUFFER.
  bool touches(Value buffer) const {
    return reads.contains(buffer) || writes.contains(buffer);
  }
};

/// Calls VISIT with each memory effect of the ops nested in OP, the op and
/// the buffer it touches. False where an op's effects are unknown, an
/// effect's value is not a view of a known buffer, or VISIT returns false.
bool forEachNestedBufferAccess(
    Operation *op,
    llvm::function_ref<bool(Operation *, const MemoryEffects::EffectInstance &,
                            Value buffer)>
        visit);

/// The accesses of the ops nested in OP, when their only memory effects
/// are reads and writes of known buffers (scalar and vector loads and
/// stores).
std::optional<BufferAccesses> getNestedBufferAccesses(Operation *op);

} // namespace mlir::dtrain::lower

#endif // DTRAIN_LIB_LOWER_PARALLELLOOPS_H
