//===- ParallelLoops.cpp - what the GPU loop passes ask of a loop ---------===//

#include "ParallelLoops.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

std::optional<int64_t>
mlir::dtrain::lower::getKernelTripCount(scf::ParallelOp loop) {
  if (loop.getNumLoops() != 1 || loop.getNumResults() != 0 ||
      loop->getParentOfType<scf::ParallelOp>() ||
      !isConstantIntValue(loop.getLowerBound()[0], 0) ||
      !isConstantIntValue(loop.getStep()[0], 1))
    return std::nullopt;
  return getConstantIntValue(loop.getUpperBound()[0]);
}

std::optional<int64_t>
mlir::dtrain::lower::getStaticTripCount(scf::ParallelOp loop, unsigned dim) {
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound()[dim]);
  std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound()[dim]);
  std::optional<int64_t> step = getConstantIntValue(loop.getStep()[dim]);
  if (!lower || !upper || !step || *step <= 0)
    return std::nullopt;
  return *upper > *lower ? llvm::divideCeil(*upper - *lower, *step) : 0;
}
