//===- ReverseParallelLoops.cpp - parallel iterations in reverse order ----===//
//
// Implements --dtrain-reverse-parallel-loops: each scf.parallel runs its
// iterations from the last to the first. A parallel loop promises that its
// iterations may run in any order, as a kernel's threads do; run on the
// CPU both ways (dtrain-compile --cuda-loops=reverse), a result that
// depends on the order (two iterations writing one element, or one reading
// what another writes) differs between the two.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_REVERSEPARALLELLOOPS
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

/// Makes LOOP's body see, for its K-th iteration in each dimension, the
/// index of its K-th from last: lower + last - index, where last is the
/// index of the last iteration, lower + ((upper - lower - 1) / step) * step.
/// The body runs only where upper > lower, so the division is of a value
/// >= 0.
static void reverseIterations(scf::ParallelOp loop) {
  OpBuilder b = OpBuilder::atBlockBegin(loop.getBody());
  Location loc = loop.getLoc();
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  for (auto [index, lower, upper, step] :
       llvm::zip(loop.getInductionVars(), loop.getLowerBound(),
                 loop.getUpperBound(), loop.getStep())) {
    Value span = arith::SubIOp::create(
        b, loc, arith::SubIOp::create(b, loc, upper, lower), one);
    Value lastOffset = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, span, step), step);
    Value ends = arith::AddIOp::create(
        b, loc, arith::AddIOp::create(b, loc, lower, lower), lastOffset);
    auto reversed = arith::SubIOp::create(b, loc, ends, index);
    index.replaceAllUsesExcept(reversed, reversed);
  }
}

namespace {
struct ReverseParallelLoopsPass
    : public mlir::dtrain::lower::impl::ReverseParallelLoopsBase<
          ReverseParallelLoopsPass> {
  void runOnOperation() override { getOperation().walk(reverseIterations); }
};
} // namespace
