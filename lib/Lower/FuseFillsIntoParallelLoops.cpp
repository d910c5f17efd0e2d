//===- FuseFillsIntoParallelLoops.cpp - fills as a loop's first store -----===//
//
// Implements --dtrain-fuse-fills-into-parallel-loops: a parallel loop that
// stores one value into every element of a buffer (a reduction's initial
// value, linalg.fill's loop) becomes the first store of each iteration of
// the parallel loop over the same range that next touches the buffer, where
// each iteration touches only its own element: one kernel fewer on the GPU
// path.
//
//===----------------------------------------------------------------------===//

#include "ParallelLoops.h"
#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_FUSEFILLSINTOPARALLELLOOPS
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

/// LOOP's store when LOOP is a fill: its body one memref.store, at its
/// induction variables, of a value from above into a known buffer.
static memref::StoreOp getFillStore(scf::ParallelOp loop) {
  Block *body = loop.getBody();
  if (loop.getNumResults() != 0 || body->getOperations().size() != 2)
    return {};
  auto store = dyn_cast<memref::StoreOp>(body->front());
  if (!store || store.getIndices() != loop.getInductionVars() ||
      !loop.isDefinedOutsideOfLoop(store.getValueToStore()) ||
      !loop.isDefinedOutsideOfLoop(store.getMemRef()) ||
      !dtrain::lower::getViewedBuffer(store.getMemRef()))
    return {};
  return store;
}

/// Whether A and B run over the same range: equal constant bounds and steps.
static bool haveSameRange(scf::ParallelOp a, scf::ParallelOp b) {
  if (a.getNumLoops() != b.getNumLoops())
    return false;
  for (unsigned dim = 0; dim < a.getNumLoops(); ++dim) {
    std::optional<int64_t> aCount = dtrain::lower::getStaticTripCount(a, dim);
    if (!aCount || aCount != dtrain::lower::getStaticTripCount(b, dim) ||
        getConstantIntValue(a.getLowerBound()[dim]) !=
            getConstantIntValue(b.getLowerBound()[dim]) ||
        getConstantIntValue(a.getStep()[dim]) !=
            getConstantIntValue(b.getStep()[dim]))
      return false;
  }
  return true;
}

/// Whether each iteration of LOOP touches only its own element of the
/// buffer that FILL stores to: every access of that buffer in LOOP loads or
/// stores FILL's memref at LOOP's induction variables, and every other
/// access is of a known buffer (which cannot be that one).
static bool touchesOwnElementOnly(scf::ParallelOp loop, memref::StoreOp fill) {
  Value buffer = dtrain::lower::getViewedBuffer(fill.getMemRef());
  auto atOwnElement = [&](Value memref, ValueRange indices) {
    return memref == fill.getMemRef() && indices == loop.getInductionVars();
  };
  return dtrain::lower::forEachNestedBufferAccess(
      loop,
      [&](Operation *op, const MemoryEffects::EffectInstance &, Value touched) {
        if (touched != buffer)
          return true;
        if (auto load = dyn_cast<memref::LoadOp>(op))
          return atOwnElement(load.getMemRef(), load.getIndices());
        if (auto store = dyn_cast<memref::StoreOp>(op))
          return atOwnElement(store.getMemRef(), store.getIndices());
        return false;
      });
}

/// The parallel loop that FILL's loop may move into: the first op after it
/// that touches its buffer, when that is a loop over the same range whose
/// iterations touch only their own elements. Ops before it must be known
/// not to touch the buffer.
static scf::ParallelOp getConsumer(scf::ParallelOp fillLoop,
                                   memref::StoreOp fill) {
  Value buffer = dtrain::lower::getViewedBuffer(fill.getMemRef());
  for (Operation *op = fillLoop->getNextNode(); op; op = op->getNextNode()) {
    if (isMemoryEffectFree(op) || isa<memref::AllocOp>(op))
      continue;
    auto loop = dyn_cast<scf::ParallelOp>(op);
    if (!loop)
      return {};
    std::optional<dtrain::lower::BufferAccesses> accesses =
        dtrain::lower::getNestedBufferAccesses(loop);
    if (!accesses)
      return {};
    if (!accesses->touches(buffer))
      continue;
    if (!haveSameRange(fillLoop, loop) || !touchesOwnElementOnly(loop, fill))
      return {};
    return loop;
  }
  return {};
}

namespace {
struct FuseFillsIntoParallelLoopsPass
    : dtrain::lower::impl::FuseFillsIntoParallelLoopsBase<
          FuseFillsIntoParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<scf::ParallelOp> loops;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>())
        loops.push_back(loop);
    });
    for (scf::ParallelOp fillLoop : loops) {
      memref::StoreOp fill = getFillStore(fillLoop);
      if (!fill)
        continue;
      scf::ParallelOp consumer = getConsumer(fillLoop, fill);
      if (!consumer)
        continue;
      IRMapping mapping;
      mapping.map(fillLoop.getInductionVars(), consumer.getInductionVars());
      OpBuilder b = OpBuilder::atBlockBegin(consumer.getBody());
      b.clone(*fill, mapping);
      fillLoop.erase();
    }
  }
};
} // namespace
