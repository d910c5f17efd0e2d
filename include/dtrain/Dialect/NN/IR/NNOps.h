//===- NNOps.h - nn dialect operations --------------------------*- C++ -*-===//

#ifndef DTRAIN_DIALECT_NN_IR_NNOPS_H
#define DTRAIN_DIALECT_NN_IR_NNOPS_H

#include "dtrain/Dialect/NN/IR/NNDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Traits.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dtrain/Dialect/NN/IR/NNOps.h.inc"

#endif // DTRAIN_DIALECT_NN_IR_NNOPS_H
