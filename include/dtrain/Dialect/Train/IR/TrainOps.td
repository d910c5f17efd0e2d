//===- TrainOps.td - train dialect operations --------------*- tablegen -*-===//

#ifndef DTRAIN_DIALECT_TRAIN_IR_TRAINOPS_TD
#define DTRAIN_DIALECT_TRAIN_IR_TRAINOPS_TD

include "dtrain/Dialect/Train/IR/TrainDialect.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Train_SGDUpdateOp : Train_Op<"sgd_update", [Pure, AllTypesMatch<["param", "grad", "result"]>]> {
  let summary = "One step of stochastic gradient descent on a parameter";
  let description = [{
    Returns the updated parameter

        result = param - lr * (grad + weight_decay * param)

    which is PyTorch's `torch.optim.SGD` without momentum (weight decay added
    to the gradient, L2 style). With the optional `lr_scale` (a rank-0 f32
    tensor, the factor of a learning-rate schedule at this step), every
    update op of the dialect uses `lr * lr_scale` for `lr`. `lr` must be positive and `weight_decay`
    non-negative; both are f64 attributes and are applied in the parameter's
    element type.

    ```mlir
    %w2 = train.sgd_update %w, %dw {lr = 1.000000e-01 : f64} : tensor<784x10xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16, BF16, F32, F64]>:$param,
                       RankedTensorOf<[F16, BF16, F32, F64]>:$grad,
                       Optional<0DTensorOf<[F32]>>:$lr_scale,
                       F64Attr:$lr,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let results = (outs RankedTensorOf<[F16, BF16, F32, F64]>:$result);
  let assemblyFormat = [{
    $param `,` $grad (`lr_scale` $lr_scale^ `:` type($lr_scale))? attr-dict
    `:` type($param)
  }];
  let hasVerifier = 1;
}

def Train_MomentumUpdateOp : Train_Op<"momentum_update", [Pure,
    AllTypesMatch<["param", "grad", "velocity", "new_param", "new_velocity"]>]> {
  let summary = "One step of SGD with momentum (heavy ball or Nesterov)";
  let description = [{
    PyTorch's `torch.optim.SGD` with `momentum` (no dampening), from the
    parameter, its gradient and its velocity (zero before the first step):

        d         = grad + weight_decay * param
        velocity' = momentum * velocity + d
        param'    = param - lr * (nesterov ? d + momentum * velocity' : velocity')

    `lr` must be positive, `momentum` and `weight_decay` non-negative.

    ```mlir
    %w2, %v2 = train.momentum_update %w, %dw, %v {lr = 5.0e-02 : f64, momentum = 9.0e-01 : f64} : tensor<784x10xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16, BF16, F32, F64]>:$param,
                       RankedTensorOf<[F16, BF16, F32, F64]>:$grad,
                       RankedTensorOf<[F16, BF16, F32, F64]>:$velocity,
                       Optional<0DTensorOf<[F32]>>:$lr_scale,
                       F64Attr:$lr, F64Attr:$momentum,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       UnitAttr:$nesterov);
  let results = (outs RankedTensorOf<[F16, BF16, F32, F64]>:$new_param,
                      RankedTensorOf<[F16, BF16, F32, F64]>:$new_velocity);
  let assemblyFormat = [{
    $param `,` $grad `,` $velocity (`lr_scale` $lr_scale^ `:` type($lr_scale))?
    attr-dict `:` type($param)
  }];
  let hasVerifier = 1;
}

