//===- ParallelLoops.cpp - what the GPU loop passes ask of a loop ---------===//

#include "ParallelLoops.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

std::optional<SmallVector<int64_t>>
mlir::dtrain::lower::getKernelTripCounts(scf::ParallelOp loop) {
  if (loop.getNumResults() != 0 || loop->getParentOfType<scf::ParallelOp>())
    return std::nullopt;
  SmallVector<int64_t> counts;
  for (unsigned d = 0, e = loop.getNumLoops(); d < e; ++d) {
    std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound()[d]);
    if (!isConstantIntValue(loop.getLowerBound()[d], 0) ||
        !isConstantIntValue(loop.getStep()[d], 1) || !upper)
      return std::nullopt;
    counts.push_back(*upper);
  }
  return counts;
}

std::optional<int64_t>
mlir::dtrain::lower::getKernelTripCount(scf::ParallelOp loop) {
  std::optional<SmallVector<int64_t>> counts = getKernelTripCounts(loop);
  if (!counts || counts->size() != 1)
    return std::nullopt;
  return counts->front();
}

std::optional<int64_t>
mlir::dtrain::lower::getStaticTripCount(Value lower, Value upper, Value step) {
  std::optional<int64_t> from = getConstantIntValue(lower);
  std::optional<int64_t> to = getConstantIntValue(upper);
  std::optional<int64_t> by = getConstantIntValue(step);
  if (!from || !to || !by || *by <= 0)
    return std::nullopt;
  return *to > *from ? llvm::divideCeil(*to - *from, *by) : 0;
}

std::optional<int64_t>
mlir::dtrain::lower::getStaticTripCount(scf::ParallelOp loop, unsigned dim) {
  return getStaticTripCount(loop.getLowerBound()[dim],
                            loop.getUpperBound()[dim], loop.getStep()[dim]);
}

Value mlir::dtrain::lower::getViewedBuffer(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  Operation *def = memref.getDefiningOp();
  if (def &&
      isa<memref::AllocOp, memref::AllocaOp, UnrealizedConversionCastOp>(def))
    return memref;
  return {};
}

bool mlir::dtrain::lower::forEachNestedBufferAccess(
    Operation *op,
    llvm::function_ref<bool(Operation *, const MemoryEffects::EffectInstance &,
                            Value)>
        visit) {
  WalkResult walk = op->walk([&](Operation *nested) {
    if (nested == op || nested->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto effecting = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!effecting)
      return WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> effects;
    effecting.getEffects(effects);
    for (const MemoryEffects::EffectInstance &effect : effects) {
      Value buffer =
          effect.getValue() ? getViewedBuffer(effect.getValue()) : Value();
      if (!buffer || !visit(nested, effect, buffer))
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return !walk.wasInterrupted();
}

std::optional<mlir::dtrain::lower::BufferAccesses>
mlir::dtrain::lower::getNestedBufferAccesses(Operation *op) {
  BufferAccesses accesses;
  bool known = forEachNestedBufferAccess(
      op, [&](Operation *, const MemoryEffects::EffectInstance &effect,
              Value buffer) {
        if (isa<MemoryEffects::Read>(effect.getEffect()))
          accesses.reads.insert(buffer);
        else if (isa<MemoryEffects::Write>(effect.getEffect()))
          accesses.writes.insert(buffer);
        else
          return false;
        return true;
      });
  if (!known)
    return std::nullopt;
  return accesses;
}
