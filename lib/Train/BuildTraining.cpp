//===- BuildTraining.cpp - @forward to @train_step ------------------------===//
//
// Implements --dtrain-build-training: appends the loss to the forward pass,
// differentiates it with respect to the parameters (Differentiate.h) and
// updates each parameter with the optimizer.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Train/Passes.h"

#include "dtrain/Dialect/NN/IR/NNOps.h"
#include "dtrain/Dialect/Train/IR/TrainOps.h"
#include "dtrain/Train/Differentiate.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>

namespace mlir::dtrain::train {
#define GEN_PASS_DEF_BUILDTRAINING
#include "dtrain/Train/Passes.h.inc"
} // namespace mlir::dtrain::train

using namespace mlir;
using namespace mlir::dtrain;

/// A new optimizer-state argument NAME of TYPE of FUNC, after its
/// parameters and state.
static Value addState(func::FuncOp func, Type type, StringRef name) {
  return train::TrainDialect::insertStateArgument(
      func, type, train::TrainDialect::kOptimizerStateAttrName, name);
}

namespace {
struct BuildTrainingPass : train::impl::BuildTrainingBase<BuildTrainingPass> {
  using BuildTrainingBase::BuildTrainingBase;

  void runOnOperation() override;

private:
  /// Appends the label argument to FUNC and returns the scalar loss of
  /// OUTPUT against it, built at the end of FUNC's body, and for class
  /// labels the count of correct predictions (else null).
  FailureOr<std::pair<Value, Value>> buildLoss(OpBuilder &b, func::FuncOp func,
                                               Value output);

  /// Turns EVAL, a copy of @forward, into @eval_step(params, buffers,
  /// inputs, labels) -> (loss, correct): batch norm with the running
  /// statistics, no buffer updates.
  LogicalResult buildEvalStep(OpBuilder &b, func::FuncOp eval);

  /// The learning-rate factor of the schedule at STEP (see the .cpp).
  Value buildScheduleScale(OpBuilder &b, Location loc, Value step);
};

/// One value the step returns: a new parameter or state, or the loss.
struct StepResult {
  Value value;
  NamedAttribute role;
};
} // namespace

FailureOr<std::pair<Value, Value>>
BuildTrainingPass::buildLoss(OpBuilder &b, func::FuncOp func, Value output) {
  Location loc = output.getLoc();
  auto outputType = dyn_cast<RankedTensorType>(output.getType());
  auto emitOutputError = [&]() {
    return func.emitError("the model output of type ")
           << output.getType() << " does not fit loss '" << loss << "': ";
  };
  if (!outputType || !outputType.hasStaticShape())
    return emitOutputError() << "a static shape is needed";
  Type labelType;
  if (loss == "softmax-xent") {
    // A label for each row of classes: B x T logits of a language model
    // take B x T labels.
    if (outputType.getRank() < 2)
      return emitOutputError() << "softmax-xent takes logits of rank 2 or "
                                  "more (batch [x positions] x classes)";
    labelType = RankedTensorType::get(outputType.getShape().drop_back(),
                                      b.getI64Type());
  } else {
    labelType = outputType;
  }
  unsigned index = func.getNumArguments();
  if (failed(func.insertArgument(
          index, labelType,
          b.getDictionaryAttr(b.getNamedAttr(
              train::TrainDialect::kLabelAttrName,
              b.getStringAttr(loss == "softmax-xent" ? "labels" : "targets"))),
          loc)))
    return failure();
  Value labels = func.getArgument(index);
  if (loss == "softmax-xent")
    return std::pair<Value, Value>(
        nn::SoftmaxCrossEntropyOp::create(b, loc, output, labels),
        nn::CountCorrectOp::create(b, loc, output, labels));
  // mse: mean((output - targets)^2) over every element.
  Value diff = nn::SubOp::create(b, loc, output, labels);
  Value square = nn::MulOp::create(b, loc, diff, diff);
  SmallVector<int64_t> all =
      llvm::to_vector(llvm::seq<int64_t>(0, outputType.getRank()));
  return std::pair<Value, Value>(
      nn::ReduceMeanOp::create(b, loc, square, all, /*keep_dims=*/false),
      Value());
}

