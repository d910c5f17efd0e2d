//===- AddUnitParallelLoop.cpp - scalar work as one-thread kernels --------===//
//
// Implements --dtrain-add-unit-parallel-loop: a short linalg.generic with
// no parallel loop gets a leading parallel loop of one iteration, so that
// the CUDA lowering makes it a kernel of one thread rather than host code
// that waits for the kernels and pulls their pages to the host.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_ADDUNITPARALLELLOOP
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

/// Whether OP (on buffers) has no parallel loop, scalar outputs and at most
/// MAXITERATIONS iterations, all of static extent.
static bool isShortSerialGeneric(linalg::GenericOp op, int64_t maxIterations) {
  if (!op.hasPureBufferSemantics() || op.getNumParallelLoops() != 0)
    return false;
  for (Value output : op.getDpsInits()) {
    auto type = dyn_cast<MemRefType>(output.getType());
    if (!type || type.getRank() != 0 || !type.getLayout().isIdentity())
      return false;
  }
  int64_t iterations = 1;
  for (int64_t extent : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(extent) || extent > maxIterations)
      return false;
    iterations *= extent;
    if (iterations > maxIterations)
      return false;
  }
  return true;
}

/// OP with a leading parallel loop of one iteration: its scalar outputs
/// viewed as one-element buffers indexed by it, every other map ignoring
/// it, and its linalg.index ops shifted past it.
static void addUnitParallelLoop(RewriterBase &rewriter, linalg::GenericOp op) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  SmallVector<Value> outputs;
  for (Value output : op.getDpsInits()) {
    auto type = cast<MemRefType>(output.getType());
    outputs.push_back(memref::ExpandShapeOp::create(
        rewriter, loc, MemRefType::get({1}, type.getElementType()), output,
        ArrayRef<ReassociationIndices>{}));
  }
  MLIRContext *ctx = op.getContext();
  const unsigned loops = op.getNumLoops() + 1;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands())
    maps.push_back(op.getMatchingIndexingMap(input).shiftDims(1));
  for (size_t i = 0; i < outputs.size(); ++i)
    maps.push_back(AffineMap::get(loops, 0, getAffineDimExpr(0, ctx)));
  SmallVector<utils::IteratorType> iterators = {utils::IteratorType::parallel};
  llvm::append_range(iterators, op.getIteratorTypesArray());
  auto unit = linalg::GenericOp::create(rewriter, loc, TypeRange(),
                                        op.getDpsInputs(), outputs, maps,
                                        iterators);
  rewriter.inlineRegionBefore(op.getRegion(), unit.getRegion(),
                              unit.getRegion().begin());
  unit.walk([&](linalg::IndexOp index) {
    index.setDim(index.getDim() + 1);
  });
  rewriter.eraseOp(op);
}

namespace {
struct AddUnitParallelLoopPass
    : dtrain::lower::impl::AddUnitParallelLoopBase<AddUnitParallelLoopPass> {
  using Base::Base;

  void runOnOperation() override {
    if (maxIterations < 1) {
      getOperation().emitError("--dtrain-add-unit-parallel-loop: "
                               "max-iterations must be at least 1");
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    // Scalar fills become generics first.
    SmallVector<linalg::FillOp> fills;
    getOperation().walk([&](linalg::FillOp fill) {
      auto type = dyn_cast<MemRefType>(fill.getDpsInits()[0].getType());
      if (type && type.getRank() == 0)
        fills.push_back(fill);
    });
    for (linalg::FillOp fill : fills) {
      rewriter.setInsertionPoint(fill);
      if (failed(linalg::generalizeNamedOp(rewriter, fill))) {
        fill.emitError("--dtrain-add-unit-parallel-loop: cannot generalize "
                       "this fill");
        return signalPassFailure();
      }
    }
    SmallVector<linalg::GenericOp> serial;
    getOperation().walk([&](linalg::GenericOp op) {
      if (isShortSerialGeneric(op, maxIterations))
        serial.push_back(op);
    });
    for (linalg::GenericOp op : serial)
      addUnitParallelLoop(rewriter, op);
  }
};
} // namespace
