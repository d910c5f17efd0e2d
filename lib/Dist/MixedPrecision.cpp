//===- MixedPrecision.cpp - loss scaling and 16-bit gradient exchanges ----===//
//
// Implements --dtrain-mixed-precision on a training step:
//  - loss scaling: the backward pass starts from the scale S, each rank
//    checks its gradients for inf/NaN before they are exchanged, one small
//    all-reduce makes the ranks agree, the optimizer reads the gradients
//    divided by S, and an overflowed step keeps every parameter and state
//    as it was; a dynamic S lives in optimizer state;
//  - 16-bit exchanges: each dense gradient exchange travels in bf16 or f16
//    (rounded where the gradient is produced, widened back to f32 before
//    the optimizer), halving its bytes.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Dist/Passes.h"

#include "dtrain/Dialect/Comm/IR/CommOps.h"
#include "dtrain/Dialect/NN/IR/NNOps.h"
#include "dtrain/Dialect/Train/IR/TrainOps.h"
#include "dtrain/Dist/CostModel.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>
#include <cstdio>

namespace mlir::dtrain::dist {
#define GEN_PASS_DEF_MIXEDPRECISION
#include "dtrain/Dist/Passes.h.inc"
} // namespace mlir::dtrain::dist

using namespace mlir;
using namespace mlir::dtrain;

/// The optimizer-state names of dynamic loss scaling.
static constexpr llvm::StringLiteral kScaleName = "loss_scale";
static constexpr llvm::StringLiteral kCleanStepsName = "loss_scale.clean_steps";
static constexpr llvm::StringLiteral kSkippedStepsName =
    "loss_scale.skipped_steps";

namespace {

struct MixedPrecisionPass
    : public dist::impl::MixedPrecisionBase<MixedPrecisionPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  /// The forward and backward passes of FUNC in computeType, but the ops
  /// of the keep-f32 groups.
  void narrowCompute(func::FuncOp func);
  /// Whether OP computes in f32 under keep-f32.
  bool keepsF32(Operation *op) const;
  /// Loss scaling on FUNC, when it has a backward pass; fails after
  /// reporting an error.
  LogicalResult scaleLoss(func::FuncOp func);
  /// The 16-bit exchanges on FUNC, but AGREEMENT (loss scaling's); with
  /// loss scaling, each f16 result's inf/NaN flag (see nonFiniteFlag) is
  /// appended to POSTFLAGS.
  void narrowExchanges(func::FuncOp func, Operation *agreement,
                       SmallVectorImpl<Value> &postFlags);

  /// The 16-bit type of the exchanges, or null to leave them f32.
  FloatType wireType;
  /// The 16-bit type of the nn ops, or null to leave them f32.
  FloatType computeType;
  /// The keep-f32 groups.
  bool keepBatchNorm = false, keepSoftmax = false, keepLoss = false,
       keepReduce = false;
  enum class Scaling { None, Static, Dynamic } scaling = Scaling::None;
  /// The fixed scale of static:<s>.
  double staticScale = 1;
};

} // namespace

LogicalResult MixedPrecisionPass::initialize(MLIRContext *context) {
  auto error = [&]() {
    return emitError(UnknownLoc::get(context)) << "--dtrain-mixed-precision: ";
  };
  // OPTION's value NAME: a 16-bit type, or null for f32.
  auto parseType = [&](StringRef option, StringRef name,
                       FloatType &type) -> LogicalResult {
    if (name == "bf16")
      type = BFloat16Type::get(context);
    else if (name == "f16")
      type = Float16Type::get(context);
    else if (name != "f32")
      return error() << option << " '" << name
                     << "' is not valid (accepted: bf16, f16, f32)";
    return success();
  };
  if (failed(parseType("wire", wire, wireType)) ||
      failed(parseType("compute", compute, computeType)))
    return failure();
  for (const std::string &group : keepF32) {
    if (group == "batch_norm")
      keepBatchNorm = true;
    else if (group == "softmax")
      keepSoftmax = true;
    else if (group == "loss")
      keepLoss = true;
    else if (group == "reduce")
      keepReduce = true;
    else if (group != "none")
      return error() << "keep-f32 group '" << group
                     << "' is not valid (accepted: batch_norm, softmax, "
                        "loss, reduce, none)";
  }
  if (keepF32.empty())
    keepBatchNorm = keepSoftmax = keepLoss = keepReduce = true;

  StringRef scale = lossScale;
  if (scale == "dynamic") {
    scaling = Scaling::Dynamic;
  } else if (scale.consume_front("static:")) {
    scaling = Scaling::Static;
    if (scale.getAsDouble(staticScale) || !(staticScale > 0) ||
        !std::isfinite(staticScale))
      return error() << "loss-scale=static:" << scale
                     << " needs a finite scale > 0";
  } else if (scale != "none") {
    return error() << "loss-scale '" << lossScale
                   << "' is not valid (accepted: none, dynamic, static:<s>)";
  }
  if (!(initScale > 0) || !std::isfinite(initScale))
    return error() << "init-scale=" << dist::formatShortNumber(initScale)
                   << " must be finite and > 0";
  if (!(growthFactor >= 1) || !std::isfinite(growthFactor))
    return error() << "growth-factor=" << dist::formatShortNumber(growthFactor)
                   << " must be finite and >= 1";
  if (!(backoffFactor > 0 && backoffFactor < 1))
    return error() << "backoff-factor="
                   << dist::formatShortNumber(backoffFactor)
                   << " is not in (0, 1)";
  if (growthInterval < 1)
    return error() << "growth-interval=" << int64_t(growthInterval)
                   << " must be >= 1";
  if (!(minScale > 0) || minScale > initScale)
    return error() << "min-scale=" << dist::formatShortNumber(minScale)
                   << " must be > 0 and at most init-scale";
  return success();
}

