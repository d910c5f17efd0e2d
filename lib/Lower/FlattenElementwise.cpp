//===- FlattenElementwise.cpp - elementwise loop nests as one loop --------===//
//
// Implements --dtrain-flatten-elementwise. An elementwise linalg.generic on
// an N x C x H x W buffer becomes four nested loops whose innermost one
// runs over W only (28 iterations for LeNet), and LLVM then vectorizes it
// poorly (gathers across an outer dimension). When every operand is read
// and written in the same row-major order, the nest is one loop over all
// elements, and a sum over N, H and W can run over H and W as one
// contiguous dimension: this pass collapses such runs of loops.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_FLATTENELEMENTWISE
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

/// The runs of adjacent loops of OP with the same iterator type that every
/// operand indexes as one contiguous run too (all of an elementwise op's
/// loops; the H and W of a sum over N, H and W), when OP is a generic on
/// contiguous buffers indexed by projected permutations; else none.
static SmallVector<ReassociationIndices>
getFlattenableDims(linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || !generic.hasPureBufferSemantics())
    return {};
  for (OpOperand &operand : generic->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    // Contiguous buffers: the identity layout, or a view into a larger
    // buffer that is still one row-major run (a gradient's slice of a
    // merged bucket). Projected permutations only: a broadcast's constant
    // index would not survive the collapse.
    if (!type ||
        !(type.getLayout().isIdentity() ||
          memref::isStaticShapeAndContiguousRowMajor(type)) ||
        !generic.getMatchingIndexingMap(&operand).isProjectedPermutation())
      return {};
  }
  SmallVector<utils::IteratorType> iterators =
      generic.getIteratorTypesArray();
  SmallVector<ReassociationIndices> runs;
  for (int64_t d = 0, e = iterators.size(); d < e; ++d) {
    if (d > 0 && iterators[d] == iterators[d - 1])
      runs.back().push_back(d);
    else
      runs.push_back({d});
  }
  SmallVector<ReassociationIndices> merged;
  for (ReassociationIndices &run : runs)
    if (run.size() > 1)
      merged.push_back(run);
  if (merged.empty() ||
      !linalg::areDimSequencesPreserved(generic.getIndexingMapsArray(),
                                        merged))
    return {};
  return merged;
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
