//===- TileParallelLoopsForGPU.cpp - blocks and threads of loop nests -----===//
//
// Implements --dtrain-tile-parallel-loops-for-gpu: each outermost
// scf.parallel becomes a loop of blocks around a loop of `threads` threads
// along its innermost dimension, which gpu-map-parallel-loops then maps to
// a launch whose warps read consecutive elements. A loop that would map
// badly is made one dimension first: gpu-map-parallel-loops gives
// processors to the first three dimensions only (a fourth, the tiled one,
// would run sequentially in one thread a block), and an innermost
// dimension shorter than a block leaves most of each block idle.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "ParallelLoops.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

#include <numeric>

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_TILEPARALLELLOOPSFORGPU
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

/// Whether LOOP maps better to a launch as one dimension (see the file
/// comment): it has more than three, or an innermost one of fewer than
/// THREADS iterations. Not for a loop with results, which collapsing does
/// not carry.
static bool isBetterCollapsed(scf::ParallelOp loop, int64_t threads) {
  const unsigned dims = loop.getNumLoops();
  if (dims < 2 || loop.getNumResults() != 0)
    return false;
  if (dims > 3)
    return true;
  std::optional<int64_t> innermost =
      dtrain::lower::getStaticTripCount(loop, dims - 1);
  return innermost && *innermost < threads;
}

namespace {
struct TileParallelLoopsForGPUPass
    : dtrain::lower::impl::TileParallelLoopsForGPUBase<
          TileParallelLoopsForGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    if (threads < 1) {
      getOperation().emitError("--dtrain-tile-parallel-loops-for-gpu: "
                               "threads must be at least 1");
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    for (scf::ParallelOp loop : getOutermostLoops()) {
      if (!isBetterCollapsed(loop, threads))
        continue;
      std::vector<unsigned> all(loop.getNumLoops());
      std::iota(all.begin(), all.end(), 0u);
      rewriter.setInsertionPoint(loop);
      collapseParallelLoops(rewriter, loop, {all});
    }
    for (scf::ParallelOp loop : getOutermostLoops()) {
      SmallVector<int64_t> tileSizes(loop.getNumLoops(), 1);
      tileSizes.back() = threads;
      scf::tileParallelLoop(loop, tileSizes, /*noMinMaxBounds=*/true);
    }
  }

  SmallVector<scf::ParallelOp> getOutermostLoops() {
    SmallVector<scf::ParallelOp> outermost;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>())
        outermost.push_back(loop);
    });
    return outermost;
  }
};
} // namespace