/// The exchange of a gradient: a tensor comm.all_reduce_start with one
/// wait whose result the step does not return (the averaged loss), or a
/// sparse one.
static bool isGradientExchange(comm::AllReduceStartOp start) {
  if (!isa<RankedTensorType>(start.getInput().getType()) ||
      !start.getRequest().hasOneUse())
    return false;
  auto wait = dyn_cast<comm::WaitOp>(*start.getRequest().getUsers().begin());
  return wait && wait.getResult() && !dist::feedsReturn(wait.getResult());
}

/// A rank-0 tensor that is NaN when VALUE holds an infinity or a NaN, else
/// 0: the sum of VALUE times 0 (inf * 0 is NaN), one fused reduction.
static Value nonFiniteFlag(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  auto scalarType = RankedTensorType::get({}, type.getElementType());
  Value zero = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(scalarType,
                             b.getFloatAttr(type.getElementType(), 0.0)));
  Value products = nn::MulOp::create(b, loc, value, zero);
  if (type.getRank() == 0)
    return products;
  SmallVector<int64_t> dims =
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  return nn::ReduceSumOp::create(b, loc, products, dims, /*keep_dims=*/false);
}

/// Whether VALUE (a gradient an update reads) is what a sparse exchange
/// returned, or a slice or reshape of it.
static bool comesFromSparseExchange(Value value) {
  while (Operation *op = value.getDefiningOp()) {
    if (isa<comm::SparseWaitOp>(op))
      return true;
    if (!isa<tensor::ExtractSliceOp, tensor::CollapseShapeOp,
             tensor::ExpandShapeOp, arith::ExtFOp>(op))
      return false;
    value = op->getOperand(0);
  }
  return false;
}

