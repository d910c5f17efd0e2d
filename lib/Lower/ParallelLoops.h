//===- ParallelLoops.h - what the GPU loop passes ask of a loop -*- C++ -*-===//
//
// The shape of scf.parallel loops that the passes preparing kernels
// (--dtrain-fuse-sibling-parallel-loops, --dtrain-vectorize-parallel-loops,
// --dtrain-tile-parallel-loops-for-gpu) rewrite or check
// (--dtrain-check-parallel-stores).
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_LIB_LOWER_PARALLELLOOPS_H
#define DTRAIN_LIB_LOWER_PARALLELLOOPS_H

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <optional>

namespace mlir::dtrain::lower {

/// LOOP's trip count when it is a kernel's loop over one range: outermost,
/// 1-D from 0 to a constant in steps of 1, without results.
std::optional<int64_t> getKernelTripCount(scf::ParallelOp loop);

/// The trip count of LOOP's dimension DIM where its bounds and step are
/// constants.
std::optional<int64_t> getStaticTripCount(scf::ParallelOp loop, unsigned dim);

} // namespace mlir::dtrain::lower

#endif // DTRAIN_LIB_LOWER_PARALLELLOOPS_H
