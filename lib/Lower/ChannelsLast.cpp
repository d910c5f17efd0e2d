//===- ChannelsLast.cpp - NHWC convolutions, pooling and batch norms ------===//
//
// Implements --dtrain-channels-last: 4-D convolutions, pooling and batch
// norms get the channels_last layout, with transposes around them, and the
// transposes move past element-wise ops until they cancel (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "dtrain/Dialect/NN/IR/NNOps.h"
#include "dtrain/Lower/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_CHANNELSLAST
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;
using namespace mlir::dtrain;

/// NCHW to NHWC (and OIHW to OHWI), and back.
static constexpr int64_t kToChannelsLast[] = {0, 2, 3, 1};
static constexpr int64_t kFromChannelsLast[] = {0, 3, 1, 2};

static Value transpose(OpBuilder &b, Location loc, Value value,
                       ArrayRef<int64_t> permutation) {
  return nn::TransposeOp::create(b, loc, value, permutation);
}

/// OP as a transpose by PERMUTATION, or null.
static nn::TransposeOp getTransposeBy(Operation *op,
                                      ArrayRef<int64_t> permutation) {
  auto t = dyn_cast_or_null<nn::TransposeOp>(op);
  return t && t.getPermutation() == permutation ? t : nn::TransposeOp();
}

/// TYPE (4-D) with its dimensions moved to NHWC (OHWI) order.
static RankedTensorType getChannelsLastType(RankedTensorType type) {
  return type.clone(llvm::map_to_vector(
      kToChannelsLast, [&](int64_t d) { return type.getDimSize(d); }));
}

/// Whether OP is a cast to a wider float type.
static bool isWideningCast(Operation *op) {
  auto cast = dyn_cast<nn::CastOp>(op);
  return cast && cast.getInput().getType().getElementTypeBitWidth() <
                     cast.getType().getElementTypeBitWidth();
}

/// Whether OP is one of the ops this pass gives the channels_last layout: a
/// 4-D convolution, pooling or batch norm (or gradient) not in f64, whose
/// kernels are NCHW reference loops, and no convolution padded
/// asymmetrically, which cuDNN takes as a padded copy of NCHW planes.
static bool isConvertible(Operation *op) {
  bool isConv =
      isa<nn::Conv2DOp, nn::Conv2DBackwardDataOp, nn::Conv2DBackwardWeightsOp>(
          op);
  if (!(isConv || isa<nn::MaxPool2DOp, nn::AvgPool2DOp, nn::MaxPool2DGradOp,
                      nn::AvgPool2DGradOp, nn::BatchNormOp,
                      nn::BatchNormTrainOp, nn::BatchNormTrainGradOp>(op)) ||
      op->hasAttr("channels_last"))
    return false;
  if (auto padding = op->getAttrOfType<DenseI64ArrayAttr>("padding");
      isConv && padding &&
      (padding[0] != padding[2] || padding[1] != padding[3]))
    return false;
  auto type = cast<RankedTensorType>(op->getOperand(0).getType());
  return type.getRank() == 4 && !type.getElementType().isF64();
}

/// Whether VALUE, an operand or result of a convertible op, is an
/// activation or a weight (4-D, transposed) rather than a per-channel
/// vector.
static bool isImageValue(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.getRank() == 4;
}

/// Gives OP the channels_last layout: its 4-D operands transposed to NHWC
/// (OHWI), its 4-D results transposed back to NCHW (OIHW) for their users.
static void convertToChannelsLast(RewriterBase &rewriter, Operation *op) {
  Location loc = op->getLoc();
  rewriter.setInsertionPoint(op);
  SmallVector<Value> operands;
  for (Value operand : op->getOperands())
    operands.push_back(isImageValue(operand)
                           ? transpose(rewriter, loc, operand, kToChannelsLast)
                           : operand);
  SmallVector<Type> resultTypes;
  for (Value result : op->getResults()) {
    auto type = cast<RankedTensorType>(result.getType());
    resultTypes.push_back(type.getRank() == 4 ? getChannelsLastType(type)
                                              : type);
  }
  OperationState state(loc, op->getName(), operands, resultTypes,
                       op->getAttrs());
  state.addAttribute("channels_last", rewriter.getUnitAttr());
  Operation *converted = rewriter.create(state);
  rewriter.setInsertionPointAfter(converted);
  SmallVector<Value> replacements;
  for (Value result : converted->getResults())
    replacements.push_back(
        isImageValue(result)
            ? transpose(rewriter, loc, result, kFromChannelsLast)
            : result);
  rewriter.replaceOp(op, replacements);
}

namespace {

/// transpose(transpose(x, p), q) = transpose(x, p o q), or x.
struct ComposeTransposes : OpRewritePattern<nn::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(nn::TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<nn::TransposeOp>();
    if (!inner)
      return failure();
    ArrayRef<int64_t> first = inner.getPermutation();
    SmallVector<int64_t> composed = llvm::map_to_vector(
        op.getPermutation(), [&](int64_t d) { return first[d]; });
    if (llvm::equal(composed, llvm::seq<int64_t>(0, composed.size())))
      rewriter.replaceOp(op, inner.getInput());
    else
      rewriter.replaceOpWithNewOp<nn::TransposeOp>(op, inner.getInput(),
                                                   composed);
    return success();
  }
};

