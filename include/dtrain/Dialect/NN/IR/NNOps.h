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

/// The dimensions of a 4-D activation that hold its channels and its
/// height (width follows), NCHW or with the channels last (NHWC): see
/// `channels_last` on nn.conv2d and the batch norms.
struct ImageLayout {
  int64_t channels, height;
  static ImageLayout get(bool channelsLast) {
    return channelsLast ? ImageLayout{3, 1} : ImageLayout{1, 2};
  }
};

/// The dimensions a convolution's bias gradient sums its output gradient
/// over: N, H and W.
ArrayRef<int64_t> getConv2DBiasGradientDims(bool channelsLast);

/// The dimension of a batch norm's INPUT that holds the channels.
int64_t getBatchNormChannelDim(ShapedType input, bool channelsLast);

} // namespace mlir::dtrain::nn

#include "dtrain/Dialect/NN/IR/NNEnums.h.inc"
#include "dtrain/Dialect/NN/IR/NNInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dtrain/Dialect/NN/IR/NNOps.h.inc"

#endif // DTRAIN_DIALECT_NN_IR_NNOPS_H
