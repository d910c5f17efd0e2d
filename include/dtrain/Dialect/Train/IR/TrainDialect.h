//===- TrainDialect.h - train dialect ---------------------------*- C++ -*-===//

#ifndef DTRAIN_DIALECT_TRAIN_IR_TRAINDIALECT_H
#define DTRAIN_DIALECT_TRAIN_IR_TRAINDIALECT_H

#include "mlir/IR/Dialect.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "dtrain/Dialect/Train/IR/TrainDialect.h.inc"

#endif // DTRAIN_DIALECT_TRAIN_IR_TRAINDIALECT_H