/// Whether OP is an element-wise op that transposes move past
/// (SinkTransposeThroughElementwise): not a cast that widens the elements,
/// as a transpose below it would move wider elements
/// (TransposeBeforeWidening moves those to NHWC above it).
static bool isSinkableElementwise(Operation *op) {
  return isa<nn::AddOp, nn::SubOp, nn::MulOp, nn::DivOp, nn::MaximumOp,
             nn::MinimumOp, nn::ReluOp, nn::SigmoidOp, nn::TanhOp, nn::SqrtOp,
             nn::ExpOp, nn::LogOp, nn::ErfOp, nn::PowOp, nn::LeakyReluOp,
             nn::ClipOp, nn::ClipGradOp, nn::ReluGradOp, nn::CastOp>(op) &&
         !isWideningCast(op);
}

/// An element-wise op on NHWC tensors transposed to NCHW runs on the NHWC
/// ones, and its result is transposed instead: op(nchw(a), s) =
/// nchw(op(a, s)) for 0-d S; an NCHW operand B joins as nhwc(B) where B has
/// that transpose already (a tensor both layouts read, such as a residual
/// that a pooling op makes), which shareTransposes then makes one.
/// Transposes only move this way, towards their users, so the rewrites
/// end; and not below a cast that widens the elements.
struct SinkTransposeThroughElementwise : RewritePattern {
  SinkTransposeThroughElementwise(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isSinkableElementwise(op))
      return failure();
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    ArrayRef<int64_t> permutation = kFromChannelsLast,
                      inverse = kToChannelsLast;
    auto isToNCHW = [&](Value value) {
      return bool(getTransposeBy(value.getDefiningOp(), permutation));
    };
    if (resultType.getRank() != 4 || llvm::none_of(op->getOperands(), isToNCHW))
      return failure();
    auto hasTransposeUser = [&](Value value, ArrayRef<int64_t> perm) {
      return llvm::any_of(value.getUsers(), [&](Operation *user) {
        return bool(getTransposeBy(user, perm));
      });
    };
    for (Value operand : op->getOperands()) {
      auto type = cast<RankedTensorType>(operand.getType());
      if (type.getRank() == 0)
        continue;
      if (type.getShape() != resultType.getShape())
        return failure(); // broadcast along some dimensions
      if (!isToNCHW(operand) && !hasTransposeUser(operand, inverse))
        return failure();
    }
    SmallVector<Value> operands;
    for (Value operand : op->getOperands()) {
      if (cast<RankedTensorType>(operand.getType()).getRank() == 0)
        operands.push_back(operand);
      else if (isToNCHW(operand))
        operands.push_back(operand.getDefiningOp<nn::TransposeOp>().getInput());
      else
        operands.push_back(transpose(rewriter, op->getLoc(), operand, inverse));
    }
    OperationState state(op->getLoc(), op->getName(), operands,
                         {getChannelsLastType(resultType)}, op->getAttrs());
    Operation *sunk = rewriter.create(state);
    rewriter.replaceOp(
        op, transpose(rewriter, op->getLoc(), sunk->getResult(0), permutation));
    return success();
  }
};

/// A transpose to NHWC of a widening cast transposes the narrow tensor
/// instead (half the bytes of a bf16 gradient that an f32 batch norm
/// reads): nhwc(cast(x)) = cast(nhwc(x)), where the cast has no other
/// user. Only transposes to NHWC move up, as only those to NCHW move down.
struct TransposeBeforeWidening : OpRewritePattern<nn::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(nn::TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto widen = op.getInput().getDefiningOp<nn::CastOp>();
    if (!getTransposeBy(op, kToChannelsLast) || !widen || !widen->hasOneUse() ||
        !isWideningCast(widen))
      return failure();
    Value narrow =
        transpose(rewriter, op.getLoc(), widen.getInput(), op.getPermutation());
    rewriter.replaceOpWithNewOp<nn::CastOp>(op, op.getType(), narrow);
    return success();
  }
};

/// A sum of a transposed tensor sums the untransposed one, where the kept
/// dimensions stay in order (a convolution's bias gradient).
struct SumUntransposed : OpRewritePattern<nn::ReduceSumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(nn::ReduceSumOp op,
                                PatternRewriter &rewriter) const override {
    auto t = op.getInput().getDefiningOp<nn::TransposeOp>();
    if (!t || op.getKeepDims())
      return failure();
    ArrayRef<int64_t> permutation = t.getPermutation();
    SmallVector<int64_t> dims, kept;
    for (auto [i, d] : llvm::enumerate(permutation))
      (llvm::is_contained(op.getDims(), int64_t(i)) ? dims : kept).push_back(d);
    if (!llvm::is_sorted(kept))
      return failure();
    llvm::sort(dims);
    rewriter.replaceOpWithNewOp<nn::ReduceSumOp>(op, t.getInput(), dims,
                                                 /*keep_dims=*/false);
    return success();
  }
};

