//===- NNOps.td - nn dialect operations --------------------*- tablegen -*-===//

#ifndef DTRAIN_DIALECT_NN_IR_NNOPS_TD
#define DTRAIN_DIALECT_NN_IR_NNOPS_TD

include "dtrain/Dialect/NN/IR/NNDialect.td"
include "dtrain/Dialect/NN/IR/NNInterfaces.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Result type inference
//===----------------------------------------------------------------------===//

// Result types match inference when they have the same rank and element type
// and agree on every dimension that is static on both sides; the verifier
// checks this and reports inference's own errors as the op's.
def NN_InferredResultTypes : NativeOpTrait<"InferredResultTypes", [], [{
    static bool isCompatibleReturnTypes(::mlir::TypeRange lhs,
                                        ::mlir::TypeRange rhs) {
      return ::mlir::dtrain::nn::areCompatibleReturnTypes(lhs, rhs);
    }
  }]> {
  let cppNamespace = "::mlir::dtrain::nn";
}

// An op whose result types follow from its operands and attributes through
// `inferReturnTypes(context, location, adaptor, types)` in NNOps.cpp, the one
// place for its shape rules. Builders without result types are generated.
class NN_InferOp<string mnemonic, list<Trait> traits = []>
    : NN_Op<mnemonic, traits # [InferTypeOpAdaptor, NN_InferredResultTypes]>;

// An op whose result has the type of its (first) operand; ODS generates the
// inference.
class NN_SameTypeOp<string mnemonic, list<Trait> traits = []>
    : NN_Op<mnemonic, traits # [SameOperandsAndResultType,
                                InferTypeOpInterface, NN_InferredResultTypes]>;

// Reverse-mode differentiation goes through the op (NNGradients.cpp).
defvar NN_Differentiable = DeclareOpInterfaceMethods<NN_DifferentiableOpInterface>;

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def NN_MatmulOp : NN_InferOp<"matmul", [Pure, SameOperandsAndResultElementType,
                                         NN_Differentiable]> {
  let summary = "Matrix product of two rank-2 tensors, or a batch of them";
  let description = [{
    Computes `op(lhs) x op(rhs)` where `op` transposes its argument when the
    matching `transpose_lhs` / `transpose_rhs` unit attribute is present. The
    transposed forms are what the backward pass of a linear layer needs
    (`dW = x^T dy`, `dx = dy W^T`) without materializing a transpose.

    ```mlir
    %y = nn.matmul %x, %w : tensor<32x784xf32>, tensor<784x128xf32> -> tensor<32x128xf32>
    %dw = nn.matmul %x, %dy {transpose_lhs} : tensor<32x784xf32>, tensor<32x128xf32> -> tensor<784x128xf32>
    ```

    Rank-3 operands, with one leading batch size, are that many products of
    their matrices, the transposes on the last two dimensions: attention's
    products. The importer flattens ONNX's other batch dimensions into one.

    ```mlir
    %scores = nn.matmul %q, %k {transpose_rhs} : tensor<8x65x16xf32>, tensor<8x65x16xf32> -> tensor<8x65x65xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class NN_BinaryOp<string mnemonic, string expr, list<Trait> traits = []>
    : NN_InferOp<mnemonic, traits # [Pure, SameOperandsAndResultElementType,
                                     NN_Differentiable]> {
  let summary = "Elementwise " # expr # " with NumPy broadcasting";
  let description = [{
    `result = }] # expr # [{`, with the operands broadcast against each
    other. The result type is the broadcast of the operand shapes, for
    example with a per-feature operand:

    ```mlir
    %y = nn.}] # mnemonic # [{ %h, %b : tensor<32x128xf32>, tensor<128xf32> -> tensor<32x128xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def NN_AddOp : NN_BinaryOp<"add", "lhs + rhs", [Commutative]>;
def NN_SubOp : NN_BinaryOp<"sub", "lhs - rhs">;
def NN_MulOp : NN_BinaryOp<"mul", "lhs * rhs", [Commutative]>;
def NN_DivOp : NN_BinaryOp<"div", "lhs / rhs">;

class NN_ExtremumOp<string mnemonic, string expr, string relation>
    : NN_BinaryOp<mnemonic, expr, [Commutative]> {
  let description = [{
    `result = }] # expr # [{`, with the operands broadcast against each
    other; NaN if either is NaN (as `torch.}] # mnemonic # [{` and ONNX's
    }] # !if(!eq(mnemonic, "maximum"), "Max", "Min") # [{). The gradient
    goes to the operand that is }] # relation # [{, and half of it to each
    where they are equal, as PyTorch's. Integer operands (signed) carry no
    gradient.

    ```mlir
    %y = nn.}] # mnemonic # [{ %x, %floor : tensor<32x128xf32>, tensor<f32> -> tensor<32x128xf32>
    ```
  }];
  let arguments = (ins NN_FloatOrIntegerTensor:$lhs,
                       NN_FloatOrIntegerTensor:$rhs);
  let results = (outs NN_FloatOrIntegerTensor:$result);
}

