// One data-parallel training step of a two-layer perceptron (64 -> 32 -> 10,
// the shape of the scikit-learn digits task), written by hand in the nn,
// train and comm dialects: forward, backward, gradient averaging across
// ranks, SGD. scripts/demo.sh runs dtrain's passes on this file.
//
// RUN: dtrain-opt %s | dtrain-opt | FileCheck %s --check-prefix=PARSE
// PARSE-COUNT-5: comm.all_reduce <mean>
// PARSE-COUNT-4: train.sgd_update
//
// The demo pipeline: overlap each gradient exchange with the rest of the
// backward pass, bufferize the collectives (nn ops stay on tensors until
// their lowering exists), and lower them to runtime calls.
// RUN: dtrain-opt %s --dtrain-async-collectives \
// RUN:   --one-shot-bufferize="allow-unknown-ops bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --dtrain-lower-comm-to-runtime --canonicalize | FileCheck %s
//
// The bias gradient of the last layer is on the network while the other
// gradients are computed: its start comes first, its wait after them.
// CHECK-LABEL: func.func @train_step
// CHECK:      %[[DB2:.*]] = nn.reduce_sum
// CHECK:      %[[REQ_B2:.*]] = call @dtrain_rt_all_reduce_start_with(
// CHECK:      %[[DW2:.*]] = nn.matmul {{.*}} {transpose_lhs}
// CHECK:      %[[REQ_W2:.*]] = call @dtrain_rt_all_reduce_start_with(
// CHECK:      nn.relu_grad
// CHECK:      call @dtrain_rt_all_reduce_start_with(
// CHECK:      nn.matmul {{.*}} {transpose_lhs}
// CHECK:      call @dtrain_rt_all_reduce_start_with(
// CHECK:      call @dtrain_rt_all_reduce_start_with(
// CHECK:      call @dtrain_rt_wait(%[[REQ_B2]])
// CHECK-NEXT: bufferization.to_tensor
// CHECK-NEXT: train.sgd_update
// CHECK-NEXT: call @dtrain_rt_wait(%[[REQ_W2]])
// CHECK-NEXT: bufferization.to_tensor
// CHECK-NEXT: train.sgd_update
// CHECK-COUNT-3: call @dtrain_rt_wait(
// CHECK-NOT:  comm.
// CHECK:      return

func.func @train_step(
    %w1: tensor<64x32xf32> {train.param = "fc1.weight"},
    %b1: tensor<32xf32> {train.param = "fc1.bias"},
    %w2: tensor<32x10xf32> {train.param = "fc2.weight"},
    %b2: tensor<10xf32> {train.param = "fc2.bias"},
    %x: tensor<16x64xf32> {train.input = "x"},
    %y: tensor<16xi64> {train.label = "y"})
    -> (tensor<64x32xf32>, tensor<32xf32>, tensor<32x10xf32>, tensor<10xf32>,
        tensor<f32>) {
  %world = comm.world : !comm.communicator

  // Forward.
  %h0 = nn.matmul %x, %w1 : tensor<16x64xf32>, tensor<64x32xf32> -> tensor<16x32xf32>
  %h1 = nn.add %h0, %b1 : tensor<16x32xf32>, tensor<32xf32> -> tensor<16x32xf32>
  %h = nn.relu %h1 : tensor<16x32xf32>
  %z0 = nn.matmul %h, %w2 : tensor<16x32xf32>, tensor<32x10xf32> -> tensor<16x10xf32>
  %z = nn.add %z0, %b2 : tensor<16x10xf32>, tensor<10xf32> -> tensor<16x10xf32>
  %loss = nn.softmax_cross_entropy %z, %y : tensor<16x10xf32>, tensor<16xi64> -> tensor<f32>

  // Backward, last layer first; each gradient is averaged over the ranks as
  // soon as it exists.
  %one = arith.constant dense<1.0> : tensor<f32>
  %dz = nn.softmax_cross_entropy_grad %one, %z, %y : tensor<f32>, tensor<16x10xf32>, tensor<16xi64> -> tensor<16x10xf32>
  %db2 = nn.reduce_sum %dz dims = [0] : tensor<16x10xf32> -> tensor<10xf32>
  %db2_avg = comm.all_reduce <mean> %db2 on %world : tensor<10xf32>
  %dw2 = nn.matmul %h, %dz {transpose_lhs} : tensor<16x32xf32>, tensor<16x10xf32> -> tensor<32x10xf32>
  %dw2_avg = comm.all_reduce <mean> %dw2 on %world : tensor<32x10xf32>
  %dh = nn.matmul %dz, %w2 {transpose_rhs} : tensor<16x10xf32>, tensor<32x10xf32> -> tensor<16x32xf32>
  %dh1 = nn.relu_grad %dh, %h1 : tensor<16x32xf32>
  %db1 = nn.reduce_sum %dh1 dims = [0] : tensor<16x32xf32> -> tensor<32xf32>
  %db1_avg = comm.all_reduce <mean> %db1 on %world : tensor<32xf32>
  %dw1 = nn.matmul %x, %dh1 {transpose_lhs} : tensor<16x64xf32>, tensor<16x32xf32> -> tensor<64x32xf32>
  %dw1_avg = comm.all_reduce <mean> %dw1 on %world : tensor<64x32xf32>

  // The loss averaged over ranks, for the progress line.
  %loss_avg = comm.all_reduce <mean> %loss on %world : tensor<f32>

  // Optimizer, in the order the averaged gradients arrive.
  %b2_new = train.sgd_update %b2, %db2_avg {lr = 0.1 : f64} : tensor<10xf32>
  %w2_new = train.sgd_update %w2, %dw2_avg {lr = 0.1 : f64} : tensor<32x10xf32>
  %b1_new = train.sgd_update %b1, %db1_avg {lr = 0.1 : f64} : tensor<32xf32>
  %w1_new = train.sgd_update %w1, %dw1_avg {lr = 0.1 : f64} : tensor<64x32xf32>
  return %w1_new, %b1_new, %w2_new, %b2_new, %loss_avg
      : tensor<64x32xf32>, tensor<32xf32>, tensor<32x10xf32>, tensor<10xf32>, tensor<f32>
}
