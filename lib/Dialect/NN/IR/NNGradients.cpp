//===- NNGradients.cpp - vector-Jacobian products of the nn ops ----------===//
//
// DifferentiableOpInterface for the nn ops: each builds the gradients of
// its operands from those of its results out of nn ops (and rank-0
// arith.constant scalars), so that the backward pass is ordinary nn IR
// that the rest of the compiler lowers like the forward pass.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dtrain;
using namespace mlir::dtrain::nn;

static RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// A rank-0 tensor constant of ELEMENT type, which nn's binary ops
/// broadcast to any shape.
static Value scalar(OpBuilder &b, Location loc, Type element, double value) {
  auto type = RankedTensorType::get({}, element);
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getFloatAttr(element, value)));
}

/// The gradient of an operand of type TARGET that was broadcast to GRAD's
/// shape: GRAD summed over the dimensions that broadcasting added or
/// stretched, in TARGET's shape.
static Value sumToShape(OpBuilder &b, Location loc, Value grad,
                        RankedTensorType target) {
  ArrayRef<int64_t> from = tensorType(grad).getShape();
  ArrayRef<int64_t> to = target.getShape();
  if (from == to)
    return grad;
  int64_t offset = int64_t(from.size()) - int64_t(to.size());
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < int64_t(from.size()); ++d)
    if (d < offset || (to[d - offset] == 1 && from[d] != 1))
      dims.push_back(d);
  Value sum = dims.empty() ? grad
                           : ReduceSumOp::create(b, loc, grad, dims,
                                                 /*keep_dims=*/false)
                                 .getResult();
  if (tensorType(sum).getShape() == to)
    return sum;
  return ReshapeOp::create(b, loc, target, sum);
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

// C = op(A) op(B): dA = dC op(B)^T and dB = op(A)^T dC, each written in the
// stored layout of A and B with the transpose flags instead of transposes.
LogicalResult MatmulOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value grad = resultGrads[0];
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  // A is M x K: dC (M x N) op(B)^T (N x K). A is stored K x M: op(B) dC^T.
  Value dLhs = ta ? MatmulOp::create(b, loc, getRhs(), grad, tb, true)
                  : MatmulOp::create(b, loc, grad, getRhs(), false, !tb);
  // B is K x N: op(A)^T (K x M) dC. B is stored N x K: dC^T op(A).
  Value dRhs = tb ? MatmulOp::create(b, loc, grad, getLhs(), true, ta)
                  : MatmulOp::create(b, loc, getLhs(), grad, !ta, false);
  operandGrads.append({dLhs, dRhs});
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  operandGrads.push_back(sumToShape(b, loc, resultGrads[0], getLhs().getType()));
  operandGrads.push_back(sumToShape(b, loc, resultGrads[0], getRhs().getType()));
  return success();
}

LogicalResult SubOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value grad = resultGrads[0];
  Value negated = MulOp::create(
      b, loc, grad,
      scalar(b, loc, tensorType(grad).getElementType(), -1.0));
  operandGrads.push_back(sumToShape(b, loc, grad, getLhs().getType()));
  operandGrads.push_back(sumToShape(b, loc, negated, getRhs().getType()));
  return success();
}

LogicalResult MulOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value grad = resultGrads[0];
  operandGrads.push_back(sumToShape(b, loc, MulOp::create(b, loc, grad, getRhs()),
                                    getLhs().getType()));
  operandGrads.push_back(sumToShape(b, loc, MulOp::create(b, loc, grad, getLhs()),
                                    getRhs().getType()));
  return success();
}

// The gradient goes where its element came from: to lhs where the
// condition holds, to rhs elsewhere, each summed over its broadcast.
LogicalResult SelectOp::buildGradients(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value grad = resultGrads[0];
  Value zero = scalar(b, loc, tensorType(grad).getElementType(), 0.0);
  operandGrads.push_back(Value()); // the boolean condition
  operandGrads.push_back(
      sumToShape(b, loc, SelectOp::create(b, loc, getCondition(), grad, zero),
                 getLhs().getType()));
  operandGrads.push_back(
      sumToShape(b, loc, SelectOp::create(b, loc, getCondition(), zero, grad),
                 getRhs().getType()));
  return success();
}

