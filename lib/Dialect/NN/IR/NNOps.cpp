//===- NNOps.cpp - nn dialect operations ----------------------------------===//
//
// Shape rules live in one place per op: its `inferReturnTypes`. Builders call
// it to fill in result types, and the verifier (the InferredResultTypes
// trait) calls it to report invalid operands or attributes and to check the
// written result types. Dynamic dimensions (`?`) are accepted wherever the
// matching static size is unknown, and propagate to the inferred type.
//
// Inference relies on the operand type constraints of ODS (ranked float
// tensors), which hold both in verification and for well-typed builders.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::dtrain::nn;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

bool mlir::dtrain::nn::areCompatibleReturnTypes(TypeRange lhs, TypeRange rhs) {
  return lhs.size() == rhs.size() &&
         llvm::all_of(llvm::zip_equal(lhs, rhs), [](auto types) {
           auto [l, r] = types;
           return getElementTypeOrSelf(l) == getElementTypeOrSelf(r) &&
                  succeeded(verifyCompatibleShape(l, r));
         });
}

LogicalResult mlir::dtrain::nn::verifyInferredResultTypes(Operation *op) {
  SmallVector<Type> inferred;
  if (failed(cast<InferTypeOpInterface>(op).inferReturnTypes(
          op->getContext(), op->getLoc(), op->getOperands(),
          op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
          op->getRegions(), inferred)))
    return failure();
  for (auto [i, types] :
       llvm::enumerate(llvm::zip_equal(inferred, op->getResultTypes()))) {
    auto [expected, actual] = types;
    if (areCompatibleReturnTypes(expected, actual))
      continue;
    InFlightDiagnostic diag = op->emitOpError("expected result");
    if (op->getNumResults() > 1)
      diag << " #" << i;
    return diag << " of type " << expected << " but got " << actual;
  }
  return success();
}

namespace {
/// Reports the errors of an op's inference at its location, if it has one,
/// worded like verifier errors ("'nn.conv2d' op ...") because the verifier
/// reports them as its own.
struct Reporter {
  std::optional<Location> loc;
  StringRef opName;

  template <typename... Args> LogicalResult operator()(Args &&...args) const {
    return emitOptionalError(loc, "'", opName, "' op ",
                             std::forward<Args>(args)...);
  }
};
} // namespace

template <typename OpTy> static Reporter reporter(std::optional<Location> loc) {
  return {loc, OpTy::getOperationName()};
}

static RankedTensorType rankedType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Checks that `actual` can hold a tensor of the shape `expected`.
static LogicalResult checkShape(const Reporter &error, StringRef what,
                                ArrayRef<int64_t> expected,
                                RankedTensorType actual) {
  if (succeeded(verifyCompatibleShape(expected, actual.getShape())))
    return success();
  return error("expected ", what, " of type ",
               RankedTensorType::get(expected, actual.getElementType()),
               " but got ", actual);
}

/// Checks that `axis` names a dimension of a rank-`rank` tensor; axes are
/// normalized (non-negative) by the importer.
static LogicalResult checkAxis(const Reporter &error, StringRef what,
                               int64_t axis, int64_t rank) {
  if (axis >= 0 && axis < rank)
    return success();
  return error(what, " ", axis, " is out of range for a rank-", rank, " input");
}

/// Checks the size of an array attribute.
static LogicalResult checkCount(const Reporter &error, StringRef name,
                                ArrayRef<int64_t> values, size_t count) {
  if (values.size() == count)
    return success();
  return error("expects ", count, " values in '", name, "', got ",
               values.size());
}

/// Checks an array attribute's size and that its values are at least `min`.
static LogicalResult checkValues(const Reporter &error, StringRef name,
                                 ArrayRef<int64_t> values, size_t count,
                                 int64_t min) {
  if (failed(checkCount(error, name, values, count)))
    return failure();
  if (llvm::all_of(values, [&](int64_t v) { return v >= min; }))
    return success();
  return error("expects '", name, "' values >= ", min);
}

