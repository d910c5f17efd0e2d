//===- AsyncCollectives.cpp - start/wait pairs for overlap ----------------===//
//
// Implements --dtrain-async-collectives: each blocking all-reduce on a tensor
// becomes a start where it was and a wait just before its first use, so that
// the work in between overlaps the communication.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Dist/Passes.h"

#include "dtrain/Dialect/Comm/IR/CommOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::dtrain::dist {
#define GEN_PASS_DEF_ASYNCCOLLECTIVES
#include "dtrain/Dist/Passes.h.inc"
} // namespace mlir::dtrain::dist

using namespace mlir;
using namespace mlir::dtrain;
using namespace mlir::dtrain::comm;

/// The op of `block` before which the wait for `value` must be placed: the
/// earliest op that uses it, directly or inside its regions, or the
/// terminator when nothing in the block uses it.
static Operation *findWaitPoint(Value value, Block *block) {
  Operation *earliest = block->getTerminator();
  for (Operation *user : value.getUsers()) {
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (inBlock && inBlock->isBeforeInBlock(earliest))
      earliest = inBlock;
  }
  return earliest;
}

namespace {
struct AsyncCollectivesPass
    : public dist::impl::AsyncCollectivesBase<AsyncCollectivesPass> {
  void runOnOperation() override {
    SmallVector<AllReduceOp> blocking;
    getOperation().walk([&](AllReduceOp op) {
      if (!op.hasBufferSemantics())
        blocking.push_back(op);
    });

    IRRewriter rewriter(&getContext());
    for (AllReduceOp op : blocking) {
      Operation *waitPoint = findWaitPoint(op.getResult(), op->getBlock());
      rewriter.setInsertionPoint(op);
      auto start = AllReduceStartOp::create(
          rewriter, op.getLoc(), rewriter.getType<RequestType>(),
          op.getResult().getType(), op.getReductionAttr(), op.getInput(),
          op.getCommunicator());
      rewriter.setInsertionPoint(waitPoint);
      auto wait =
          WaitOp::create(rewriter, op.getLoc(), op.getResult().getType(),
                         start.getRequest(), start.getInflight());
      rewriter.replaceOp(op, wait.getResult());
    }
  }
};
} // namespace
