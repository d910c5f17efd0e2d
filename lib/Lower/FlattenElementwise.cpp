//===- FlattenElementwise.cpp - elementwise loop nests as one loop --------===//
//
// Implements --dtrain-flatten-elementwise. An elementwise linalg.generic on
// an N x C x H x W buffer becomes four nested loops whose innermost one
// runs over W only (28 iterations for LeNet), and LLVM then vectorizes it
// poorly (gathers across an outer dimension). When every operand is read
// and written in the same row-major order, the nest is one loop over all
// elements: this pass collapses such generics to one dimension.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_FLATTENELEMENTWISE
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

/// All dims of OP as one group, when OP is a parallel generic on contiguous
/// buffers whose operands all follow its iteration order; else none.
static SmallVector<ReassociationIndices>
getFlattenableDims(linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || !generic.hasPureBufferSemantics() ||
      generic.getNumLoops() < 2 ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return {};
  for (OpOperand &operand : generic->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type || !type.getLayout().isIdentity() ||
        !generic.getMatchingIndexingMap(&operand).isIdentity())
      return {};
  }
  ReassociationIndices all;
  for (int64_t d = 0, e = generic.getNumLoops(); d < e; ++d)
    all.push_back(d);
  return {all};
}

namespace {
struct FlattenElementwisePass
    : dtrain::lower::impl::FlattenElementwiseBase<FlattenElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateCollapseDimensions(patterns, getFlattenableDims);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
