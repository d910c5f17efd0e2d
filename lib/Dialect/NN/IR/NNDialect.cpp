//===- NNDialect.cpp - nn dialect registration ----------------------------===//

#include "dtrain/Dialect/AllowInlining.h"
#include "dtrain/Dialect/NN/IR/NNDialect.h"
#include "dtrain/Dialect/NN/IR/NNOps.h"

using namespace mlir;
using namespace mlir::dtrain::nn;

#include "dtrain/Dialect/NN/IR/NNDialect.cpp.inc"

void NNDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dtrain/Dialect/NN/IR/NNOps.cpp.inc"
      >();
  addInterfaces<AllowInliningInterface>();
}
