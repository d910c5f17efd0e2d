//===- TileParallelLoopsForGPU.cpp - blocks and threads of loop nests -----===//
//
// Implements --dtrain-tile-parallel-loops-for-gpu: each outermost
// scf.parallel becomes a loop of blocks around a loop of `threads` threads
// along its innermost dimension, which gpu-map-parallel-loops then maps to
// a launch whose warps read consecutive elements.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_TILEPARALLELLOOPSFORGPU
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

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
    SmallVector<scf::ParallelOp> outermost;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>())
        outermost.push_back(loop);
    });
    for (scf::ParallelOp loop : outermost) {
      SmallVector<int64_t> tileSizes(loop.getNumLoops(), 1);
      tileSizes.back() = threads;
      scf::tileParallelLoop(loop, tileSizes, /*noMinMaxBounds=*/true);
    }
  }
};
} // namespace
