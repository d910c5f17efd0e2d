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
    to the gradient, L2 style). `lr` must be positive and `weight_decay`
    non-negative; both are f64 attributes and are applied in the parameter's
    element type.

    ```mlir
    %w2 = train.sgd_update %w, %dw {lr = 1.000000e-01 : f64} : tensor<784x10xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16, BF16, F32, F64]>:$param,
                       RankedTensorOf<[F16, BF16, F32, F64]>:$grad,
                       F64Attr:$lr,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let results = (outs RankedTensorOf<[F16, BF16, F32, F64]>:$result);
  let assemblyFormat = "$param `,` $grad attr-dict `:` type($param)";
  let hasVerifier = 1;
}

#endif // DTRAIN_DIALECT_TRAIN_IR_TRAINOPS_TD
