//===- LowerNN.cpp - nn ops to linalg and runtime kernels -----------------===//
//
// Implements --dtrain-lower-nn. Elementwise ops, reductions, softmax and the
// losses become linalg.generic ops on tensors, so that
// --linalg-fuse-elementwise-ops can merge a chain of them into one loop nest
// before bufferization. Shape ops become tensor/linalg ops that bufferize to
// views or copies. The heavy ops (matmul, conv2d, pooling, batch norm) become
// calls of the runtime's kernels (dtrain_rt.h) in destination-passing style:
// inputs are read through their buffers and each result is a fresh buffer
// that the kernel writes, wrapped back into a tensor, so one-shot
// bufferization handles the rest of the program as usual.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Lower/Passes.h"

#include "RuntimeABI.h"
#include "dtrain/Dialect/NN/IR/NNOps.h"
#include "dtrain/Dialect/Train/IR/TrainOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

namespace mlir::dtrain::lower {
#define GEN_PASS_DEF_LOWERNN
#include "dtrain/Lower/Passes.h.inc"
} // namespace mlir::dtrain::lower

using namespace mlir;
using namespace mlir::dtrain;

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

static RankedTensorType getTensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

static Value createFloat(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

static Value createEmpty(OpBuilder &b, Location loc, RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(),
                                 type.getElementType());
}

/// A tensor of `type` filled with `value`.
static Value createFilled(OpBuilder &b, Location loc, RankedTensorType type,
                          double value) {
  Value fill = createFloat(b, loc, type.getElementType(), value);
  return linalg::FillOp::create(b, loc, TypeRange{type}, ValueRange{fill},
                                ValueRange{createEmpty(b, loc, type)})
      .getResult(0);
}

/// The indexing map that reads an operand of `operandShape` broadcast
/// (numpy rules, aligned to the right) to `resultShape`.
static AffineMap getBroadcastMap(MLIRContext *ctx,
                                 ArrayRef<int64_t> operandShape,
                                 ArrayRef<int64_t> resultShape) {
  unsigned resultRank = resultShape.size();
  unsigned leading = resultRank - operandShape.size();
  SmallVector<AffineExpr> exprs;
  for (auto [i, size] : llvm::enumerate(operandShape)) {
    unsigned dim = leading + i;
    exprs.push_back(size == 1 && resultShape[dim] != 1
                        ? getAffineConstantExpr(0, ctx)
                        : getAffineDimExpr(dim, ctx));
  }
  return AffineMap::get(resultRank, 0, exprs, ctx);
}

/// The map from an iteration space of `rank` dims to the dims not in
/// `reduced` (how a reduction's result, or a value broadcast back from it,
/// is indexed).
static AffineMap getMapWithout(MLIRContext *ctx, unsigned rank,
                               ArrayRef<int64_t> reduced) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d = 0; d < rank; ++d)
    if (!llvm::is_contained(reduced, static_cast<int64_t>(d)))
      exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

using ScalarBuilder =
    function_ref<Value(OpBuilder &, Location, ValueRange inputs)>;

using MultiScalarBuilder = function_ref<SmallVector<Value>(
    OpBuilder &, Location, ValueRange inputs)>;

/// A parallel linalg.generic over the common shape of `resultTypes`,
/// reading `inputs` through `inputMaps` and computing the elements of all
/// results at once with `body`.
static SmallVector<Value> buildParallelResults(OpBuilder &b, Location loc,
                                               TypeRange resultTypes,
                                               ValueRange inputs,
                                               ArrayRef<AffineMap> inputMaps,
                                               MultiScalarBuilder body) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = cast<RankedTensorType>(resultTypes.front()).getRank();
  SmallVector<AffineMap> maps(inputMaps);
  SmallVector<Value> inits;
  for (Type type : resultTypes) {
    maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
    inits.push_back(createEmpty(b, loc, cast<RankedTensorType>(type)));
  }
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, resultTypes, inputs, inits, maps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(
            nested, nestedLoc,
            body(nested, nestedLoc, args.drop_back(resultTypes.size())));
      });
  return generic.getResults();
}

/// A parallel linalg.generic over the shape of `resultType`, reading
/// `inputs` through `inputMaps` and computing each element with `body`.
static Value buildParallel(OpBuilder &b, Location loc,
                           RankedTensorType resultType, ValueRange inputs,
                           ArrayRef<AffineMap> inputMaps, ScalarBuilder body) {
  return buildParallelResults(
             b, loc, resultType, inputs, inputMaps,
             [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
               return SmallVector<Value>{body(nested, nestedLoc, args)};
             })
      .front();
}

/// An elementwise op with numpy broadcasting of its inputs.
static Value buildElementwise(OpBuilder &b, Location loc,
                              RankedTensorType resultType, ValueRange inputs,
                              ScalarBuilder body) {
  SmallVector<AffineMap> maps;
  for (Value input : inputs)
    maps.push_back(getBroadcastMap(b.getContext(),
                                   getTensorType(input).getShape(),
                                   resultType.getShape()));
  return buildParallel(b, loc, resultType, inputs, maps, body);
}

/// Several elementwise results of one shape, with numpy broadcasting of the
/// inputs (one loop nest for an optimizer update and its new state).
static SmallVector<Value> buildElementwiseResults(OpBuilder &b, Location loc,
                                                  TypeRange resultTypes,
                                                  ValueRange inputs,
                                                  MultiScalarBuilder body) {
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(resultTypes.front()).getShape();
  SmallVector<AffineMap> maps;
  for (Value input : inputs)
    maps.push_back(getBroadcastMap(b.getContext(),
                                   getTensorType(input).getShape(), shape));
  return buildParallelResults(b, loc, resultTypes, inputs, maps, body);
}

/// Reduces `input` over the sorted dims `dims` with `combine`, starting
/// from `init`; the result drops those dims.
static Value buildReduction(
    OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> dims,
    double init,
    function_ref<Value(OpBuilder &, Location, Value element, Value acc)>
        combine) {
  MLIRContext *ctx = b.getContext();
  RankedTensorType inputType = getTensorType(input);
  unsigned rank = inputType.getRank();
  SmallVector<int64_t> resultShape;
  SmallVector<utils::IteratorType> iterators;
  for (unsigned d = 0; d < rank; ++d) {
    bool reduced = llvm::is_contained(dims, static_cast<int64_t>(d));
    iterators.push_back(reduced ? utils::IteratorType::reduction
                                : utils::IteratorType::parallel);
    if (!reduced)
      resultShape.push_back(inputType.getDimSize(d));
  }
  auto resultType =
      RankedTensorType::get(resultShape, inputType.getElementType());
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                 getMapWithout(ctx, rank, dims)};
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, ValueRange{input},
      ValueRange{createFilled(b, loc, resultType, init)}, maps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(nested, nestedLoc,
                                combine(nested, nestedLoc, args[0], args[1]));
      });
  return generic.getResult(0);
}

static Value buildSum(OpBuilder &b, Location loc, Value input,
                      ArrayRef<int64_t> dims) {
  // Reassociable, so that LLVM vectorizes the sum (several partial sums)
  // instead of one dependent add per element; still the same order on
  // every run.
  return buildReduction(b, loc, input, dims, 0.0,
                        [](OpBuilder &b, Location loc, Value x, Value acc) {
                          return arith::AddFOp::create(
                              b, loc, x, acc, arith::FastMathFlags::reassoc);
                        });
}

static Value buildMax(OpBuilder &b, Location loc, Value input,
                      ArrayRef<int64_t> dims) {
  return buildReduction(b, loc, input, dims,
                        -std::numeric_limits<double>::infinity(),
                        [](OpBuilder &b, Location loc, Value x, Value acc) {
                          return arith::MaximumFOp::create(b, loc, x, acc);
                        });
}

/// The same elements in row-major order with the static shape of `type`,
/// as reassociating views (which bufferize without a copy).
static Value buildReshape(OpBuilder &b, Location loc, Value input,
                          RankedTensorType type) {
  RankedTensorType inputType = getTensorType(input);
  if (inputType == type)
    return input;
  auto allDims = [](int64_t rank) {
    ReassociationIndices dims;
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d);
    return SmallVector<ReassociationIndices>{dims};
  };
  // Rank 0 has no dims to group: its reassociation is empty.
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, input,
                                           SmallVector<ReassociationIndices>());
  if (inputType.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, type, input,
                                         SmallVector<ReassociationIndices>());
  Value flat = input;
  if (inputType.getRank() != 1)
    flat = tensor::CollapseShapeOp::create(b, loc, input,
                                           allDims(inputType.getRank()));
  if (type.getRank() == 1)
    return flat;
  return tensor::ExpandShapeOp::create(b, loc, type, flat,
                                       allDims(type.getRank()));
}

//===----------------------------------------------------------------------===//
// Runtime kernels
//===----------------------------------------------------------------------===//

namespace {
/// A batch norm (or its gradient) on 16-bit data (getSixteenBitBatchNorms):
/// the nn.casts that widen its data inputs to f32, in operand order, and
/// those that narrow its data result back.
struct SixteenBitBatchNorm {
  SmallVector<nn::CastOp> widening, narrowing;
};

/// A ReLU that a batch norm in training (or its gradient) computes with it
/// (getFusedReLUs): the nn.relu (nn.relu_grad), and where a residual is
/// added before the ReLU, that nn.add and which of its operands is the
/// residual.
struct FusedReLU {
  Operation *relu;
  nn::AddOp add;
  unsigned residual;
};

/// A call of a dtrain_rt_* kernel: the buffers it reads (a null Value is
/// passed as NULL), the tensors it produces, then scalar arguments, in the
/// order of the C prototype (pointers first, as every kernel takes them).
struct KernelCall {
  /// The kernel's name without prefix and type ("conv2d").
  StringRef kernel;
  /// The element type of its tensors (getKernelElementType).
  FloatType element;
  SmallVector<Value> inputs;
  SmallVector<RankedTensorType> results;
  SmallVector<Value> scalars;
};
} // namespace

static Value createI64(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIntOp::create(b, loc, value, 64);
}

static Value createI32(OpBuilder &b, Location loc, int32_t value) {
  return arith::ConstantIntOp::create(b, loc, value, 32);
}

static SmallVector<Value> createI64s(OpBuilder &b, Location loc,
                                     ArrayRef<int64_t> values) {
  return llvm::map_to_vector(
      values, [&](int64_t value) { return createI64(b, loc, value); });
}

/// Whether TYPE is a 16-bit float type (f16, bf16).
static bool is16BitFloat(Type type) {
  auto floatType = dyn_cast<FloatType>(type);
  return floatType && floatType.getWidth() == 16;
}

/// VALUE with its elements converted to ELEMENT: widened exactly, or
/// rounded to nearest even.
static Value convertElements(OpBuilder &b, Location loc, Value value,
                             Type element) {
  RankedTensorType type = getTensorType(value);
  bool widens =
      cast<FloatType>(element).getWidth() > type.getElementTypeBitWidth();
  return buildElementwise(
      b, loc, type.clone(element), value,
      [&](OpBuilder &b, Location l, ValueRange x) -> Value {
        if (widens)
          return arith::ExtFOp::create(b, l, element, x[0]);
        Value wide = x[0];
        // Between f16 and bf16 through f32, which holds both exactly.
        if (cast<FloatType>(element).getWidth() ==
            type.getElementTypeBitWidth())
          wide = arith::ExtFOp::create(b, l, b.getF32Type(), wide);
        return arith::TruncFOp::create(b, l, element, wide);
      });
}

