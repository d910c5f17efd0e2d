//===- DataParallel.cpp - gradient averaging across ranks -----------------===//
//
// Implements --dtrain-data-parallel: synchronous data-parallel SGD. Every
// gradient that an optimizer update consumes, and the reported loss, is
// averaged over the ranks with a comm.all_reduce issued right where the
// value is produced; the
// blocking exchanges are then split into starts and waits
// (--dtrain-async-collectives), so that each overlaps the rest of the
// backward pass (wait-free backpropagation).
//
//===----------------------------------------------------------------------===//

#include "dtrain/Dist/Passes.h"

#include "dtrain/Dialect/Comm/IR/CommOps.h"
#include "dtrain/Dialect/Train/IR/TrainOps.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::dtrain::dist {
#define GEN_PASS_DEF_DATAPARALLEL
#include "dtrain/Dist/Passes.h.inc"
} // namespace mlir::dtrain::dist

using namespace mlir;
using namespace mlir::dtrain;

namespace {
struct DataParallelPass
    : public dist::impl::DataParallelBase<DataParallelPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    if (schedule != "wfbp" && schedule != "after-backward")
      return emitError(UnknownLoc::get(context))
             << "--dtrain-data-parallel: schedule '" << schedule
             << "' is not valid (accepted: wfbp, after-backward)";
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<OpOperand *> grads;
    func.walk([&](Operation *op) {
      if (OpOperand *grad = train::getUpdateGradOperand(op))
        grads.push_back(grad);
    });
    if (grads.empty())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitError("--dtrain-data-parallel needs a single-block step");
      return signalPassFailure();
    }
    Block &body = func.getBody().front();
    OpBuilder b = OpBuilder::atBlockBegin(&body);
    Value world = comm::WorldOp::create(b, func.getLoc(),
                                        b.getType<comm::CommunicatorType>());
    // In the order the gradients are produced (the backward pass runs from
    // the last layer to the first), which every rank shares.
    llvm::sort(grads, [](OpOperand *a, OpOperand *b) {
      Operation *x = a->get().getDefiningOp(), *y = b->get().getDefiningOp();
      if (!x || !y)
        return x == nullptr && y != nullptr;
      return x->isBeforeInBlock(y);
    });
    // after-backward: the exchanges follow the last gradient's producer,
    // each after the previous one.
    Operation *backwardEnd = nullptr;
    if (schedule == "after-backward") {
      backwardEnd = world.getDefiningOp();
      for (OpOperand *grad : grads)
        if (Operation *producer = grad->get().getDefiningOp())
          if (backwardEnd->isBeforeInBlock(producer))
            backwardEnd = producer;
    }
    // VALUE's mean over the ranks, exchanged as soon as VALUE exists, or
    // after AFTER (once per value).
    DenseMap<Value, Value> means;
    auto averaged = [&](Value value, Operation *after) {
      Value &mean = means[value];
      if (!mean) {
        Operation *producer = value.getDefiningOp();
        b.setInsertionPointAfter(after      ? after
                                 : producer ? producer
                                            : world.getDefiningOp());
        mean =
            comm::AllReduceOp::create(b, value.getLoc(), value.getType(),
                                      comm::ReductionKind::mean, value, world)
                .getResult();
      }
      return mean;
    };
    for (OpOperand *grad : grads) {
      Value mean = averaged(grad->get(), backwardEnd);
      if (backwardEnd) {
        backwardEnd = mean.getDefiningOp();
        if (grad->getOwner()->isBeforeInBlock(backwardEnd))
          return (void)(grad->getOwner()->emitError(
                            "--dtrain-data-parallel: schedule=after-backward "
                            "needs every update after the backward pass"),
                        signalPassFailure());
      }
      grad->set(mean);
    }
    // The loss the step reports is the batch's: the mean of the ranks'
    // (equal shards).
    auto returnOp = cast<func::ReturnOp>(body.getTerminator());
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
      auto role = func.getResultAttrOfType<StringAttr>(
          i, train::TrainDialect::kOutputAttrName);
      if (role && role.getValue() == "loss")
        returnOp.setOperand(i, averaged(returnOp.getOperand(i), nullptr));
    }
    OpPassManager overlap(func::FuncOp::getOperationName());
    overlap.addPass(dist::createAsyncCollectives());
    if (failed(runPipeline(overlap, func)))
      return signalPassFailure();
  }
};
} // namespace
