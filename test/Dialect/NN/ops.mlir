// RUN: dtrain-opt %s | FileCheck %s
// Printing then parsing again gives the same IR, in custom and generic form.
// RUN: dtrain-opt %s | dtrain-opt | FileCheck %s
// RUN: dtrain-opt %s --mlir-print-op-generic | dtrain-opt | FileCheck %s

// CHECK-LABEL: func.func @linear_relu
func.func @linear_relu(%x: tensor<32x784xf32>, %w: tensor<784x128xf32>,
                       %b: tensor<128xf32>) -> tensor<32x128xf32> {
  // CHECK: %[[H:.*]] = nn.matmul %{{.*}}, %{{.*}} : tensor<32x784xf32>, tensor<784x128xf32> -> tensor<32x128xf32>
  %h = nn.matmul %x, %w : tensor<32x784xf32>, tensor<784x128xf32> -> tensor<32x128xf32>
  // CHECK: %[[A:.*]] = nn.add %[[H]], %{{.*}} : tensor<32x128xf32>, tensor<128xf32> -> tensor<32x128xf32>
  %a = nn.add %h, %b : tensor<32x128xf32>, tensor<128xf32> -> tensor<32x128xf32>
  // CHECK: nn.relu %[[A]] : tensor<32x128xf32>
  %y = nn.relu %a : tensor<32x128xf32>
  return %y : tensor<32x128xf32>
}

// CHECK-LABEL: func.func @backward_ops
func.func @backward_ops(%x: tensor<32x784xf32>, %w: tensor<784x128xf32>,
                        %dy: tensor<32x128xf32>, %a: tensor<32x128xf32>)
    -> (tensor<784x128xf32>, tensor<32x784xf32>, tensor<32x128xf32>, tensor<128xf32>, tensor<1x128xf32>) {
  // CHECK: nn.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<32x784xf32>, tensor<32x128xf32> -> tensor<784x128xf32>
  %dw = nn.matmul %x, %dy {transpose_lhs} : tensor<32x784xf32>, tensor<32x128xf32> -> tensor<784x128xf32>
  // CHECK: nn.matmul %{{.*}}, %{{.*}} {transpose_rhs} : tensor<32x128xf32>, tensor<784x128xf32> -> tensor<32x784xf32>
  %dx = nn.matmul %dy, %w {transpose_rhs} : tensor<32x128xf32>, tensor<784x128xf32> -> tensor<32x784xf32>
  // CHECK: nn.relu_grad %{{.*}}, %{{.*}} : tensor<32x128xf32>
  %da = nn.relu_grad %dy, %a : tensor<32x128xf32>
  // CHECK: nn.reduce_sum %{{.*}} dims = [0] : tensor<32x128xf32> -> tensor<128xf32>
  %db = nn.reduce_sum %da dims = [0] : tensor<32x128xf32> -> tensor<128xf32>
  // CHECK: nn.reduce_sum %{{.*}} dims = [0] {keep_dims} : tensor<32x128xf32> -> tensor<1x128xf32>
  %dbk = nn.reduce_sum %da dims = [0] {keep_dims} : tensor<32x128xf32> -> tensor<1x128xf32>
  return %dw, %dx, %da, %db, %dbk : tensor<784x128xf32>, tensor<32x784xf32>, tensor<32x128xf32>, tensor<128xf32>, tensor<1x128xf32>
}

// CHECK-LABEL: func.func @loss
func.func @loss(%logits: tensor<32x10xf32>, %labels: tensor<32xi64>) -> (tensor<f32>, tensor<32x10xf32>) {
  // CHECK: nn.softmax_cross_entropy %{{.*}}, %{{.*}} : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  %loss = nn.softmax_cross_entropy %logits, %labels : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  // CHECK: nn.softmax_cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<32x10xf32>, tensor<32xi64> -> tensor<32x10xf32>
  %dlogits = nn.softmax_cross_entropy_grad %one, %logits, %labels : tensor<f32>, tensor<32x10xf32>, tensor<32xi64> -> tensor<32x10xf32>
  return %loss, %dlogits : tensor<f32>, tensor<32x10xf32>
}

// Broadcasting in both directions, 16-bit types and dynamic sizes.
// CHECK-LABEL: func.func @broadcast_and_dynamic
func.func @broadcast_and_dynamic(%a: tensor<4x1xbf16>, %b: tensor<1x8xbf16>,
                                 %c: tensor<?x16xf16>, %d: tensor<16x?xf16>)
    -> (tensor<4x8xbf16>, tensor<?x?xf16>) {
  // CHECK: nn.add %{{.*}}, %{{.*}} : tensor<4x1xbf16>, tensor<1x8xbf16> -> tensor<4x8xbf16>
  %s = nn.add %a, %b : tensor<4x1xbf16>, tensor<1x8xbf16> -> tensor<4x8xbf16>
  // CHECK: nn.matmul %{{.*}}, %{{.*}} : tensor<?x16xf16>, tensor<16x?xf16> -> tensor<?x?xf16>
  %p = nn.matmul %c, %d : tensor<?x16xf16>, tensor<16x?xf16> -> tensor<?x?xf16>
  return %s, %p : tensor<4x8xbf16>, tensor<?x?xf16>
}