/// FN applied to the scalar X, in f32 when X is a 16-bit float (which
/// libm and libdevice have no functions for), the result rounded back.
static Value applyInF32(OpBuilder &b, Location loc, Value x,
                        function_ref<Value(Value)> fn) {
  Type type = x.getType();
  if (!is16BitFloat(type))
    return fn(x);
  Value wide = fn(arith::ExtFOp::create(b, loc, b.getF32Type(), x));
  return arith::TruncFOp::create(b, loc, type, wide);
}

/// X ^ EXPONENT for a scalar X: the exponents that products, a square root
/// or a division compute exactly (and fast), else `pow`.
static Value buildPower(OpBuilder &b, Location loc, Value x, double exponent) {
  Type type = x.getType();
  if (exponent == 0.0)
    return createFloat(b, loc, type, 1.0);
  if (exponent == 1.0)
    return x;
  if (exponent == 2.0)
    return arith::MulFOp::create(b, loc, x, x);
  if (exponent == 3.0)
    return arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, x, x),
                                 x);
  if (exponent == -1.0)
    return arith::DivFOp::create(b, loc, createFloat(b, loc, type, 1.0), x);
  if (exponent == 0.5)
    return applyInF32(b, loc, x,
                      [&](Value x) { return math::SqrtOp::create(b, loc, x); });
  return applyInF32(b, loc, x, [&](Value x) {
    return math::PowFOp::create(b, loc, x,
                                createFloat(b, loc, x.getType(), exponent));
  });
}

/// The names of the CUDA runtime's heavy-op kernels, which queue their work
/// on the step stream (dtrain_rt_cuda.h).
static constexpr llvm::StringLiteral kCudaKernelPrefix = "dtrain_rt_cuda_";

/// The element type of OP's runtime kernel for TARGET: f64 (reference
/// loops, for gradient checks) for f64 operands; for cuda, the 16-bit type
/// of a matrix product's, a convolution's or a pooling's 16-bit operands
/// (cuBLAS and cuDNN on tensor cores, pooling kernels that read 16 bits);
/// else f32 (oneDNN, cuDNN), which buildKernelCall widens 16-bit operands
/// to (the kernel ops verify that their operands share one type).
static FloatType getKernelElementType(Operation *op, StringRef target) {
  auto element =
      cast<FloatType>(getElementTypeOrSelf(op->getOperand(0).getType()));
  if (element.isF64())
    return element;
  if (target == "cuda" && element.getWidth() == 16 &&
      isa<nn::MatmulOp, nn::Conv2DOp, nn::Conv2DBackwardDataOp,
          nn::Conv2DBackwardWeightsOp, nn::MaxPool2DOp, nn::AvgPool2DOp,
          nn::MaxPool2DGradOp, nn::AvgPool2DGradOp>(op))
    return element;
  return Float32Type::get(op->getContext());
}

/// The type of a kernel's float scalars (BETA, EPSILON): f64 for the f64
/// kernels, else f32.
static FloatType getKernelScalarType(FloatType element) {
  return element.isF64() ? element : Float32Type::get(element.getContext());
}

/// The runtime's name of KERNEL for ELEMENT: dtrain_rt_<kernel>_f32|f64,
/// or for TARGET cuda dtrain_rt_cuda_<kernel>_f32|bf16|f16 (cuBLAS, cuDNN;
/// the f64 reference loops run on the host for both targets).
static std::string getKernelName(StringRef kernel, FloatType element,
                                 StringRef target) {
  if (element.isF64())
    return ("dtrain_rt_" + kernel + "_f64").str();
  StringRef suffix = element.isBF16()  ? "bf16"
                     : element.isF16() ? "f16"
                                       : "f32";
  return ((target == "cuda" ? kCudaKernelPrefix : "dtrain_rt_") + kernel + "_" +
          suffix)
      .str();
}

/// Emits `call` of the kernel for TARGET before `op` and returns its result
/// tensors. 16-bit float tensors of an f32 kernel are widened on the way
/// in and rounded on the way out (f32 accumulation, as 16-bit matrix units
/// do).
static SmallVector<Value> buildKernelCall(OpBuilder &b, Operation *op,
                                          StringRef target,
                                          const KernelCall &call) {
  Location loc = op->getLoc();
  MLIRContext *ctx = b.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  // The type that a tensor of ELEMENT is passed in.
  auto passedType = [&](Type element) -> Type {
    return is16BitFloat(element) && element != call.element ? b.getF32Type()
                                                            : element;
  };
  SmallVector<Value> args;
  for (Value input : call.inputs) {
    if (!input) {
      args.push_back(LLVM::ZeroOp::create(b, loc, ptr));
      continue;
    }
    Type element = getTensorType(input).getElementType();
    if (passedType(element) != element)
      input = convertElements(b, loc, input, passedType(element));
    RankedTensorType type = getTensorType(input);
    auto memrefType =
        MemRefType::get(type.getShape(), type.getElementType());
    Value buffer = bufferization::ToBufferOp::create(b, loc, memrefType, input,
                                                     /*read_only=*/true);
    args.push_back(lower::getBufferAddress(b, loc, buffer));
  }
  SmallVector<Value> outputs;
  for (RankedTensorType result : call.results) {
    RankedTensorType type = result.clone(passedType(result.getElementType()));
    auto memrefType =
        MemRefType::get(type.getShape(), type.getElementType());
    // Aligned for the vector loads of the kernel libraries.
    outputs.push_back(
        memref::AllocOp::create(b, loc, memrefType, b.getI64IntegerAttr(64)));
    args.push_back(lower::getBufferAddress(b, loc, outputs.back()));
  }
  llvm::append_range(args, call.scalars);
  const std::string name = getKernelName(call.kernel, call.element, target);
  func::CallOp kernel = lower::createRuntimeCall(
      b, op, name, b.getFunctionType(ValueRange(args).getTypes(), {}), args);
  if (StringRef(name).starts_with(kCudaKernelPrefix))
    SymbolTable::lookupNearestSymbolFrom(kernel, kernel.getCalleeAttr())
        ->setAttr(lower::kStepStreamAttrName, b.getUnitAttr());
  SmallVector<Value> results;
  for (auto [type, buffer] : llvm::zip(call.results, outputs)) {
    auto memrefType = cast<MemRefType>(buffer.getType());
    Value result = bufferization::ToTensorOp::create(
        b, loc,
        RankedTensorType::get(type.getShape(), memrefType.getElementType()),
        buffer,
        b.getUnitAttr(), b.getUnitAttr());
    results.push_back(memrefType.getElementType() == type.getElementType()
                          ? result
                          : convertElements(b, loc, result,
                                            type.getElementType()));
  }
  return results;
}

/// The learning rate LR of an optimizer update in element type TYPE, times
/// the schedule's factor when the op has one: the loop-nest input
/// INPUTS[INDEX] (an f32 scalar), if present.
static Value scaledLr(OpBuilder &b, Location loc, Type type, double lr,
                      ValueRange inputs, unsigned index) {
  Value rate = createFloat(b, loc, type, lr);
  if (inputs.size() <= index)
    return rate;
  Value scale = inputs[index];
  if (scale.getType() != type)
    scale = cast<FloatType>(type).getWidth() > 32
                ? arith::ExtFOp::create(b, loc, type, scale).getResult()
                : arith::TruncFOp::create(b, loc, type, scale).getResult();
  return arith::MulFOp::create(b, loc, rate, scale);
}

//===----------------------------------------------------------------------===//
// Lowering of each op
//===----------------------------------------------------------------------===//

namespace {
/// Lowers one nn op at a time, in program order; each method returns the
/// values that replace the op's results, or fails after reporting an error.
class NNLowering {
public:
  NNLowering(
      OpBuilder &b, StringRef target,
      llvm::DenseMap<Operation *, nn::ReduceSumOp> fusedBiasGradients,
      llvm::DenseMap<Operation *, SixteenBitBatchNorm> sixteenBitBatchNorms,
      llvm::DenseMap<Operation *, FusedReLU> fusedReLUs)
      : b(b), target(target), fusedBiasGradients(std::move(fusedBiasGradients)),
        sixteenBitBatchNorms(std::move(sixteenBitBatchNorms)),
        fusedReLUs(std::move(fusedReLUs)) {}

  FailureOr<SmallVector<Value>> lower(Operation *op);

private:
  Value binary(Operation *op, function_ref<Value(OpBuilder &, Location,
                                                 Value, Value)>
                                  fn) {
    return buildElementwise(
        b, op->getLoc(), getTensorType(op->getResult(0)), op->getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange x) {
          return fn(b, loc, x[0], x[1]);
        });
  }
  Value unary(Operation *op,
              function_ref<Value(OpBuilder &, Location, Value)> fn) {
    return buildElementwise(b, op->getLoc(), getTensorType(op->getResult(0)),
                            op->getOperand(0),
                            [&](OpBuilder &b, Location loc, ValueRange x) {
                              return fn(b, loc, x[0]);
                            });
  }

  /// The element-wise MathOp, in f32 for 16-bit elements.
  template <typename MathOp> Value unaryMath(Operation *op) {
    return unary(op, [](OpBuilder &b, Location l, Value x) {
      return applyInF32(b, l, x,
                        [&](Value x) { return MathOp::create(b, l, x); });
    });
  }

  Value softmax(Value input, int64_t axis, bool logarithm, Location loc);
  Value crossEntropy(nn::SoftmaxCrossEntropyOp op);
  Value countCorrect(nn::CountCorrectOp op);
  Value dropoutMask(nn::DropoutMaskOp op);
  Value crossEntropyGrad(nn::SoftmaxCrossEntropyGradOp op);
  Value reduce(Operation *op, ArrayRef<int64_t> dims, bool mean);
  Value concat(nn::ConcatOp op);
  Value pad(nn::PadOp op);
  Value embedding(nn::EmbeddingOp op);
  FailureOr<Value> embeddingGrad(nn::EmbeddingGradOp op);
  FailureOr<Value> matmul(nn::MatmulOp op);
  FailureOr<Value> conv2d(nn::Conv2DOp op);
  FailureOr<Value> conv2dBackwardData(nn::Conv2DBackwardDataOp op);
  FailureOr<Value> conv2dBackwardWeights(nn::Conv2DBackwardWeightsOp op);
  template <typename PoolOp>
  FailureOr<Value> pool2d(PoolOp op, int32_t kind);
  template <typename PoolGradOp>
  FailureOr<Value> pool2dBackward(PoolGradOp op, int32_t kind, Value input);
  FailureOr<Value> batchNorm(nn::BatchNormOp op);
  FailureOr<SmallVector<Value>> batchNormTrain(nn::BatchNormTrainOp op);
  FailureOr<SmallVector<Value>>
  batchNormTrainGrad(nn::BatchNormTrainGradOp op);
  SmallVector<Value> momentumUpdate(train::MomentumUpdateOp op);
  SmallVector<Value> adamUpdate(train::AdamUpdateOp op);
  SmallVector<Value> larsUpdate(train::LarsUpdateOp op);

