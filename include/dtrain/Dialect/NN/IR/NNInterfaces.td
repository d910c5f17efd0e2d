//===- NNInterfaces.td - nn dialect interfaces -------------*- tablegen -*-===//

#ifndef DTRAIN_DIALECT_NN_IR_NNINTERFACES_TD
#define DTRAIN_DIALECT_NN_IR_NNINTERFACES_TD

include "mlir/IR/OpBase.td"

def NN_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::dtrain::nn";
  let description = [{
    An op that reverse-mode differentiation can go through: it builds its
    vector-Jacobian product, the gradients of the objective with respect to
    its operands from those with respect to its results, out of `nn` ops
    (and `tensor.extract_slice` for the parts of a concat or a pad).
    Gradients have the types of the values they belong to; broadcasting
    ops sum a gradient back over the broadcast dimensions.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds, at the builder's insertion point, the gradient of every
        operand given `resultGrads`, one per result: the gradient of the
        objective with respect to that result, or a null value when no
        gradient flows into it (the result is unused by the objective).
        Appends one value per operand to `operandGrads`: its gradient, or
        null for an operand with no gradient (integer labels, statistics).
        Fails, with an error at the op, when the op cannot be differentiated
        as it stands (for example dropout without a seeded mask).
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // DTRAIN_DIALECT_NN_IR_NNINTERFACES_TD
