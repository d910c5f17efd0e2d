//===- Passes.td - Train phase passes ----------------------*- tablegen -*-===//
//
// The Train phase turns a forward function in the nn dialect into one
// training step: reverse-mode differentiation from the scalar loss, then
// optimizer updates in the train dialect.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_TRAIN_PASSES_TD
#define DTRAIN_TRAIN_PASSES_TD

include "mlir/Pass/PassBase.td"

def BuildTraining : Pass<"dtrain-build-training", "ModuleOp"> {
  let summary = "Turn @forward into @train_step: loss, backward pass, updates";
  let description = [{
    Replaces `func.func @forward` (parameters marked `train.param`, inputs
    `train.input`, one model output) with `func.func @train_step`, which
    takes the parameters, the optimizer state (`train.optimizer_state`,
    zero before the first step), the inputs and a batch of labels
    (`train.label`), and returns the updated parameters and optimizer state
    (each marked `train.updated` with its name), the new values of buffers
    that @forward returns (`train.updated`: batch-norm running statistics),
    the loss (`train.output = "loss"`) and, for softmax-xent, the number of
    correct predictions in the batch (`train.output = "correct"`, i64,
    `nn.count_correct`):

    1. the loss of the model output against the labels:
       `softmax-xent` (logits `N x C` against `N` integer class labels,
       `nn.softmax_cross_entropy`, mean over the batch; a language model's
       `N x T x V` logits against `N x T` labels, mean over every
       position) or `mse` (the mean
       of the squared differences from targets of the output's shape);
    2. the gradient of the loss with respect to every parameter, by
       reverse-mode differentiation: each op on a path from a parameter to
       the loss builds its vector-Jacobian product
       (`DifferentiableOpInterface`), and the gradients of a value with
       several users are summed. Values that do not depend on a parameter
       (inputs, labels, shape arithmetic) are constants of the backward
       pass; a parameter the loss does not depend on gets a zero gradient;
    3. one optimizer update per parameter, fused into one loop nest with
       its state: `sgd`, `momentum` and `nesterov` (PyTorch's SGD; state
       `<param>.momentum_buffer`), `adam` and `adamw` (state
       `<param>.exp_avg`, `<param>.exp_avg_sq` and the step count
       `optimizer.step`, an i64 scalar), `lars` (momentum SGD whose step is
       scaled per tensor by the trust ratio `trust-coefficient * ||w|| /
       (||g|| + weight-decay * ||w||)`, except for 1-D parameters, which get
       momentum SGD; state `<param>.momentum_buffer`). Weight decay is not
       applied to 1-D parameters (biases, batch-norm scales and shifts), as
       in large-batch practice, unless `decay-1d` is set. A learning-rate
       schedule (`schedule`, `warmup-steps`) is computed in the step from
       the step count (`optimizer.step`) and scales `lr` (`lr_scale`).

    Before differentiation, each `nn.dropout` with a non-zero ratio becomes
    its input times an `nn.dropout_mask` of the step count and the seed
    `rng.seed` (an i64 state the trainer sets from `--seed`; the k-th
    dropout in the function is stream k), so the mask is random per step
    and dropout, reproducible, and the same in the forward and backward
    pass.

    ```mlir
    // dtrain-opt mlp.mlir --dtrain-build-training="loss=softmax-xent lr=0.1"
    func.func @train_step(%w: tensor<10x4xf32> {train.param = "w"},
                          %x: tensor<2x4xf32> {train.input = "x"},
                          %labels: tensor<2xi64> {train.label = "labels"})
        -> (tensor<10x4xf32> {train.updated = "w"},
            tensor<f32> {train.output = "loss"})
    ```

    An op on the gradient path that cannot be differentiated is an error at
    that op, as is a model with no `train.param` argument or an output the
    loss does not fit.
  }];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"softmax-xent\"",
           "The loss: softmax-xent (integer class labels) or mse (targets "
           "of the output's shape)">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "The optimizer: sgd, momentum, nesterov, adam, adamw or lars">,
    Option<"learningRate", "lr", "double", /*default=*/"0.01",
           "The learning rate (> 0)">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "Weight decay (>= 0): L2, added to the gradient, except for "
           "adamw (decoupled)">,
    Option<"withEval", "with-eval", "bool", /*default=*/"false",
           "Also build @eval_step(params, buffers, inputs, labels) -> (loss, "
           "correct): the model in inference form (batch norm with the "
           "running statistics) and the loss, for validation">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"constant\"",
           "Learning-rate schedule: constant, step (times gamma every "
           "step-size steps) or cosine (to 0 over total-steps, as PyTorch's "
           "CosineAnnealingLR)">,
    Option<"stepSize", "step-size", "int64_t", /*default=*/"1000",
           "schedule=step: steps per decay">,
    Option<"gamma", "gamma", "double", /*default=*/"0.1",
           "schedule=step: the decay factor">,
    Option<"totalSteps", "total-steps", "int64_t", /*default=*/"1000",
           "schedule=cosine: the steps of the half cosine">,
    Option<"warmupSteps", "warmup-steps", "int64_t", /*default=*/"0",
           "Linear warm-up: the rate grows from lr / N to lr over the first "
           "N steps (0: none)">,
    Option<"decay1D", "decay-1d", "bool", /*default=*/"false",
           "Apply weight decay to 1-D parameters (biases, batch-norm scales "
           "and shifts) too">,
    Option<"momentum", "momentum", "double", /*default=*/"0.9",
           "momentum, nesterov and lars: the momentum (>= 0)">,
    Option<"trustCoefficient", "trust-coefficient", "double",
           /*default=*/"0.001",
           "lars: the trust coefficient eta (> 0)">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9",
           "adam and adamw: the decay of the first moment, in [0, 1)">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999",
           "adam and adamw: the decay of the second moment, in [0, 1)">,
    Option<"epsilon", "epsilon", "double", /*default=*/"1e-8",
           "adam and adamw: added to the denominator (> 0)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::dtrain::nn::NNDialect",
    "::mlir::dtrain::train::TrainDialect",
  ];
}

#endif // DTRAIN_TRAIN_PASSES_TD
