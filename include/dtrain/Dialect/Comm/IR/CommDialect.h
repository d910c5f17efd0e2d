//===- CommDialect.h - comm dialect -----------------------------*- C++ -*-===//

#ifndef DTRAIN_DIALECT_COMM_IR_COMMDIALECT_H
#define DTRAIN_DIALECT_COMM_IR_COMMDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dtrain/Dialect/Comm/IR/CommDialect.h.inc"

#endif // DTRAIN_DIALECT_COMM_IR_COMMDIALECT_H
