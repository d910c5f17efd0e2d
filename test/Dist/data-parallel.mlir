// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel | FileCheck %s
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel="schedule=after-backward" | FileCheck %s --check-prefix=AFTER
// RUN: not dtrain-opt %s --dtrain-build-training --dtrain-data-parallel="schedule=eventually" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: --dtrain-data-parallel: schedule 'eventually' is not valid (accepted: wfbp, after-backward)

// schedule=after-backward: the same exchanges in the same order, all started
// once the last gradient (fc1.weight's) exists; the loss's still at once.
// AFTER-LABEL: func.func @train_step
// AFTER:      nn.softmax_cross_entropy
// AFTER-NEXT: comm.all_reduce_start <mean> {{.*}} : tensor<f32>
// AFTER:      nn.reduce_sum %{{.*}} dims = [0] : tensor<5x2xf32> -> tensor<2xf32>
// AFTER-NOT:  comm.all_reduce_start
// AFTER:      %[[DW1:.*]] = nn.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<5x4xf32>, tensor<5x3xf32> -> tensor<4x3xf32>
// AFTER-NEXT: %[[REQ_B2:.*]], %{{.*}} = comm.all_reduce_start <mean> %{{.*}} : tensor<2xf32>
// AFTER-NEXT: %[[REQ_W2:.*]], %{{.*}} = comm.all_reduce_start <mean> %{{.*}} : tensor<3x2xf32>
// AFTER-NEXT: %[[REQ_W1:.*]], %{{.*}} = comm.all_reduce_start <mean> %[[DW1]] on %{{.*}} : tensor<4x3xf32>
// AFTER-NEXT: comm.wait %[[REQ_W1]]
// AFTER-NEXT: train.momentum_update
// AFTER-NEXT: comm.wait %[[REQ_W2]]
// AFTER-NEXT: train.momentum_update
// AFTER-NEXT: comm.wait %[[REQ_B2]]
// AFTER-NEXT: train.momentum_update

// Every gradient is averaged over the ranks: its exchange starts right after
// the op that produces it, so in reverse layer order (fc2.bias, fc2.weight,
// then fc1.weight after the rest of the backward pass), and is waited for
// just before its update.
// CHECK-LABEL: func.func @train_step
// CHECK:      %[[WORLD:.*]] = comm.world : !comm.communicator
// The loss is averaged too, its exchange started as soon as it exists.
// CHECK:      %[[LOSS:.*]] = nn.softmax_cross_entropy
// CHECK-NEXT: %[[REQ_L:.*]], %[[FLY_L:.*]] = comm.all_reduce_start <mean> %[[LOSS]] on %[[WORLD]] : tensor<f32>
// CHECK:      %[[DB2:.*]] = nn.reduce_sum %{{.*}} dims = [0] : tensor<5x2xf32> -> tensor<2xf32>
// CHECK-NEXT: %[[REQ_B2:.*]], %[[FLY_B2:.*]] = comm.all_reduce_start <mean> %[[DB2]] on %[[WORLD]] : tensor<2xf32>
// CHECK:      %[[DW2:.*]] = nn.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<5x3xf32>, tensor<5x2xf32> -> tensor<3x2xf32>
// CHECK-NEXT: %[[REQ_W2:.*]], %[[FLY_W2:.*]] = comm.all_reduce_start <mean> %[[DW2]] on %[[WORLD]] : tensor<3x2xf32>
// CHECK:      nn.relu_grad
// CHECK:      %[[DW1:.*]] = nn.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<5x4xf32>, tensor<5x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %[[REQ_W1:.*]], %[[FLY_W1:.*]] = comm.all_reduce_start <mean> %[[DW1]] on %[[WORLD]] : tensor<4x3xf32>
// CHECK-NEXT: %[[AVG_W1:.*]] = comm.wait %[[REQ_W1]], %[[FLY_W1]] : tensor<4x3xf32>
// CHECK-NEXT: train.momentum_update %{{.*}}, %[[AVG_W1]], %{{.*}}
// CHECK-NEXT: %[[AVG_W2:.*]] = comm.wait %[[REQ_W2]], %[[FLY_W2]] : tensor<3x2xf32>
// CHECK-NEXT: train.momentum_update %{{.*}}, %[[AVG_W2]], %{{.*}}
// CHECK-NEXT: %[[AVG_B2:.*]] = comm.wait %[[REQ_B2]], %[[FLY_B2]] : tensor<2xf32>
// CHECK-NEXT: train.momentum_update %{{.*}}, %[[AVG_B2]], %{{.*}}
// CHECK-NEXT: %[[AVG_L:.*]] = comm.wait %[[REQ_L]], %[[FLY_L]] : tensor<f32>
// CHECK-NEXT: return {{.*}}, %[[AVG_L]], %{{.*}} :
func.func @forward(%w1: tensor<4x3xf32> {train.param = "fc1.weight"}, %w2: tensor<3x2xf32> {train.param = "fc2.weight"}, %b2: tensor<2xf32> {train.param = "fc2.bias"}, %x: tensor<5x4xf32> {train.input = "x"}) -> tensor<5x2xf32> {
  %0 = nn.matmul %x, %w1 : tensor<5x4xf32>, tensor<4x3xf32> -> tensor<5x3xf32>
  %1 = nn.relu %0 : tensor<5x3xf32>
  %2 = nn.matmul %1, %w2 : tensor<5x3xf32>, tensor<3x2xf32> -> tensor<5x2xf32>
  %3 = nn.add %2, %b2 : tensor<5x2xf32>, tensor<2xf32> -> tensor<5x2xf32>
  return %3 : tensor<5x2xf32>
}

