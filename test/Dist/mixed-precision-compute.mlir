// RUN: dtrain-opt %s --dtrain-build-training="optimizer=sgd lr=0.1 with-eval=true" --dtrain-data-parallel --dtrain-mixed-precision="compute=bf16" | FileCheck %s
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=sgd lr=0.1" --dtrain-data-parallel --dtrain-mixed-precision="compute=bf16 wire=bf16" | FileCheck %s --check-prefix=WIRE
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=sgd lr=0.1" --dtrain-mixed-precision="compute=f16 keep-f32=none" | FileCheck %s --check-prefix=NONE
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=sgd lr=0.1" --dtrain-mixed-precision="compute=f16 keep-f32=loss" | FileCheck %s --check-prefix=ISLAND
// RUN: not dtrain-opt %s --dtrain-mixed-precision="compute=fp8" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not dtrain-opt %s --dtrain-mixed-precision="compute=bf16 keep-f32=layer_norm" 2>&1 | FileCheck %s --check-prefix=BAD-GROUP

func.func @forward(%w: tensor<4x3xf32> {train.param = "fc.weight"}, %b: tensor<3xf32> {train.param = "fc.bias"}, %x: tensor<5x4xf32> {train.input = "x"}) -> tensor<5x3xf32> {
  %0 = nn.matmul %x, %w : tensor<5x4xf32>, tensor<4x3xf32> -> tensor<5x3xf32>
  %1 = nn.add %0, %b : tensor<5x3xf32>, tensor<3xf32> -> tensor<5x3xf32>
  %2 = nn.relu %1 : tensor<5x3xf32>
  return %2 : tensor<5x3xf32>
}

// The input and each parameter are cast once, at the step's start in
// their users' order (where the GPU path runs the casts as one kernel);
// the layer computes in bf16;
// the loss (an f32 island) reads its input widened; the backward pass
// computes in bf16 from the loss gradient, narrowed; the bias gradient (a
// sum, an f32 island) and the weight gradient reach their exchanges in
// f32; the updates read f32 gradients and keep f32 parameters.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x3xf32> {train.param = "fc.weight"}, %[[B:[^:]*]]: tensor<3xf32> {train.param = "fc.bias"}
// CHECK-NEXT: %[[X16:.*]] = nn.cast %{{.*}} : tensor<5x4xf32> to tensor<5x4xbf16>
// CHECK-NEXT: %[[W16:.*]] = nn.cast %[[W]] : tensor<4x3xf32> to tensor<4x3xbf16>
// CHECK-NEXT: %[[B16:.*]] = nn.cast %[[B]] : tensor<3xf32> to tensor<3xbf16>
// CHECK-NEXT: comm.world
// CHECK-NEXT: %[[MM:.*]] = nn.matmul %[[X16]], %[[W16]] : tensor<5x4xbf16>, tensor<4x3xbf16> -> tensor<5x3xbf16>
// CHECK-NEXT: %[[H:.*]] = nn.add %[[MM]], %[[B16]] : tensor<5x3xbf16>, tensor<3xbf16> -> tensor<5x3xbf16>
// CHECK-NEXT: %[[Y:.*]] = nn.relu %[[H]] : tensor<5x3xbf16>
// CHECK-NEXT: %[[Y32:.*]] = nn.cast %[[Y]] : tensor<5x3xbf16> to tensor<5x3xf32>
// CHECK-NEXT: %[[LOSS:.*]] = nn.softmax_cross_entropy %[[Y32]], %{{.*}} : tensor<5x3xf32>, tensor<5xi64> -> tensor<f32>
// CHECK:      %[[DY:.*]] = nn.softmax_cross_entropy_grad %{{.*}}, %[[Y32]], %{{.*}} -> tensor<5x3xf32>
// CHECK-NEXT: %[[DY16:.*]] = nn.cast %[[DY]] : tensor<5x3xf32> to tensor<5x3xbf16>
// CHECK-NEXT: %[[DH:.*]] = nn.relu_grad %[[DY16]], %[[Y]] : tensor<5x3xbf16>
// CHECK-NEXT: %[[DH32:.*]] = nn.cast %[[DH]] : tensor<5x3xbf16> to tensor<5x3xf32>
// CHECK-NEXT: %[[DB:.*]] = nn.reduce_sum %[[DH32]] dims = [0] : tensor<5x3xf32> -> tensor<3xf32>
// CHECK-NEXT: comm.all_reduce_start <mean> %[[DB]] on %{{.*}} : tensor<3xf32>
// CHECK-NEXT: %[[DW:.*]] = nn.matmul %[[X16]], %[[DH]] {transpose_lhs} : tensor<5x4xbf16>, tensor<5x3xbf16> -> tensor<4x3xbf16>
// CHECK-NEXT: %[[DW32:.*]] = nn.cast %[[DW]] : tensor<4x3xbf16> to tensor<4x3xf32>
// CHECK-NEXT: comm.all_reduce_start <mean> %[[DW32]] on %{{.*}} : tensor<4x3xf32>
// CHECK:      train.sgd_update %[[W]], %{{.*}} {lr = 1.000000e-01 : f64} : tensor<4x3xf32>
// The evaluation step computes in bf16 too.
// CHECK-LABEL: func.func @eval_step
// CHECK:      nn.matmul %{{.*}}, %{{.*}} : tensor<5x4xbf16>, tensor<4x3xbf16> -> tensor<5x3xbf16>

// With a bf16 wire the bf16 weight gradient is exchanged as it is; the
// bias gradient, summed in f32, is rounded once.
// WIRE-LABEL: func.func @train_step
// WIRE:      %[[DB:.*]] = nn.reduce_sum %{{.*}} dims = [0] : tensor<5x3xf32> -> tensor<3xf32>
// WIRE-NEXT: %[[DB16:.*]] = arith.truncf %[[DB]] : tensor<3xf32> to tensor<3xbf16>
// WIRE-NEXT: comm.all_reduce_start <mean> %[[DB16]] on %{{.*}} : tensor<3xbf16>
// WIRE-NEXT: %[[DW:.*]] = nn.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<5x4xbf16>, tensor<5x3xbf16> -> tensor<4x3xbf16>
// WIRE-NOT:  arith.truncf
// WIRE:      comm.all_reduce_start <mean> %[[DW]] on %{{.*}} : tensor<4x3xbf16>

// keep-f32=none: the loss and the sum compute in f16 as well; the loss
// and gradients are widened where the step returns or updates with them.
// NONE-LABEL: func.func @train_step
// NONE:     nn.softmax_cross_entropy %{{.*}}, %{{.*}} : tensor<5x3xf16>, tensor<5xi64> -> tensor<f16>
// NONE:     nn.reduce_sum %{{.*}} dims = [0] : tensor<5x3xf16> -> tensor<3xf16>
// NONE:     nn.cast %{{.*}} : tensor<3xf16> to tensor<3xf32>

// keep-f32=loss: only the loss is an island; the sum is f16.
// ISLAND-LABEL: func.func @train_step
// ISLAND:     nn.softmax_cross_entropy %{{.*}}, %{{.*}} : tensor<5x3xf32>, tensor<5xi64> -> tensor<f32>
// ISLAND:     nn.reduce_sum %{{.*}} dims = [0] : tensor<5x3xf16> -> tensor<3xf16>

// BAD: error: --dtrain-mixed-precision: compute 'fp8' is not valid (accepted: bf16, f16, f32)
// BAD-GROUP: error: --dtrain-mixed-precision: keep-f32 group 'layer_norm' is not valid (accepted: batch_norm, softmax, loss, reduce, none)