  OpBuilder &b;
  /// The kernels' target: cpu or cuda (see getKernelName).
  StringRef target;
  /// The bias gradients that a weight gradient's kernel computes with it
  /// (see getFusedBiasGradients), by weight gradient.
  llvm::DenseMap<Operation *, nn::ReduceSumOp> fusedBiasGradients;
  /// The batch norms that run on 16-bit data (see getSixteenBitBatchNorms),
  /// with the casts that their 16-bit results replace.
  llvm::DenseMap<Operation *, SixteenBitBatchNorm> sixteenBitBatchNorms;
  /// The ReLUs and ReLU gradients that batch norms and their gradients
  /// compute with them (see getFusedReLUs), by batch norm or gradient.
  llvm::DenseMap<Operation *, FusedReLU> fusedReLUs;

  /// The batch-norm kernel call of OP (CALL, f32 data), on OP's 16-bit data
  /// instead where OP is one of sixteenBitBatchNorms: the inputs that its
  /// widening casts made read the 16-bit tensors they were widened from,
  /// the first result is 16-bit, and it replaces the narrowing casts, which
  /// are erased.
  SmallVector<Value> buildBatchNormCall(Operation *op, KernelCall call);
};
} // namespace

/// For the CUDA target, the batch norms and batch-norm gradients whose f32
/// data (the input; and the output gradient, for a gradient) were widened
/// from one 16-bit type by nn.casts that only such batch norms use, and
/// whose data result is used only by nn.casts back to that type (what
/// --dtrain-mixed-precision makes of the batch norms it keeps in f32): by
/// op, those casts. Their kernels read and write the 16-bit data
/// themselves, with the f32 scale, bias and statistics, and compute in f32
/// what the f32 kernel computes between the casts, without the f32 copies.
static llvm::DenseMap<Operation *, SixteenBitBatchNorm>
getSixteenBitBatchNorms(Operation *root) {
  llvm::DenseMap<Operation *, SixteenBitBatchNorm> found;
  root->walk([&](Operation *op) {
    SmallVector<Value> data;
    if (auto bn = dyn_cast<nn::BatchNormOp>(op))
      data = {bn.getInput()};
    else if (auto bn = dyn_cast<nn::BatchNormTrainOp>(op))
      data = {bn.getInput()};
    else if (auto grad = dyn_cast<nn::BatchNormTrainGradOp>(op))
      data = {grad.getGrad(), grad.getInput()};
    else
      return;
    SixteenBitBatchNorm casts;
    Type narrow;
    for (Value value : data) {
      auto cast = value.getDefiningOp<nn::CastOp>();
      if (!cast)
        return;
      Type from = getTensorType(cast.getInput()).getElementType();
      if (!is16BitFloat(from) || (narrow && from != narrow))
        return;
      narrow = from;
      casts.widening.push_back(cast);
    }
    for (Operation *user : op->getResult(0).getUsers()) {
      auto cast = dyn_cast<nn::CastOp>(user);
      if (!cast || getTensorType(cast.getResult()).getElementType() != narrow)
        return;
      casts.narrowing.push_back(cast);
    }
    if (!casts.narrowing.empty())
      found[op] = std::move(casts);
  });
  // A widening cast that another op reads stays, and so do its batch
  // norms' f32 data.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = found.begin(); it != found.end(); ++it) {
      const bool shared = llvm::any_of(it->second.widening, [&](nn::CastOp c) {
        return llvm::any_of(c->getUsers(), [&](Operation *user) {
          return !found.contains(user);
        });
      });
      if (shared) {
        found.erase(it);
        changed = true;
        break;
      }
    }
  }
  return found;
}

/// For the CUDA target, the ReLUs that batch norms in training compute
/// with their normalization (dtrain_rt_cuda_batch_norm_train_relu_*): an
/// nn.relu that is the batch norm's data result's one user, or its 16-bit
/// narrowing cast's (SIXTEENBIT); or an nn.add of that result and a
/// residual defined before the batch norm, whose one user is an nn.relu
/// (..._train_add_relu_*: a residual block's end); and the ReLU gradients
/// that batch-norm gradients take in place of their output gradient
/// (..._backward_relu_*): an nn.relu_grad whose result is that output
/// gradient and has no other user, or is through its widening cast. By
/// batch norm or gradient. Saves the tensors between, and a kernel each.
static llvm::DenseMap<Operation *, FusedReLU> getFusedReLUs(
    Operation *root,
    const llvm::DenseMap<Operation *, SixteenBitBatchNorm> &sixteenBit) {
  llvm::DenseMap<Operation *, FusedReLU> fused;
  root->walk([&](Operation *op) {
    if (!isa<nn::BatchNormTrainOp, nn::BatchNormTrainGradOp>(op) ||
        getKernelElementType(op, "cuda").isF64())
      return;
    auto casts = sixteenBit.find(op);
    if (auto bn = dyn_cast<nn::BatchNormTrainOp>(op)) {
      Value result = bn.getResult();
      if (casts != sixteenBit.end()) {
        if (casts->second.narrowing.size() != 1)
          return;
        nn::CastOp narrowing = casts->second.narrowing.front();
        result = narrowing.getResult();
      } else if (getTensorType(result).getElementType() !=
                 getKernelElementType(op, "cuda")) {
        return; // the kernel's result is converted after it
      }
      if (!result.hasOneUse())
        return;
      Operation *user = *result.user_begin();
      if (isa<nn::ReluOp>(user)) {
        fused[op] = {user, nullptr, 0};
        return;
      }
      // The sum's rounding is the add's only if it adds in the kernel's
      // type; the residual must be there before the batch norm runs.
      auto add = dyn_cast<nn::AddOp>(user);
      if (!add || !add.getResult().hasOneUse() ||
          !isa<nn::ReluOp>(*add.getResult().user_begin()) ||
          add.getLhs().getType() != add.getRhs().getType())
        return;
      const unsigned residual = add.getLhs() == result ? 1 : 0;
      Value r = add->getOperand(residual);
      Operation *def = r.getDefiningOp();
      // A 16-bit batch norm's narrowing cast is that batch norm's kernel
      // result, there once the batch norm has run.
      if (auto narrowing = dyn_cast_or_null<nn::CastOp>(def))
        if (Operation *from = narrowing.getInput().getDefiningOp();
            from && sixteenBit.count(from))
          def = from;
      if (r == result ||
          (def &&
           (def->getBlock() != op->getBlock() || !def->isBeforeInBlock(op))) ||
          (!def && cast<BlockArgument>(r).getOwner() != op->getBlock()))
        return;
      fused[op] = {*add.getResult().user_begin(), add, residual};
      return;
    }
    Value grad = cast<nn::BatchNormTrainGradOp>(op).getGrad();
    if (casts != sixteenBit.end()) {
      nn::CastOp widening = casts->second.widening.front(); // the grad's
      grad = widening.getInput();
    }
    auto relu = grad.getDefiningOp<nn::ReluGradOp>();
    if (relu && grad.hasOneUse())
      fused[op] = {relu, nullptr, 0};
  });
  return fused;
}

SmallVector<Value> NNLowering::buildBatchNormCall(Operation *op,
                                                  KernelCall call) {
  auto casts = sixteenBitBatchNorms.find(op);
  if (casts == sixteenBitBatchNorms.end())
    return buildKernelCall(b, op, target, call);
  // The widening casts stay as they were (the pass lowers them not), their
  // inputs the 16-bit data as lowered.
  const SixteenBitBatchNorm &sixteenBit = casts->second;
  for (Value &input : call.inputs)
    if (auto cast = input.getDefiningOp<nn::CastOp>();
        cast && llvm::is_contained(sixteenBit.widening, cast))
      input = cast.getInput();
  call.element =
      cast<FloatType>(getTensorType(call.inputs.front()).getElementType());
  call.results.front() = call.results.front().clone(call.element);
  SmallVector<Value> results = buildKernelCall(b, op, target, call);
  for (nn::CastOp cast : sixteenBit.narrowing) {
    cast.getResult().replaceAllUsesWith(results.front());
    cast->erase();
  }
  return results;
}

/// For the CUDA target, the bias gradient of each convolution whose weight
/// gradient's kernel can compute it too (one block per channel, the
/// kernel ABI's DB): an nn.reduce_sum of the same output gradient over N,
/// OH and OW, after the weight gradient in its block, in f32 or a 16-bit
/// type. Its sum over the channel's N x OH x OW elements would otherwise be
/// one GPU thread's loop per channel.
static llvm::DenseMap<Operation *, nn::ReduceSumOp>
getFusedBiasGradients(Operation *root) {
  llvm::DenseMap<Operation *, nn::ReduceSumOp> fused;
  llvm::SmallPtrSet<Operation *, 8> claimed; // one weight gradient per sum
  root->walk([&](nn::Conv2DBackwardWeightsOp op) {
    if (getKernelElementType(op, "cuda").isF64())
      return;
    for (Operation *user : op.getGrad().getUsers()) {
      auto sum = dyn_cast<nn::ReduceSumOp>(user);
      if (sum &&
          sum.getDims() ==
              nn::getConv2DBiasGradientDims(op.getChannelsLast()) &&
          !sum.getKeepDims() && sum->getBlock() == op->getBlock() &&
          op->isBeforeInBlock(sum) && claimed.insert(sum).second) {
        fused[op] = sum;
        return;
      }
    }
  });
  return fused;
}

/// softmax(x) = e / sum(e), log_softmax(x) = x - max - log(sum(e)), where
/// e = exp(x - max) along `axis`.
Value NNLowering::softmax(Value input, int64_t axis, bool logarithm,
                          Location loc) {
  MLIRContext *ctx = b.getContext();
  RankedTensorType type = getTensorType(input);
  unsigned rank = type.getRank();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap reduced = getMapWithout(ctx, rank, axis);
  Value max = buildMax(b, loc, input, axis);
  Value exp = buildParallel(b, loc, type, {input, max}, {identity, reduced},
                            [](OpBuilder &b, Location loc, ValueRange x) {
                              return math::ExpOp::create(
                                  b, loc, arith::SubFOp::create(b, loc, x[0], x[1]));
                            });
  Value sum = buildSum(b, loc, exp, axis);
  if (!logarithm)
    return buildParallel(b, loc, type, {exp, sum}, {identity, reduced},
                         [](OpBuilder &b, Location loc, ValueRange x) {
                           return arith::DivFOp::create(b, loc, x[0], x[1]);
                         });
  return buildParallel(
      b, loc, type, {input, max, sum}, {identity, reduced, reduced},
      [](OpBuilder &b, Location loc, ValueRange x) {
        Value shifted = arith::SubFOp::create(b, loc, x[0], x[1]);
        return arith::SubFOp::create(b, loc, shifted,
                                     math::LogOp::create(b, loc, x[2]));
      });
}

