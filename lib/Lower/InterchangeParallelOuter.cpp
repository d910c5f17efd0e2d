//===- InterchangeParallelOuter.cpp - reductions inside parallel loops ----===//
//
// Implements --dtrain-interchange-parallel-outer: the loops of each
// linalg.generic reordered so that its parallel dimensions come first,
// which makes its reductions run inside the GPU kernel of its parallel
// loops rather than around its launches.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_INTERCHANGEPARALLELOUTER
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

/// The interchange vector of OP (new loop i is old loop result[i]) that
/// puts its parallel loops first, each kind in its order; empty when they
/// are first already.
static SmallVector<unsigned> getParallelFirst(linalg::GenericOp op) {
  SmallVector<unsigned> parallel, reduction;
  for (auto [index, type] : llvm::enumerate(op.getIteratorTypesArray()))
    (type == utils::IteratorType::parallel ? parallel : reduction)
        .push_back(unsigned(index));
  SmallVector<unsigned> order = parallel;
  llvm::append_range(order, reduction);
  for (auto [position, loop] : llvm::enumerate(order))
    if (position != loop)
      return order;
  return {};
}

namespace {
struct InterchangeParallelOuterPass
    : dtrain::lower::impl::InterchangeParallelOuterBase<
          InterchangeParallelOuterPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : generics) {
      SmallVector<unsigned> order = getParallelFirst(op);
      if (order.empty())
        continue;
      rewriter.setInsertionPoint(op);
      if (failed(linalg::interchangeGenericOp(rewriter, op, order))) {
        op.emitError("--dtrain-interchange-parallel-outer: cannot "
                     "interchange the loops of this op");
        return signalPassFailure();
      }
    }
  }
};
} // namespace