/// The gradients of max(l, r) (MAXIMUM) or min(l, r): g to the operand
/// that is larger (smaller), half of g to each where they are equal, as
/// PyTorch's.
static void buildExtremumGradients(OpBuilder &b, Location loc, Value grad,
                                   Value lhs, Value rhs, bool maximum,
                                   SmallVectorImpl<Value> &operandGrads) {
  Type element = tensorType(grad).getElementType();
  Value zero = scalar(b, loc, element, 0.0);
  Value half = MulOp::create(b, loc, grad, scalar(b, loc, element, 0.5));
  Value tie = SelectOp::create(
      b, loc, CompareOp::create(b, loc, ComparePredicate::eq, lhs, rhs), half,
      zero);
  auto chosen = [&](Value operand, ComparePredicate wins) {
    Value beats = CompareOp::create(b, loc, wins, lhs, rhs);
    return sumToShape(b, loc, SelectOp::create(b, loc, beats, grad, tie),
                      tensorType(operand));
  };
  ComparePredicate lhsWins =
      maximum ? ComparePredicate::gt : ComparePredicate::lt;
  ComparePredicate rhsWins =
      maximum ? ComparePredicate::lt : ComparePredicate::gt;
  operandGrads.push_back(chosen(lhs, lhsWins));
  operandGrads.push_back(chosen(rhs, rhsWins));
}

LogicalResult MaximumOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  buildExtremumGradients(b, getLoc(), resultGrads[0], getLhs(), getRhs(),
                         /*maximum=*/true, operandGrads);
  return success();
}

LogicalResult MinimumOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  buildExtremumGradients(b, getLoc(), resultGrads[0], getLhs(), getRhs(),
                         /*maximum=*/false, operandGrads);
  return success();
}

// y = l / r: dl = g / r, dr = -g y / r.
LogicalResult DivOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value grad = resultGrads[0];
  Value dLhs = DivOp::create(b, loc, grad, getRhs());
  Value dRhs = MulOp::create(
      b, loc, DivOp::create(b, loc, MulOp::create(b, loc, grad, getResult()),
                            getRhs()),
      scalar(b, loc, tensorType(grad).getElementType(), -1.0));
  operandGrads.push_back(sumToShape(b, loc, dLhs, getLhs().getType()));
  operandGrads.push_back(sumToShape(b, loc, dRhs, getRhs().getType()));
  return success();
}

// relu(x) > 0 exactly where x > 0 (NaN in neither), so the mask reads the
// output, which the next layer keeps anyway: the input need not outlive the
// forward pass, and a producer that only relu reads (a residual add) fuses
// into it.
LogicalResult ReluOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      ReluGradOp::create(b, getLoc(), resultGrads[0], getResult()));
  return success();
}

// y = sigmoid(x): dx = g y (1 - y).
LogicalResult SigmoidOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value y = getResult();
  Value one = scalar(b, loc, tensorType(y).getElementType(), 1.0);
  Value slope = MulOp::create(b, loc, y, SubOp::create(b, loc, one, y));
  operandGrads.push_back(MulOp::create(b, loc, resultGrads[0], slope));
  return success();
}

// y = tanh(x): dx = g (1 - y^2).
LogicalResult TanhOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value y = getResult();
  Value one = scalar(b, loc, tensorType(y).getElementType(), 1.0);
  Value slope = SubOp::create(b, loc, one, MulOp::create(b, loc, y, y));
  operandGrads.push_back(MulOp::create(b, loc, resultGrads[0], slope));
  return success();
}

// y = sqrt(x): dx = g / (2 y).
LogicalResult SqrtOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value y = getResult();
  Value half = scalar(b, loc, tensorType(y).getElementType(), 0.5);
  operandGrads.push_back(
      DivOp::create(b, loc, MulOp::create(b, loc, resultGrads[0], half), y));
  return success();
}