/// One SplitMix64 step on Z (i64 arithmetic wraps modulo 2^64), the
/// generator of nn.dropout_mask.
static Value splitMix64(OpBuilder &b, Location loc, Value z) {
  auto constant = [&](uint64_t value) -> Value {
    return arith::ConstantIntOp::create(b, loc, b.getI64Type(),
                                        static_cast<int64_t>(value));
  };
  auto xorShift = [&](Value x, unsigned shift) -> Value {
    return arith::XOrIOp::create(
        b, loc, x, arith::ShRUIOp::create(b, loc, x, constant(shift)));
  };
  z = arith::AddIOp::create(b, loc, z, constant(0x9e3779b97f4a7c15ull));
  z = arith::MulIOp::create(b, loc, xorShift(z, 30),
                            constant(0xbf58476d1ce4e5b9ull));
  z = arith::MulIOp::create(b, loc, xorShift(z, 27),
                            constant(0x94d049bb133111ebull));
  return xorShift(z, 31);
}

/// The mask as nn.dropout_mask documents it: the key from the seed, the
/// step and the stream once, then per element a comparison of the top 24
/// bits of its number with the ratio's integer threshold (exact: no
/// rounding of the ratio in the element type). The key is a 0-d tensor that
/// the mask's loop nest reads, so that it can be computed where the mask is
/// (for CUDA, --dtrain-scalar-code-to-linalg makes it a kernel): the host
/// need not read the seed and step.
Value NNLowering::dropoutMask(nn::DropoutMaskOp op) {
  Location loc = op.getLoc();
  RankedTensorType type = op.getType();
  Type i64 = b.getI64Type();
  Value seed = tensor::ExtractOp::create(b, loc, op.getSeed(), ValueRange{});
  Value step = tensor::ExtractOp::create(b, loc, op.getStep(), ValueRange{});
  Value key = splitMix64(b, loc, seed);
  key = splitMix64(b, loc, arith::XOrIOp::create(b, loc, key, step));
  key = splitMix64(
      b, loc,
      arith::XOrIOp::create(
          b, loc, key, arith::ConstantIntOp::create(b, loc, i64, op.getStream())));
  double ratio = op.getRatio().convertToDouble();
  int64_t threshold = std::llround(ratio * double(1 << 24));
  double kept = 1.0 / (1.0 - ratio);
  ArrayRef<int64_t> shape = type.getShape();
  Value keyTensor = tensor::FromElementsOp::create(
      b, loc, RankedTensorType::get({}, i64), ValueRange{key});
  return buildParallel(
      b, loc, type, {keyTensor},
      {AffineMap::get(type.getRank(), 0, b.getContext())},
      [&](OpBuilder &b, Location loc, ValueRange args) {
        Value key = args[0];
        // The row-major linear index of the element.
        Value index = arith::ConstantIntOp::create(b, loc, i64, 0);
        for (auto [dim, size] : llvm::enumerate(shape)) {
          index = arith::MulIOp::create(
              b, loc, index, arith::ConstantIntOp::create(b, loc, i64, size));
          index = arith::AddIOp::create(
              b, loc, index,
              arith::IndexCastOp::create(b, loc, i64,
                                         linalg::IndexOp::create(b, loc, dim)));
        }
        Value number = splitMix64(
            b, loc,
            arith::AddIOp::create(
                b, loc, key,
                arith::MulIOp::create(
                    b, loc, index,
                    arith::ConstantIntOp::create(
                        b, loc, i64,
                        static_cast<int64_t>(0x9e3779b97f4a7c15ull)))));
        Value top = arith::ShRUIOp::create(
            b, loc, number, arith::ConstantIntOp::create(b, loc, i64, 40));
        Value dropped = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::ult, top,
            arith::ConstantIntOp::create(b, loc, i64, threshold));
        Type element = type.getElementType();
        return arith::SelectOp::create(b, loc, dropped,
                                       createFloat(b, loc, element, 0.0),
                                       createFloat(b, loc, element, kept));
      });
}

/// The index of the label of row `n` as an `index` value.
static Value labelToIndex(OpBuilder &b, Location loc, Value label) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), label);
}

/// The LOGITS (N... x C) and LABELS (N...) of a loss as N x C and N: more
/// dimensions are flattened into rows, each with its classes.
static std::pair<Value, Value> flattenToRows(OpBuilder &b, Location loc,
                                             Value logits, Value labels) {
  RankedTensorType type = getTensorType(logits);
  if (type.getRank() == 2)
    return {logits, labels};
  int64_t classes = type.getShape().back();
  int64_t rows = type.getNumElements() / classes;
  return {buildReshape(b, loc, logits, type.clone({rows, classes})),
          buildReshape(b, loc, labels, getTensorType(labels).clone({rows}))};
}

/// The count of rows whose first maximal logit is at the label: a per-row
/// argmax (strictly greater wins, so the first maximum stays), then a sum
/// of the matches.
Value NNLowering::countCorrect(nn::CountCorrectOp op) {
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  Value logits, labels;
  std::tie(logits, labels) =
      flattenToRows(b, loc, op.getLogits(), op.getLabels());
  RankedTensorType type = getTensorType(logits);
  int64_t n = type.getDimSize(0);
  Type i64 = b.getI64Type();
  auto filled = [&](RankedTensorType fillType, TypedAttr value) {
    Value constant = arith::ConstantOp::create(b, loc, value);
    return linalg::FillOp::create(b, loc, TypeRange{fillType},
                                  ValueRange{constant},
                                  ValueRange{createEmpty(b, loc, fillType)})
        .getResult(0);
  };
  auto maxType = RankedTensorType::get({n}, type.getElementType());
  auto indexType = RankedTensorType::get({n}, i64);
  AffineMap rows = getMapWithout(ctx, 2, 1);
  auto argmax = linalg::GenericOp::create(
      b, loc, TypeRange{maxType, indexType}, ValueRange{logits},
      ValueRange{createFilled(b, loc, maxType,
                              -std::numeric_limits<double>::infinity()),
                 filled(indexType, b.getI64IntegerAttr(0))},
      {AffineMap::getMultiDimIdentityMap(2, ctx), rows, rows},
      {utils::IteratorType::parallel, utils::IteratorType::reduction},
      [&](OpBuilder &b, Location loc, ValueRange x) {
        Value column = arith::IndexCastOp::create(
            b, loc, i64, linalg::IndexOp::create(b, loc, 1));
        Value greater = arith::CmpFOp::create(
            b, loc, arith::CmpFPredicate::OGT, x[0], x[1]);
        linalg::YieldOp::create(
            b, loc,
            ValueRange{arith::SelectOp::create(b, loc, greater, x[0], x[1]),
                       arith::SelectOp::create(b, loc, greater, column,
                                               x[2])});
      });
  auto scalarType = RankedTensorType::get({}, i64);
  AffineMap row = AffineMap::getMultiDimIdentityMap(1, ctx);
  auto count = linalg::GenericOp::create(
      b, loc, TypeRange{scalarType},
      ValueRange{argmax.getResult(1), labels},
      ValueRange{filled(scalarType, b.getI64IntegerAttr(0))},
      {row, row, AffineMap::get(1, 0, {}, ctx)},
      {utils::IteratorType::reduction},
      [&](OpBuilder &b, Location loc, ValueRange x) {
        Value label = x[1];
        if (label.getType() != i64)
          label = arith::ExtSIOp::create(b, loc, i64, label);
        Value match = arith::ExtUIOp::create(
            b, loc, i64,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x[0],
                                  label));
        linalg::YieldOp::create(
            b, loc, arith::AddIOp::create(b, loc, x[2], match).getResult());
      });
  return count.getResult(0);
}

/// loss = -(1/N) sum_n (x[n, label_n] - max_n - log(sum_c exp(x[n,c] - max_n)))
Value NNLowering::crossEntropy(nn::SoftmaxCrossEntropyOp op) {
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  Value logits, labels;
  std::tie(logits, labels) =
      flattenToRows(b, loc, op.getLogits(), op.getLabels());
  RankedTensorType type = getTensorType(logits);
  Type elementType = type.getElementType();
  int64_t n = type.getDimSize(0);
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, ctx);
  AffineMap rows = getMapWithout(ctx, 2, 1);
  Value max = buildMax(b, loc, logits, 1);
  Value exp = buildParallel(b, loc, type, {logits, max}, {identity, rows},
                            [](OpBuilder &b, Location loc, ValueRange x) {
                              return math::ExpOp::create(
                                  b, loc, arith::SubFOp::create(b, loc, x[0], x[1]));
                            });
  Value sum = buildSum(b, loc, exp, 1);

  // Sum over rows of the label's log-probability, into a scalar.
  auto scalarType = RankedTensorType::get({}, elementType);
  AffineMap row = AffineMap::getMultiDimIdentityMap(1, ctx);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{scalarType}, ValueRange{max, sum, labels},
      ValueRange{createFilled(b, loc, scalarType, 0.0)},
      {row, row, row, AffineMap::get(1, 0, {}, ctx)},
      {utils::IteratorType::reduction},
      [&](OpBuilder &b, Location loc, ValueRange x) {
        Value index = linalg::IndexOp::create(b, loc, 0);
        Value picked = tensor::ExtractOp::create(
            b, loc, logits, ValueRange{index, labelToIndex(b, loc, x[2])});
        Value shifted = arith::SubFOp::create(b, loc, picked, x[0]);
        Value logProb = arith::SubFOp::create(
            b, loc, shifted, math::LogOp::create(b, loc, x[1]));
        linalg::YieldOp::create(b, loc,
                                arith::AddFOp::create(b, loc, x[3], logProb)
                                    .getResult());
      });
  return buildElementwise(
      b, loc, scalarType, generic.getResult(0),
      [&](OpBuilder &b, Location loc, ValueRange x) {
        return arith::MulFOp::create(
            b, loc, x[0], createFloat(b, loc, elementType, -1.0 / n));
      });
}

/// dlogits[n, c] = grad * (softmax(x)[n, c] - (c == label_n)) / N
Value NNLowering::crossEntropyGrad(nn::SoftmaxCrossEntropyGradOp op) {
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  Value logits, labels;
  std::tie(logits, labels) =
      flattenToRows(b, loc, op.getLogits(), op.getLabels());
  RankedTensorType type = getTensorType(logits);
  Type elementType = type.getElementType();
  int64_t n = type.getDimSize(0);
  Value probabilities = softmax(logits, 1, /*logarithm=*/false, loc);
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, ctx);
  AffineMap rows = getMapWithout(ctx, 2, 1);
  AffineMap scalar = AffineMap::get(2, 0, {}, ctx);
  Value grad = buildParallel(
      b, loc, type, {probabilities, labels, op.getGrad()},
      {identity, rows, scalar}, [&](OpBuilder &b, Location loc, ValueRange x) {
        Value column = linalg::IndexOp::create(b, loc, 1);
        Value isLabel = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                              column,
                                              labelToIndex(b, loc, x[1]));
        Value oneHot = arith::SelectOp::create(
            b, loc, isLabel, createFloat(b, loc, elementType, 1.0),
            createFloat(b, loc, elementType, 0.0));
        Value diff = arith::SubFOp::create(b, loc, x[0], oneHot);
        Value scale = arith::DivFOp::create(
            b, loc, x[2], createFloat(b, loc, elementType, n));
        return arith::MulFOp::create(b, loc, diff, scale);
      });
  return buildReshape(b, loc, grad, op.getType());
}

