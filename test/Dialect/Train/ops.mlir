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
