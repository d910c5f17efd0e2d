//===- NNOps.td - nn dialect operations --------------------*- tablegen -*-===//

#ifndef DTRAIN_DIALECT_NN_IR_NNOPS_TD
#define DTRAIN_DIALECT_NN_IR_NNOPS_TD

include "dtrain/Dialect/NN/IR/NNDialect.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def NN_MatmulOp : NN_Op<"matmul", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Matrix product of two rank-2 tensors";
  let description = [{
    Computes `op(lhs) x op(rhs)` where `op` transposes its argument when the
    matching `transpose_lhs` / `transpose_rhs` unit attribute is present. The
    transposed forms are what the backward pass of a linear layer needs
    (`dW = x^T dy`, `dx = dy W^T`) without materializing a transpose.

    ```mlir
    %y = nn.matmul %x, %w : tensor<32x784xf32>, tensor<784x128xf32> -> tensor<32x128xf32>
    %dw = nn.matmul %x, %dy {transpose_lhs} : tensor<32x784xf32>, tensor<32x128xf32> -> tensor<784x128xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

def NN_AddOp : NN_Op<"add", [Pure, Commutative, ResultsBroadcastableShape,
                             SameOperandsAndResultElementType]> {
  let summary = "Elementwise sum with NumPy broadcasting";
  let description = [{
    `result = lhs + rhs`, with the operands broadcast against each other.
    The result type must be the broadcast of the operand shapes, for example
    adding a bias to a batch of activations:

    ```mlir
    %y = nn.add %h, %b : tensor<32x128xf32>, tensor<128xf32> -> tensor<32x128xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def NN_ReluOp : NN_Op<"relu", [Pure, SameOperandsAndResultType]> {
  let summary = "Rectified linear unit, max(x, 0)";
  let description = [{
    ```mlir
    %y = nn.relu %x : tensor<32x128xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def NN_ReluGradOp : NN_Op<"relu_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "Vector-Jacobian product of nn.relu";
  let description = [{
    Given the gradient `grad` of the loss with respect to `relu(input)`,
    returns the gradient with respect to `input`: `grad` where `input > 0`,
    and 0 elsewhere (the subgradient 0 is taken at `input == 0`, as PyTorch
    does).

    ```mlir
    %dx = nn.relu_grad %dy, %x : tensor<32x128xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def NN_ReduceSumOp : NN_Op<"reduce_sum", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Sum over the given dimensions";
  let description = [{
    Sums `input` over `dims` (strictly increasing, each in `[0, rank)`). The
    reduced dimensions are dropped from the result, or kept with size 1 when
    `keep_dims` is present. The gradient of a broadcast bias is the sum of
    the incoming gradient over the broadcast dimensions:

    ```mlir
    %db = nn.reduce_sum %dy dims = [0] : tensor<32x128xf32> -> tensor<128xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keep_dims);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `dims` `=` $dims attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def NN_SoftmaxCrossEntropyOp : NN_Op<"softmax_cross_entropy", [Pure]> {
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
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_LabelTensor:$labels);
  let results = (outs NN_FloatScalarTensor:$loss);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->` type($loss)
  }];
  let hasVerifier = 1;
}

def NN_SoftmaxCrossEntropyGradOp : NN_Op<"softmax_cross_entropy_grad", [Pure]> {
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
  let hasVerifier = 1;
}

#endif // DTRAIN_DIALECT_NN_IR_NNOPS_TD