LogicalResult MixedPrecisionPass::scaleLoss(func::FuncOp func) {
  SmallVector<train::LossSeedOp> seeds;
  func.walk([&](train::LossSeedOp seed) { seeds.push_back(seed); });
  // A function without a backward pass (an eval step) is left alone.
  if (seeds.empty())
    return success();
  if (seeds.size() != 1)
    return func.emitError("--dtrain-mixed-precision: loss scaling needs a "
                          "step with one backward pass "
                          "(--dtrain-build-training's train.loss_seed), "
                          "found ")
           << seeds.size();
  train::LossSeedOp seed = seeds.front();
  auto scalarType = cast<RankedTensorType>(seed.getType());
  if (!scalarType.getElementType().isF32())
    return seed.emitError("--dtrain-mixed-precision: loss scaling needs an "
                          "f32 loss, not ")
           << scalarType;
  if (!func.getBody().hasOneBlock())
    return func.emitError("--dtrain-mixed-precision needs a single-block step");
  Block &body = func.getBody().front();
  Location loc = func.getLoc();
  MLIRContext *ctx = func.getContext();
  OpBuilder b(ctx);
  auto scalar64Type = RankedTensorType::get({}, b.getI64Type());
  auto extract = [&](Value tensor) -> Value {
    return tensor::ExtractOp::create(b, loc, tensor, ValueRange());
  };
  auto wrap = [&](Value scalar) -> Value {
    return tensor::FromElementsOp::create(
        b, loc, RankedTensorType::get({}, scalar.getType()), scalar);
  };
  auto constantF32 = [&](double value) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  };
  auto constantI64 = [&](int64_t value) -> Value {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(value));
  };

  // The arguments each state result updates, to keep them on a skip: the
  // parameters, optimizer state and rank state, before this pass adds its
  // own.
  llvm::StringMap<BlockArgument> skippable;
  for (BlockArgument arg : func.getArguments())
    for (StringRef role : {train::TrainDialect::kParamAttrName,
                           train::TrainDialect::kOptimizerStateAttrName,
                           train::TrainDialect::kRankStateAttrName})
      if (auto name =
              func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), role))
        skippable[name.getValue()] = arg;

  // The scale S, from the state (0 before the first step) or fixed.
  BlockArgument scaleArg, cleanArg;
  if (scaling == Scaling::Dynamic) {
    scaleArg = train::TrainDialect::insertStateArgument(
        func, scalarType, train::TrainDialect::kOptimizerStateAttrName,
        kScaleName);
    cleanArg = train::TrainDialect::insertStateArgument(
        func, scalar64Type, train::TrainDialect::kOptimizerStateAttrName,
        kCleanStepsName);
  }
  BlockArgument skippedArg = train::TrainDialect::insertStateArgument(
      func, scalar64Type, train::TrainDialect::kOptimizerStateAttrName,
      kSkippedStepsName);
  b.setInsertionPointToStart(&body);
  Value scale;
  if (scaling == Scaling::Dynamic) {
    Value stored = extract(scaleArg);
    Value unset = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                        stored, constantF32(0));
    scale =
        arith::SelectOp::create(b, loc, unset, constantF32(initScale), stored);
  } else {
    scale = constantF32(staticScale);
  }
  Value inverse = wrap(arith::DivFOp::create(b, loc, constantF32(1), scale));
  seed.getResult().replaceAllUsesWith(wrap(scale));
  seed.erase();

  // Each rank's check, on what it is about to exchange (or, without data
  // parallelism, on what the updates read).
  SmallVector<OpOperand *> gradOperands;
  func.walk([&](Operation *op) {
    if (OpOperand *grad = train::getUpdateGradOperand(op))
      gradOperands.push_back(grad);
  });
  SmallVector<std::pair<Operation *, Value>> checked;
  comm::WorldOp world;
  for (Operation &op : body) {
    if (auto w = dyn_cast<comm::WorldOp>(op))
      world = w;
    else if (auto start = dyn_cast<comm::AllReduceStartOp>(op);
             start && isGradientExchange(start))
      checked.push_back({start, start.getInput()});
    else if (auto sparse = dyn_cast<comm::SparseAllReduceStartOp>(op))
      checked.push_back({sparse, sparse.getInput()});
  }
  if (checked.empty())
    for (OpOperand *grad : gradOperands)
      checked.push_back({grad->getOwner(), grad->get()});
  Value flags;
  for (auto [op, value] : checked) {
    b.setInsertionPoint(op);
    Value flag = nonFiniteFlag(b, op->getLoc(), value);
    flags = flags ? nn::AddOp::create(b, op->getLoc(), flags, flag) : flag;
  }
  if (!flags)
    return func.emitError("--dtrain-mixed-precision: loss scaling found no "
                          "gradient in the step");
  // The ranks agree: a NaN anywhere makes the sum NaN everywhere. Started
  // once the last gradient is checked, waited for at the end.
  comm::AllReduceStartOp agreement;
  if (world) {
    b.setInsertionPointAfterValue(flags);
    agreement = comm::AllReduceStartOp::create(
        b, loc, b.getType<comm::RequestType>(), flags.getType(),
        comm::ReductionKind::sum, flags, world);
  }

  // The updates read the gradients divided by S; a sparse exchange's
  // residual keeps true gradients, so its input is divided before.
  for (OpOperand *grad : gradOperands) {
    if (comesFromSparseExchange(grad->get()))
      continue;
    b.setInsertionPoint(grad->getOwner());
    grad->set(
        nn::MulOp::create(b, grad->getOwner()->getLoc(), grad->get(), inverse));
  }
  // The runtime updates a residual in place, but a skipped step returns
  // the old one: the exchange works on a copy.
  func.walk([&](comm::SparseAllReduceStartOp sparse) {
    b.setInsertionPoint(sparse);
    sparse.getInputMutable().assign(
        nn::MulOp::create(b, sparse.getLoc(), sparse.getInput(), inverse));
    sparse.getResidualMutable().assign(bufferization::AllocTensorOp::create(
        b, sparse.getLoc(),
        cast<RankedTensorType>(sparse.getResidual().getType()), ValueRange(),
        sparse.getResidual()));
  });

  // 16-bit results are checked too: an f16 sum can overflow.
  SmallVector<Value> postFlags;
  narrowExchanges(func, agreement, postFlags);

  // At the end: the verdict, the skip of every state, the new scale.
  Operation *terminator = body.getTerminator();
  b.setInsertionPoint(terminator);
  if (agreement)
    flags =
        comm::WaitOp::create(b, loc, flags.getType(), agreement.getRequest(),
                             agreement.getInflight())
            .getResult();
  for (Value flag : postFlags)
    flags = nn::AddOp::create(b, loc, flags, flag);
  Value total = extract(flags);
  Value overflow =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, total, total);
  Value skip = wrap(overflow);
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
    auto name = func.getResultAttrOfType<StringAttr>(
        i, train::TrainDialect::kUpdatedAttrName);
    if (!name || !skippable.contains(name.getValue()))
      continue;
    Value updated = terminator->getOperand(i);
    terminator->setOperand(i, train::SkipUpdateOp::create(
                                  b, loc, updated.getType(), skip,
                                  skippable.lookup(name.getValue()), updated));
  }
  Value skipped = arith::AddIOp::create(
      b, loc, extract(skippedArg),
      arith::SelectOp::create(b, loc, overflow, constantI64(1),
                              constantI64(0)));
  if (scaling == Scaling::Dynamic) {
    // Grow after growthInterval clean steps; back off (to the floor) on an
    // overflow, counting clean steps again from 0.
    Value clean =
        arith::AddIOp::create(b, loc, extract(cleanArg), constantI64(1));
    Value grow = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, clean,
                                       constantI64(growthInterval));
    Value grown = arith::SelectOp::create(
        b, loc, grow,
        arith::MulFOp::create(b, loc, scale, constantF32(growthFactor)), scale);
    Value backedOff = arith::MaximumFOp::create(
        b, loc,
        arith::MulFOp::create(b, loc, scale, constantF32(backoffFactor)),
        constantF32(minScale));
    Value nextScale =
        arith::SelectOp::create(b, loc, overflow, backedOff, grown);
    Value restart = arith::OrIOp::create(b, loc, overflow, grow);
    Value nextClean =
        arith::SelectOp::create(b, loc, restart, constantI64(0), clean);
    train::TrainDialect::appendStateResult(func, wrap(nextScale), kScaleName);
    train::TrainDialect::appendStateResult(func, wrap(nextClean),
                                           kCleanStepsName);
  }
  train::TrainDialect::appendStateResult(func, wrap(skipped),
                                         kSkippedStepsName);
  return success();
}