/// Merges two compatible sizes, keeping the static one.
static int64_t mergeDims(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) ? b : a;
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Reporter error = reporter<MatmulOp>(loc);
  RankedTensorType lhsType = rankedType(adaptor.getLhs());
  RankedTensorType rhsType = rankedType(adaptor.getRhs());
  int64_t rank = lhsType.getRank();
  if ((rank != 2 && rank != 3) || rhsType.getRank() != rank)
    return error("expects rank-2 or rank-3 operands of one rank, got ", lhsType,
                 " and ", rhsType);
  // Rows and contraction size of op(lhs), contraction size and columns of
  // op(rhs): the last two dimensions, after the batch's.
  bool tl = adaptor.getTransposeLhs(), tr = adaptor.getTransposeRhs();
  int64_t row = rank - 2, column = rank - 1;
  int64_t m = lhsType.getDimSize(tl ? column : row);
  int64_t kLhs = lhsType.getDimSize(tl ? row : column);
  int64_t kRhs = rhsType.getDimSize(tr ? column : row);
  int64_t n = rhsType.getDimSize(tr ? row : column);
  if (failed(verifyCompatibleDims({kLhs, kRhs})))
    return error("contraction sizes differ: ", kLhs, " (lhs) vs ", kRhs,
                 " (rhs)");
  SmallVector<int64_t> shape;
  if (rank == 3) {
    int64_t batchLhs = lhsType.getDimSize(0), batchRhs = rhsType.getDimSize(0);
    if (failed(verifyCompatibleDims({batchLhs, batchRhs})))
      return error("batch sizes differ: ", batchLhs, " (lhs) vs ", batchRhs,
                   " (rhs)");
    shape.push_back(ShapedType::isDynamic(batchLhs) ? batchRhs : batchLhs);
  }
  shape.append({m, n});
  types.push_back(RankedTensorType::get(shape, lhsType.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// NumPy broadcasting of the two operands of a binary op.
template <typename OpTy>
static LogicalResult inferBroadcast(std::optional<Location> loc,
                                    typename OpTy::Adaptor adaptor,
                                    SmallVectorImpl<Type> &types) {
  RankedTensorType lhsType = rankedType(adaptor.getLhs());
  RankedTensorType rhsType = rankedType(adaptor.getRhs());
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(lhsType.getShape(),
                                          rhsType.getShape(), shape))
    return reporter<OpTy>(loc)("operands don't have broadcast-compatible "
                               "shapes: ",
                               lhsType, " and ", rhsType);
  types.push_back(RankedTensorType::get(shape, lhsType.getElementType()));
  return success();
}

#define NN_BROADCAST_INFERENCE(OpTy)                                           \
  LogicalResult OpTy::inferReturnTypes(                                        \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &types) {                                          \
    return inferBroadcast<OpTy>(loc, adaptor, types);                          \
  }
NN_BROADCAST_INFERENCE(AddOp)
NN_BROADCAST_INFERENCE(SubOp)
NN_BROADCAST_INFERENCE(MulOp)
NN_BROADCAST_INFERENCE(DivOp)
NN_BROADCAST_INFERENCE(MaximumOp)
NN_BROADCAST_INFERENCE(MinimumOp)
#undef NN_BROADCAST_INFERENCE

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  RankedTensorType lhsType = rankedType(adaptor.getLhs());
  RankedTensorType rhsType = rankedType(adaptor.getRhs());
  if (lhsType.getElementType() != rhsType.getElementType())
    return reporter<CompareOp>(loc)("operand element types differ: ", lhsType,
                                    " and ", rhsType);
  SmallVector<Type> broadcast;
  if (failed(inferBroadcast<CompareOp>(loc, adaptor, broadcast)))
    return failure();
  types.push_back(cast<RankedTensorType>(broadcast.front())
                      .clone(IntegerType::get(context, 1)));
  return success();
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Reporter error = reporter<SelectOp>(loc);
  auto conditionType = cast<RankedTensorType>(adaptor.getCondition().getType());
  RankedTensorType lhsType = rankedType(adaptor.getLhs());
  RankedTensorType rhsType = rankedType(adaptor.getRhs());
  if (lhsType.getElementType() != rhsType.getElementType())
    return error("lhs and rhs element types differ: ", lhsType, " and ",
                 rhsType);
  SmallVector<int64_t> values, shape;
  if (!OpTrait::util::getBroadcastedShape(lhsType.getShape(),
                                          rhsType.getShape(), values) ||
      !OpTrait::util::getBroadcastedShape(conditionType.getShape(), values,
                                          shape))
    return error("operands don't have broadcast-compatible shapes: ",
                 conditionType, ", ", lhsType, " and ", rhsType);
  types.push_back(RankedTensorType::get(shape, lhsType.getElementType()));
  return success();
}

