// RUN: dtrain-opt %s | FileCheck %s
// RUN: dtrain-opt %s | dtrain-opt | FileCheck %s
// RUN: dtrain-opt %s --mlir-print-op-generic | dtrain-opt | FileCheck %s

// CHECK-LABEL: func.func @step
// CHECK-SAME: {train.param = "fc.weight"}
// CHECK-SAME: {train.buffer = "bn.running_mean"}
// CHECK-SAME: {train.optimizer_state = "fc.weight.momentum"}
// CHECK-SAME: {train.input = "x"}
// CHECK-SAME: {train.label = "y"}
func.func @step(%w: tensor<64x10xf32> {train.param = "fc.weight"},
                %m: tensor<10xf32> {train.buffer = "bn.running_mean"},
                %v: tensor<64x10xf32> {train.optimizer_state = "fc.weight.momentum"},
                %x: tensor<16x64xf32> {train.input = "x"},
                %y: tensor<16xi64> {train.label = "y"},
                %dw: tensor<64x10xf32>) -> (tensor<64x10xf32>, tensor<64x10xf32>) {
  // CHECK: train.sgd_update %{{.*}}, %{{.*}} {lr = 1.000000e-01 : f64} : tensor<64x10xf32>
  %w1 = train.sgd_update %w, %dw {lr = 0.1 : f64} : tensor<64x10xf32>
  // CHECK: train.sgd_update %{{.*}}, %{{.*}} {lr = 5.000000e-02 : f64, weight_decay = 1.000000e-04 : f64} : tensor<64x10xf32>
  %w2 = train.sgd_update %w1, %dw {lr = 0.05 : f64, weight_decay = 1.0e-4 : f64} : tensor<64x10xf32>
  return %w2, %v : tensor<64x10xf32>, tensor<64x10xf32>
}

// Roles stay valid after bufferization, on memref arguments.
// CHECK-LABEL: func.func @bufferized
// CHECK-SAME: memref<4xf32> {train.param = "b"}
func.func @bufferized(%b: memref<4xf32> {train.param = "b"}) {
  return
}

// CHECK-LABEL: func.func @stateful_updates
func.func @stateful_updates(%w: tensor<8x4xf32>, %dw: tensor<8x4xf32>, %v: tensor<8x4xf32>, %step: tensor<i64>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  // CHECK: train.momentum_update %{{.*}}, %{{.*}}, %{{.*}} {lr = 5.000000e-02 : f64, momentum = 9.000000e-01 : f64, nesterov} : tensor<8x4xf32>
  %w1, %v1 = train.momentum_update %w, %dw, %v {lr = 0.05 : f64, momentum = 0.9 : f64, nesterov} : tensor<8x4xf32>
  // CHECK: train.adam_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {decoupled, lr = 1.000000e-03 : f64, weight_decay = 1.000000e-02 : f64} : tensor<8x4xf32>, tensor<i64>
  %w2, %m2, %s2 = train.adam_update %w1, %dw, %v1, %v, %step {decoupled, lr = 1.0e-3 : f64, weight_decay = 0.01 : f64} : tensor<8x4xf32>, tensor<i64>
  return %w2, %m2, %s2 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// CHECK-LABEL: func.func @lars
func.func @lars(%w: tensor<8x4xf32>, %dw: tensor<8x4xf32>, %v: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // CHECK: train.lars_update %{{.*}}, %{{.*}}, %{{.*}} {lr = 2.000000e+00 : f64, momentum = 9.000000e-01 : f64, weight_decay = 5.000000e-05 : f64} : tensor<8x4xf32>
  %w1, %v1 = train.lars_update %w, %dw, %v {lr = 2.0 : f64, momentum = 0.9 : f64, trust_coefficient = 1.0e-3 : f64, weight_decay = 5.0e-5 : f64} : tensor<8x4xf32>
  return %w1 : tensor<8x4xf32>
}

// CHECK-LABEL: func.func @loss_scaling
func.func @loss_scaling(%skip: tensor<i1>, %w: tensor<8x4xf32>, %w1: tensor<8x4xf32>) -> (tensor<f32>, tensor<8x4xf32>) {
  // CHECK: train.loss_seed : tensor<f32>
  %seed = train.loss_seed : tensor<f32>
  // CHECK: train.skip_update %{{.*}}, %{{.*}}, %{{.*}} : tensor<i1>, tensor<8x4xf32>
  %w2 = train.skip_update %skip, %w, %w1 : tensor<i1>, tensor<8x4xf32>
  return %seed, %w2 : tensor<f32>, tensor<8x4xf32>
}
