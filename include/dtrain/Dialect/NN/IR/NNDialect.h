//===- NNDialect.h - nn dialect ---------------------------------*- C++ -*-===//

#ifndef DTRAIN_DIALECT_NN_IR_NNDIALECT_H
#define DTRAIN_DIALECT_NN_IR_NNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dtrain/Dialect/NN/IR/NNDialect.h.inc"

#endif // DTRAIN_DIALECT_NN_IR_NNDIALECT_H
