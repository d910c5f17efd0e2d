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

namespace mlir::dtrain::nn {

/// Whether result types `lhs` and `rhs` agree: same count, and pairwise the
/// same rank and element type with equal sizes where both are static.
bool areCompatibleReturnTypes(TypeRange lhs, TypeRange rhs);

/// Checks the result types of `op` against its inferred ones, emitting
/// inference's error or a mismatch at `op`.
LogicalResult verifyInferredResultTypes(Operation *op);

/// Trait of the ops whose result types are inferred (see NNOps.td).
template <typename ConcreteType>
class InferredResultTypes
    : public ::mlir::OpTrait::TraitBase<ConcreteType, InferredResultTypes> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifyInferredResultTypes(op);
  }
};

} // namespace mlir::dtrain::nn

#include "dtrain/Dialect/NN/IR/NNInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dtrain/Dialect/NN/IR/NNOps.h.inc"

#endif // DTRAIN_DIALECT_NN_IR_NNOPS_H
