//===- Passes.h - Dist phase passes -----------------------------*- C++ -*-===//

#ifndef DTRAIN_DIST_PASSES_H
#define DTRAIN_DIST_PASSES_H

#include "dtrain/Dialect/Comm/IR/CommDialect.h"
#include "dtrain/Dialect/NN/IR/NNDialect.h"
#include "dtrain/Dialect/Train/IR/TrainDialect.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dtrain::dist {

#define GEN_PASS_DECL
#include "dtrain/Dist/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dtrain/Dist/Passes.h.inc"

} // namespace mlir::dtrain::dist

#endif // DTRAIN_DIST_PASSES_H