Value NNLowering::reduce(Operation *op, ArrayRef<int64_t> dims, bool mean) {
  Location loc = op->getLoc();
  Value input = op->getOperand(0);
  RankedTensorType inputType = getTensorType(input);
  SmallVector<int64_t> sorted(dims);
  llvm::sort(sorted);
  Value result = buildSum(b, loc, input, sorted);
  if (mean) {
    int64_t count = 1;
    for (int64_t d : sorted)
      count *= inputType.getDimSize(d);
    Type elementType = inputType.getElementType();
    result = buildElementwise(
        b, loc, getTensorType(result), result,
        [&](OpBuilder &b, Location loc, ValueRange x) {
          return arith::DivFOp::create(
              b, loc, x[0], createFloat(b, loc, elementType, count));
        });
  }
  return buildReshape(b, loc, result, getTensorType(op->getResult(0)));
}

Value NNLowering::concat(nn::ConcatOp op) {
  Location loc = op.getLoc();
  RankedTensorType type = getTensorType(op.getResult());
  int64_t axis = op.getAxis();
  Value result = createEmpty(b, loc, type);
  int64_t offset = 0;
  for (Value input : op.getInputs()) {
    RankedTensorType inputType = getTensorType(input);
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
    offsets[axis] = b.getIndexAttr(offset);
    SmallVector<OpFoldResult> sizes = llvm::map_to_vector(
        inputType.getShape(),
        [&](int64_t size) -> OpFoldResult { return b.getIndexAttr(size); });
    SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
    result = tensor::InsertSliceOp::create(b, loc, input, result, offsets,
                                           sizes, strides);
    offset += inputType.getDimSize(axis);
  }
  return result;
}

/// The table row that INDEX (i32 or i64) picks, as nn.embedding defines
/// it: a negative index counts from the end, and the row is clamped into
/// [0, ROWS) so that no access leaves the table.
static Value buildEmbeddingRow(OpBuilder &b, Location loc, Value index,
                               int64_t rows) {
  Type i64 = b.getI64Type();
  if (index.getType() != i64)
    index = arith::ExtSIOp::create(b, loc, i64, index);
  Value zero = createI64(b, loc, 0);
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, index, zero);
  Value wrapped = arith::SelectOp::create(
      b, loc, negative,
      arith::AddIOp::create(b, loc, index, createI64(b, loc, rows)), index);
  Value clamped = arith::MinSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, wrapped, zero),
      createI64(b, loc, rows - 1));
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), clamped);
}

/// result[i..., j...] = table[row(indices[i...]), j...]: one loop nest over
/// the result, reading the table where each index points.
Value NNLowering::embedding(nn::EmbeddingOp op) {
  Location loc = op.getLoc();
  RankedTensorType resultType = op.getType();
  Value table = op.getTable();
  int64_t rows = op.getTable().getType().getDimSize(0);
  unsigned indexRank = op.getIndices().getType().getRank();
  unsigned rank = resultType.getRank();
  AffineMap indexMap =
      AffineMap::getMultiDimIdentityMap(rank, b.getContext())
          .getMajorSubMap(indexRank);
  return buildParallel(
      b, loc, resultType, {op.getIndices()}, {indexMap},
      [&](OpBuilder &b, Location loc, ValueRange x) -> Value {
        SmallVector<Value> position = {buildEmbeddingRow(b, loc, x[0], rows)};
        for (unsigned d = indexRank; d < rank; ++d)
          position.push_back(linalg::IndexOp::create(b, loc, d));
        return tensor::ExtractOp::create(b, loc, table, position);
      });
}

/// The scatter-add of each index's slice of the gradient into its row, on
/// the runtime's kernel (dtrain_rt_embedding_grad_*), which takes 64-bit
/// indices and applies buildEmbeddingRow's rule.
FailureOr<Value> NNLowering::embeddingGrad(nn::EmbeddingGradOp op) {
  Location loc = op.getLoc();
  Value indices = op.getIndices();
  RankedTensorType indicesType = op.getIndices().getType();
  Type i64 = b.getI64Type();
  if (indicesType.getElementType() != i64)
    indices = buildElementwise(
        b, loc, indicesType.clone(i64), indices,
        [&](OpBuilder &b, Location loc, ValueRange x) -> Value {
          return arith::ExtSIOp::create(b, loc, i64, x[0]);
        });
  RankedTensorType resultType = op.getType();
  int64_t width = resultType.getNumElements() / resultType.getDimSize(0);
  return buildKernelCall(
             b, op, target,
             {"embedding_grad",
              getKernelElementType(op, target),
              {op.getGrad(), indices},
              {resultType},
              createI64s(b, loc,
                         {indicesType.getNumElements(), int64_t(op.getRows()), width})})
      .front();
}

Value NNLowering::pad(nn::PadOp op) {
  Location loc = op.getLoc();
  RankedTensorType type = getTensorType(op.getResult());
  RankedTensorType inputType = getTensorType(op.getInput());
  int64_t rank = type.getRank();
  Value result =
      createFilled(b, loc, type, op.getValue().convertToDouble());
  SmallVector<OpFoldResult> offsets = llvm::map_to_vector(
      op.getPads().take_front(rank),
      [&](int64_t pad) -> OpFoldResult { return b.getIndexAttr(pad); });
  SmallVector<OpFoldResult> sizes = llvm::map_to_vector(
      inputType.getShape(),
      [&](int64_t size) -> OpFoldResult { return b.getIndexAttr(size); });
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, loc, op.getInput(), result, offsets,
                                       sizes, strides);
}

FailureOr<Value> NNLowering::matmul(nn::MatmulOp op) {
  FloatType element = getKernelElementType(op, target);
  Location loc = op.getLoc();
  RankedTensorType resultType = getTensorType(op.getResult());
  RankedTensorType lhsType = getTensorType(op.getLhs());
  // A rank-3 product is a batch of them (the leading dimension).
  int64_t rank = resultType.getRank();
  bool batched = rank == 3;
  int64_t k = lhsType.getDimSize(op.getTransposeLhs() ? rank - 2 : rank - 1);
  SmallVector<int64_t> sizes = {resultType.getDimSize(rank - 2),
                                resultType.getDimSize(rank - 1), k};
  if (batched)
    sizes.insert(sizes.begin(), resultType.getDimSize(0));
  SmallVector<Value> scalars = createI64s(b, loc, sizes);
  scalars.push_back(createI32(b, loc, op.getTransposeLhs()));
  scalars.push_back(createI32(b, loc, op.getTransposeRhs()));
  scalars.push_back(createFloat(b, loc, getKernelScalarType(element), 0.0));
  return buildKernelCall(b, op, target,
                         {batched ? "batch_matmul" : "matmul",
                          element,
                          {op.getLhs(), op.getRhs()},
                          {resultType},
                          scalars})
      .front();
}

/// The geometry scalars of the convolution kernels (dtrain_rt.h) for input
/// X, weight W and output Y, with the window and layout attributes of OP
/// (nn.conv2d or one of its gradients): the same for both layouts.
template <typename ConvLikeOp>
static SmallVector<Value> createConvGeometry(OpBuilder &b, ConvLikeOp op,
                                             RankedTensorType xType,
                                             RankedTensorType wType,
                                             RankedTensorType yType) {
  nn::ImageLayout layout = nn::ImageLayout::get(op.getChannelsLast());
  int64_t c = layout.channels, h = layout.height;
  ArrayRef<int64_t> x = xType.getShape(), w = wType.getShape(),
                    y = yType.getShape();
  ArrayRef<int64_t> strides = op.getStrides(), padding = op.getPadding(),
                    dilations = op.getDilations();
  return createI64s(b, op.getLoc(),
                    {x[0], x[c], x[h], x[h + 1], w[0], w[h], w[h + 1], y[h],
                     y[h + 1], strides[0], strides[1], padding[0], padding[1],
                     padding[2], padding[3], dilations[0], dilations[1],
                     static_cast<int64_t>(op.getGroups())});
}

/// The name of OP's kernel (a convolution's or a pooling's), BASE or, with
/// channels last, its NHWC form (BASE_nhwc), which has no f64 reference
/// loops.
template <typename ImageOp>
static FailureOr<StringRef> getImageKernel(ImageOp op, FloatType element,
                                           StringRef base, StringRef nhwc) {
  if (!op.getChannelsLast())
    return base;
  if (element.isF64())
    return op.emitOpError("with channels_last has no f64 kernel (the f64 "
                          "reference loops are NCHW)");
  return nhwc;
}

FailureOr<Value> NNLowering::conv2d(nn::Conv2DOp op) {
  FloatType element = getKernelElementType(op, target);
  FailureOr<StringRef> kernel =
      getImageKernel(op, element, "conv2d", "conv2d_nhwc");
  if (failed(kernel))
    return failure();
  RankedTensorType resultType = getTensorType(op.getResult());
  return buildKernelCall(
             b, op, target,
             {*kernel,
              element,
              {op.getInput(), op.getWeight(), op.getBias()},
              {resultType},
              createConvGeometry(b, op, getTensorType(op.getInput()),
                                 getTensorType(op.getWeight()), resultType)})
      .front();
}

FailureOr<Value> NNLowering::conv2dBackwardData(nn::Conv2DBackwardDataOp op) {
  FloatType element = getKernelElementType(op, target);
  FailureOr<StringRef> kernel = getImageKernel(
      op, element, "conv2d_backward_data", "conv2d_backward_data_nhwc");
  if (failed(kernel))
    return failure();
  RankedTensorType resultType = getTensorType(op.getResult());
  return buildKernelCall(b, op, target,
                         {*kernel,
                          element,
                          {op.getGrad(), op.getWeight()},
                          {resultType},
                          createConvGeometry(b, op, resultType,
                                             getTensorType(op.getWeight()),
                                             getTensorType(op.getGrad()))})
      .front();
}

FailureOr<Value>
NNLowering::conv2dBackwardWeights(nn::Conv2DBackwardWeightsOp op) {
  FloatType element = getKernelElementType(op, target);
  FailureOr<StringRef> kernel = getImageKernel(
      op, element, "conv2d_backward_weights", "conv2d_backward_weights_nhwc");
  if (failed(kernel))
    return failure();
  RankedTensorType resultType = getTensorType(op.getResult());
  SmallVector<RankedTensorType> results = {resultType};
  SmallVector<Value> scalars;
  nn::ReduceSumOp bias = fusedBiasGradients.lookup(op);
  if (bias)
    results.push_back(getTensorType(bias.getResult()));
  else // no bias gradient (NULL): an nn.reduce_sum computes it
    scalars.push_back(LLVM::ZeroOp::create(
        b, op.getLoc(), LLVM::LLVMPointerType::get(b.getContext())));
  llvm::append_range(scalars,
                     createConvGeometry(b, op, getTensorType(op.getInput()),
                                        resultType,
                                        getTensorType(op.getGrad())));
  SmallVector<Value> gradients = buildKernelCall(
      b, op, target,
      {*kernel, element, {op.getInput(), op.getGrad()}, results, scalars});
  if (bias) {
    bias.getResult().replaceAllUsesWith(gradients[1]);
    bias->erase();
  }
  return gradients.front();
}

