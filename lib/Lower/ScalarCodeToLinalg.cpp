//===- ScalarCodeToLinalg.cpp - 0-d tensors of scalar code as generics ----===//
//
// Implements --dtrain-scalar-code-to-linalg: a 0-d tensor that
// tensor.from_elements builds from scalar arithmetic on tensor.extracts of
// 0-d tensors becomes a linalg.generic without loops over those tensors,
// so that the CUDA lowering runs it as a kernel rather than as host code
// that waits for the kernels and reads their pages.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_SCALARCODETOLINALG
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;

/// Whether VALUE is an element of a 0-d tensor: tensor.extract without
/// indices.
static tensor::ExtractOp getScalarExtract(Value value) {
  auto extract = value.getDefiningOp<tensor::ExtractOp>();
  return extract && extract.getIndices().empty() ? extract
                                                 : tensor::ExtractOp();
}

/// The ops that compute VALUE from extracts of 0-d tensors and constants,
/// in an order that defines each before its uses, with those extracts; or
/// failure when VALUE depends on anything else.
static LogicalResult
collectScalarCode(Value value, llvm::SetVector<Operation *> &ops,
                  llvm::SetVector<tensor::ExtractOp> &extracts) {
  if (tensor::ExtractOp extract = getScalarExtract(value)) {
    extracts.insert(extract);
    return success();
  }
  Operation *op = value.getDefiningOp();
  if (!op || op->getNumRegions() != 0 || !isMemoryEffectFree(op) ||
      op->getNumResults() != 1)
    return failure();
  if (ops.contains(op))
    return success();
  for (Value operand : op->getOperands())
    if (failed(collectScalarCode(operand, ops, extracts)))
      return failure();
  ops.insert(op); // after its operands' ops
  return success();
}

/// Replaces FROM, a tensor.from_elements of a 0-d tensor, with a generic
/// computing its element, when it is scalar code (collectScalarCode).
static void convertToGeneric(RewriterBase &rewriter,
                             tensor::FromElementsOp from) {
  llvm::SetVector<Operation *> ops;
  llvm::SetVector<tensor::ExtractOp> extracts;
  Value element = from.getElements().front();
  if (failed(collectScalarCode(element, ops, extracts)))
    return;
  Location loc = from.getLoc();
  rewriter.setInsertionPoint(from);
  auto type = cast<RankedTensorType>(from.getType());
  SmallVector<Value> inputs = llvm::map_to_vector(
      extracts, [](tensor::ExtractOp e) -> Value { return e.getTensor(); });
  Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                       type.getElementType());
  AffineMap scalar = AffineMap::get(0, 0, rewriter.getContext());
  SmallVector<AffineMap> maps(inputs.size() + 1, scalar);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, inputs, ValueRange{init}, maps,
      ArrayRef<utils::IteratorType>{},
      [&](OpBuilder &b, Location loc, ValueRange args) {
        IRMapping mapping;
        for (auto [extract, arg] : llvm::zip(extracts, args))
          mapping.map(tensor::ExtractOp(extract).getResult(), arg);
        for (Operation *op : ops)
          b.clone(*op, mapping);
        linalg::YieldOp::create(b, loc, mapping.lookup(element));
      });
  rewriter.replaceOp(from, generic.getResults());
}

namespace {
struct ScalarCodeToLinalgPass
    : dtrain::lower::impl::ScalarCodeToLinalgBase<ScalarCodeToLinalgPass> {
  void runOnOperation() override {
    SmallVector<tensor::FromElementsOp> froms;
    getOperation().walk([&](tensor::FromElementsOp from) {
      if (cast<RankedTensorType>(from.getType()).getRank() == 0)
        froms.push_back(from);
    });
    IRRewriter rewriter(&getContext());
    for (tensor::FromElementsOp from : froms)
      convertToGeneric(rewriter, from);
  }
};
} // namespace
