//===- TrainOps.cpp - train dialect operations ----------------------------===//

#include "dtrain/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::dtrain::train;

/// A hyperparameter as a user would write it ("0.1", not "1.000000e-01").
static std::string formatNumber(double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%g", value);
  return text;
}

LogicalResult SGDUpdateOp::verify() {
  double lr = getLr().convertToDouble();
  double weightDecay = getWeightDecay().convertToDouble();
  if (!(lr > 0.0))
    return emitOpError("learning rate must be positive, got ")
           << formatNumber(lr);
  if (!(weightDecay >= 0.0))
    return emitOpError("weight_decay must be non-negative, got ")
           << formatNumber(weightDecay);
  return success();
}

LogicalResult MomentumUpdateOp::verify() {
  double lr = getLr().convertToDouble();
  if (!(lr > 0.0))
    return emitOpError("learning rate must be positive, got ")
           << formatNumber(lr);
  for (auto [name, value] : {std::pair{"momentum", getMomentum()},
                             std::pair{"weight_decay", getWeightDecay()}})
    if (!(value.convertToDouble() >= 0.0))
      return emitOpError(name) << " must be non-negative, got "
                               << formatNumber(value.convertToDouble());
  return success();
}

LogicalResult LarsUpdateOp::verify() {
  double lr = getLr().convertToDouble();
  if (!(lr > 0.0))
    return emitOpError("learning rate must be positive, got ")
           << formatNumber(lr);
  if (!(getTrustCoefficient().convertToDouble() > 0.0))
    return emitOpError("trust_coefficient must be positive, got ")
           << formatNumber(getTrustCoefficient().convertToDouble());
  for (auto [name, value] : {std::pair{"momentum", getMomentum()},
                             std::pair{"weight_decay", getWeightDecay()},
                             std::pair{"epsilon", getEpsilon()}})
    if (!(value.convertToDouble() >= 0.0))
      return emitOpError(name) << " must be non-negative, got "
                               << formatNumber(value.convertToDouble());
  return success();
}

LogicalResult AdamUpdateOp::verify() {
  double lr = getLr().convertToDouble();
  if (!(lr > 0.0))
    return emitOpError("learning rate must be positive, got ")
           << formatNumber(lr);
  for (auto [name, value] :
       {std::pair{"beta1", getBeta1()}, std::pair{"beta2", getBeta2()}}) {
    double beta = value.convertToDouble();
    if (!(beta >= 0.0 && beta < 1.0))
      return emitOpError(name)
             << " must be in [0, 1), got " << formatNumber(beta);
  }
  if (!(getEpsilon().convertToDouble() > 0.0))
    return emitOpError("epsilon must be positive, got ")
           << formatNumber(getEpsilon().convertToDouble());
  if (!(getWeightDecay().convertToDouble() >= 0.0))
    return emitOpError("weight_decay must be non-negative, got ")
           << formatNumber(getWeightDecay().convertToDouble());
  return success();
}

OpOperand *mlir::dtrain::train::getUpdateGradOperand(Operation *op) {
  return TypeSwitch<Operation *, OpOperand *>(op)
      .Case<SGDUpdateOp, MomentumUpdateOp, LarsUpdateOp, AdamUpdateOp>(
          [](auto update) { return &update.getGradMutable(); })
      .Default([](Operation *) { return nullptr; });
}

#define GET_OP_CLASSES
#include "dtrain/Dialect/Train/IR/TrainOps.cpp.inc"