void MixedPrecisionPass::narrowExchanges(func::FuncOp func,
                                         Operation *agreement,
                                         SmallVectorImpl<Value> &postFlags) {
  if (!wireType)
    return;
  // Sparse exchanges send their values in the wire type (the residual
  // keeps what the rounding drops, and saturation cannot overflow).
  func.walk([&](comm::SparseAllReduceStartOp sparse) {
    sparse.setWireAttr(TypeAttr::get(wireType));
  });
  SmallVector<comm::AllReduceStartOp> starts;
  func.walk([&](comm::AllReduceStartOp start) {
    auto type = dyn_cast<RankedTensorType>(start.getInput().getType());
    if (type && type.getElementType().isF32() &&
        start.getReduction() != comm::ReductionKind::max &&
        start != agreement && isGradientExchange(start))
      starts.push_back(start);
  });
  OpBuilder b(&getContext());
  for (comm::AllReduceStartOp start : starts) {
    auto wait = cast<comm::WaitOp>(*start.getRequest().getUsers().begin());
    auto type = cast<RankedTensorType>(start.getInput().getType());
    RankedTensorType narrowType = type.clone(wireType);
    b.setInsertionPoint(start);
    // A gradient computed in the wire type goes as it is.
    Value narrow;
    if (auto widening = start.getInput().getDefiningOp<nn::CastOp>();
        widening && widening.getInput().getType() == narrowType)
      narrow = widening.getInput();
    else
      narrow = arith::TruncFOp::create(b, start.getLoc(), narrowType,
                                       start.getInput());
    auto narrowStart = comm::AllReduceStartOp::create(
        b, start.getLoc(), start.getRequest().getType(), narrowType,
        start.getReductionAttr(), narrow, start.getCommunicator());
    b.setInsertionPoint(wait);
    auto narrowWait = comm::WaitOp::create(b, wait.getLoc(), narrowType,
                                           narrowStart.getRequest(),
                                           narrowStart.getInflight());
    Value wide =
        arith::ExtFOp::create(b, wait.getLoc(), type, narrowWait.getResult());
    wait.getResult().replaceAllUsesWith(wide);
    if (scaling != Scaling::None && wireType.isF16())
      postFlags.push_back(nonFiniteFlag(b, wait.getLoc(), wide));
    wait.erase();
    start.erase();
  }
}

