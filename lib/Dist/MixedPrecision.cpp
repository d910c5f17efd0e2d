//===- MixedPrecision.cpp - 16-bit gradient exchanges ---------------------===//
//
// Implements --dtrain-mixed-precision: each dense gradient exchange of a step
// travels in a 16-bit float type (rounded where the gradient is produced,
// widened back to f32 before the optimizer), halving its bytes.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Dist/Passes.h"

#include "dtrain/Dialect/Comm/IR/CommOps.h"
#include "dtrain/Dist/CostModel.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

namespace mlir::dtrain::dist {
#define GEN_PASS_DEF_MIXEDPRECISION
#include "dtrain/Dist/Passes.h.inc"
} // namespace mlir::dtrain::dist

using namespace mlir;
using namespace mlir::dtrain;

namespace {

struct MixedPrecisionPass
    : public dist::impl::MixedPrecisionBase<MixedPrecisionPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    if (wire == "bf16")
      wireType = BFloat16Type::get(context);
    else if (wire == "f16")
      wireType = Float16Type::get(context);
    else if (wire != "f32")
      return emitError(UnknownLoc::get(context))
             << "--dtrain-mixed-precision: wire '" << wire
             << "' is not valid (accepted: bf16, f16, f32)";
    return success();
  }

  void runOnOperation() override;

private:
  /// The 16-bit type of the exchanges, or null to leave them f32.
  FloatType wireType;
};

} // namespace

void MixedPrecisionPass::runOnOperation() {
  if (!wireType)
    return;
  // The dense gradient exchanges: f32 tensor sums and means with one wait,
  // whose result the step does not return (the averaged loss stays exact).
  struct Pair {
    comm::AllReduceStartOp start;
    comm::WaitOp wait;
  };
  SmallVector<Pair> pairs;
  getOperation().walk([&](comm::AllReduceStartOp start) {
    auto type = dyn_cast<RankedTensorType>(start.getInput().getType());
    if (!type || !type.getElementType().isF32() ||
        start.getReduction() == comm::ReductionKind::max ||
        !start.getRequest().hasOneUse())
      return;
    auto wait = dyn_cast<comm::WaitOp>(*start.getRequest().getUsers().begin());
    if (!wait || !wait.getResult() || dist::feedsReturn(wait.getResult()))
      return;
    pairs.push_back({start, wait});
  });

  OpBuilder b(&getContext());
  for (auto [start, wait] : pairs) {
    auto type = cast<RankedTensorType>(start.getInput().getType());
    RankedTensorType narrowType = type.clone(wireType);
    b.setInsertionPoint(start);
    Value narrow =
        arith::TruncFOp::create(b, start.getLoc(), narrowType, start.getInput());
    auto narrowStart = comm::AllReduceStartOp::create(
        b, start.getLoc(), start.getRequest().getType(), narrowType,
        start.getReductionAttr(), narrow, start.getCommunicator());
    b.setInsertionPoint(wait);
    auto narrowWait =
        comm::WaitOp::create(b, wait.getLoc(), narrowType,
                             narrowStart.getRequest(), narrowStart.getInflight());
    Value wide =
        arith::ExtFOp::create(b, wait.getLoc(), type, narrowWait.getResult());
    wait.getResult().replaceAllUsesWith(wide);
    wait.erase();
    start.erase();
  }
}