/// The kind and geometry scalars of the pooling kernels (dtrain_rt.h) for
/// input X and output Y, with the window and layout attributes of OP (a
/// pooling op or its gradient): the same for both layouts.
template <typename PoolLikeOp>
static SmallVector<Value> createPoolGeometry(OpBuilder &b, PoolLikeOp op,
                                             int32_t kind,
                                             RankedTensorType xType,
                                             RankedTensorType yType) {
  Location loc = op.getLoc();
  nn::ImageLayout layout = nn::ImageLayout::get(op.getChannelsLast());
  int64_t c = layout.channels, h = layout.height;
  ArrayRef<int64_t> x = xType.getShape(), y = yType.getShape();
  ArrayRef<int64_t> kernel = op.getKernel(), strides = op.getStrides(),
                    padding = op.getPadding(), dilations = op.getDilations();
  SmallVector<Value> scalars = {createI32(b, loc, kind)};
  llvm::append_range(
      scalars,
      createI64s(b, loc,
                 {x[0], x[c], x[h], x[h + 1], y[h], y[h + 1], kernel[0],
                  kernel[1], strides[0], strides[1], padding[0], padding[1],
                  padding[2], padding[3], dilations[0], dilations[1]}));
  return scalars;
}

template <typename PoolOp>
FailureOr<Value> NNLowering::pool2d(PoolOp op, int32_t kind) {
  FloatType element = getKernelElementType(op, target);
  FailureOr<StringRef> kernel =
      getImageKernel(op, element, "pool2d", "pool2d_nhwc");
  if (failed(kernel))
    return failure();
  RankedTensorType resultType = getTensorType(op.getResult());
  return buildKernelCall(
             b, op, target,
             {*kernel,
              element,
              {op.getInput()},
              {resultType},
              createPoolGeometry(b, op, kind, getTensorType(op.getInput()),
                                 resultType)})
      .front();
}

/// The gradient of a pooling of KIND: INPUT is read by max pooling only.
template <typename PoolGradOp>
FailureOr<Value> NNLowering::pool2dBackward(PoolGradOp op, int32_t kind,
                                            Value input) {
  FloatType element = getKernelElementType(op, target);
  FailureOr<StringRef> kernel =
      getImageKernel(op, element, "pool2d_backward", "pool2d_backward_nhwc");
  if (failed(kernel))
    return failure();
  RankedTensorType resultType = getTensorType(op.getResult());
  return buildKernelCall(b, op, target,
                         {*kernel,
                          element,
                          {input, op.getGrad()},
                          {resultType},
                          createPoolGeometry(b, op, kind, resultType,
                                             getTensorType(op.getGrad()))})
      .front();
}

/// N, C and the product of the remaining dims, as the batch-norm kernels
/// take them. With the channels last, the N x ... x C data is as NCHW of
/// N x ... rows, C channels and one spatial element.
static SmallVector<int64_t> getBatchNormGeometry(RankedTensorType type,
                                                 bool channelsLast) {
  ArrayRef<int64_t> shape = type.getShape();
  if (channelsLast)
    return {llvm::product_of(shape.drop_back()), shape.back(), 1};
  return {shape[0], shape[1], llvm::product_of(shape.drop_front(2))};
}

FailureOr<Value> NNLowering::batchNorm(nn::BatchNormOp op) {
  FloatType element = getKernelElementType(op, target);
  Location loc = op.getLoc();
  RankedTensorType type = getTensorType(op.getResult());
  SmallVector<Value> scalars =
      createI64s(b, loc, getBatchNormGeometry(type, op.getChannelsLast()));
  scalars.push_back(createFloat(b, loc, getKernelScalarType(element),
                                op.getEpsilon().convertToDouble()));
  return buildBatchNormCall(op, {"batch_norm",
                                 element,
                                 {op.getInput(), op.getScale(), op.getBias(),
                                  op.getMean(), op.getVar()},
                                 {type},
                                 scalars})
      .front();
}

FailureOr<SmallVector<Value>>
NNLowering::batchNormTrain(nn::BatchNormTrainOp op) {
  FloatType element = getKernelElementType(op, target);
  Location loc = op.getLoc();
  RankedTensorType type = getTensorType(op.getResult());
  SmallVector<Value> scalars =
      createI64s(b, loc, getBatchNormGeometry(type, op.getChannelsLast()));
  scalars.push_back(createFloat(b, loc, getKernelScalarType(element),
                                op.getEpsilon().convertToDouble()));
  SmallVector<Value> inputs = {op.getInput(), op.getScale(), op.getBias()};
  StringRef kernel = "batch_norm_train";
  auto fused = fusedReLUs.find(op);
  if (fused != fusedReLUs.end()) {
    kernel = "batch_norm_train_relu";
    if (nn::AddOp add = fused->second.add) {
      kernel = "batch_norm_train_add_relu";
      inputs.insert(inputs.begin() + 1,
                    add->getOperand(fused->second.residual));
    }
  }
  SmallVector<Value> results =
      buildBatchNormCall(op, {kernel,
                              element,
                              inputs,
                              {type, getTensorType(op.getBatchMean()),
                               getTensorType(op.getBatchVar())},
                              scalars});
  if (fused != fusedReLUs.end()) {
    // What read the ReLU reads the kernel's result; the batch norm's own
    // (the ReLU's or the add's input) goes unused.
    fused->second.relu->getResult(0).replaceAllUsesWith(results.front());
    fused->second.relu->erase();
    if (nn::AddOp add = fused->second.add)
      add->erase();
  }
  return results;
}

// The optimizer updates follow PyTorch 1.13's single-tensor implementations
// operation by operation, so that parameters match it to rounding.

SmallVector<Value> NNLowering::momentumUpdate(train::MomentumUpdateOp op) {
  double lr = op.getLr().convertToDouble();
  double momentum = op.getMomentum().convertToDouble();
  double decay = op.getWeightDecay().convertToDouble();
  bool nesterov = op.getNesterov();
  Type type = op.getParam().getType();
  return buildElementwiseResults(
      b, op.getLoc(), {type, type},
      op->getOperands(), [&](OpBuilder &b, Location l, ValueRange x) {
        Value p = x[0], d = x[1], v = x[2];
        auto constant = [&](double value) {
          return createFloat(b, l, p.getType(), value);
        };
        if (decay != 0)
          d = arith::AddFOp::create(
              b, l, d, arith::MulFOp::create(b, l, p, constant(decay)));
        Value velocity = arith::AddFOp::create(
            b, l, arith::MulFOp::create(b, l, v, constant(momentum)), d);
        Value step =
            nesterov ? arith::AddFOp::create(
                           b, l, d,
                           arith::MulFOp::create(b, l, velocity,
                                                 constant(momentum)))
                           .getResult()
                     : velocity;
        Value param = arith::SubFOp::create(
            b, l, p,
            arith::MulFOp::create(b, l, step,
                                  scaledLr(b, l, p.getType(), lr, x, 3)));
        return SmallVector<Value>{param, velocity};
      });
}

SmallVector<Value> NNLowering::larsUpdate(train::LarsUpdateOp op) {
  Location loc = op.getLoc();
  double lr = op.getLr().convertToDouble();
  double momentum = op.getMomentum().convertToDouble();
  double decay = op.getWeightDecay().convertToDouble();
  double eta = op.getTrustCoefficient().convertToDouble();
  double epsilon = op.getEpsilon().convertToDouble();
  auto type = cast<RankedTensorType>(op.getParam().getType());
  SmallVector<int64_t> all = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  // The squared norms of the whole tensors, as rank-0 tensors.
  auto squaredNorm = [&](Value value) {
    Value squares = buildElementwise(
        b, loc, type, value, [](OpBuilder &b, Location l, ValueRange x) {
          return arith::MulFOp::create(b, l, x[0], x[0]);
        });
    return buildSum(b, loc, squares, all);
  };
  Value paramNorm2 = squaredNorm(op.getParam());
  Value gradNorm2 = squaredNorm(op.getGrad());
  return buildElementwiseResults(
      b, loc, {type, type},
      llvm::to_vector(llvm::concat<Value>(
          ValueRange{op.getParam(), op.getGrad(), op.getVelocity(), paramNorm2,
                     gradNorm2},
          op.getLrScale() ? ValueRange{op.getLrScale()} : ValueRange{})),
      [&](OpBuilder &b, Location l, ValueRange x) {
        Value p = x[0], g = x[1], v = x[2];
        auto constant = [&](double value) {
          return createFloat(b, l, p.getType(), value);
        };
        Value paramNorm = math::SqrtOp::create(b, l, x[3]);
        Value gradNorm = math::SqrtOp::create(b, l, x[4]);
        Value denominator = arith::AddFOp::create(
            b, l,
            arith::AddFOp::create(
                b, l, gradNorm,
                arith::MulFOp::create(b, l, paramNorm, constant(decay))),
            constant(epsilon));
        Value ratio = arith::DivFOp::create(
            b, l, arith::MulFOp::create(b, l, paramNorm, constant(eta)),
            denominator);
        Value zero = constant(0.0);
        Value defined = arith::AndIOp::create(
            b, l,
            arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, paramNorm,
                                  zero),
            arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, gradNorm,
                                  zero));
        Value localLr =
            arith::SelectOp::create(b, l, defined, ratio, constant(1.0));
        Value d = decay != 0
                      ? arith::AddFOp::create(
                            b, l, g,
                            arith::MulFOp::create(b, l, p, constant(decay)))
                            .getResult()
                      : g;
        Value velocity = arith::AddFOp::create(
            b, l, arith::MulFOp::create(b, l, v, constant(momentum)),
            arith::MulFOp::create(
                b, l,
                arith::MulFOp::create(b, l, localLr,
                                      scaledLr(b, l, p.getType(), lr, x, 5)),
                d));
        Value param = arith::SubFOp::create(b, l, p, velocity);
        return SmallVector<Value>{param, velocity};
      });
}