// y = exp(x): dx = g y.
LogicalResult ExpOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      MulOp::create(b, getLoc(), resultGrads[0], getResult()));
  return success();
}

// y = log(x): dx = g / x.
LogicalResult LogOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      DivOp::create(b, getLoc(), resultGrads[0], getInput()));
  return success();
}

// y = erf(x): dx = g 2 / sqrt(pi) exp(-x^2).
LogicalResult ErfOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value x = getInput();
  Type element = tensorType(x).getElementType();
  Value negSquare = MulOp::create(b, loc, MulOp::create(b, loc, x, x),
                                  scalar(b, loc, element, -1.0));
  Value slope = MulOp::create(b, loc, ExpOp::create(b, loc, negSquare),
                              scalar(b, loc, element, 2.0 / std::sqrt(M_PI)));
  operandGrads.push_back(MulOp::create(b, loc, resultGrads[0], slope));
  return success();
}

// y = x^e: dx = g e x^(e - 1); 0 for e = 0, as PyTorch has it.
LogicalResult PowOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  double exponent = getExponent().convertToDouble();
  Type element = tensorType(getInput()).getElementType();
  Value grad = resultGrads[0];
  if (exponent == 0.0) {
    operandGrads.push_back(
        MulOp::create(b, loc, grad, scalar(b, loc, element, 0.0)));
    return success();
  }
  if (exponent == 1.0) {
    operandGrads.push_back(grad);
    return success();
  }
  Value slope = MulOp::create(
      b, loc,
      PowOp::create(b, loc, getInput(), b.getF64FloatAttr(exponent - 1.0)),
      scalar(b, loc, element, exponent));
  operandGrads.push_back(MulOp::create(b, loc, grad, slope));
  return success();
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult CastOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      CastOp::create(b, getLoc(), getInput().getType(), resultGrads[0]));
  return success();
}

LogicalResult ReshapeOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(ReshapeOp::create(b, getLoc(), getInput().getType(),
                                           resultGrads[0]));
  return success();
}

LogicalResult TransposeOp::buildGradients(OpBuilder &b,
                                          ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, d] : llvm::enumerate(perm))
    inverse[d] = int64_t(i);
  operandGrads.push_back(
      TransposeOp::create(b, getLoc(), resultGrads[0], inverse));
  return success();
}

/// The part of GRAD at OFFSETS with the shape of TYPE (unit strides).
static Value slice(OpBuilder &b, Location loc, Value grad,
                   RankedTensorType type, ArrayRef<int64_t> offsets) {
  SmallVector<int64_t> strides(type.getRank(), 1);
  return tensor::ExtractSliceOp::create(b, loc, type, grad, ValueRange{},
                                        ValueRange{}, ValueRange{}, offsets,
                                        type.getShape(), strides);
}

LogicalResult ConcatOp::buildGradients(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  RankedTensorType resultType = getResult().getType();
  SmallVector<int64_t> offsets(resultType.getRank(), 0);
  for (Value input : getInputs()) {
    auto type = cast<RankedTensorType>(input.getType());
    operandGrads.push_back(
        slice(b, getLoc(), resultGrads[0], type, offsets));
    offsets[getAxis()] += type.getDimSize(getAxis());
  }
  return success();
}

LogicalResult PadOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  RankedTensorType inputType = getInput().getType();
  operandGrads.push_back(
      slice(b, getLoc(), resultGrads[0], inputType,
            getPads().take_front(inputType.getRank())));
  return success();
}

// The slice's elements go back to their places; the others get 0.
LogicalResult SliceOp::buildGradients(OpBuilder &b,
                                      ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  RankedTensorType inputType = getInput().getType();
  Value zeros = arith::ConstantOp::create(
      b, getLoc(),
      DenseElementsAttr::get(inputType,
                             b.getFloatAttr(inputType.getElementType(), 0.0)));
  operandGrads.push_back(tensor::InsertSliceOp::create(
      b, getLoc(), resultGrads[0], zeros, ValueRange{}, ValueRange{},
      ValueRange{}, getStarts(), getSizes(), getSteps()));
  return success();
}

