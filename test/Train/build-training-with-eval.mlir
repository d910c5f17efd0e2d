// RUN: dtrain-opt %s --dtrain-build-training="with-eval" | FileCheck %s --check-prefix=EVAL
// RUN: dtrain-opt %s --dtrain-build-training | FileCheck %s --check-prefix=NOEVAL
// NOEVAL-NOT: @eval_step

// with-eval: @eval_step normalizes with the running statistics (the buffers
// the batch statistics update) and returns the loss and the count.
// EVAL-LABEL: func.func @eval_step(
// EVAL-SAME: %[[S:[^:]+]]: tensor<2xf32> {train.param = "s"}, %[[T:[^:]+]]: tensor<2xf32> {train.param = "t"}, %[[M:[^:]+]]: tensor<2xf32> {train.buffer = "m"}, %[[V:[^:]+]]: tensor<2xf32> {train.buffer = "v"}, %[[X:[^:]+]]: tensor<4x2xf32> {train.input = "x"}, %[[L:[^:]+]]: tensor<4xi64> {train.label = "labels"}
// EVAL-SAME: -> (tensor<f32> {train.output = "loss"}, tensor<i64> {train.output = "correct"})
// EVAL: %[[Y:.*]] = nn.batch_norm %[[X]], %[[S]], %[[T]], %[[M]], %[[V]]
// EVAL-NOT: nn.batch_norm_train
// EVAL: %[[LOSS:.*]] = nn.softmax_cross_entropy %[[Y]], %[[L]]
// EVAL: %[[COUNT:.*]] = nn.count_correct %[[Y]], %[[L]]
// EVAL: return %[[LOSS]], %[[COUNT]]
func.func @forward(%s: tensor<2xf32> {train.param = "s"}, %t: tensor<2xf32> {train.param = "t"},
                   %m: tensor<2xf32> {train.buffer = "m"}, %v: tensor<2xf32> {train.buffer = "v"},
                   %x: tensor<4x2xf32> {train.input = "x"})
    -> (tensor<4x2xf32> {train.output = "y"}, tensor<2xf32> {train.updated = "m"}, tensor<2xf32> {train.updated = "v"}) {
  %y, %bm, %bv = nn.batch_norm_train %x, %s, %t : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32> -> (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>)
  %keep = arith.constant dense<0.9> : tensor<f32>
  %take = arith.constant dense<0.1> : tensor<f32>
  %m0 = nn.mul %m, %keep : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  %m1 = nn.mul %bm, %take : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  %m2 = nn.add %m0, %m1 : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %v0 = nn.mul %v, %keep : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  %v1 = nn.mul %bv, %take : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  %v2 = nn.add %v0, %v1 : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  return %y, %m2, %v2 : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>
}
