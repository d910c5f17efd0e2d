//===- Differentiate.h - reverse-mode differentiation -----------*- C++ -*-===//
//
// Reverse-mode automatic differentiation of straight-line nn code, shared
// by the passes that build training steps.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_TRAIN_DIFFERENTIATE_H
#define DTRAIN_TRAIN_DIFFERENTIATE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

namespace mlir::dtrain::train {

/// Builds, at the insertion point of BUILDER (after every op it reads, in
/// the block that defines OBJECTIVE), the gradient of the scalar OBJECTIVE
/// (a rank-0 float tensor) with respect to each value of WRT: block
/// arguments or op results of that block. The ops between them must
/// implement nn::DifferentiableOpInterface; gradients of a value used
/// several times are summed with nn.add. A value of WRT that OBJECTIVE does
/// not depend on gets a zero gradient. Fails, with an error at the
/// offending op, when an op on a path from WRT to OBJECTIVE cannot be
/// differentiated. SEED, when given, is the gradient of OBJECTIVE to start
/// from (of its type); else the constant 1.
FailureOr<SmallVector<Value>> buildGradients(OpBuilder &builder,
                                             Value objective,
                                             ArrayRef<Value> wrt,
                                             Value seed = {});

} // namespace mlir::dtrain::train

#endif // DTRAIN_TRAIN_DIFFERENTIATE_H
