//===- TrainOps.cpp - train dialect operations ----------------------------===//

#include "dtrain/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
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

#define GET_OP_CLASSES
#include "dtrain/Dialect/Train/IR/TrainOps.cpp.inc"