LogicalResult ClipOp::verify() {
  std::optional<APFloat> min = getMin(), max = getMax();
  if (min && max && *max < *min)
    return emitOpError("min ")
           << getMinAttr().getValueAsDouble() << " exceeds max "
           << getMaxAttr().getValueAsDouble();
  return success();
}

/// A dropout ratio is a probability below 1: 1 would drop everything and
/// scale by infinity.
static LogicalResult verifyDropoutRatio(Operation *op, double ratio) {
  if (ratio >= 0.0 && ratio < 1.0)
    return success();
  return op->emitOpError("ratio must be in [0, 1), got ") << ratio;
}

LogicalResult DropoutOp::verify() {
  return verifyDropoutRatio(*this, getRatio().convertToDouble());
}

LogicalResult DropoutMaskOp::verify() {
  if (!getType().hasStaticShape())
    return emitOpError("needs a static result shape, got ") << getType();
  if (int64_t stream = getStreamAttr().getInt(); stream < 0)
    return emitOpError("stream must be non-negative, got ") << stream;
  return verifyDropoutRatio(*this, getRatio().convertToDouble());
}

/// The softmax axis; the result type is the input type (generated).
template <typename OpTy> static LogicalResult verifySoftmaxAxis(OpTy op) {
  return checkAxis(reporter<OpTy>(op.getLoc()), "axis", op.getAxis(),
                   op.getInput().getType().getRank());
}

LogicalResult SoftmaxOp::verify() { return verifySoftmaxAxis(*this); }
LogicalResult LogSoftmaxOp::verify() { return verifySoftmaxAxis(*this); }

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType inputType = getInput().getType();
  RankedTensorType resultType = getResult().getType();
  if (!inputType.hasStaticShape() || !resultType.hasStaticShape() ||
      inputType.getNumElements() == resultType.getNumElements())
    return success();
  return emitOpError("input has ")
         << inputType.getNumElements() << " elements but the result type "
         << resultType << " has " << resultType.getNumElements();
}