SmallVector<Value> NNLowering::adamUpdate(train::AdamUpdateOp op) {
  double lr = op.getLr().convertToDouble();
  double beta1 = op.getBeta1().convertToDouble();
  double beta2 = op.getBeta2().convertToDouble();
  double epsilon = op.getEpsilon().convertToDouble();
  double decay = op.getWeightDecay().convertToDouble();
  bool decoupled = op.getDecoupled();
  Type type = op.getParam().getType();
  return buildElementwiseResults(
      b, op.getLoc(), {type, type, type},
      op->getOperands(),
      [&](OpBuilder &b, Location l, ValueRange x) {
        Value p = x[0], g = x[1], m = x[2], v = x[3];
        Type element = p.getType(), f64 = b.getF64Type();
        auto constant = [&](double value) {
          return createFloat(b, l, element, value);
        };
        auto constant64 = [&](double value) {
          return createFloat(b, l, f64, value);
        };
        if (decay != 0 && decoupled)
          p = arith::MulFOp::create(
              b, l, p,
              x.size() > 5
                  ? arith::SubFOp::create(
                        b, l, constant(1.0),
                        arith::MulFOp::create(
                            b, l, scaledLr(b, l, element, lr, x, 5),
                            constant(decay)))
                        .getResult()
                  : constant(1.0 - lr * decay));
        else if (decay != 0)
          g = arith::AddFOp::create(
              b, l, g, arith::MulFOp::create(b, l, p, constant(decay)));
        Value expAvg = arith::AddFOp::create(
            b, l, arith::MulFOp::create(b, l, m, constant(beta1)),
            arith::MulFOp::create(b, l, g, constant(1.0 - beta1)));
        Value expAvgSq = arith::AddFOp::create(
            b, l, arith::MulFOp::create(b, l, v, constant(beta2)),
            arith::MulFOp::create(
                b, l, arith::MulFOp::create(b, l, g, g),
                constant(1.0 - beta2)));
        // The bias corrections in f64, as PyTorch computes them in Python.
        Value t = arith::SIToFPOp::create(b, l, f64, x[4]);
        Value correction1 = arith::SubFOp::create(
            b, l, constant64(1.0),
            math::PowFOp::create(b, l, constant64(beta1), t));
        Value correction2 = arith::SubFOp::create(
            b, l, constant64(1.0),
            math::PowFOp::create(b, l, constant64(beta2), t));
        auto toElement = [&](Value value) -> Value {
          return element == f64 ? value
                                : arith::TruncFOp::create(b, l, element, value)
                                      .getResult();
        };
        Value stepSize = arith::MulFOp::create(
            b, l,
            toElement(arith::DivFOp::create(b, l, constant64(lr), correction1)),
            scaledLr(b, l, element, 1.0, x, 5));
        Value correction2Sqrt =
            toElement(math::SqrtOp::create(b, l, correction2));
        Value denominator = arith::AddFOp::create(
            b, l,
            arith::DivFOp::create(b, l, math::SqrtOp::create(b, l, expAvgSq),
                                  correction2Sqrt),
            constant(epsilon));
        Value param = arith::SubFOp::create(
            b, l, p,
            arith::MulFOp::create(
                b, l, stepSize,
                arith::DivFOp::create(b, l, expAvg, denominator)));
        return SmallVector<Value>{param, expAvg, expAvgSq};
      });
}

FailureOr<SmallVector<Value>>
NNLowering::batchNormTrainGrad(nn::BatchNormTrainGradOp op) {
  FloatType element = getKernelElementType(op, target);
  Location loc = op.getLoc();
  RankedTensorType type = getTensorType(op.getResult());
  SmallVector<Value> scalars =
      createI64s(b, loc, getBatchNormGeometry(type, op.getChannelsLast()));
  scalars.push_back(createFloat(b, loc, getKernelScalarType(element),
                                op.getEpsilon().convertToDouble()));
  SmallVector<Value> inputs = {op.getInput(), op.getGrad(), op.getScale(),
                               op.getBatchMean(), op.getBatchVar()};
  // With a fused ReLU gradient, its output gradient and the ReLU's output
  // in place of the batch norm's output gradient (which the pass erases
  // with the ReLU gradient).
  auto fused = fusedReLUs.find(op);
  auto relu = fused == fusedReLUs.end()
                  ? nullptr
                  : cast<nn::ReluGradOp>(fused->second.relu);
  if (relu) {
    inputs[1] = relu.getGrad();
    inputs.insert(inputs.begin() + 2, relu.getInput());
  }
  return buildBatchNormCall(
      op, {relu ? "batch_norm_backward_relu" : "batch_norm_backward",
           element,
           inputs,
           {type, getTensorType(op.getScaleGrad()),
            getTensorType(op.getBiasGrad())},
           scalars});
}