/// A global average pooling of a transposed NHWC tensor averages its
/// dimensions 1 and 2: gap(nchw(x)) = the N x 1 x 1 x C mean of x, which
/// is N x C x 1 x 1 as it lies in memory (a reshape).
struct GlobalAvgPoolUntransposed : OpRewritePattern<nn::GlobalAvgPool2DOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(nn::GlobalAvgPool2DOp op,
                                PatternRewriter &rewriter) const override {
    nn::TransposeOp t =
        getTransposeBy(op.getInput().getDefiningOp(), kFromChannelsLast);
    if (!t)
      return failure();
    Value mean =
        nn::ReduceMeanOp::create(rewriter, op.getLoc(), t.getInput(),
                                 ArrayRef<int64_t>{1, 2}, /*keep_dims=*/true);
    rewriter.replaceOpWithNewOp<nn::ReshapeOp>(op, op.getType(), mean);
    return success();
  }
};

/// Whether every use of VALUE reaches a transpose to NHWC through
/// element-wise ops that transposes move past (within a few ops).
static bool reachesChannelsLast(Value value, int depth = 0) {
  if (depth > 8 || value.use_empty())
    return false;
  return llvm::all_of(value.getUsers(), [&](Operation *user) {
    if (isa<nn::TransposeOp>(user))
      return bool(getTransposeBy(user, kToChannelsLast));
    return isSinkableElementwise(user) &&
           reachesChannelsLast(user->getResult(0), depth + 1);
  });
}

/// A broadcast of an N x C x 1 x 1 tensor to NCHW (a global average
/// pooling's gradient) is the broadcast of its N x 1 x 1 x C reshape to
/// NHWC, transposed: where its uses lead to NHWC tensors, that transpose
/// moves down to meet them.
struct BroadcastPixelsChannelsLast : OpRewritePattern<nn::BroadcastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(nn::BroadcastOp op,
                                PatternRewriter &rewriter) const override {
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    if (inputType.getRank() != 4 || resultType.getRank() != 4 ||
        inputType.getDimSize(2) != 1 || inputType.getDimSize(3) != 1 ||
        !reachesChannelsLast(op.getResult()))
      return failure();
    Location loc = op.getLoc();
    Value pixel = nn::ReshapeOp::create(
        rewriter, loc, getChannelsLastType(inputType), op.getInput());
    Value spread = nn::BroadcastOp::create(
        rewriter, loc, getChannelsLastType(resultType), pixel);
    rewriter.replaceOp(op, transpose(rewriter, loc, spread, kFromChannelsLast));
    return success();
  }
};

/// Makes the transposes of one value by one permutation one transpose,
/// placed just after the value's definition; returns whether any were
/// shared.
static bool shareTransposes(RewriterBase &rewriter, func::FuncOp func) {
  llvm::MapVector<std::pair<Value, ArrayRef<int64_t>>,
                  SmallVector<nn::TransposeOp>>
      groups;
  func.walk([&](nn::TransposeOp op) {
    groups[{op.getInput(), op.getPermutation()}].push_back(op);
  });
  bool shared = false;
  for (auto &[key, ops] : groups) {
    if (ops.size() < 2)
      continue;
    Value input = key.first;
    if (Operation *def = input.getDefiningOp())
      rewriter.moveOpAfter(ops.front(), def);
    else
      rewriter.moveOpBefore(ops.front(),
                            &cast<BlockArgument>(input).getOwner()->front());
    for (nn::TransposeOp other : llvm::drop_begin(ops))
      rewriter.replaceOp(other, ops.front().getResult());
    shared = true;
  }
  return shared;
}

struct ChannelsLastPass
    : dtrain::lower::impl::ChannelsLastBase<ChannelsLastPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    IRRewriter rewriter(&getContext());
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isConvertible(op))
        ops.push_back(op);
    });
    if (ops.empty())
      return;
    for (Operation *op : ops)
      convertToChannelsLast(rewriter, op);

    RewritePatternSet patterns(&getContext());
    patterns.add<BroadcastPixelsChannelsLast, ComposeTransposes,
                 GlobalAvgPoolUntransposed, SinkTransposeThroughElementwise,
                 SumUntransposed, TransposeBeforeWidening>(&getContext());
    FrozenRewritePatternSet frozen(std::move(patterns));
    // Rounds of moving transposes and sharing equal ones (a weight's, a
    // residual's), until nothing changes.
    do {
      if (failed(applyPatternsGreedily(func, frozen))) {
        func.emitError("--dtrain-channels-last: moving the transposes did "
                       "not converge");
        return signalPassFailure();
      }
    } while (shareTransposes(rewriter, func));
  }
};

} // namespace