// Each index's slice of the gradient goes back to its row.
LogicalResult EmbeddingOp::buildGradients(OpBuilder &b,
                                          ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(EmbeddingGradOp::create(
      b, getLoc(), resultGrads[0], getIndices(),
      getTable().getType().getDimSize(0)));
  operandGrads.push_back(Value()); // integer indices
  return success();
}

LogicalResult BroadcastOp::buildGradients(OpBuilder &b,
                                          ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      sumToShape(b, getLoc(), resultGrads[0], getInput().getType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// GRAD of a reduction over DIMS of INPUT, broadcast back to INPUT's shape
/// and multiplied by SCALE (1 for a sum, 1/count for a mean).
static Value broadcastReduced(OpBuilder &b, Location loc, Value grad,
                              RankedTensorType input, ArrayRef<int64_t> dims,
                              double scale) {
  SmallVector<int64_t> kept(input.getShape());
  for (int64_t d : dims)
    kept[d] = 1;
  Type element = input.getElementType();
  if (tensorType(grad).getShape() != ArrayRef<int64_t>(kept))
    grad = ReshapeOp::create(b, loc, RankedTensorType::get(kept, element), grad);
  Value spread = BroadcastOp::create(b, loc, input, grad);
  if (scale == 1.0)
    return spread;
  return MulOp::create(b, loc, spread, scalar(b, loc, element, scale));
}

LogicalResult ReduceSumOp::buildGradients(OpBuilder &b,
                                          ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(broadcastReduced(b, getLoc(), resultGrads[0],
                                          getInput().getType(), getDims(), 1.0));
  return success();
}

LogicalResult ReduceMeanOp::buildGradients(
    OpBuilder &b, ArrayRef<Value> resultGrads,
    SmallVectorImpl<Value> &operandGrads) {
  RankedTensorType input = getInput().getType();
  int64_t count = 1;
  for (int64_t d : getDims())
    count *= input.getDimSize(d);
  operandGrads.push_back(broadcastReduced(b, getLoc(), resultGrads[0], input,
                                          getDims(), 1.0 / double(count)));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxCrossEntropyOp::buildGradients(
    OpBuilder &b, ArrayRef<Value> resultGrads,
    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(SoftmaxCrossEntropyGradOp::create(
      b, getLoc(), resultGrads[0], getLogits(), getLabels()));
  operandGrads.push_back(Value()); // integer labels
  return success();
}

//===----------------------------------------------------------------------===//
// Activations and softmax
//===----------------------------------------------------------------------===//

// dx = g where x > 0 and alpha g elsewhere: relu_grad(g, x) passes the
// first part, and alpha (g - relu_grad(g, x)) the second. With alpha >= 0
// the output is positive exactly where x is, and masks instead (as relu's
// does).
LogicalResult LeakyReluOp::buildGradients(OpBuilder &b,
                                          ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value grad = resultGrads[0];
  const double alpha = getAlpha().convertToDouble();
  Value positive =
      ReluGradOp::create(b, loc, grad, alpha >= 0 ? getResult() : getInput());
  Value negative =
      MulOp::create(b, loc, SubOp::create(b, loc, grad, positive),
                    scalar(b, loc, tensorType(grad).getElementType(), alpha));
  operandGrads.push_back(AddOp::create(b, loc, positive, negative));
  return success();
}

// clip(x) lies strictly between the bounds exactly where x does (min <=
// max; NaN in neither), so the mask reads the output, as relu's does.
LogicalResult ClipOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(ClipGradOp::create(b, getLoc(), resultGrads[0],
                                            getResult(), getMinAttr(),
                                            getMaxAttr()));
  return success();
}

LogicalResult DropoutOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  if (getRatio().convertToDouble() != 0.0)
    return emitOpError("with ratio ")
           << getRatio().convertToDouble()
           << " is differentiated through its mask: replace it by its "
              "input times an nn.dropout_mask first (as "
              "--dtrain-build-training does)";
  operandGrads.push_back(resultGrads[0]);
  return success();
}

/// sum(VALUE) over AXIS, kept as a dimension of size 1.
static Value sumAlong(OpBuilder &b, Location loc, Value value, int64_t axis) {
  return ReduceSumOp::create(b, loc, value, ArrayRef<int64_t>{axis},
                             /*keep_dims=*/true);
}

// y = softmax(x): dx = y (g - sum(g y)).
LogicalResult SoftmaxOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value y = getResult();
  Value dot = sumAlong(b, loc, MulOp::create(b, loc, resultGrads[0], y),
                       getAxis());
  operandGrads.push_back(MulOp::create(
      b, loc, y, SubOp::create(b, loc, resultGrads[0], dot)));
  return success();
}