FailureOr<SmallVector<Value>> NNLowering::lower(Operation *op) {
  using Values = SmallVector<Value>;
  auto one = [](FailureOr<Value> value) -> FailureOr<Values> {
    if (failed(value))
      return failure();
    return Values{*value};
  };
  auto zero = [&](Type type) {
    return createFloat(b, op->getLoc(), type, 0.0);
  };
  return TypeSwitch<Operation *, FailureOr<Values>>(op)
      .Case([&](nn::AddOp) {
        return Values{binary(op, [](OpBuilder &b, Location l, Value x, Value y) {
          return arith::AddFOp::create(b, l, x, y);
        })};
      })
      .Case([&](nn::SubOp) {
        return Values{binary(op, [](OpBuilder &b, Location l, Value x, Value y) {
          return arith::SubFOp::create(b, l, x, y);
        })};
      })
      .Case([&](nn::MulOp) {
        return Values{binary(op, [](OpBuilder &b, Location l, Value x, Value y) {
          return arith::MulFOp::create(b, l, x, y);
        })};
      })
      .Case([&](nn::DivOp) {
        return Values{binary(op, [](OpBuilder &b, Location l, Value x, Value y) {
          return arith::DivFOp::create(b, l, x, y);
        })};
      })
      .Case<nn::MaximumOp, nn::MinimumOp>([&](Operation *) {
        // maximumf and minimumf propagate NaN, as torch.maximum does.
        bool maximum = isa<nn::MaximumOp>(op);
        return Values{binary(
            op, [maximum](OpBuilder &b, Location l, Value x, Value y) -> Value {
              if (isa<FloatType>(x.getType())) {
                if (maximum)
                  return arith::MaximumFOp::create(b, l, x, y);
                return arith::MinimumFOp::create(b, l, x, y);
              }
              if (maximum)
                return arith::MaxSIOp::create(b, l, x, y);
              return arith::MinSIOp::create(b, l, x, y);
            })};
      })
      .Case([&](nn::CompareOp compare) {
        // Ordered for floats (false with NaN), signed for integers; in the
        // order of nn::ComparePredicate's cases.
        static constexpr std::pair<arith::CmpFPredicate, arith::CmpIPredicate>
            kPredicates[] = {
                {arith::CmpFPredicate::OEQ, arith::CmpIPredicate::eq},
                {arith::CmpFPredicate::OLT, arith::CmpIPredicate::slt},
                {arith::CmpFPredicate::OLE, arith::CmpIPredicate::sle},
                {arith::CmpFPredicate::OGT, arith::CmpIPredicate::sgt},
                {arith::CmpFPredicate::OGE, arith::CmpIPredicate::sge}};
        const auto predicates =
            kPredicates[static_cast<uint32_t>(compare.getPredicate())];
        return Values{buildElementwise(
            b, op->getLoc(), getTensorType(compare.getResult()),
            op->getOperands(),
            [&](OpBuilder &b, Location l, ValueRange x) -> Value {
              if (isa<FloatType>(x[0].getType()))
                return arith::CmpFOp::create(b, l, predicates.first, x[0],
                                             x[1]);
              return arith::CmpIOp::create(b, l, predicates.second, x[0], x[1]);
            })};
      })
      .Case([&](nn::NotOp negation) {
        return Values{buildElementwise(
            b, op->getLoc(), negation.getType(), negation.getInput(),
            [](OpBuilder &b, Location l, ValueRange x) -> Value {
              Value one = arith::ConstantIntOp::create(b, l, 1, 1);
              return arith::XOrIOp::create(b, l, x[0], one);
            })};
      })
      .Case([&](nn::SelectOp select) {
        return Values{buildElementwise(
            b, op->getLoc(), select.getType(), op->getOperands(),
            [](OpBuilder &b, Location l, ValueRange x) -> Value {
              return arith::SelectOp::create(b, l, x[0], x[1], x[2]);
            })};
      })
      .Case([&](nn::ReluOp) {
        // maximumf propagates NaN, as torch.relu does.
        return Values{unary(op, [&](OpBuilder &b, Location l, Value x) {
          return arith::MaximumFOp::create(b, l, x, zero(x.getType()));
        })};
      })
      .Case([&](nn::ReluGradOp) {
        return Values{binary(op, [&](OpBuilder &b, Location l, Value g,
                                     Value x) {
          Value positive = arith::CmpFOp::create(
              b, l, arith::CmpFPredicate::OGT, x, zero(x.getType()));
          return arith::SelectOp::create(b, l, positive, g, zero(x.getType()));
        })};
      })
      .Case([&](nn::SigmoidOp) {
        return Values{unary(op, [&](OpBuilder &b, Location l, Value x) {
          Type type = x.getType();
          Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, x));
          Value one = createFloat(b, l, type, 1.0);
          return arith::DivFOp::create(b, l, one,
                                       arith::AddFOp::create(b, l, one, e));
        })};
      })
      .Case([&](nn::TanhOp) {
        return Values{unary(op, [](OpBuilder &b, Location l, Value x) {
          return math::TanhOp::create(b, l, x);
        })};
      })
      .Case([&](nn::SqrtOp) { return Values{unaryMath<math::SqrtOp>(op)}; })
      .Case([&](nn::ExpOp) { return Values{unaryMath<math::ExpOp>(op)}; })
      .Case([&](nn::LogOp) { return Values{unaryMath<math::LogOp>(op)}; })
      .Case([&](nn::ErfOp) { return Values{unaryMath<math::ErfOp>(op)}; })
      .Case([&](nn::PowOp pow) {
        double exponent = pow.getExponent().convertToDouble();
        return Values{unary(op, [&](OpBuilder &b, Location l, Value x) {
          return buildPower(b, l, x, exponent);
        })};
      })
      .Case([&](nn::LeakyReluOp leaky) {
        double alpha = leaky.getAlpha().convertToDouble();
        return Values{unary(op, [&](OpBuilder &b, Location l, Value x) {
          Type type = x.getType();
          Value positive = arith::CmpFOp::create(
              b, l, arith::CmpFPredicate::OGT, x, zero(type));
          Value scaled =
              arith::MulFOp::create(b, l, x, createFloat(b, l, type, alpha));
          return arith::SelectOp::create(b, l, positive, x, scaled);
        })};
      })
      .Case([&](nn::ClipOp clip) {
        return Values{unary(op, [&](OpBuilder &b, Location l, Value x) {
          Type type = x.getType();
          if (auto min = clip.getMin())
            x = arith::MaximumFOp::create(
                b, l, x, createFloat(b, l, type, min->convertToDouble()));
          if (auto max = clip.getMax())
            x = arith::MinimumFOp::create(
                b, l, x, createFloat(b, l, type, max->convertToDouble()));
          return x;
        })};
      })
      .Case([&](nn::ClipGradOp clip) {
        return Values{binary(op, [&](OpBuilder &b, Location l, Value g,
                                     Value x) {
          Type type = x.getType();
          Value inside = arith::ConstantIntOp::create(b, l, 1, 1);
          if (auto min = clip.getMin())
            inside = arith::AndIOp::create(
                b, l, inside,
                arith::CmpFOp::create(
                    b, l, arith::CmpFPredicate::OGT, x,
                    createFloat(b, l, type, min->convertToDouble())));
          if (auto max = clip.getMax())
            inside = arith::AndIOp::create(
                b, l, inside,
                arith::CmpFOp::create(
                    b, l, arith::CmpFPredicate::OLT, x,
                    createFloat(b, l, type, max->convertToDouble())));
          return arith::SelectOp::create(b, l, inside, g,
                                         createFloat(b, l, type, 0.0));
        })};
      })
      // Forward execution is inference: dropout is the identity there. The
      // training lowering replaces it with a masked op before this pass.
      .Case([&](nn::DropoutOp dropout) { return Values{dropout.getInput()}; })
      .Case([&](nn::SoftmaxOp softmaxOp) {
        return Values{softmax(softmaxOp.getInput(), softmaxOp.getAxis(),
                              /*logarithm=*/false, op->getLoc())};
      })
      .Case([&](nn::LogSoftmaxOp softmaxOp) {
        return Values{softmax(softmaxOp.getInput(), softmaxOp.getAxis(),
                              /*logarithm=*/true, op->getLoc())};
      })
      .Case([&](nn::SoftmaxCrossEntropyOp ce) {
        return Values{crossEntropy(ce)};
      })
      .Case(
          [&](nn::CountCorrectOp count) { return Values{countCorrect(count)}; })
      .Case([&](nn::SliceOp slice) {
        return Values{tensor::ExtractSliceOp::create(
            b, op->getLoc(), slice.getType(), slice.getInput(), ValueRange{},
            ValueRange{}, ValueRange{}, slice.getStarts(), slice.getSizes(),
            slice.getSteps())};
      })
      .Case([&](nn::DropoutMaskOp mask) { return Values{dropoutMask(mask)}; })
      .Case([&](nn::SoftmaxCrossEntropyGradOp ce) {
        return Values{crossEntropyGrad(ce)};
      })
      .Case([&](nn::ReshapeOp reshape) {
        return Values{buildReshape(b, op->getLoc(), reshape.getInput(),
                                   getTensorType(reshape.getResult()))};
      })
      .Case([&](train::SGDUpdateOp update) {
        // param - lr * (grad + weight_decay * param), in the element type.
        double lr = update.getLr().convertToDouble();
        double decay = update.getWeightDecay().convertToDouble();
        return Values{buildElementwise(
            b, op->getLoc(), getTensorType(update.getResult()),
            op->getOperands(), [&](OpBuilder &b, Location l, ValueRange x) {
              Value p = x[0], g = x[1];
              Type type = p.getType();
              if (decay != 0)
                g = arith::AddFOp::create(
                    b, l, g,
                    arith::MulFOp::create(b, l, createFloat(b, l, type, decay),
                                          p));
              return arith::SubFOp::create(
                  b, l, p,
                  arith::MulFOp::create(b, l, scaledLr(b, l, type, lr, x, 2),
                                        g));
            })};
      })
      .Case([&](train::MomentumUpdateOp update) {
        return momentumUpdate(update);
      })
      .Case([&](nn::CastOp castOp) {
        return Values{convertElements(
            b, op->getLoc(), castOp.getInput(),
            getTensorType(castOp.getResult()).getElementType())};
      })
      .Case([&](nn::ToFloatOp toFloat) {
        RankedTensorType type = getTensorType(toFloat.getResult());
        Type element = type.getElementType();
        // A boolean is 0 or 1, not 0 or -1 as a signed i1 would be.
        const bool boolean =
            getTensorType(toFloat.getInput()).getElementType().isInteger(1);
        return Values{buildElementwise(
            b, op->getLoc(), type, toFloat.getInput(),
            [&](OpBuilder &b, Location l, ValueRange x) -> Value {
              if (boolean)
                return arith::UIToFPOp::create(b, l, element, x[0]);
              return arith::SIToFPOp::create(b, l, element, x[0]);
            })};
      })

      .Case([&](train::LossSeedOp seed) {
        RankedTensorType type = getTensorType(seed.getResult());
        return Values{arith::ConstantOp::create(
            b, op->getLoc(),
            DenseElementsAttr::get(
                type, b.getFloatAttr(type.getElementType(), 1.0)))};
      })
      .Case([&](train::SkipUpdateOp skip) {
        return Values{buildElementwise(
            b, op->getLoc(), getTensorType(skip.getResult()),
            op->getOperands(), [](OpBuilder &b, Location l, ValueRange x) {
              return arith::SelectOp::create(b, l, x[0], x[1], x[2]);
            })};
      })
      .Case([&](train::AdamUpdateOp update) { return adamUpdate(update); })
      .Case([&](train::LarsUpdateOp update) { return larsUpdate(update); })
      .Case([&](nn::BroadcastOp broadcast) {
        return Values{buildElementwise(
            b, op->getLoc(), getTensorType(broadcast.getResult()),
            broadcast.getInput(),
            [](OpBuilder &, Location, ValueRange x) { return x[0]; })};
      })
      .Case([&](nn::TransposeOp transpose) {
        // A generic reading the input through the inverse permutation,
        // not linalg.transpose: element-wise producers and consumers fuse
        // with it (a weight gradient's transpose back to OIHW, its cast to
        // f32 and the optimizer's update, one loop).
        AffineMap read = inversePermutation(AffineMap::getPermutationMap(
            transpose.getPermutation(), b.getContext()));
        return Values{buildParallel(
            b, op->getLoc(), getTensorType(transpose.getResult()),
            transpose.getInput(), read,
            [](OpBuilder &, Location, ValueRange x) { return x[0]; })};
      })
      .Case([&](nn::ConcatOp concatOp) { return Values{concat(concatOp)}; })
      .Case([&](nn::PadOp padOp) { return Values{pad(padOp)}; })
      .Case([&](nn::EmbeddingOp lookup) { return Values{embedding(lookup)}; })
      .Case([&](nn::EmbeddingGradOp grad) { return one(embeddingGrad(grad)); })
      .Case([&](nn::ReduceSumOp sum) {
        return Values{reduce(op, sum.getDims(), /*mean=*/false)};
      })
      .Case([&](nn::ReduceMeanOp mean) {
        return Values{reduce(op, mean.getDims(), /*mean=*/true)};
      })
      .Case([&](nn::GlobalAvgPool2DOp) {
        return Values{reduce(op, {2, 3}, /*mean=*/true)};
      })
      .Case([&](nn::MatmulOp matmulOp) { return one(matmul(matmulOp)); })
      .Case([&](nn::Conv2DOp conv) { return one(conv2d(conv)); })
      .Case([&](nn::MaxPool2DOp pool) {
        return one(pool2d(pool, DTRAIN_RT_POOL_MAX));
      })
      .Case([&](nn::AvgPool2DOp pool) {
        return one(pool2d(pool, pool.getCountIncludePad()
                                    ? DTRAIN_RT_POOL_AVG_INCLUDE_PAD
                                    : DTRAIN_RT_POOL_AVG_EXCLUDE_PAD));
      })
      .Case([&](nn::BatchNormOp bn) { return one(batchNorm(bn)); })
      .Case([&](nn::BatchNormTrainOp bn) { return batchNormTrain(bn); })
      .Case([&](nn::BatchNormTrainGradOp bn) { return batchNormTrainGrad(bn); })
      .Case([&](nn::Conv2DBackwardDataOp conv) {
        return one(conv2dBackwardData(conv));
      })
      .Case([&](nn::Conv2DBackwardWeightsOp conv) {
        return one(conv2dBackwardWeights(conv));
      })
      .Case([&](nn::MaxPool2DGradOp pool) {
        return one(pool2dBackward(pool, DTRAIN_RT_POOL_MAX, pool.getInput()));
      })
      .Case([&](nn::AvgPool2DGradOp pool) {
        return one(pool2dBackward(pool,
                                  pool.getCountIncludePad()
                                      ? DTRAIN_RT_POOL_AVG_INCLUDE_PAD
                                      : DTRAIN_RT_POOL_AVG_EXCLUDE_PAD,
                                  Value()));
      })
      .Default([&](Operation *) -> FailureOr<Values> {
        return op->emitOpError("has no lowering yet");
      });
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

namespace {
struct LowerNNPass
    : public lower::impl::LowerNNBase<LowerNNPass> {
  using Base::Base;
  void runOnOperation() override {
    if (target != "cpu" && target != "cuda") {
      getOperation().emitError("--dtrain-lower-nn: target '")
          << target << "' is not valid (accepted: cpu, cuda)";
      return signalPassFailure();
    }
    llvm::DenseMap<Operation *, nn::ReduceSumOp> fusedBiasGradients;
    llvm::DenseMap<Operation *, SixteenBitBatchNorm> sixteenBitBatchNorms;
    llvm::DenseMap<Operation *, FusedReLU> fusedReLUs;
    if (target == "cuda") {
      fusedBiasGradients = getFusedBiasGradients(getOperation());
      sixteenBitBatchNorms = getSixteenBitBatchNorms(getOperation());
      fusedReLUs = getFusedReLUs(getOperation(), sixteenBitBatchNorms);
    }
    // A fused bias gradient is lowered with its weight gradient, a 16-bit
    // batch norm's narrowing casts with the batch norm; its widening casts
    // go once the batch norms that read them have.
    llvm::SmallPtrSet<Operation *, 8> fused;
    for (auto &[weights, bias] : fusedBiasGradients)
      fused.insert(bias);
    llvm::SetVector<Operation *> widening;
    for (auto &[batchNorm, casts] : sixteenBitBatchNorms) {
      for (nn::CastOp cast : casts.narrowing)
        fused.insert(cast);
      for (nn::CastOp cast : casts.widening)
        widening.insert(cast);
    }
    fused.insert(widening.begin(), widening.end());
    // A fused ReLU (and add) goes with its batch norm; a fused ReLU
    // gradient once its batch-norm gradient (and the cast between) has.
    // (Two batch-norm gradients may share one, through one cast: a
    // downsampling branch's and the main branch's.)
    llvm::SetVector<Operation *> reluGradients;
    for (auto &[batchNorm, relu] : fusedReLUs) {
      fused.insert(relu.relu);
      if (relu.add)
        fused.insert(relu.add);
      if (isa<nn::ReluGradOp>(relu.relu))
        reluGradients.insert(relu.relu);
    }
    IRRewriter rewriter(&getContext());
    NNLowering lowering(rewriter, target, std::move(fusedBiasGradients),
                        std::move(sixteenBitBatchNorms), std::move(fusedReLUs));
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<nn::NNDialect, train::TrainDialect>(op->getDialect()) &&
          !fused.contains(op))
        ops.push_back(op);
    });
    bool failed = false;
    for (Operation *op : ops) {
      for (Type type : op->getResultTypes()) {
        if (!cast<ShapedType>(type).hasStaticShape()) {
          op->emitOpError("has a dynamic result shape ")
              << type << "; lowering needs static shapes (import with "
                         "--batch-size or --input-shape)";
          failed = true;
        }
      }
      if (failed)
        continue;
      rewriter.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> replacements = lowering.lower(op);
      if (mlir::failed(replacements)) {
        failed = true;
        continue;
      }
      rewriter.replaceOp(op, *replacements);
    }
    for (Operation *cast : widening)
      rewriter.eraseOp(cast);
    if (failed)
      return signalPassFailure();
    for (Operation *relu : reluGradients)
      rewriter.eraseOp(relu);
  }
};
} // namespace
