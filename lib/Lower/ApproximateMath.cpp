//===- ApproximateMath.cpp - vectorizable f32 math functions --------------===//
//
// Implements --dtrain-approximate-math: f32 math functions become MLIR's
// polynomial approximations (arith ops, math.fma, bit manipulations), which
// LLVM vectorizes with the loop around them. A libm call (erff, expf,
// tanhf) runs one element at a time, and LLVM 22 has no vector library
// entry for erff on x86: GELU's erf and the exps of softmax took 12% of a
// GPT training step.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_APPROXIMATEMATH
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

/// The functions approximated when `ops` is not given, within 6 units in
/// the last place of float64's (approximate-math-accuracy.test). Not log:
/// its approximation is off by millions of units on subnormal arguments.
static constexpr llvm::StringLiteral kDefaultOps[] = {"erf", "exp", "tanh"};

/// The functions MLIR approximates with f32 arithmetic alone (rsqrt needs
/// AVX2 intrinsics).
static constexpr llvm::StringLiteral kApproximableOps[] = {
    "acos", "asin",  "atan", "atan2", "cbrt", "cos", "erf", "erfc",
    "exp",  "expm1", "log",  "log1p", "log2", "sin", "tanh"};

namespace {
struct ApproximateMathPass
    : public mlir::dtrain::lower::impl::ApproximateMathBase<
          ApproximateMathPass> {
  using ApproximateMathBase::ApproximateMathBase;

  LogicalResult initialize(MLIRContext *context) override {
    SmallVector<StringRef> requested(ops.begin(), ops.end());
    if (requested.empty())
      requested.assign(std::begin(kDefaultOps), std::end(kDefaultOps));
    for (StringRef name : requested) {
      if (!llvm::is_contained(kApproximableOps, name))
        return emitError(UnknownLoc::get(context))
               << "dtrain-approximate-math: '" << name
               << "' is not a math function MLIR approximates (ops takes: "
               << llvm::join(std::begin(kApproximableOps),
                             std::end(kApproximableOps), ", ")
               << ")";
      opNames.insert(("math." + name).str());
    }
    return success();
  }

  void runOnOperation() override {
    // Only f32 ops: the approximations of erf and asin would compute f16
    // in f16, and the other functions have none for f16 or f64.
    SmallVector<Operation *> selected;
    getOperation()->walk([&](Operation *op) {
      if (opNames.contains(op->getName().getStringRef()) &&
          op->getNumResults() == 1 &&
          getElementTypeOrSelf(op->getResult(0).getType()).isF32())
        selected.push_back(op);
    });
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [&](StringRef name) { return opNames.contains(name); });
    if (failed(applyOpPatternsGreedily(selected, std::move(patterns))))
      signalPassFailure();
  }

  llvm::StringSet<> opNames;
};
} // namespace