/// The factor of the learning rate at the step whose number (from 1) is
/// STEP, as a rank-0 f32 tensor, or null for a constant rate. With
/// u = STEP - 1 (PyTorch's scheduler count when the step runs), the
/// schedule's factor (step: gamma^floor(u / step_size); cosine:
/// (1 + cos(pi u / total_steps)) / 2) times the linear warm-up's
/// min(1, (u + 1) / warmup_steps).
Value BuildTrainingPass::buildScheduleScale(OpBuilder &b, Location loc,
                                            Value step) {
  if (schedule == "constant" && warmupSteps == 0)
    return nullptr;
  auto scalarType = RankedTensorType::get({}, b.getF32Type());
  auto constant = [&](double value) -> Value {
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(scalarType, b.getF32FloatAttr(float(value))));
  };
  Value u = arith::SubFOp::create(
      b, loc, arith::SIToFPOp::create(b, loc, scalarType, step), constant(1.0));
  Value scale = constant(1.0);
  if (schedule == "step") {
    Value periods = math::FloorOp::create(
        b, loc, arith::DivFOp::create(b, loc, u, constant(double(stepSize))));
    scale = math::PowFOp::create(b, loc, constant(gamma), periods);
  } else if (schedule == "cosine") {
    Value angle =
        arith::MulFOp::create(b, loc, u, constant(M_PI / double(totalSteps)));
    scale = arith::MulFOp::create(
        b, loc,
        arith::AddFOp::create(b, loc, constant(1.0),
                              math::CosOp::create(b, loc, angle)),
        constant(0.5));
  }
  if (warmupSteps > 0) {
    Value ramp = arith::MinimumFOp::create(
        b, loc, constant(1.0),
        arith::DivFOp::create(b, loc,
                              arith::AddFOp::create(b, loc, u, constant(1.0)),
                              constant(double(warmupSteps))));
    scale = arith::MulFOp::create(b, loc, scale, ramp);
  }
  return scale;
}

/// The buffer argument whose running statistic STAT (a batch statistic of
/// nn.batch_norm_train) updates, as the importer builds it:
/// running' = running * momentum + STAT * (1 - momentum).
static BlockArgument findRunningStatistic(func::FuncOp func, Value stat) {
  for (Operation *scale : stat.getUsers()) {
    if (!isa<nn::MulOp>(scale))
      continue;
    for (Operation *mix : scale->getResult(0).getUsers()) {
      if (!isa<nn::AddOp>(mix))
        continue;
      Value other = mix->getOperand(0) == scale->getResult(0)
                        ? mix->getOperand(1)
                        : mix->getOperand(0);
      auto keep = other.getDefiningOp<nn::MulOp>();
      if (!keep)
        continue;
      for (Value operand : keep->getOperands())
        if (auto arg = dyn_cast<BlockArgument>(operand))
          if (func.getArgAttr(arg.getArgNumber(),
                              train::TrainDialect::kBufferAttrName))
            return arg;
    }
  }
  return nullptr;
}

