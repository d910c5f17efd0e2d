// RUN: dtrain-opt %s --split-input-file --dtrain-build-training --verify-diagnostics
// RUN: not dtrain-opt %s --split-input-file --dtrain-build-training="loss=hinge" 2>&1 | FileCheck %s --check-prefix=LOSS
// RUN: not dtrain-opt %s --split-input-file --dtrain-build-training="optimizer=lamb" 2>&1 | FileCheck %s --check-prefix=OPTIMIZER
// RUN: not dtrain-opt %s --split-input-file --dtrain-build-training="lr=0" 2>&1 | FileCheck %s --check-prefix=LR
// LOSS: error: unknown loss 'hinge' (--dtrain-build-training accepts loss=softmax-xent or loss=mse)
// OPTIMIZER: error: unknown optimizer 'lamb' (--dtrain-build-training accepts optimizer=sgd, momentum, nesterov, adam, adamw or lars)
// LR: error: lr must be positive, got 0

// An op on the way from a parameter to the loss without a gradient.
// Here batch norm in inference form (running statistics), whose gradient
// training never needs.
func.func @forward(%w: tensor<2x4xf32> {train.param = "w"}, %s: tensor<4xf32> {train.buffer = "s"}) -> tensor<2x4xf32> {
  // expected-error @below {{cannot differentiate 'nn.batch_norm': the gradient reaches it on its way from the parameters to the loss, and it has no vector-Jacobian product}}
  %0 = nn.batch_norm %w, %s, %s, %s, %s : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// expected-error @below {{@forward has no trainable parameters (no argument marked train.param): there is nothing to train}}
func.func @forward(%x: tensor<2x4xf32> {train.input = "x"}) -> tensor<2x4xf32> {
  %0 = nn.relu %x : tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// expected-error @below {{the model output of type 'tensor<5xf32>' does not fit loss 'softmax-xent': softmax-xent takes logits of rank 2 or more (batch [x positions] x classes)}}
func.func @forward(%w: tensor<5xf32> {train.param = "w"}) -> tensor<5xf32> {
  %0 = nn.relu %w : tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// expected-error @below {{--dtrain-build-training needs a func.func @forward with a body (what the ONNX importer produces)}}
module {
  func.func @model(%w: tensor<2x4xf32> {train.param = "w"}) -> tensor<2x4xf32> {
    return %w : tensor<2x4xf32>
  }
}

// -----

// The loss reads the batch statistics.
func.func @forward(%s: tensor<2xf32> {train.param = "s"}, %t: tensor<2xf32> {train.param = "t"},
                   %x: tensor<4x2xf32> {train.input = "x"}) -> tensor<1x2xf32> {
  // expected-error @below {{'nn.batch_norm_train' op cannot be differentiated through its batch_mean or batch_var results (only through the normalized result)}}
  %n:3 = nn.batch_norm_train %x, %s, %t : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32> -> (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>)
  %m = nn.reshape %n#1 : tensor<2xf32> -> tensor<1x2xf32>
  return %m : tensor<1x2xf32>
}
