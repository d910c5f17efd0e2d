//===- NNOps.cpp - nn dialect operations ----------------------------------===//
//
// Verifiers check what the type constraints cannot: that the static shapes of
// operands and results agree. Dynamic dimensions (`?`) are accepted wherever
// the matching static size is unknown.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::dtrain::nn;

/// True when two dimension sizes can be equal at run time.
static bool dimsCompatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Checks that `actual` can hold a tensor of the shape `expected`.
static LogicalResult verifyShape(Operation *op, StringRef what,
                                 ArrayRef<int64_t> expected,
                                 RankedTensorType actual) {
  if (actual.getRank() == static_cast<int64_t>(expected.size()) &&
      llvm::all_of(llvm::zip_equal(expected, actual.getShape()),
                   [](auto dims) {
                     return dimsCompatible(std::get<0>(dims),
                                           std::get<1>(dims));
                   }))
    return success();
  return op->emitOpError() << "expected " << what << " of type "
                           << RankedTensorType::get(expected,
                                                    actual.getElementType())
                           << " but got " << actual;
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  auto lhsType = getLhs().getType(), rhsType = getRhs().getType();
  if (lhsType.getRank() != 2 || rhsType.getRank() != 2)
    return emitOpError("expects rank-2 operands, got ")
           << lhsType << " and " << rhsType;
  // Rows and contraction size of op(lhs), contraction size and columns of
  // op(rhs).
  int64_t m = lhsType.getDimSize(getTransposeLhs() ? 1 : 0);
  int64_t kLhs = lhsType.getDimSize(getTransposeLhs() ? 0 : 1);
  int64_t kRhs = rhsType.getDimSize(getTransposeRhs() ? 1 : 0);
  int64_t n = rhsType.getDimSize(getTransposeRhs() ? 0 : 1);
  if (!dimsCompatible(kLhs, kRhs))
    return emitOpError("contraction sizes differ: ")
           << kLhs << " (lhs) vs " << kRhs << " (rhs)";
  return verifyShape(*this, "result", {m, n}, getResult().getType());
}

//===----------------------------------------------------------------------===//
// ReduceSumOp
//===----------------------------------------------------------------------===//

LogicalResult ReduceSumOp::verify() {
  RankedTensorType inputType = getInput().getType();
  int64_t rank = inputType.getRank();
  ArrayRef<int64_t> dims = getDims();
  for (auto [i, dim] : llvm::enumerate(dims)) {
    if (dim < 0 || dim >= rank)
      return emitOpError("dimension ")
             << dim << " is out of range for a rank-" << rank << " input";
    if (i > 0 && dim <= dims[i - 1])
      return emitOpError("dims must be strictly increasing");
  }
  SmallVector<int64_t> expected;
  for (int64_t d = 0; d < rank; ++d) {
    if (!llvm::is_contained(dims, d))
      expected.push_back(inputType.getDimSize(d));
    else if (getKeepDims())
      expected.push_back(1);
  }
  return verifyShape(*this, "result", expected, getResult().getType());
}

//===----------------------------------------------------------------------===//
// Softmax cross-entropy
//===----------------------------------------------------------------------===//

/// Shared by the loss and its gradient: logits are N x C, labels are N.
static LogicalResult verifyLogitsAndLabels(Operation *op,
                                           RankedTensorType logitsType,
                                           RankedTensorType labelsType) {
  if (logitsType.getRank() != 2)
    return op->emitOpError("expects logits of shape N x C, got ")
           << logitsType;
  return verifyShape(op, "labels", {logitsType.getDimSize(0)}, labelsType);
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  if (failed(verifyLogitsAndLabels(*this, getLogits().getType(),
                                   getLabels().getType())))
    return failure();
  if (getLoss().getType().getElementType() !=
      getLogits().getType().getElementType())
    return emitOpError("loss and logits element types differ");
  return success();
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  RankedTensorType logitsType = getLogits().getType();
  if (failed(verifyLogitsAndLabels(*this, logitsType, getLabels().getType())))
    return failure();
  if (getGrad().getType().getElementType() != logitsType.getElementType())
    return emitOpError("grad and logits element types differ");
  if (getResult().getType() != logitsType)
    return emitOpError("result type ")
           << getResult().getType() << " differs from the logits type "
           << logitsType;
  return success();
}

#define GET_OP_CLASSES
#include "dtrain/Dialect/NN/IR/NNOps.cpp.inc"