LogicalResult BuildTrainingPass::buildEvalStep(OpBuilder &b,
                                               func::FuncOp eval) {
  eval.setSymName("eval_step");
  Block &body = eval.getBody().front();
  SmallVector<nn::BatchNormTrainOp> norms;
  eval.walk([&](nn::BatchNormTrainOp op) { norms.push_back(op); });
  for (nn::BatchNormTrainOp op : norms) {
    BlockArgument mean = findRunningStatistic(eval, op.getBatchMean());
    BlockArgument var = findRunningStatistic(eval, op.getBatchVar());
    if (!mean || !var)
      return op.emitOpError(
          "has no running statistics among the buffers (train.buffer) for "
          "the evaluation step");
    b.setInsertionPoint(op);
    Value normalized = nn::BatchNormOp::create(
        b, op.getLoc(), op.getInput(), op.getScale(), op.getBias(), mean, var,
        op.getEpsilon(), op.getChannelsLast());
    op.getResult().replaceAllUsesWith(normalized);
  }
  // Only the model output remains; what computed the updates goes.
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  Value output;
  for (unsigned i = 0, e = eval.getNumResults(); i < e; ++i)
    if (!eval.getResultAttr(i, train::TrainDialect::kUpdatedAttrName))
      output = returnOp.getOperand(i);
  b.setInsertionPoint(returnOp);
  FailureOr<std::pair<Value, Value>> lossAndCorrect =
      buildLoss(b, eval, output);
  if (failed(lossAndCorrect))
    return failure();
  auto [loss, correct] = *lossAndCorrect;
  SmallVector<Value> results = {loss};
  SmallVector<DictionaryAttr> attrs = {b.getDictionaryAttr(b.getNamedAttr(
      train::TrainDialect::kOutputAttrName, b.getStringAttr("loss")))};
  if (correct) {
    results.push_back(correct);
    attrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
        train::TrainDialect::kOutputAttrName, b.getStringAttr("correct"))));
  }
  func::ReturnOp::create(b, returnOp.getLoc(), results);
  returnOp.erase();
  eval.setType(FunctionType::get(&getContext(), eval.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
  eval.setAllResultAttrs(attrs);
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isOpTriviallyDead(&op))
      op.erase();
  return success();
}