def Train_LarsUpdateOp : Train_Op<"lars_update", [Pure,
    AllTypesMatch<["param", "grad", "velocity", "new_param", "new_velocity"]>]> {
  let summary = "One step of LARS: momentum SGD with a layer-wise trust ratio";
  let description = [{
    Layer-wise adaptive rate scaling (You et al., 2017), as in the
    "ImageNet in four minutes" recipe: the step of each parameter tensor is
    scaled by its trust ratio, from the norms of the whole tensor,

        local_lr  = trust_coefficient * ||param|| /
                    (||grad|| + weight_decay * ||param|| + epsilon)
                    (1 when ||param|| or ||grad|| is 0)
        velocity' = momentum * velocity + lr * local_lr * (grad + weight_decay * param)
        param'    = param - velocity'

    ```mlir
    %w2, %v2 = train.lars_update %w, %dw, %v {lr = 2.0 : f64, momentum = 0.9 : f64, trust_coefficient = 1.0e-03 : f64, weight_decay = 5.0e-05 : f64} : tensor<64x3x7x7xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16, BF16, F32, F64]>:$param,
                       RankedTensorOf<[F16, BF16, F32, F64]>:$grad,
                       RankedTensorOf<[F16, BF16, F32, F64]>:$velocity,
                       Optional<0DTensorOf<[F32]>>:$lr_scale,
                       F64Attr:$lr, F64Attr:$momentum,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<F64Attr, "0.001">:$trust_coefficient,
                       DefaultValuedAttr<F64Attr, "0.0">:$epsilon);
  let results = (outs RankedTensorOf<[F16, BF16, F32, F64]>:$new_param,
                      RankedTensorOf<[F16, BF16, F32, F64]>:$new_velocity);
  let assemblyFormat = [{
    $param `,` $grad `,` $velocity (`lr_scale` $lr_scale^ `:` type($lr_scale))?
    attr-dict `:` type($param)
  }];
  let hasVerifier = 1;
}

def Train_AdamUpdateOp : Train_Op<"adam_update", [Pure,
    AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq", "new_param",
                   "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "One step of Adam or AdamW";
  let description = [{
    PyTorch's `torch.optim.Adam` (L2 weight decay added to the gradient) or,
    with `decoupled`, `torch.optim.AdamW` (the parameter shrunk by
    `lr * weight_decay` first). `step` is the number of this step, from 1
    (a rank-0 integer tensor), for the bias corrections:

        g          = grad + weight_decay * param           (Adam)
        param      = param * (1 - lr * weight_decay)       (AdamW)
        exp_avg'   = beta1 * exp_avg + (1 - beta1) * g
        exp_avg_sq'= beta2 * exp_avg_sq + (1 - beta2) * g^2
        param'     = param - lr * (exp_avg' / (1 - beta1^step))
                       / (sqrt(exp_avg_sq' / (1 - beta2^step)) + epsilon)

    ```mlir
    %w2, %m2, %v2 = train.adam_update %w, %dw, %m, %v, %step {lr = 1.0e-03 : f64} : tensor<784x10xf32>, tensor<i64>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16, BF16, F32, F64]>:$param,
                       RankedTensorOf<[F16, BF16, F32, F64]>:$grad,
                       RankedTensorOf<[F16, BF16, F32, F64]>:$exp_avg,
                       RankedTensorOf<[F16, BF16, F32, F64]>:$exp_avg_sq,
                       0DTensorOf<[I64]>:$step,
                       Optional<0DTensorOf<[F32]>>:$lr_scale,
                       F64Attr:$lr,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       UnitAttr:$decoupled);
  let results = (outs RankedTensorOf<[F16, BF16, F32, F64]>:$new_param,
                      RankedTensorOf<[F16, BF16, F32, F64]>:$new_exp_avg,
                      RankedTensorOf<[F16, BF16, F32, F64]>:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step
    (`lr_scale` $lr_scale^ `:` type($lr_scale))? attr-dict `:` type($param)
    `,` type($step)
  }];
  let hasVerifier = 1;
}

def Train_LossSeedOp : Train_Op<"loss_seed", [Pure]> {
  let summary = "The seed of the backward pass: d loss / d loss";
  let description = [{
    A rank-0 float tensor holding 1, the gradient of the loss with respect
    to itself, from which `--dtrain-build-training` starts the backward
    pass. It is an op rather than a constant so that passes can find it:
    `--dtrain-mixed-precision` scales it for loss scaling. The lowering
    makes it the constant 1.

    ```mlir
    %seed = train.loss_seed : tensor<f32>
    %dlogits = nn.softmax_cross_entropy_grad %seed, %logits, %labels : tensor<f32>, tensor<8x10xf32>, tensor<8xi64> -> tensor<8x10xf32>
    ```
  }];
  let results = (outs 0DTensorOf<[F16, BF16, F32, F64]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Train_SkipUpdateOp : Train_Op<"skip_update", [Pure,
    AllTypesMatch<["old", "updated", "result"]>]> {
  let summary = "Keeps the old value of a state when the step is skipped";
  let description = [{
    Returns `old` when `skip` (a rank-0 i1 tensor) is true, else `updated`:
    how a step that must not happen (a gradient overflowed, under loss
    scaling) leaves a parameter or optimizer state as it was. Elementwise,
    so that it fuses with the update that produced `updated` and the state is
    still updated in place.

    ```mlir
    %w2 = train.skip_update %overflow, %w, %w1 : tensor<i1>, tensor<784x10xf32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[I1]>:$skip, AnyRankedTensor:$old,
                       AnyRankedTensor:$updated);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $skip `,` $old `,` $updated attr-dict `:` type($skip) `,` type($result)
  }];
}

#endif // DTRAIN_DIALECT_TRAIN_IR_TRAINOPS_TD