bool MixedPrecisionPass::keepsF32(Operation *op) const {
  if (isa<nn::BatchNormOp, nn::BatchNormTrainOp, nn::BatchNormTrainGradOp>(op))
    return keepBatchNorm;
  if (isa<nn::SoftmaxOp, nn::LogSoftmaxOp>(op))
    return keepSoftmax;
  if (isa<nn::SoftmaxCrossEntropyOp, nn::SoftmaxCrossEntropyGradOp,
          nn::CountCorrectOp>(op))
    return keepLoss;
  if (isa<nn::ReduceSumOp, nn::ReduceMeanOp>(op))
    return keepReduce;
  return false;
}

/// Whether TYPE is an f32 tensor.
static bool isF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isF32();
}

/// The element-wise nn ops that compute the new values of FUNC's buffers
/// (its train.updated results, such as batch norm's running statistics:
/// running * momentum + batch statistic * (1 - momentum)), up to the ops
/// that are not element-wise arithmetic.
static DenseSet<Operation *> getBufferUpdates(func::FuncOp func) {
  DenseSet<Operation *> updates;
  SmallVector<Value> worklist;
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    if (func.getResultAttr(i, train::TrainDialect::kUpdatedAttrName))
      worklist.push_back(returnOp.getOperand(i));
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val().getDefiningOp();
    if (!isa_and_nonnull<nn::AddOp, nn::SubOp, nn::MulOp, nn::DivOp>(op) ||
        !updates.insert(op).second)
      continue;
    llvm::append_range(worklist, op->getOperands());
  }
  return updates;
}

void MixedPrecisionPass::narrowCompute(func::FuncOp func) {
  if (!computeType || !func.getBody().hasOneBlock())
    return;
  Block &body = func.getBody().front();
  OpBuilder b(func.getContext());
  // A buffer's new value is computed in f32, as a parameter's is (by the
  // optimizer): rounding batch norm's running statistics to 16 bits every
  // step would lose the small updates of their moving average.
  const DenseSet<Operation *> bufferUpdates = getBufferUpdates(func);
  // One cast per value and direction, before the first op that needs it
  // (every later user comes after it in the single block); the function's
  // arguments' (the parameters', the batch's) all at its start, in their
  // users' order, where the GPU path merges them into one kernel
  // (--dtrain-fuse-sibling-parallel-loops): a 16-bit parameter lives until
  // its gradient's convolution or product anyway.
  DenseMap<Value, Value> narrowed, widened;
  DenseSet<Value> narrow; // the results this pass retyped
  Operation *lastArgumentCast = nullptr;
  auto castTo = [&](DenseMap<Value, Value> &cache, Value value, Type element,
                    Operation *user) {
    Value &converted = cache[value];
    if (!converted) {
      const bool isArgument = isa<BlockArgument>(value);
      if (!isArgument)
        b.setInsertionPoint(user);
      else if (lastArgumentCast)
        b.setInsertionPointAfter(lastArgumentCast);
      else
        b.setInsertionPointToStart(&body);
      converted = nn::CastOp::create(
          b, value.getLoc(),
          cast<RankedTensorType>(value.getType()).clone(element), value);
      if (isArgument)
        lastArgumentCast = converted.getDefiningOp();
    }
    return converted;
  };
  Type f32 = Float32Type::get(func.getContext());
  for (Operation &op : llvm::make_early_inc_range(body)) {
    bool computes = isa<nn::NNDialect>(op.getDialect()) &&
                    !isa<nn::CastOp>(op) && !keepsF32(&op) &&
                    !bufferUpdates.contains(&op);
    for (OpOperand &operand : op.getOpOperands()) {
      Value value = operand.get();
      if (computes && isF32Tensor(value.getType()))
        operand.set(castTo(narrowed, value, computeType, &op));
      else if (!computes && narrow.contains(value))
        operand.set(castTo(widened, value, f32, &op));
    }
    if (!computes)
      continue;
    for (OpResult result : op.getResults())
      if (isF32Tensor(result.getType())) {
        result.setType(
            cast<RankedTensorType>(result.getType()).clone(computeType));
        narrow.insert(result);
      }
  }
}

void MixedPrecisionPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  narrowCompute(func);
  if (scaling == Scaling::None) {
    SmallVector<Value> none;
    narrowExchanges(func, nullptr, none);
    return;
  }
  if (failed(scaleLoss(func)))
    signalPassFailure();
}
