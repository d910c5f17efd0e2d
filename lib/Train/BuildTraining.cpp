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

namespace mlir::dtrain::train {
#define GEN_PASS_DEF_BUILDTRAINING
#include "dtrain/Train/Passes.h.inc"
} // namespace mlir::dtrain::train

using namespace mlir;
using namespace mlir::dtrain;

namespace {
struct BuildTrainingPass
    : train::impl::BuildTrainingBase<BuildTrainingPass> {
  using BuildTrainingBase::BuildTrainingBase;

  void runOnOperation() override;

private:
  /// Appends the label argument to FUNC and returns the scalar loss of
  /// OUTPUT against it, built at the end of FUNC's body.
  FailureOr<Value> buildLoss(OpBuilder &b, func::FuncOp func, Value output);
};
} // namespace

FailureOr<Value> BuildTrainingPass::buildLoss(OpBuilder &b, func::FuncOp func,
                                              Value output) {
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
    if (outputType.getRank() != 2)
      return emitOutputError()
             << "softmax-xent takes logits of rank 2 (batch x classes)";
    labelType = RankedTensorType::get({outputType.getDimSize(0)},
                                      b.getI64Type());
  } else {
    labelType = outputType;
  }
  unsigned index = func.getNumArguments();
  if (failed(func.insertArgument(
          index, labelType,
          b.getDictionaryAttr(b.getNamedAttr(
              train::TrainDialect::kLabelAttrName,
              b.getStringAttr(loss == "softmax-xent" ? "labels"
                                                     : "targets"))),
          loc)))
    return failure();
  Value labels = func.getArgument(index);
  if (loss == "softmax-xent")
    return nn::SoftmaxCrossEntropyOp::create(b, loc, output, labels)
        .getResult();
  // mse: mean((output - targets)^2) over every element.
  Value diff = nn::SubOp::create(b, loc, output, labels);
  Value square = nn::MulOp::create(b, loc, diff, diff);
  SmallVector<int64_t> all =
      llvm::to_vector(llvm::seq<int64_t>(0, outputType.getRank()));
  return nn::ReduceMeanOp::create(b, loc, square, all, /*keep_dims=*/false)
      .getResult();
}

void BuildTrainingPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (loss != "softmax-xent" && loss != "mse") {
    module.emitError("unknown loss '")
        << loss << "' (--dtrain-build-training accepts loss=softmax-xent or "
                   "loss=mse)";
    return signalPassFailure();
  }
  if (optimizer != "sgd") {
    module.emitError("unknown optimizer '")
        << optimizer << "' (--dtrain-build-training accepts optimizer=sgd)";
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
  if (func.getNumResults() != 1) {
    func.emitError("@forward has ")
        << func.getNumResults()
        << " results; --dtrain-build-training computes the loss of exactly "
           "one model output";
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

  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  OpBuilder b(returnOp);
  FailureOr<Value> lossValue = buildLoss(b, func, returnOp.getOperand(0));
  if (failed(lossValue))
    return signalPassFailure();
  FailureOr<SmallVector<Value>> grads =
      train::buildGradients(b, *lossValue, params);
  if (failed(grads))
    return signalPassFailure();

  SmallVector<Value> results;
  for (auto [param, grad] : llvm::zip_equal(params, *grads))
    results.push_back(train::SGDUpdateOp::create(
        b, param.getLoc(), param.getType(), param, grad,
        b.getF64FloatAttr(learningRate),
        b.getF64FloatAttr(weightDecay)));
  results.push_back(*lossValue);
  func::ReturnOp::create(b, returnOp.getLoc(), results);
  returnOp.erase();

  SmallVector<DictionaryAttr> resultAttrs;
  for (StringAttr name : paramNames)
    resultAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(train::TrainDialect::kUpdatedAttrName, name)));
  resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
      train::TrainDialect::kOutputAttrName, b.getStringAttr("loss"))));
  func.setType(FunctionType::get(&getContext(), func.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
  func.setAllResultAttrs(resultAttrs);
  func.setSymName("train_step");
}
