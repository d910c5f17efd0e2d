// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-mixed-precision="compute=bf16" | FileCheck %s
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-mixed-precision="compute=f16 keep-f32=none" | FileCheck %s --check-prefix=NONE

// Batch norm's running statistics (the buffers m and v) are updated in
// f32, from the f32 batch statistics and the f32 buffers, as the
// parameters are: rounded to 16 bits every step, their moving average
// would lose its small updates. The layer after the batch norm computes
// in bf16 all the same.
func.func @forward(%s: tensor<2xf32> {train.param = "s"}, %t: tensor<2xf32> {train.param = "t"},
                   %w: tensor<2x3xf32> {train.param = "w"},
                   %m: tensor<2xf32> {train.buffer = "m"}, %v: tensor<2xf32> {train.buffer = "v"},
                   %x: tensor<4x2xf32> {train.input = "x"})
    -> (tensor<4x3xf32> {train.output = "y"}, tensor<2xf32> {train.updated = "m"}, tensor<2xf32> {train.updated = "v"}) {
  %y, %bm, %bv = nn.batch_norm_train %x, %s, %t : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32> -> (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>)
  %keep = arith.constant dense<0.9> : tensor<f32>
  %take = arith.constant dense<0.1> : tensor<f32>
  %m0 = nn.mul %m, %keep : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  %m1 = nn.mul %bm, %take : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  %m2 = nn.add %m0, %m1 : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %v0 = nn.mul %v, %keep : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  %v1 = nn.mul %bv, %take : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  %v2 = nn.add %v0, %v1 : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %z = nn.matmul %y, %w : tensor<4x2xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  return %z, %m2, %v2 : tensor<4x3xf32>, tensor<2xf32>, tensor<2xf32>
}

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[M:[^:]+]]: tensor<2xf32> {train.buffer = "m"}, %[[V:[^:]+]]: tensor<2xf32> {train.buffer = "v"}
// CHECK-NOT: nn.cast %[[M]]
// CHECK-NOT: nn.cast %[[V]]
// CHECK: %[[Y:[^,]+]], %[[BM:[^,]+]], %[[BV:[^ ]+]] = nn.batch_norm_train {{.*}} -> (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>)
// CHECK: %[[M0:.*]] = nn.mul %[[M]], %{{.*}} : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
// CHECK-NEXT: %[[M1:.*]] = nn.mul %[[BM]], %{{.*}} : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
// CHECK-NEXT: %[[M2:.*]] = nn.add %[[M0]], %[[M1]] : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
// CHECK-NEXT: %[[V0:.*]] = nn.mul %[[V]], %{{.*}} : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
// CHECK-NEXT: %[[V1:.*]] = nn.mul %[[BV]], %{{.*}} : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
// CHECK-NEXT: %[[V2:.*]] = nn.add %[[V0]], %[[V1]] : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
// CHECK: %[[YB:.*]] = nn.cast %[[Y]] : tensor<4x2xf32> to tensor<4x2xbf16>
// CHECK: nn.matmul %[[YB]], %{{.*}} : tensor<4x2xbf16>, tensor<2x3xbf16> -> tensor<4x3xbf16>
// CHECK: return {{.*}}%[[M2]], %[[V2]]

// With no f32 islands the batch norm computes in f16, and the running
// statistics' update still in f32, from the widened batch statistics.
// NONE-LABEL: func.func @train_step(
// NONE: %{{[^,]+}}, %[[BM:[^,]+]], %[[BV:[^ ]+]] = nn.batch_norm_train {{.*}} -> (tensor<4x2xf16>, tensor<2xf16>, tensor<2xf16>)
// NONE: %[[BMW:.*]] = nn.cast %[[BM]] : tensor<2xf16> to tensor<2xf32>
// NONE-NEXT: nn.mul %[[BMW]], %{{.*}} : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
