//===- Passes.h - Train phase passes ----------------------------*- C++ -*-===//

#ifndef DTRAIN_TRAIN_PASSES_H
#define DTRAIN_TRAIN_PASSES_H

#include "dtrain/Dialect/NN/IR/NNDialect.h"
#include "dtrain/Dialect/Train/IR/TrainDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dtrain::train {

#define GEN_PASS_DECL
#include "dtrain/Train/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dtrain/Train/Passes.h.inc"

} // namespace mlir::dtrain::train

#endif // DTRAIN_TRAIN_PASSES_H