void BuildTrainingPass::runOnOperation() {
  ModuleOp module = getOperation();
  OpBuilder b(&getContext());
  if (loss != "softmax-xent" && loss != "mse") {
    module.emitError("unknown loss '")
        << loss
        << "' (--dtrain-build-training accepts loss=softmax-xent or "
           "loss=mse)";
    return signalPassFailure();
  }
  if (!llvm::is_contained(
          {"sgd", "momentum", "nesterov", "adam", "adamw", "lars"},
          optimizer)) {
    module.emitError("unknown optimizer '")
        << optimizer
        << "' (--dtrain-build-training accepts optimizer=sgd, momentum, "
           "nesterov, adam, adamw or lars)";
    return signalPassFailure();
  }
  if (!llvm::is_contained({"constant", "step", "cosine"}, schedule)) {
    module.emitError("unknown schedule '")
        << schedule
        << "' (--dtrain-build-training accepts schedule=constant, step or "
           "cosine)";
    return signalPassFailure();
  }
  if ((schedule == "step" && (stepSize < 1 || !(gamma > 0))) ||
      (schedule == "cosine" && totalSteps < 1) || warmupSteps < 0) {
    module.emitError("schedule=step needs step-size >= 1 and gamma > 0, "
                     "schedule=cosine total-steps >= 1, and warmup-steps "
                     "must be >= 0");
    return signalPassFailure();
  }
  if (!(trustCoefficient > 0)) {
    module.emitError("trust-coefficient must be positive, got ")
        << trustCoefficient;
    return signalPassFailure();
  }
  if (!(momentum >= 0) || !(beta1 >= 0 && beta1 < 1) ||
      !(beta2 >= 0 && beta2 < 1) || !(epsilon > 0)) {
    module.emitError("momentum must be >= 0, beta1 and beta2 in [0, 1) and "
                     "epsilon > 0; got momentum=")
        << momentum << " beta1=" << beta1 << " beta2=" << beta2
        << " epsilon=" << epsilon;
    return signalPassFailure();
  }
  if (!(learningRate > 0)) {
    module.emitError("lr must be positive, got ") << learningRate;
    return signalPassFailure();
  }
  if (!(weightDecay >= 0)) {
    module.emitError("weight-decay must be non-negative, got ") << weightDecay;
    return signalPassFailure();
  }
  auto func = module.lookupSymbol<func::FuncOp>("forward");
  if (!func || func.isExternal()) {
    module.emitError("--dtrain-build-training needs a func.func @forward "
                     "with a body (what the ONNX importer produces)");
    return signalPassFailure();
  }
  if (!func.getBody().hasOneBlock()) {
    func.emitError("@forward must have a single block to be differentiated");
    return signalPassFailure();
  }
  // One model output for the loss; the other results are the new values of
  // buffers (train.updated: batch-norm running statistics), which the step
  // returns as they are.
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  Value output;
  SmallVector<StepResult> bufferUpdates;
  unsigned outputs = 0;
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
    if (auto name = func.getResultAttrOfType<StringAttr>(
            i, train::TrainDialect::kUpdatedAttrName)) {
      bufferUpdates.push_back(
          {returnOp.getOperand(i),
           b.getNamedAttr(train::TrainDialect::kUpdatedAttrName, name)});
      continue;
    }
    output = returnOp.getOperand(i);
    ++outputs;
  }
  if (outputs != 1) {
    func.emitError("@forward has ")
        << outputs
        << " model outputs; --dtrain-build-training computes the loss of "
           "exactly one";
    return signalPassFailure();
  }

  if (withEval) {
    auto eval = cast<func::FuncOp>(func->clone());
    module.getBody()->push_back(eval);
    if (failed(buildEvalStep(b, eval)))
      return signalPassFailure();
  }

  SmallVector<Value> params;
  SmallVector<StringAttr> paramNames;
  for (BlockArgument arg : func.getArguments())
    if (auto name = func.getArgAttrOfType<StringAttr>(
            arg.getArgNumber(), train::TrainDialect::kParamAttrName)) {
      params.push_back(arg);
      paramNames.push_back(name);
    }
  if (params.empty()) {
    func.emitError("@forward has no trainable parameters (no argument "
                   "marked train.param): there is nothing to train");
    return signalPassFailure();
  }

  // The step's number, from 1: Adam's bias correction, the schedules and
  // the dropout masks depend on it.
  SmallVector<nn::DropoutOp> dropouts;
  func.walk([&](nn::DropoutOp op) {
    if (!op.getRatio().isZero())
      dropouts.push_back(op);
  });
  Value step;
  auto stepType = RankedTensorType::get({}, b.getI64Type());
  if (optimizer == "adam" || optimizer == "adamw" || schedule != "constant" ||
      warmupSteps > 0 || !dropouts.empty()) {
    Value count = addState(func, stepType, "optimizer.step");
    b.setInsertionPointToStart(&func.getBody().front());
    Value one = arith::ConstantOp::create(
        b, func.getLoc(), DenseElementsAttr::get(stepType, int64_t(1)));
    step = arith::AddIOp::create(b, func.getLoc(), count, one);
  }
  // Dropout in training: INPUT * MASK, with one mask per dropout (its
  // stream) and step, seeded by the trainer (--seed) through "rng.seed".
  if (!dropouts.empty()) {
    Value seed = addState(func, stepType, "rng.seed");
    for (auto [stream, dropout] : llvm::enumerate(dropouts)) {
      b.setInsertionPoint(dropout);
      Value mask = nn::DropoutMaskOp::create(
          b, dropout.getLoc(), dropout.getType(), seed, step,
          dropout.getRatioAttr(), b.getI64IntegerAttr(stream));
      Value masked =
          nn::MulOp::create(b, dropout.getLoc(), dropout.getInput(), mask);
      // The model output itself may be the dropout's.
      if (output == dropout.getResult())
        output = masked;
      dropout.replaceAllUsesWith(masked);
      dropout.erase();
    }
  }

  b.setInsertionPoint(returnOp);
  FailureOr<std::pair<Value, Value>> lossAndCorrect =
      buildLoss(b, func, output);
  if (failed(lossAndCorrect))
    return signalPassFailure();
  auto [lossValue, correct] = *lossAndCorrect;
  // The seed is an op that loss scaling can find (--dtrain-mixed-precision).
  Value seed =
      train::LossSeedOp::create(b, lossValue.getLoc(), lossValue.getType());
  FailureOr<SmallVector<Value>> grads =
      train::buildGradients(b, lossValue, params, seed);
  if (failed(grads))
    return signalPassFailure();

  // The updates: new parameters first, then the new optimizer state.
  auto updated = [&](Value value, StringRef name) {
    return StepResult{value,
                      b.getNamedAttr(train::TrainDialect::kUpdatedAttrName,
                                     b.getStringAttr(name))};
  };
  SmallVector<StepResult> newParams, newState;
  FloatAttr lr = b.getF64FloatAttr(learningRate);
  Value lrScale = buildScheduleScale(b, func.getLoc(), step);
  for (auto [param, grad, nameAttr] :
       llvm::zip_equal(params, *grads, paramNames)) {
    StringRef name = nameAttr.getValue();
    Location loc = param.getLoc();
    Type type = param.getType();
    // Biases and batch-norm parameters are 1-D.
    bool decays = decay1D || cast<RankedTensorType>(type).getRank() != 1;
    FloatAttr decay = b.getF64FloatAttr(decays ? weightDecay : 0.0);
    if (optimizer == "sgd") {
      newParams.push_back(
          updated(train::SGDUpdateOp::create(b, loc, type, param, grad, lrScale,
                                             lr, decay),
                  name));
    } else if (optimizer == "lars" &&
               cast<RankedTensorType>(type).getRank() != 1) {
      std::string stateName = (name + ".momentum_buffer").str();
      Value velocity = addState(func, type, stateName);
      auto update = train::LarsUpdateOp::create(
          b, loc, type, type, param, grad, velocity, lrScale, lr,
          b.getF64FloatAttr(momentum), decay,
          b.getF64FloatAttr(trustCoefficient), b.getF64FloatAttr(0.0));
      newParams.push_back(updated(update.getNewParam(), name));
      newState.push_back(updated(update.getNewVelocity(), stateName));
    } else if (optimizer == "momentum" || optimizer == "nesterov" ||
               optimizer == "lars") {
      // LARS leaves 1-D parameters (biases, batch norm) to momentum SGD.
      std::string stateName = (name + ".momentum_buffer").str();
      Value velocity = addState(func, type, stateName);
      auto update = train::MomentumUpdateOp::create(
          b, loc, type, type, param, grad, velocity, lrScale, lr,
          b.getF64FloatAttr(momentum), decay,
          optimizer == "nesterov" ? b.getUnitAttr() : UnitAttr());
      newParams.push_back(updated(update.getNewParam(), name));
      newState.push_back(updated(update.getNewVelocity(), stateName));
    } else {
      std::string avgName = (name + ".exp_avg").str();
      std::string avgSqName = (name + ".exp_avg_sq").str();
      Value expAvg = addState(func, type, avgName);
      Value expAvgSq = addState(func, type, avgSqName);
      auto update = train::AdamUpdateOp::create(
          b, loc, type, type, type, param, grad, expAvg, expAvgSq, step,
          lrScale, lr, b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2),
          b.getF64FloatAttr(epsilon), decay,
          optimizer == "adamw" ? b.getUnitAttr() : UnitAttr());
      newParams.push_back(updated(update.getNewParam(), name));
      newState.push_back(updated(update.getNewExpAvg(), avgName));
      newState.push_back(updated(update.getNewExpAvgSq(), avgSqName));
    }
  }
  if (step)
    newState.push_back(updated(step, "optimizer.step"));

  SmallVector<StepResult> results = std::move(newParams);
  llvm::append_range(results, bufferUpdates);
  llvm::append_range(results, newState);
  results.push_back(
      {lossValue, b.getNamedAttr(train::TrainDialect::kOutputAttrName,
                                 b.getStringAttr("loss"))});
  if (correct)
    results.push_back(
        {correct, b.getNamedAttr(train::TrainDialect::kOutputAttrName,
                                 b.getStringAttr("correct"))});
  SmallVector<Value> values =
      llvm::map_to_vector(results, [](const StepResult &r) { return r.value; });
  func::ReturnOp::create(b, returnOp.getLoc(), values);
  returnOp.erase();
  func.setType(FunctionType::get(&getContext(), func.getArgumentTypes(),
                                 ValueRange(values).getTypes()));
  func.setAllResultAttrs(llvm::map_to_vector(results, [&](const StepResult &r) {
    return b.getDictionaryAttr(r.role);
  }));
  func.setSymName("train_step");
}