// y = log_softmax(x): dx = g - softmax(x) sum(g).
LogicalResult LogSoftmaxOp::buildGradients(
    OpBuilder &b, ArrayRef<Value> resultGrads,
    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value grad = resultGrads[0];
  Value probabilities = SoftmaxOp::create(b, loc, getInput(), getAxis());
  Value total = sumAlong(b, loc, grad, getAxis());
  operandGrads.push_back(SubOp::create(
      b, loc, grad, MulOp::create(b, loc, probabilities, total)));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution, pooling, normalization
//===----------------------------------------------------------------------===//

LogicalResult Conv2DOp::buildGradients(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value grad = resultGrads[0];
  operandGrads.push_back(Conv2DBackwardDataOp::create(
      b, loc, getInput().getType(), grad, getWeight(), getStrides(),
      getDilations(), getPadding(), getGroups(), getChannelsLast()));
  operandGrads.push_back(Conv2DBackwardWeightsOp::create(
      b, loc, getWeight().getType(), getInput(), grad, getStrides(),
      getDilations(), getPadding(), getGroups(), getChannelsLast()));
  if (getBias())
    operandGrads.push_back(ReduceSumOp::create(
        b, loc, grad, getConv2DBiasGradientDims(getChannelsLast()),
        /*keep_dims=*/false));
  return success();
}

LogicalResult MaxPool2DOp::buildGradients(OpBuilder &b,
                                          ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(MaxPool2DGradOp::create(
      b, getLoc(), getInput().getType(), resultGrads[0], getInput(),
      getKernel(), getStrides(), getPadding(), getDilations(), getCeilMode(),
      getChannelsLast()));
  return success();
}

LogicalResult AvgPool2DOp::buildGradients(OpBuilder &b,
                                          ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(AvgPool2DGradOp::create(
      b, getLoc(), getInput().getType(), resultGrads[0], getKernel(),
      getStrides(), getPadding(), getDilations(), getCeilMode(),
      getChannelsLast(), getCountIncludePad()));
  return success();
}

LogicalResult GlobalAvgPool2DOp::buildGradients(
    OpBuilder &b, ArrayRef<Value> resultGrads,
    SmallVectorImpl<Value> &operandGrads) {
  RankedTensorType input = getInput().getType();
  operandGrads.push_back(broadcastReduced(
      b, getLoc(), resultGrads[0], input, {2, 3},
      1.0 / double(input.getDimSize(2) * input.getDimSize(3))));
  return success();
}

LogicalResult BatchNormTrainOp::buildGradients(
    OpBuilder &b, ArrayRef<Value> resultGrads,
    SmallVectorImpl<Value> &operandGrads) {
  // The batch statistics feed the running statistics, which the loss does
  // not read; a loss that reads them is not supported.
  if (resultGrads[1] || resultGrads[2])
    return emitOpError("cannot be differentiated through its batch_mean or "
                       "batch_var results (only through the normalized "
                       "result)");
  auto grads = BatchNormTrainGradOp::create(
      b, getLoc(), resultGrads[0], getInput(), getScale(), getBatchMean(),
      getBatchVar(), getEpsilon(), getChannelsLast());
  operandGrads.append(
      {grads.getResult(), grads.getScaleGrad(), grads.getBiasGrad()});
  return success();
}
