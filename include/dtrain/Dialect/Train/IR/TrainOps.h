//===- TrainOps.h - train dialect operations --------------------*- C++ -*-===//

#ifndef DTRAIN_DIALECT_TRAIN_IR_TRAINOPS_H
#define DTRAIN_DIALECT_TRAIN_IR_TRAINOPS_H

#include "dtrain/Dialect/Train/IR/TrainDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dtrain/Dialect/Train/IR/TrainOps.h.inc"

namespace mlir::dtrain::train {

/// The gradient operand of OP when it is an optimizer update, else null.
OpOperand *getUpdateGradOperand(Operation *op);

} // namespace mlir::dtrain::train

#endif // DTRAIN_DIALECT_TRAIN_IR_TRAINOPS_H