def NN_MaximumOp : NN_ExtremumOp<"maximum", "max(lhs, rhs)", "larger">;
def NN_MinimumOp : NN_ExtremumOp<"minimum", "min(lhs, rhs)", "smaller">;

def NN_SelectOp : NN_InferOp<"select", [Pure, NN_Differentiable]> {
  let summary = "Elementwise choice between two tensors by a boolean mask";
  let description = [{
    `result = condition ? lhs : rhs`, with the three operands broadcast
    against each other by NumPy's rules: ONNX's Where, as PyTorch's
    `masked_fill` exports it (a causal mask filling attention scores with
    `-inf`). The gradient goes to `lhs` where the condition holds and to
    `rhs` elsewhere; the condition has none. `lhs` and `rhs` may also be
    integer or boolean tensors (token ids chosen by a mask), which carry no
    gradient.

    ```mlir
    %s = nn.select %causal, %neg_inf, %scores : tensor<1x1x8x8xi1>, tensor<f32>, tensor<4x2x8x8xf32> -> tensor<4x2x8x8xf32>
    ```
  }];
  let arguments = (ins TensorOf<[I1]>:$condition,
                       NN_FloatOrIntegerTensor:$lhs,
                       NN_FloatOrIntegerTensor:$rhs);
  let results = (outs NN_FloatOrIntegerTensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def NN_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "the relation nn.compare tests", [
      I32EnumAttrCase<"eq", 0>,
      I32EnumAttrCase<"lt", 1>,
      I32EnumAttrCase<"le", 2>,
      I32EnumAttrCase<"gt", 3>,
      I32EnumAttrCase<"ge", 4>]> {
  let cppNamespace = "::mlir::dtrain::nn";
}

def NN_CompareOp : NN_InferOp<"compare", [Pure]> {
  let summary = "Elementwise comparison with NumPy broadcasting, as booleans";
  let description = [{
    `result = lhs <predicate> rhs`, the predicate one of `eq` (==), `lt`
    (<), `le` (<=), `gt` (>) and `ge` (>=); signed for integers, ordered
    for floats (a comparison with NaN is false). The operands, of one
    element type, are broadcast against each other. ONNX's Equal, Less,
    LessOrEqual, Greater and GreaterOrEqual of run-time data: the
    `mask == 0` of a mask given as token flags, which `nn.select` then
    applies, or `x > 0`. Booleans carry no gradient.

    ```mlir
    %pad = nn.compare eq %mask, %zero : tensor<8x1x128xi64>, tensor<i64> -> tensor<8x1x128xi1>
    ```
  }];
  let arguments = (ins NN_ComparePredicate:$predicate,
                       NN_FloatOrIntegerTensor:$lhs,
                       NN_FloatOrIntegerTensor:$rhs);
  let results = (outs TensorOf<[I1]>:$result);
  let assemblyFormat = [{
    $predicate $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def NN_NotOp : NN_Op<"not", [Pure, SameOperandsAndResultType]> {
  let summary = "Elementwise logical negation of booleans";
  let description = [{
    `result = !input`: ONNX's Not of run-time booleans, as PyTorch exports
    the `~` of a mask (`masked_fill(~mask.bool(), ...)`; the importer makes
    that Cast to bool `!(x == 0)`).

    ```mlir
    %keep = nn.not %pad : tensor<8x1x128xi1>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I1]>:$input);
  let results = (outs RankedTensorOf<[I1]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

class NN_UnaryOp<string mnemonic, list<Trait> traits = []>
    : NN_SameTypeOp<mnemonic, traits # [Pure]> {
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def NN_ReluOp : NN_UnaryOp<"relu", [NN_Differentiable]> {
  let summary = "Rectified linear unit, max(x, 0)";
  let description = [{
    ```mlir
    %y = nn.relu %x : tensor<32x128xf32>
    ```
  }];
}

def NN_SigmoidOp : NN_UnaryOp<"sigmoid", [NN_Differentiable]> {
  let summary = "Logistic function, 1 / (1 + exp(-x))";
  let description = [{
    ```mlir
    %y = nn.sigmoid %x : tensor<32x128xf32>
    ```
  }];
}

def NN_TanhOp : NN_UnaryOp<"tanh", [NN_Differentiable]> {
  let summary = "Hyperbolic tangent";
  let description = [{
    ```mlir
    %y = nn.tanh %x : tensor<32x128xf32>
    ```
  }];
}

def NN_SqrtOp : NN_UnaryOp<"sqrt", [NN_Differentiable]> {
  let summary = "Square root";
  let description = [{
    NaN for negative elements. A layer normalization's standard deviation:

    ```mlir
    %s = nn.sqrt %var : tensor<32x1xf32>
    ```
  }];
}

def NN_ExpOp : NN_UnaryOp<"exp", [NN_Differentiable]> {
  let summary = "Natural exponential, e^x";
  let description = [{
    16-bit elements are computed in f32 and rounded.

    ```mlir
    %y = nn.exp %x : tensor<32x128xf32>
    ```
  }];
}

def NN_LogOp : NN_UnaryOp<"log", [NN_Differentiable]> {
  let summary = "Natural logarithm";
  let description = [{
    -inf at 0 and NaN for negative elements. 16-bit elements are computed
    in f32 and rounded.

    ```mlir
    %y = nn.log %x : tensor<32x128xf32>
    ```
  }];
}

def NN_ErfOp : NN_UnaryOp<"erf", [NN_Differentiable]> {
  let summary = "Gauss error function";
  let description = [{
    `erf(x) = 2 / sqrt(pi) * integral from 0 to x of exp(-t^2) dt`, the core
    of the exact GELU, `x / 2 * (1 + erf(x / sqrt(2)))`, which ONNX
    exports write out with it. 16-bit elements are computed in f32 and
    rounded.

    ```mlir
    %y = nn.erf %x : tensor<32x128xf32>
    ```
  }];
}

def NN_PowOp : NN_UnaryOp<"pow", [NN_Differentiable]> {
  let summary = "Each element raised to a constant exponent";
  let description = [{
    `result = input ^ exponent`, with C's `pow` rules (NaN for a negative
    element and an exponent that is not an integer). The exponents 1, 2, 3,
    0.5 and -1 are products, a square root and a division; the others call
    `pow`, in f32 for 16-bit elements. ONNX's Pow with a constant scalar
    exponent, as in a layer normalization's variance:

    ```mlir
    %sq = nn.pow %d {exponent = 2.000000e+00 : f64} : tensor<32x128xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, F64Attr:$exponent);
}

def NN_LeakyReluOp : NN_UnaryOp<"leaky_relu", [NN_Differentiable]> {
  let summary = "Leaky rectified linear unit, x < 0 ? alpha * x : x";
  let description = [{
    `alpha` is the slope for negative inputs (0.01 when absent, as in ONNX
    and PyTorch).

    ```mlir
    %y = nn.leaky_relu %x {alpha = 2.000000e-01 : f64} : tensor<32x128xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "0.01">:$alpha);
}

def NN_ClipOp : NN_UnaryOp<"clip", [NN_Differentiable]> {
  let summary = "Clamps each element to [min, max]";
  let description = [{
    `result = min(max(input, min), max)`. An absent bound is unbounded on its
    side; when both are present, `min <= max`. ReLU6 is a clip to `[0, 6]`:

    ```mlir
    %y = nn.clip %x {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<32x128xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, OptionalAttr<F64Attr>:$min,
                       OptionalAttr<F64Attr>:$max);
  let hasVerifier = 1;
}

def NN_DropoutOp : NN_UnaryOp<"dropout", [NN_Differentiable]> {
  let summary = "Dropout: random zeroing during training, identity at inference";
  let description = [{
    In a training step each element is zeroed with probability `ratio` and
    the others are scaled by `1 / (1 - ratio)`, so the expected value is
    unchanged; in inference the op is the identity. `ratio` is in `[0, 1)`
    and 0.5 when absent. The random number generator that drives the mask
    arrives with the lowering of training steps.

    ```mlir
    %y = nn.dropout %x {ratio = 1.000000e-01 : f64} : tensor<32x128xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "0.5">:$ratio);
  let hasVerifier = 1;
}

def NN_DropoutMaskOp : NN_Op<"dropout_mask", [Pure]> {
  let summary = "The scaled random mask of a dropout in a training step";
  let description = [{
    A tensor of the result type whose elements are 0 (dropped) or
    `1 / (1 - ratio)` (kept), a pure function of `seed`, `step` and
    `stream`, so that a step and its gradient see the same mask, a resumed
    run the same masks as an uninterrupted one, and each dropout of a model
    (its `stream`) a different mask. `--dtrain-build-training` rewrites
    `nn.dropout` into `input * mask`.

    With `sm(z)` one SplitMix64 step (`z += 0x9e3779b97f4a7c15`;
    `z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9`;
    `z = (z ^ z >> 27) * 0x94d049bb133111eb`; `z ^ z >> 31`, all modulo
    2^64), `key = sm(sm(sm(seed) ^ step) ^ stream)`, and element `i` (the
    row-major linear index) is dropped when the top 24 bits of
    `sm(key + i * 0x9e3779b97f4a7c15)` are below `round(ratio * 2^24)`.

    ```mlir
    %mask = nn.dropout_mask %seed, %step {ratio = 5.000000e-01 : f64, stream = 0 : i64} : tensor<i64>, tensor<i64> -> tensor<32x128xf32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[I64]>:$seed, 0DTensorOf<[I64]>:$step,
                       F64Attr:$ratio, I64Attr:$stream);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $seed `,` $step attr-dict `:` type($seed) `,` type($step) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_ClipGradOp : NN_SameTypeOp<"clip_grad", [Pure]> {
  let summary = "Vector-Jacobian product of nn.clip";
  let description = [{
    Given the gradient `grad` with respect to `clip(input)`, returns the
    gradient with respect to `input`: `grad` where `min < input < max`
    (strictly, as PyTorch's hardtanh and ReLU6, which export as Clip) and 0
    elsewhere; an absent bound is unbounded. `clip(input)` lies strictly
    between the bounds exactly where `input` does, so the gradient of
    `nn.clip` passes its output here, as that of `nn.relu` does.

    ```mlir
    %dx = nn.clip_grad %dy, %y {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<32x128xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
                       OptionalAttr<F64Attr>:$min, OptionalAttr<F64Attr>:$max);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` type($input)";
}

def NN_ReluGradOp : NN_SameTypeOp<"relu_grad", [Pure]> {
  let summary = "Vector-Jacobian product of nn.relu";
  let description = [{
    Given the gradient `grad` of the loss with respect to `relu(input)`,
    returns the gradient with respect to `input`: `grad` where `input > 0`,
    and 0 elsewhere (the subgradient 0 is taken at `input == 0`, as PyTorch
    does). `relu(input)` is positive exactly where `input` is, so the
    gradient of `nn.relu` passes its output here: the next layer keeps it
    anyway, and the input need not outlive the forward pass.

    ```mlir
    %dx = nn.relu_grad %dy, %y : tensor<32x128xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` type($input)";
}

class NN_SoftmaxBaseOp<string mnemonic, list<Trait> traits = []>
    : NN_UnaryOp<mnemonic, traits> {
  let arguments = (ins NN_FloatTensor:$input, I64Attr:$axis);
  let hasVerifier = 1;
}

def NN_SoftmaxOp : NN_SoftmaxBaseOp<"softmax", [NN_Differentiable]> {
  let summary = "Softmax along one axis";
  let description = [{
    `result = exp(x - max) / sum(exp(x - max))` along `axis` (in
    `[0, rank)`; the importer normalizes negative ONNX axes).

    ```mlir
    %p = nn.softmax %logits {axis = 1 : i64} : tensor<32x10xf32>
    ```
  }];
}

def NN_LogSoftmaxOp : NN_SoftmaxBaseOp<"log_softmax", [NN_Differentiable]> {
  let summary = "Logarithm of the softmax along one axis";
  let description = [{
    `result = x - max - log(sum(exp(x - max)))` along `axis` (in
    `[0, rank)`), computed without forming the softmax.

    ```mlir
    %lp = nn.log_softmax %logits {axis = 1 : i64} : tensor<32x10xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def NN_CastOp : NN_Op<"cast", [Pure, SameOperandsAndResultShape,
                               NN_Differentiable]> {
  let summary = "Converts a tensor to another float type";
  let description = [{
    Each element converted to the result's element type: exactly when it
    widens, rounded to nearest (ties to even) when it narrows, with
    infinities, NaNs and subnormals kept as the narrower type can. Its
    gradient is the incoming one converted back. A cast back to the type a
    widening cast started from folds away (the round trip is exact).
    `--dtrain-mixed-precision compute=bf16|f16` inserts them.

    ```mlir
    %w16 = nn.cast %w : tensor<784x128xf32> to tensor<784x128xbf16>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
}

def NN_ToFloatOp : NN_Op<"to_float", [Pure, SameOperandsAndResultShape]> {
  let summary = "Converts an integer or boolean tensor to a float type";
  let description = [{
    Each element converted to the nearest value of the result's float type
    (signed integers; a boolean is 0 or 1): ONNX's Cast of run-time integer
    data, as PyTorch exports `mask.float()` of an attention mask given as
    token flags. Integer data has no gradient, so neither has this op: the
    parameters never reach it.

    ```mlir
    %m = nn.to_float %mask : tensor<8x128xi64> to tensor<8x128xf32>
    ```
  }];
  let arguments = (ins NN_IntegerTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
}

def NN_ReshapeOp : NN_Op<"reshape", [Pure, SameOperandsAndResultElementType,
                                     NN_Differentiable]> {
  let summary = "Same elements, new shape";
  let description = [{
    Reinterprets `input` in row-major order with the shape of the result
    type, which is the only place the target shape is written (the importer
    resolves ONNX's `0` and `-1` entries). The element counts must match
    when both shapes are static. Integer tensors (masks) reshape too; only
    float ones carry gradients.

    ```mlir
    %f = nn.reshape %x : tensor<32x64x7x7xf32> -> tensor<32x3136xf32>
    ```
  }];
  let arguments = (ins NN_FloatOrIntegerTensor:$input);
  let results = (outs NN_FloatOrIntegerTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def NN_TransposeOp : NN_InferOp<"transpose", [Pure, NN_Differentiable]> {
  let summary = "Permutes the dimensions";
  let description = [{
    Dimension `i` of the result is dimension `permutation[i]` of `input`;
    `permutation` is a permutation of `[0, rank)`.

    ```mlir
    %t = nn.transpose %x {permutation = array<i64: 0, 2, 1>} : tensor<8x16x32xf32> -> tensor<8x32x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def NN_BroadcastOp : NN_Op<"broadcast", [Pure, SameOperandsAndResultElementType,
                                         NN_Differentiable]> {
  let summary = "Broadcasts a tensor to a larger shape";
  let description = [{
    Stretches `input` to the shape of the result type by NumPy's rules:
    shapes are aligned at the trailing dimension, and a dimension of size 1,
    or one that `input` lacks, repeats its elements. It is how a gradient
    flows back through a reduction:

    ```mlir
    %dx = nn.broadcast %dsum : tensor<32x1xf32> -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def NN_ConcatOp : NN_InferOp<"concat", [Pure, SameOperandsAndResultElementType,
                                         NN_Differentiable]> {
  let summary = "Concatenation along one axis";
  let description = [{
    Joins one or more tensors of the same rank along `axis` (in
    `[0, rank)`); their other dimensions are equal.

    ```mlir
    %c = nn.concat %a, %b {axis = 1 : i64} : tensor<8x16xf32>, tensor<8x4xf32> -> tensor<8x20xf32>
    ```
  }];
  let arguments = (ins Variadic<NN_FloatTensor>:$inputs, I64Attr:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs) `->` type($result)
  }];
}

def NN_PadOp : NN_InferOp<"pad", [Pure, SameOperandsAndResultElementType,
                                   NN_Differentiable]> {
  let summary = "Pads with a constant";
  let description = [{
    Surrounds `input` with `value` (0.0 when absent). `pads` is laid out as
    in ONNX: the `rank` leading pads of every dimension, then the `rank`
    trailing ones, all non-negative. Only ONNX's constant mode exists.

    ```mlir
    %p = nn.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>} : tensor<1x3x4x4xf32> -> tensor<1x3x6x6xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def NN_SliceOp : NN_InferOp<"slice", [Pure, SameOperandsAndResultElementType,
                                       NN_Differentiable]> {
  let summary = "A strided box of a tensor";
  let description = [{
    Takes, along every dimension `d`, `sizes[d]` elements of `input`
    starting at `starts[d]`, `steps[d]` apart (all non-negative, steps at
    least 1, the box inside `input`): ONNX's Slice with its bounds
    resolved at import (clamped, negative indices counted from the end).
    Its gradient scatters into zeros.

    ```mlir
    %s = nn.slice %x {sizes = array<i64: 2, 3>, starts = array<i64: 0, 1>, steps = array<i64: 1, 2>} : tensor<2x8xf32> -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$sizes, DenseI64ArrayAttr:$steps);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def NN_EmbeddingOp : NN_InferOp<"embedding", [Pure, NN_Differentiable]> {
  let summary = "Rows of a table picked by run-time integer indices";
  let description = [{
    For a `table` of `R` rows (its first dimension) and integer `indices`
    of any shape, the result has the shape of `indices` followed by a row's
    shape: each index's row. It is ONNX's Gather on axis 0, an embedding
    lookup of token ids:

    ```mlir
    %x = nn.embedding %table, %ids : tensor<65x32xf32>, tensor<8x64xi64> -> tensor<8x64x32xf32>
    ```

    A negative index `j` picks row `j + R`, as in ONNX. An index still
    outside `[0, R)` is clamped into it, so that no access leaves the table;
    compiled models check the inputs that are indices for range before a
    step, and report them. The table's gradient is `nn.embedding_grad`.
  }];
  let arguments = (ins NN_FloatTensor:$table, NN_LabelTensor:$indices);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $indices attr-dict `:` type($table) `,` type($indices) `->` type($result)
  }];
}

def NN_EmbeddingGradOp : NN_InferOp<"embedding_grad", [Pure]> {
  let summary = "Vector-Jacobian product of nn.embedding: a scatter-add";
  let description = [{
    The gradient of an `nn.embedding` table of `rows` rows: each index's
    slice of `grad` (whose shape is that of `indices` followed by a row's)
    added to the row that the index picks (with `nn.embedding`'s wrapping
    and clamping), and zero rows where no index points.

    ```mlir
    %dtable = nn.embedding_grad %dx, %ids {rows = 65 : i64} : tensor<8x64x32xf32>, tensor<8x64xi64> -> tensor<65x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_LabelTensor:$indices,
                       I64Attr:$rows);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices attr-dict `:` type($grad) `,` type($indices) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

def NN_Conv2DOp : NN_InferOp<"conv2d", [Pure, SameOperandsAndResultElementType,
                                         NN_Differentiable]> {
  let summary = "2-D convolution (cross-correlation), NCHW with OIHW weights or channels last";
  let description = [{
    `input` is `N x C x H x W`, `weight` is `O x C/groups x Kh x Kw` and the
    optional `bias` is `O`. `strides` and `dilations` hold the (height,
    width) values, 1 when absent; `padding` holds the (top, left, bottom,
    right) zero padding, 0 when absent (the importer resolves ONNX's
    `auto_pad`). With `groups` > 1, both `C` and `O` are divisible by
    `groups` and each group of `O/groups` filters sees its own `C/groups`
    input channels. The result is `N x O x Ho x Wo` where

        Ho = floor((H + top + bottom - dilation_h * (Kh - 1) - 1) / stride_h) + 1

    and likewise `Wo`.

    With `channels_last`, every tensor has its channels innermost: `input`
    is `N x H x W x C`, `weight` is `O x Kh x Kw x C/groups` and the result
    is `N x Ho x Wo x O` (cuDNN's NHWC and KRSC, on which tensor cores run
    without transposes; `--dtrain-channels-last` sets it).

    ```mlir
    %y = nn.conv2d %x, %w, %b {padding = array<i64: 1, 1, 1, 1>} : tensor<32x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32> -> tensor<32x16x32x32xf32>
    %z = nn.conv2d %x, %w {strides = array<i64: 2, 2>} : tensor<32x3x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<32x16x15x15xf32>
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$input, NN_FloatTensor:$weight,
    Optional<NN_FloatTensor>:$bias,
    DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
    DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
    DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
    DefaultValuedAttr<I64Attr, "1">:$groups, UnitAttr:$channels_last);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,`
    type($weight) (`,` type($bias)^)? `->` type($result)
  }];
}

class NN_Pool2DOp<string mnemonic, dag extraArgs = (ins)>
    : NN_InferOp<mnemonic, [Pure, SameOperandsAndResultElementType,
                            NN_Differentiable]> {
  let arguments = !con((ins
    NN_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
    DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
    DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
    DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
    UnitAttr:$ceil_mode, UnitAttr:$channels_last), extraArgs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def NN_MaxPool2DOp : NN_Pool2DOp<"max_pool2d"> {
  let summary = "2-D max pooling, NCHW or NHWC";
  let description = [{
    Takes the maximum over each `kernel` (height, width) window of `input`,
    moved by `strides` (1 when absent) over the input padded by `padding`
    (top, left, bottom, right; padded elements never win), with the window
    taps `dilations` apart. The output size is computed as for `nn.conv2d`;
    with `ceil_mode` the division rounds up, but a window must start inside
    the input or its leading padding (the ONNX and PyTorch rule).

    `input` and the result are N x C x H x W or, with `channels_last`,
    N x H x W x C (what `--dtrain-channels-last` gives pooling between
    channels-last convolutions).

    ```mlir
    %y = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<32x16x32x32xf32> -> tensor<32x16x16x16xf32>
    ```
  }];
}

def NN_AvgPool2DOp : NN_Pool2DOp<"avg_pool2d", (ins UnitAttr:$count_include_pad)> {
  let summary = "2-D average pooling, NCHW or NHWC";
  let description = [{
    Averages each `kernel` window, with `strides`, `padding`, `ceil_mode`
    and `channels_last` as in `nn.max_pool2d`; `dilations` must be 1 (ONNX's
    AveragePool has none before opset 19). The divisor counts the padding
    elements of a window when `count_include_pad` is present, and only the
    input elements otherwise.

    ```mlir
    %y = nn.avg_pool2d %x {count_include_pad, kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>} : tensor<32x16x32x32xf32> -> tensor<32x16x32x32xf32>
    ```
  }];
}

def NN_GlobalAvgPool2DOp : NN_InferOp<"global_avg_pool2d",
                                      [Pure, SameOperandsAndResultElementType,
                                       NN_Differentiable]> {
  let summary = "Mean over the spatial dimensions, NCHW";
  let description = [{
    ```mlir
    %y = nn.global_avg_pool2d %x : tensor<32x512x7x7xf32> -> tensor<32x512x1x1xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

// The window and layout attributes of nn.conv2d, shared by its gradients.
defvar NN_ConvWindowArgs = (ins
    DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
    DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
    DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
    DefaultValuedAttr<I64Attr, "1">:$groups, UnitAttr:$channels_last);

def NN_Conv2DBackwardDataOp : NN_Op<"conv2d_backward_data",
                                    [Pure, SameOperandsAndResultElementType]> {
  let summary = "Gradient of nn.conv2d with respect to its input";
  let description = [{
    Given `grad`, the gradient with respect to the result of an `nn.conv2d`
    with this `weight` and these window attributes, returns the gradient
    with respect to its input, whose type is the result type (the input's
    size is not implied by the output's when a stride skips rows).
    `channels_last` as for `nn.conv2d`.

    ```mlir
    %dx = nn.conv2d_backward_data %dy, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<32x16x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<32x3x32x32xf32>
    ```
  }];
  let arguments = !con((ins NN_FloatTensor:$grad, NN_FloatTensor:$weight),
                       NN_ConvWindowArgs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $weight attr-dict `:` type($grad) `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_Conv2DBackwardWeightsOp : NN_Op<"conv2d_backward_weights",
                                       [Pure, SameOperandsAndResultElementType]> {
  let summary = "Gradient of nn.conv2d with respect to its weight";
  let description = [{
    Given the `input` of an `nn.conv2d` and `grad`, the gradient with
    respect to its result, returns the gradient with respect to its weight
    (of the result type). The bias gradient is `nn.reduce_sum` of `grad`
    over dimensions 0, 2 and 3 (0, 1 and 2 with `channels_last`, which is
    as for `nn.conv2d`).

    ```mlir
    %dw = nn.conv2d_backward_weights %x, %dy {padding = array<i64: 1, 1, 1, 1>} : tensor<32x3x32x32xf32>, tensor<32x16x32x32xf32> -> tensor<16x3x3x3xf32>
    ```
  }];
  let arguments = !con((ins NN_FloatTensor:$input, NN_FloatTensor:$grad),
                       NN_ConvWindowArgs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad attr-dict `:` type($input) `,` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

// The window and layout attributes of the pooling ops, shared by their
// gradients.
defvar NN_PoolWindowArgs = (ins
    DenseI64ArrayAttr:$kernel,
    DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
    DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
    DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
    UnitAttr:$ceil_mode, UnitAttr:$channels_last);

def NN_MaxPool2DGradOp : NN_Op<"max_pool2d_grad",
                               [Pure, SameOperandsAndResultElementType]> {
  let summary = "Gradient of nn.max_pool2d with respect to its input";
  let description = [{
    Given `grad`, the gradient with respect to the result of an
    `nn.max_pool2d` of `input` with these window attributes, returns the
    gradient with respect to `input`: each window's gradient goes to the
    first of its maximal elements (row-major order), as in PyTorch.
    `channels_last` as for `nn.max_pool2d`.

    ```mlir
    %dx = nn.max_pool2d_grad %dy, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<32x16x16x16xf32>, tensor<32x16x32x32xf32> -> tensor<32x16x32x32xf32>
    ```
  }];
  let arguments = !con((ins NN_FloatTensor:$grad, NN_FloatTensor:$input),
                       NN_PoolWindowArgs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input attr-dict `:` type($grad) `,` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_AvgPool2DGradOp : NN_Op<"avg_pool2d_grad",
                               [Pure, SameOperandsAndResultElementType]> {
  let summary = "Gradient of nn.avg_pool2d with respect to its input";
  let description = [{
    Given `grad`, the gradient with respect to the result of an
    `nn.avg_pool2d` with these attributes, returns the gradient with respect
    to its input (of the result type): each window's gradient, divided by
    the window's divisor, spread over its input elements. `channels_last`
    as for `nn.max_pool2d`.

    ```mlir
    %dx = nn.avg_pool2d_grad %dy {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<32x16x16x16xf32> -> tensor<32x16x32x32xf32>
    ```
  }];
  let arguments = !con((ins NN_FloatTensor:$grad), NN_PoolWindowArgs,
                       (ins UnitAttr:$count_include_pad));
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

def NN_BatchNormTrainGradOp : NN_InferOp<"batch_norm_train_grad",
                                         [Pure, SameOperandsAndResultElementType]> {
  let summary = "Gradient of nn.batch_norm_train";
  let description = [{
    Given `grad`, the gradient with respect to the normalized result of an
    `nn.batch_norm_train` of `input` with `scale`, and the `batch_mean` and
    `batch_var` it returned, returns the gradients with respect to `input`,
    `scale` and `bias` (the batch statistics depend on the input, so the
    input gradient has the two correction terms of training mode).
    `channels_last` as for `nn.batch_norm_train`.

    ```mlir
    %dx, %dscale, %dbias = nn.batch_norm_train_grad %dy, %x, %scale, %mean, %var {epsilon = 1.000000e-05 : f64} : tensor<32x16x8x8xf32>, tensor<32x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> (tensor<32x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
                       NN_FloatTensor:$scale, NN_FloatTensor:$batch_mean,
                       NN_FloatTensor:$batch_var,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       UnitAttr:$channels_last);
  let results = (outs NN_FloatTensor:$result, NN_FloatTensor:$scale_grad,
                      NN_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $scale `,` $batch_mean `,` $batch_var attr-dict `:`
    type($grad) `,` type($input) `,` type($scale) `,` type($batch_mean) `,`
    type($batch_var) `->` `(` type($result) `,` type($scale_grad) `,`
    type($bias_grad) `)`
  }];
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def NN_BatchNormOp : NN_InferOp<"batch_norm", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Batch normalization with given statistics (inference form)";
  let description = [{
    For `input` of shape `N x C x ...` (rank >= 2, channels in dimension 1)
    and per-channel tensors of shape `C`:

        result = scale * (input - mean) / sqrt(var + epsilon) + bias

    where `mean` and `var` are the running statistics. With
    `channels_last` the channels are the input's last dimension instead
    (`N x ... x C`). Training uses `nn.batch_norm_train`.

    ```mlir
    %y = nn.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.000000e-05 : f64} : tensor<32x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<32x16x8x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$scale,
                       NN_FloatTensor:$bias, NN_FloatTensor:$mean,
                       NN_FloatTensor:$var,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       UnitAttr:$channels_last);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $var attr-dict `:` type($input)
    `,` type($scale) `,` type($bias) `,` type($mean) `,` type($var) `->`
    type($result)
  }];
}

def NN_BatchNormTrainOp : NN_InferOp<"batch_norm_train",
                                     [Pure, SameOperandsAndResultElementType,
                                      NN_Differentiable]> {
  let summary = "Batch normalization with the batch's statistics (training form)";
  let description = [{
    Normalizes `input` (`N x C x ...`) as `nn.batch_norm` does, but with the
    mean and biased variance of the batch, taken per channel over every
    dimension but 1 (but the last with `channels_last`, as for
    `nn.batch_norm`). Returns them as `batch_mean` and `batch_var` (shape
    `C`) beside the result, so the training step can update the running
    statistics with its momentum.

    ```mlir
    %y, %mean, %var = nn.batch_norm_train %x, %scale, %bias {epsilon = 1.000000e-05 : f64} : tensor<32x16x8x8xf32>, tensor<16xf32>, tensor<16xf32> -> (tensor<32x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$scale,
                       NN_FloatTensor:$bias,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       UnitAttr:$channels_last);
  let results = (outs NN_FloatTensor:$result, NN_FloatTensor:$batch_mean,
                      NN_FloatTensor:$batch_var);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias attr-dict `:` type($input) `,` type($scale)
    `,` type($bias) `->` `(` type($result) `,` type($batch_mean) `,`
    type($batch_var) `)`
  }];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class NN_ReduceOp<string mnemonic, string what>
    : NN_InferOp<mnemonic, [Pure, SameOperandsAndResultElementType,
                            NN_Differentiable]> {
  let summary = what # " over the given dimensions";
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keep_dims);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `dims` `=` $dims attr-dict `:` type($input) `->` type($result)
  }];
}

def NN_ReduceSumOp : NN_ReduceOp<"reduce_sum", "Sum"> {
  let description = [{
    Sums `input` over `dims` (strictly increasing, each in `[0, rank)`). The
    reduced dimensions are dropped from the result, or kept with size 1 when
    `keep_dims` is present. The gradient of a broadcast bias is the sum of
    the incoming gradient over the broadcast dimensions:

    ```mlir
    %db = nn.reduce_sum %dy dims = [0] : tensor<32x128xf32> -> tensor<128xf32>
    ```
  }];
}

def NN_ReduceMeanOp : NN_ReduceOp<"reduce_mean", "Mean"> {
  let description = [{
    Averages `input` over `dims`, which, like the result shape, follow
    `nn.reduce_sum`:

    ```mlir
    %m = nn.reduce_mean %x dims = [2, 3] {keep_dims} : tensor<32x16x8x8xf32> -> tensor<32x16x1x1xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def NN_SoftmaxCrossEntropyOp : NN_InferOp<"softmax_cross_entropy",
                                         [Pure, NN_Differentiable]> {
  let summary = "Mean softmax cross-entropy of logits against class labels";
  let description = [{
    For `logits` of shape `N x C` and integer `labels` of shape `N` with
    values in `[0, C)`, returns the scalar

        loss = -(1/N) * sum_n log(softmax(logits[n])[labels[n]])

    computed stably (by subtracting each row's maximum), as PyTorch's
    `nn.CrossEntropyLoss()` with its default mean reduction.

    ```mlir
    %loss = nn.softmax_cross_entropy %logits, %labels : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
    ```

    Logits of more dimensions have the classes last and a label for each
    of their rows: a language model's `B x T x V` logits take `B x T`
    labels, and the loss is the mean over all `B * T` positions (PyTorch's
    loss of the logits and labels flattened to `B * T` rows).
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_LabelTensor:$labels);
  let results = (outs NN_FloatScalarTensor:$loss);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->` type($loss)
  }];
}

def NN_CountCorrectOp : NN_InferOp<"count_correct", [Pure]> {
  let summary = "The number of rows whose largest logit is at the label";
  let description = [{
    For `logits` of shape `N x C` and integer `labels` of shape `N`, counts
    the rows `n` where `argmax(logits[n]) == labels[n]`, the first maximum
    winning ties (as `torch.argmax`): the correct predictions of a batch.
    Logits of more dimensions count every row, as the loss averages them.

    ```mlir
    %correct = nn.count_correct %logits, %labels : tensor<32x10xf32>, tensor<32xi64> -> tensor<i64>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_LabelTensor:$labels);
  let results = (outs 0DTensorOf<[I64]>:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->` type($result)
  }];
}

def NN_SoftmaxCrossEntropyGradOp : NN_InferOp<"softmax_cross_entropy_grad", [Pure]> {
  let summary = "Vector-Jacobian product of nn.softmax_cross_entropy";
  let description = [{
    Given the gradient `grad` of the final objective with respect to the
    scalar loss (1.0 when the loss is the objective), returns its gradient
    with respect to the logits:

        result[n, c] = grad * (softmax(logits[n])[c] - (c == labels[n])) / N

    ```mlir
    %dlogits = nn.softmax_cross_entropy_grad %one, %logits, %labels
        : tensor<f32>, tensor<32x10xf32>, tensor<32xi64> -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins NN_FloatScalarTensor:$grad, NN_FloatTensor:$logits,
                       NN_LabelTensor:$labels);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $logits `,` $labels attr-dict `:` type($grad) `,` type($logits)
    `,` type($labels) `->` type($result)
  }];
}

#endif // DTRAIN_DIALECT_NN_IR_NNOPS_TD