LogicalResult BroadcastOp::verify() {
  RankedTensorType inputType = getInput().getType();
  RankedTensorType resultType = getResult().getType();
  SmallVector<int64_t> shape;
  if (inputType.getRank() <= resultType.getRank() &&
      OpTrait::util::getBroadcastedShape(inputType.getShape(),
                                         resultType.getShape(), shape) &&
      shape == resultType.getShape())
    return success();
  return emitOpError("cannot broadcast ")
         << inputType << " to " << resultType;
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  RankedTensorType inputType = rankedType(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  int64_t rank = inputType.getRank();
  SmallVector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(perm.size()) == rank &&
               llvm::all_of(perm, [&](int64_t d) {
                 return d >= 0 && d < rank && !std::exchange(seen[d], true);
               });
  if (!valid)
    return reporter<TransposeOp>(loc)(
        "permutation [", perm, "] is not a permutation of [0, ", rank, ")");
  SmallVector<int64_t> shape = llvm::map_to_vector(
      perm, [&](int64_t d) { return inputType.getDimSize(d); });
  types.push_back(RankedTensorType::get(shape, inputType.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Reporter error = reporter<ConcatOp>(loc);
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return error("expects at least one input");
  RankedTensorType firstType = rankedType(inputs.front());
  int64_t rank = firstType.getRank(), axis = adaptor.getAxis();
  if (failed(checkAxis(error, "axis", axis, rank)))
    return failure();
  SmallVector<int64_t> shape(firstType.getShape());
  for (auto [i, input] : llvm::enumerate(inputs.drop_front())) {
    RankedTensorType type = rankedType(input);
    if (type.getRank() != rank)
      return error("input #", i + 1, " has rank ", type.getRank(),
                   ", expected ", rank);
    for (int64_t d = 0; d < rank; ++d) {
      int64_t size = type.getDimSize(d);
      if (d == axis) {
        shape[d] =
            ShapedType::isDynamic(shape[d]) || ShapedType::isDynamic(size)
                ? ShapedType::kDynamic
                : shape[d] + size;
      } else if (failed(verifyCompatibleDims({shape[d], size}))) {
        return error("input #", i + 1, " has size ", size, " in dimension ", d,
                     ", expected ", shape[d]);
      } else {
        shape[d] = mergeDims(shape[d], size);
      }
    }
  }
  types.push_back(RankedTensorType::get(shape, firstType.getElementType()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  RankedTensorType inputType = rankedType(adaptor.getInput());
  int64_t rank = inputType.getRank();
  ArrayRef<int64_t> pads = adaptor.getPads();
  if (failed(checkValues(reporter<PadOp>(loc), "pads", pads, 2 * rank, 0)))
    return failure();
  SmallVector<int64_t> shape(inputType.getShape());
  for (int64_t d = 0; d < rank; ++d)
    if (!ShapedType::isDynamic(shape[d]))
      shape[d] += pads[d] + pads[rank + d];
  types.push_back(RankedTensorType::get(shape, inputType.getElementType()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  RankedTensorType inputType = rankedType(adaptor.getInput());
  int64_t rank = inputType.getRank();
  auto report = reporter<SliceOp>(loc);
  ArrayRef<int64_t> starts = adaptor.getStarts(), sizes = adaptor.getSizes(),
                    steps = adaptor.getSteps();
  if (failed(checkValues(report, "starts", starts, rank, 0)) ||
      failed(checkValues(report, "sizes", sizes, rank, 0)) ||
      failed(checkValues(report, "steps", steps, rank, 1)))
    return failure();
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = inputType.getDimSize(d);
    if (!ShapedType::isDynamic(size) && sizes[d] > 0 &&
        starts[d] + (sizes[d] - 1) * steps[d] >= size)
      return report("dimension ", d, ": ", sizes[d], " elements from ",
                    starts[d], " in steps of ", steps[d], " do not fit in ",
                    size);
  }
  types.push_back(RankedTensorType::get(sizes, inputType.getElementType()));
  return success();
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  RankedTensorType tableType = rankedType(adaptor.getTable());
  if (tableType.getRank() < 1)
    return reporter<EmbeddingOp>(loc)("expects a table of rank 1 or more");
  SmallVector<int64_t> shape(rankedType(adaptor.getIndices()).getShape());
  llvm::append_range(shape, tableType.getShape().drop_front());
  types.push_back(RankedTensorType::get(shape, tableType.getElementType()));
  return success();
}

LogicalResult EmbeddingGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  Reporter error = reporter<EmbeddingGradOp>(loc);
  RankedTensorType gradType = rankedType(adaptor.getGrad());
  RankedTensorType indicesType = rankedType(adaptor.getIndices());
  int64_t rows = adaptor.getRows();
  if (rows < 1)
    return error("expects at least one row, got rows = ", rows);
  int64_t rank = indicesType.getRank();
  if (gradType.getRank() < rank ||
      failed(verifyCompatibleShape(gradType.getShape().take_front(rank),
                                   indicesType.getShape())))
    return error("grad ", gradType, " does not begin with the shape of the "
                 "indices ", indicesType);
  SmallVector<int64_t> shape = {rows};
  llvm::append_range(shape, gradType.getShape().drop_front(rank));
  types.push_back(RankedTensorType::get(shape, gradType.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

namespace {
/// The (height, width) window geometry shared by convolution and pooling.
struct Window2D {
  std::array<int64_t, 2> kernel; // may be dynamic for convolution
  ArrayRef<int64_t> strides, dilations, padding;
  bool ceilMode = false;
};
} // namespace

/// Checks `window` and returns the spatial output sizes for an input whose
/// height and width are dimensions HEIGHT and HEIGHT + 1,
/// floor((in + pads - dilation * (kernel - 1) - 1) / stride) + 1, rounded up
/// in ceil mode except that the last window must start inside the input or
/// its leading padding (ONNX and PyTorch).
static FailureOr<std::array<int64_t, 2>>
inferWindowOutput(const Reporter &error, RankedTensorType inputType,
                  const Window2D &window, int64_t height = 2) {
  if (failed(checkValues(error, "strides", window.strides, 2, 1)) ||
      failed(checkValues(error, "dilations", window.dilations, 2, 1)) ||
      failed(checkValues(error, "padding", window.padding, 4, 0)))
    return failure();
  std::array<int64_t, 2> out;
  for (int i = 0; i < 2; ++i) {
    StringRef dim = i == 0 ? "height" : "width";
    int64_t in = inputType.getDimSize(height + i), k = window.kernel[i];
    if (ShapedType::isDynamic(in) || ShapedType::isDynamic(k)) {
      out[i] = ShapedType::kDynamic;
      continue;
    }
    int64_t padBegin = window.padding[i], padEnd = window.padding[2 + i];
    int64_t stride = window.strides[i];
    int64_t span = window.dilations[i] * (k - 1) + 1;
    int64_t padded = in + padBegin + padEnd;
    if (span > padded)
      return error("window ", dim, " ", span,
                   " (dilated kernel) exceeds the "
                   "padded input ",
                   dim, " ", padded);
    int64_t steps = window.ceilMode
                        ? llvm::divideCeilSigned(padded - span, stride)
                        : (padded - span) / stride;
    if (window.ceilMode && steps * stride >= in + padBegin)
      --steps;
    out[i] = steps + 1;
  }
  return out;
}

/// The N x C x H x W (or, CHANNELS_LAST, N x H x W x C) input of a 2-D
/// window op.
static LogicalResult checkImage(const Reporter &error, RankedTensorType type,
                                bool channelsLast = false) {
  if (type.getRank() == 4)
    return success();
  return error(channelsLast ? "expects an N x H x W x C input, got "
                            : "expects an N x C x H x W input, got ",
               type);
}

ArrayRef<int64_t>
mlir::dtrain::nn::getConv2DBiasGradientDims(bool channelsLast) {
  static constexpr int64_t nchw[] = {0, 2, 3}, nhwc[] = {0, 1, 2};
  return channelsLast ? ArrayRef<int64_t>(nhwc) : ArrayRef<int64_t>(nchw);
}

/// The result type of a convolution of INPUT with WEIGHT (what nn.conv2d
/// infers and its gradients check), NCHW and OIHW or, CHANNELS_LAST, NHWC
/// and OHWI.
static FailureOr<RankedTensorType>
inferConv(const Reporter &error, RankedTensorType inputType,
          RankedTensorType weightType, ArrayRef<int64_t> strides,
          ArrayRef<int64_t> dilations, ArrayRef<int64_t> padding,
          int64_t groups, bool channelsLast) {
  if (failed(checkImage(error, inputType, channelsLast)))
    return failure();
  if (weightType.getRank() != 4)
    return error(channelsLast
                     ? "expects an O x Kh x Kw x C/groups weight, got "
                     : "expects an O x C/groups x Kh x Kw weight, got ",
                 weightType);
  if (groups < 1)
    return error("expects groups >= 1, got ", groups);
  ImageLayout layout = ImageLayout::get(channelsLast);
  int64_t channels = inputType.getDimSize(layout.channels);
  int64_t groupChannels = weightType.getDimSize(layout.channels);
  int64_t filters = weightType.getDimSize(0);
  if (!ShapedType::isDynamic(channels) &&
      !ShapedType::isDynamic(groupChannels) &&
      channels != groupChannels * groups)
    return error("input has ", channels, " channels but the weight expects ",
                 groupChannels, " x ", groups, " (groups)");
  if (!ShapedType::isDynamic(filters) && filters % groups != 0)
    return error("weight has ", filters, " filters, not divisible by the ",
                 groups, " groups");
  FailureOr<std::array<int64_t, 2>> spatial =
      inferWindowOutput(error, inputType,
                        {{weightType.getDimSize(layout.height),
                          weightType.getDimSize(layout.height + 1)},
                         strides,
                         dilations,
                         padding},
                        layout.height);
  if (failed(spatial))
    return failure();
  SmallVector<int64_t, 4> shape = {inputType.getDimSize(0), filters,
                                   (*spatial)[0], (*spatial)[1]};
  if (channelsLast)
    shape = {shape[0], shape[2], shape[3], shape[1]};
  return RankedTensorType::get(shape, inputType.getElementType());
}

LogicalResult Conv2DOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Reporter error = reporter<Conv2DOp>(loc);
  RankedTensorType weightType = rankedType(adaptor.getWeight());
  FailureOr<RankedTensorType> result = inferConv(
      error, rankedType(adaptor.getInput()), weightType, adaptor.getStrides(),
      adaptor.getDilations(), adaptor.getPadding(), adaptor.getGroups(),
      adaptor.getChannelsLast());
  if (failed(result))
    return failure();
  if (Value bias = adaptor.getBias())
    if (failed(checkShape(error, "bias", {weightType.getDimSize(0)},
                          rankedType(bias))))
      return failure();
  types.push_back(*result);
  return success();
}

/// Checks that GRAD has the type FORWARD infers for the result of the op
/// whose gradient OP computes.
static LogicalResult checkForwardResult(Operation *op, Value grad,
                                        FailureOr<RankedTensorType> forward) {
  if (failed(forward))
    return failure();
  if (areCompatibleReturnTypes(*forward, grad.getType()))
    return success();
  return op->emitOpError("has a gradient of type ")
         << grad.getType() << ", but the forward op's result has type "
         << *forward;
}

LogicalResult Conv2DBackwardDataOp::verify() {
  return checkForwardResult(
      *this, getGrad(),
      inferConv({getLoc(), getOperationName()}, getResult().getType(),
                getWeight().getType(), getStrides(), getDilations(),
                getPadding(), getGroups(), getChannelsLast()));
}

LogicalResult Conv2DBackwardWeightsOp::verify() {
  return checkForwardResult(
      *this, getGrad(),
      inferConv({getLoc(), getOperationName()}, getInput().getType(),
                getResult().getType(), getStrides(), getDilations(),
                getPadding(), getGroups(), getChannelsLast()));
}

/// Both pooling ops and their gradients: the N x C x Ho x Wo (or, with
/// channels_last, N x Ho x Wo x C) result of pooling an INPUT with the
/// window and layout attributes of OP (or its adaptor).
template <typename OpOrAdaptor>
static FailureOr<RankedTensorType> inferPoolResult(const Reporter &error,
                                                   RankedTensorType inputType,
                                                   OpOrAdaptor op) {
  ArrayRef<int64_t> kernel = op.getKernel();
  bool channelsLast = op.getChannelsLast();
  if (failed(checkImage(error, inputType, channelsLast)) ||
      failed(checkValues(error, "kernel", kernel, 2, 1)))
    return failure();
  ImageLayout layout = ImageLayout::get(channelsLast);
  FailureOr<std::array<int64_t, 2>> spatial =
      inferWindowOutput(error, inputType,
                        {{kernel[0], kernel[1]},
                         op.getStrides(),
                         op.getDilations(),
                         op.getPadding(),
                         op.getCeilMode()},
                        layout.height);
  if (failed(spatial))
    return failure();
  SmallVector<int64_t, 4> shape(inputType.getShape());
  shape[layout.height] = (*spatial)[0];
  shape[layout.height + 1] = (*spatial)[1];
  return RankedTensorType::get(shape, inputType.getElementType());
}

template <typename OpTy>
static LogicalResult inferPool(const Reporter &error,
                               typename OpTy::Adaptor adaptor,
                               SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> result =
      inferPoolResult(error, rankedType(adaptor.getInput()), adaptor);
  if (failed(result))
    return failure();
  types.push_back(*result);
  return success();
}

LogicalResult MaxPool2DGradOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError("has result type ")
           << getResult().getType() << ", not the input's "
           << getInput().getType();
  return checkForwardResult(
      *this, getGrad(),
      inferPoolResult({getLoc(), getOperationName()}, getInput().getType(),
                      *this));
}

LogicalResult AvgPool2DGradOp::verify() {
  if (llvm::any_of(getDilations(), [](int64_t d) { return d != 1; }))
    return emitOpError("expects dilations of 1");
  return checkForwardResult(
      *this, getGrad(),
      inferPoolResult({getLoc(), getOperationName()}, getResult().getType(),
                      *this));
}

LogicalResult MaxPool2DOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferPool<MaxPool2DOp>(reporter<MaxPool2DOp>(loc), adaptor, types);
}

LogicalResult AvgPool2DOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Reporter error = reporter<AvgPool2DOp>(loc);
  if (llvm::any_of(adaptor.getDilations(), [](int64_t d) { return d != 1; }))
    return error("expects dilations of 1");
  return inferPool<AvgPool2DOp>(error, adaptor, types);
}

LogicalResult
GlobalAvgPool2DOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &types) {
  RankedTensorType inputType = rankedType(adaptor.getInput());
  if (failed(checkImage(reporter<GlobalAvgPool2DOp>(loc), inputType)))
    return failure();
  types.push_back(RankedTensorType::get(
      {inputType.getDimSize(0), inputType.getDimSize(1), 1, 1},
      inputType.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

int64_t mlir::dtrain::nn::getBatchNormChannelDim(ShapedType input,
                                                 bool channelsLast) {
  return channelsLast ? input.getRank() - 1 : 1;
}

/// Checks an N x C x ... input (N x ... x C, CHANNELS_LAST) and its
/// per-channel operands of shape C.
static LogicalResult
checkBatchNormOperands(const Reporter &error, RankedTensorType inputType,
                       bool channelsLast,
                       ArrayRef<std::pair<StringRef, Value>> perChannel) {
  if (inputType.getRank() < 2)
    return error(channelsLast
                     ? "expects an N x ... x C input of rank >= 2, got "
                     : "expects an N x C x ... input of rank >= 2, got ",
                 inputType);
  int64_t channels =
      inputType.getDimSize(getBatchNormChannelDim(inputType, channelsLast));
  for (auto [name, value] : perChannel)
    if (failed(checkShape(error, name, {channels}, rankedType(value))))
      return failure();
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  RankedTensorType inputType = rankedType(adaptor.getInput());
  if (failed(checkBatchNormOperands(reporter<BatchNormOp>(loc), inputType,
                                    adaptor.getChannelsLast(),
                                    {{"scale", adaptor.getScale()},
                                     {"bias", adaptor.getBias()},
                                     {"mean", adaptor.getMean()},
                                     {"var", adaptor.getVar()}})))
    return failure();
  types.push_back(inputType);
  return success();
}

LogicalResult BatchNormTrainOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  RankedTensorType inputType = rankedType(adaptor.getInput());
  if (failed(checkBatchNormOperands(
          reporter<BatchNormTrainOp>(loc), inputType, adaptor.getChannelsLast(),
          {{"scale", adaptor.getScale()}, {"bias", adaptor.getBias()}})))
    return failure();
  auto statsType =
      RankedTensorType::get({inputType.getDimSize(getBatchNormChannelDim(
                                inputType, adaptor.getChannelsLast()))},
                            inputType.getElementType());
  types.append({inputType, statsType, statsType});
  return success();
}

LogicalResult BatchNormTrainGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  Reporter error = reporter<BatchNormTrainGradOp>(loc);
  RankedTensorType inputType = rankedType(adaptor.getInput());
  if (failed(checkBatchNormOperands(error, inputType, adaptor.getChannelsLast(),
                                    {{"scale", adaptor.getScale()},
                                     {"batch_mean", adaptor.getBatchMean()},
                                     {"batch_var", adaptor.getBatchVar()}})) ||
      failed(checkShape(error, "grad", inputType.getShape(),
                        rankedType(adaptor.getGrad()))))
    return failure();
  RankedTensorType channelType = rankedType(adaptor.getScale());
  types.append({inputType, channelType, channelType});
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// reduce_sum and reduce_mean: dims strictly increasing and in range; reduced
/// dimensions dropped or kept with size 1.
template <typename OpTy>
static LogicalResult inferReduce(std::optional<Location> loc,
                                 typename OpTy::Adaptor adaptor,
                                 SmallVectorImpl<Type> &types) {
  Reporter error = reporter<OpTy>(loc);
  RankedTensorType inputType = rankedType(adaptor.getInput());
  int64_t rank = inputType.getRank();
  ArrayRef<int64_t> dims = adaptor.getDims();
  for (auto [i, dim] : llvm::enumerate(dims)) {
    if (failed(checkAxis(error, "dimension", dim, rank)))
      return failure();
    if (i > 0 && dim <= dims[i - 1])
      return error("dims must be strictly increasing");
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!llvm::is_contained(dims, d))
      shape.push_back(inputType.getDimSize(d));
    else if (adaptor.getKeepDims())
      shape.push_back(1);
  }
  types.push_back(RankedTensorType::get(shape, inputType.getElementType()));
  return success();
}

LogicalResult ReduceSumOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferReduce<ReduceSumOp>(loc, adaptor, types);
}

LogicalResult ReduceMeanOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  return inferReduce<ReduceMeanOp>(loc, adaptor, types);
}

//===----------------------------------------------------------------------===//
// Softmax cross-entropy
//===----------------------------------------------------------------------===//

/// Shared by the loss and its gradient: logits are N... x C (classes
/// last), labels are N....
static LogicalResult checkLogitsAndLabels(const Reporter &error,
                                          RankedTensorType logitsType,
                                          RankedTensorType labelsType) {
  if (logitsType.getRank() < 2)
    return error("expects logits of shape N... x C, got ", logitsType);
  return checkShape(error, "labels", logitsType.getShape().drop_back(),
                    labelsType);
}

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  RankedTensorType logitsType = rankedType(adaptor.getLogits());
  if (failed(checkLogitsAndLabels(reporter<SoftmaxCrossEntropyOp>(loc),
                                  logitsType, rankedType(adaptor.getLabels()))))
    return failure();
  types.push_back(RankedTensorType::get({}, logitsType.getElementType()));
  return success();
}

LogicalResult CountCorrectOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (failed(checkLogitsAndLabels(reporter<CountCorrectOp>(loc),
                                  rankedType(adaptor.getLogits()),
                                  rankedType(adaptor.getLabels()))))
    return failure();
  types.push_back(RankedTensorType::get({}, IntegerType::get(context, 64)));
  return success();
}

LogicalResult SoftmaxCrossEntropyGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  Reporter error = reporter<SoftmaxCrossEntropyGradOp>(loc);
  RankedTensorType logitsType = rankedType(adaptor.getLogits());
  if (failed(checkLogitsAndLabels(error, logitsType,
                                  rankedType(adaptor.getLabels()))))
    return failure();
  if (rankedType(adaptor.getGrad()).getElementType() !=
      logitsType.getElementType())
    return error("grad and logits element types differ");
  types.push_back(logitsType);
  return success();
}

/// The width in bits of TYPE's element type.
static unsigned elementWidth(Type type) {
  return cast<ShapedType>(type).getElementTypeBitWidth();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // cast(cast(x : A to B) to A) with B wider than A is x: every A value is
  // a B value (f16 and bf16 in f32 or f64, f32 in f64).
  auto inner = getInput().getDefiningOp<CastOp>();
  if (inner && inner.getInput().getType() == getType() &&
      elementWidth(inner.getType()) > elementWidth(getType()))
    return inner.getInput();
  return {};
}

#include "dtrain/Dialect/NN/IR/NNInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dtrain/Dialect/NN/IR/NNEnums.cpp.inc"
#include "dtrain/Dialect/NN/IR/NNOps.cpp.inc"
