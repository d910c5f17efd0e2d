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

// CHECK-LABEL: func.func @slice
func.func @slice(%x: tensor<2x8xf32>) -> tensor<2x3xf32> {
  // CHECK: nn.slice %{{.*}} {sizes = array<i64: 2, 3>, starts = array<i64: 0, 1>, steps = array<i64: 1, 2>} : tensor<2x8xf32> -> tensor<2x3xf32>
  %0 = nn.slice %x {sizes = array<i64: 2, 3>, starts = array<i64: 0, 1>, steps = array<i64: 1, 2>} : tensor<2x8xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @dropout_mask
func.func @dropout_mask(%seed: tensor<i64>, %step: tensor<i64>) -> tensor<4x8xbf16> {
  // CHECK: nn.dropout_mask %{{.*}}, %{{.*}} {ratio = 2.500000e-01 : f64, stream = 3 : i64} : tensor<i64>, tensor<i64> -> tensor<4x8xbf16>
  %mask = nn.dropout_mask %seed, %step {ratio = 0.25 : f64, stream = 3 : i64} : tensor<i64>, tensor<i64> -> tensor<4x8xbf16>
  return %mask : tensor<4x8xbf16>
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

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK: nn.sub %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %0 = nn.sub %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: nn.mul %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = nn.mul %b, %0 : tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK: nn.div %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %2 = nn.div %1, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: nn.sigmoid %{{.*}} : tensor<4x8xf32>
  %3 = nn.sigmoid %2 : tensor<4x8xf32>
  // CHECK: nn.tanh %{{.*}} : tensor<4x8xf32>
  %4 = nn.tanh %3 : tensor<4x8xf32>
  // CHECK: nn.leaky_relu %{{.*}} : tensor<4x8xf32>
  %5 = nn.leaky_relu %4 : tensor<4x8xf32>
  // CHECK: nn.leaky_relu %{{.*}} {alpha = 2.000000e-01 : f64} : tensor<4x8xf32>
  %6 = nn.leaky_relu %5 {alpha = 0.2 : f64} : tensor<4x8xf32>
  // CHECK: nn.clip %{{.*}} {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<4x8xf32>
  %7 = nn.clip %6 {min = 0.0 : f64, max = 6.0 : f64} : tensor<4x8xf32>
  // CHECK: nn.clip %{{.*}} {min = -1.000000e+00 : f64} : tensor<4x8xf32>
  %8 = nn.clip %7 {min = -1.0 : f64} : tensor<4x8xf32>
  // CHECK: nn.dropout %{{.*}} : tensor<4x8xf32>
  %9 = nn.dropout %8 : tensor<4x8xf32>
  // CHECK: nn.dropout %{{.*}} {ratio = 1.000000e-01 : f64} : tensor<4x8xf32>
  %10 = nn.dropout %9 {ratio = 0.1 : f64} : tensor<4x8xf32>
  // CHECK: nn.softmax %{{.*}} {axis = 1 : i64} : tensor<4x8xf32>
  %11 = nn.softmax %10 {axis = 1 : i64} : tensor<4x8xf32>
  // CHECK: nn.log_softmax %{{.*}} {axis = 0 : i64} : tensor<4x8xf32>
  %12 = nn.log_softmax %11 {axis = 0 : i64} : tensor<4x8xf32>
  // CHECK: nn.sqrt %{{.*}} : tensor<4x8xf32>
  %13 = nn.sqrt %12 : tensor<4x8xf32>
  // CHECK: nn.exp %{{.*}} : tensor<4x8xf32>
  %14 = nn.exp %13 : tensor<4x8xf32>
  // CHECK: nn.log %{{.*}} : tensor<4x8xf32>
  %15 = nn.log %14 : tensor<4x8xf32>
  // CHECK: nn.erf %{{.*}} : tensor<4x8xf32>
  %16 = nn.erf %15 : tensor<4x8xf32>
  // CHECK: nn.pow %{{.*}} {exponent = 2.500000e+00 : f64} : tensor<4x8xf32>
  %17 = nn.pow %16 {exponent = 2.5 : f64} : tensor<4x8xf32>
  return %17 : tensor<4x8xf32>
}

// Integer masks: reshaped as integers, converted to a float type.
// CHECK-LABEL: func.func @integer_masks
func.func @integer_masks(%ids: tensor<2x3xi64>, %flags: tensor<2x3xi1>)
    -> (tensor<2x1x3xf32>, tensor<2x3xbf16>) {
  // CHECK: nn.reshape %{{.*}} : tensor<2x3xi64> -> tensor<2x1x3xi64>
  %r = nn.reshape %ids : tensor<2x3xi64> -> tensor<2x1x3xi64>
  // CHECK: nn.to_float %{{.*}} : tensor<2x1x3xi64> to tensor<2x1x3xf32>
  %f = nn.to_float %r : tensor<2x1x3xi64> to tensor<2x1x3xf32>
  // CHECK: nn.to_float %{{.*}} : tensor<2x3xi1> to tensor<2x3xbf16>
  %b = nn.to_float %flags : tensor<2x3xi1> to tensor<2x3xbf16>
  return %f, %b : tensor<2x1x3xf32>, tensor<2x3xbf16>
}

// CHECK-LABEL: func.func @equal
func.func @equal(%ids: tensor<2x1x3xi64>, %x: tensor<4x3xf32>)
    -> (tensor<2x1x3xi1>, tensor<2x4x3xi1>) {
  %zero = arith.constant dense<0> : tensor<i64>
  // CHECK: nn.compare eq %{{.*}}, %{{.*}} : tensor<2x1x3xi64>, tensor<i64> -> tensor<2x1x3xi1>
  %pad = nn.compare eq %ids, %zero : tensor<2x1x3xi64>, tensor<i64> -> tensor<2x1x3xi1>
  %f = nn.to_float %ids : tensor<2x1x3xi64> to tensor<2x1x3xf32>
  // CHECK: nn.compare eq %{{.*}}, %{{.*}} : tensor<2x1x3xf32>, tensor<4x3xf32> -> tensor<2x4x3xi1>
  %same = nn.compare eq %f, %x : tensor<2x1x3xf32>, tensor<4x3xf32> -> tensor<2x4x3xi1>
  return %pad, %same : tensor<2x1x3xi1>, tensor<2x4x3xi1>
}

// CHECK-LABEL: func.func @not
func.func @not(%pad: tensor<2x1x3xi1>) -> tensor<2x1x3xi1> {
  // CHECK: nn.not %{{.*}} : tensor<2x1x3xi1>
  %keep = nn.not %pad : tensor<2x1x3xi1>
  return %keep : tensor<2x1x3xi1>
}

// CHECK-LABEL: func.func @select_integers
func.func @select_integers(%pad: tensor<2x3xi1>, %ids: tensor<2x3xi64>) -> tensor<2x3xi64> {
  %zero = arith.constant dense<0> : tensor<i64>
  // CHECK: nn.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x3xi1>, tensor<i64>, tensor<2x3xi64> -> tensor<2x3xi64>
  %picked = nn.select %pad, %zero, %ids : tensor<2x3xi1>, tensor<i64>, tensor<2x3xi64> -> tensor<2x3xi64>
  return %picked : tensor<2x3xi64>
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>, %d: tensor<?x3x4xf32>)
    -> (tensor<6x4xf32>, tensor<4x3x2xf32>, tensor<2x8x4xf32>, tensor<?x6x4xf32>, tensor<2x5x7xf32>) {
  // CHECK: nn.reshape %{{.*}} : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %r = nn.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // CHECK: nn.transpose %{{.*}} {permutation = array<i64: 2, 1, 0>} : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
  %t = nn.transpose %x {permutation = array<i64: 2, 1, 0>} : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
  // CHECK: nn.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : tensor<2x3x4xf32>, tensor<2x5x4xf32> -> tensor<2x8x4xf32>
  %c = nn.concat %x, %y {axis = 1 : i64} : tensor<2x3x4xf32>, tensor<2x5x4xf32> -> tensor<2x8x4xf32>
  // A dynamic size is inferred where an input is dynamic.
  // CHECK: nn.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : tensor<?x3x4xf32>, tensor<2x3x4xf32> -> tensor<?x6x4xf32>
  %cd = nn.concat %d, %x {axis = 1 : i64} : tensor<?x3x4xf32>, tensor<2x3x4xf32> -> tensor<?x6x4xf32>
  // CHECK: nn.pad %{{.*}} {pads = array<i64: 0, 1, 1, 0, 1, 2>, value = 1.000000e+00 : f64} : tensor<2x3x4xf32> -> tensor<2x5x7xf32>
  %p = nn.pad %x {pads = array<i64: 0, 1, 1, 0, 1, 2>, value = 1.0 : f64} : tensor<2x3x4xf32> -> tensor<2x5x7xf32>
  return %r, %t, %c, %cd, %p : tensor<6x4xf32>, tensor<4x3x2xf32>, tensor<2x8x4xf32>, tensor<?x6x4xf32>, tensor<2x5x7xf32>
}

// CHECK-LABEL: func.func @conv_pool
func.func @conv_pool(%x: tensor<8x4x9x9xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>)
    -> (tensor<8x6x9x9xf32>, tensor<8x6x3x4xf32>, tensor<8x4x4x4xf32>, tensor<8x4x5x5xf32>,
        tensor<8x4x5x5xf32>, tensor<8x4x1x1xf32>) {
  // CHECK: nn.conv2d %{{.*}}, %{{.*}}, %{{.*}} {groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>} : tensor<8x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32> -> tensor<8x6x9x9xf32>
  %c = nn.conv2d %x, %w, %b {groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>} : tensor<8x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32> -> tensor<8x6x9x9xf32>
  // Ho = (9 + 0 + 1 - 2*2 - 1) / 2 + 1 = 3, Wo = (9 + 1 + 1 - 2*2 - 1) / 2 + 1 = 4.
  // CHECK: nn.conv2d %{{.*}}, %{{.*}} {dilations = array<i64: 2, 2>, groups = 2 : i64, padding = array<i64: 0, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<8x4x9x9xf32>, tensor<6x2x3x3xf32> -> tensor<8x6x3x4xf32>
  %s = nn.conv2d %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 2, 2>, padding = array<i64: 0, 1, 1, 1>, groups = 2 : i64} : tensor<8x4x9x9xf32>, tensor<6x2x3x3xf32> -> tensor<8x6x3x4xf32>
  // CHECK: nn.max_pool2d %{{.*}} {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x4x9x9xf32> -> tensor<8x4x4x4xf32>
  %m = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x4x9x9xf32> -> tensor<8x4x4x4xf32>
  // Ceil mode keeps the last, partial window.
  // CHECK: nn.max_pool2d %{{.*}} {ceil_mode, kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x4x9x9xf32> -> tensor<8x4x5x5xf32>
  %mc = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode} : tensor<8x4x9x9xf32> -> tensor<8x4x5x5xf32>
  // Ceil mode would give 6, but the sixth window would start in the right padding.
  // CHECK: nn.avg_pool2d %{{.*}} {ceil_mode, count_include_pad, kernel = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<8x4x9x9xf32> -> tensor<8x4x5x5xf32>
  %a = nn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, ceil_mode, count_include_pad} : tensor<8x4x9x9xf32> -> tensor<8x4x5x5xf32>
  // CHECK: nn.global_avg_pool2d %{{.*}} : tensor<8x4x9x9xf32> -> tensor<8x4x1x1xf32>
  %g = nn.global_avg_pool2d %x : tensor<8x4x9x9xf32> -> tensor<8x4x1x1xf32>
  return %c, %s, %m, %mc, %a, %g : tensor<8x6x9x9xf32>, tensor<8x6x3x4xf32>, tensor<8x4x4x4xf32>, tensor<8x4x5x5xf32>, tensor<8x4x5x5xf32>, tensor<8x4x1x1xf32>
}

// CHECK-LABEL: func.func @normalization
func.func @normalization(%x: tensor<8x4x3x3xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>,
                         %m: tensor<4xf32>, %v: tensor<4xf32>)
    -> (tensor<8x4x3x3xf32>, tensor<8x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8x4x1x1xf32>) {
  // CHECK: nn.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f64} : tensor<8x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<8x4x3x3xf32>
  %y = nn.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-3 : f64} : tensor<8x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<8x4x3x3xf32>
  // CHECK: nn.batch_norm_train %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x4x3x3xf32>, tensor<4xf32>, tensor<4xf32> -> (tensor<8x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  %t:3 = nn.batch_norm_train %x, %s, %b : tensor<8x4x3x3xf32>, tensor<4xf32>, tensor<4xf32> -> (tensor<8x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  // CHECK: nn.reduce_mean %{{.*}} dims = [2, 3] {keep_dims} : tensor<8x4x3x3xf32> -> tensor<8x4x1x1xf32>
  %r = nn.reduce_mean %x dims = [2, 3] {keep_dims} : tensor<8x4x3x3xf32> -> tensor<8x4x1x1xf32>
  return %y, %t#0, %t#1, %t#2, %r : tensor<8x4x3x3xf32>, tensor<8x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8x4x1x1xf32>
}

// Channels last: NHWC activations, OHWI weights, the channels of a batch
// norm its last dimension, pooling windows over dimensions 1 and 2.
// CHECK-LABEL: func.func @channels_last
func.func @channels_last(%x: tensor<8x9x9x4xf32>, %w: tensor<6x3x3x2xf32>, %dy: tensor<8x5x5x6xf32>,
                         %s: tensor<6xf32>, %b: tensor<6xf32>)
    -> (tensor<8x5x5x6xf32>, tensor<8x9x9x4xf32>, tensor<6x3x3x2xf32>, tensor<8x5x5x6xf32>,
        tensor<8x5x5x6xf32>, tensor<6xf32>, tensor<8x5x5x6xf32>, tensor<8x9x9x4xf32>) {
  // CHECK: nn.conv2d %{{.*}}, %{{.*}} {channels_last, groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<8x9x9x4xf32>, tensor<6x3x3x2xf32> -> tensor<8x5x5x6xf32>
  %c = nn.conv2d %x, %w {channels_last, groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<8x9x9x4xf32>, tensor<6x3x3x2xf32> -> tensor<8x5x5x6xf32>
  // CHECK: nn.conv2d_backward_data %{{.*}}, %{{.*}} {channels_last, groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<8x5x5x6xf32>, tensor<6x3x3x2xf32> -> tensor<8x9x9x4xf32>
  %dx = nn.conv2d_backward_data %dy, %w {channels_last, groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<8x5x5x6xf32>, tensor<6x3x3x2xf32> -> tensor<8x9x9x4xf32>
  // CHECK: nn.conv2d_backward_weights %{{.*}}, %{{.*}} {channels_last, groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<8x9x9x4xf32>, tensor<8x5x5x6xf32> -> tensor<6x3x3x2xf32>
  %dw = nn.conv2d_backward_weights %x, %dy {channels_last, groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<8x9x9x4xf32>, tensor<8x5x5x6xf32> -> tensor<6x3x3x2xf32>
  // CHECK: nn.batch_norm_train %{{.*}}, %{{.*}}, %{{.*}} {channels_last} : tensor<8x5x5x6xf32>, tensor<6xf32>, tensor<6xf32> -> (tensor<8x5x5x6xf32>, tensor<6xf32>, tensor<6xf32>)
  %t:3 = nn.batch_norm_train %c, %s, %b {channels_last} : tensor<8x5x5x6xf32>, tensor<6xf32>, tensor<6xf32> -> (tensor<8x5x5x6xf32>, tensor<6xf32>, tensor<6xf32>)
  // CHECK: nn.batch_norm_train_grad %{{.*}} {channels_last} : tensor<8x5x5x6xf32>, tensor<8x5x5x6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32> -> (tensor<8x5x5x6xf32>, tensor<6xf32>, tensor<6xf32>)
  %g:3 = nn.batch_norm_train_grad %dy, %c, %s, %t#1, %t#2 {channels_last, epsilon = 1.0e-5 : f64} : tensor<8x5x5x6xf32>, tensor<8x5x5x6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32> -> (tensor<8x5x5x6xf32>, tensor<6xf32>, tensor<6xf32>)
  // CHECK: nn.max_pool2d %{{.*}} {ceil_mode, channels_last, kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x5x5x6xf32> -> tensor<8x3x3x6xf32>
  %m = nn.max_pool2d %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode, channels_last} : tensor<8x5x5x6xf32> -> tensor<8x3x3x6xf32>
  // CHECK: nn.max_pool2d_grad %{{.*}}, %{{.*}} {ceil_mode, channels_last, kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x3x3x6xf32>, tensor<8x5x5x6xf32> -> tensor<8x5x5x6xf32>
  %dm = nn.max_pool2d_grad %m, %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode, channels_last} : tensor<8x3x3x6xf32>, tensor<8x5x5x6xf32> -> tensor<8x5x5x6xf32>
  // CHECK: nn.avg_pool2d %{{.*}} {channels_last, kernel = array<i64: 3, 3>, padding = array<i64: 0, 1, 0, 1>} : tensor<8x9x9x4xf32> -> tensor<8x7x9x4xf32>
  %a = nn.avg_pool2d %x {kernel = array<i64: 3, 3>, padding = array<i64: 0, 1, 0, 1>, channels_last} : tensor<8x9x9x4xf32> -> tensor<8x7x9x4xf32>
  // CHECK: nn.avg_pool2d_grad %{{.*}} {channels_last, kernel = array<i64: 3, 3>, padding = array<i64: 0, 1, 0, 1>} : tensor<8x7x9x4xf32> -> tensor<8x9x9x4xf32>
  %da = nn.avg_pool2d_grad %a {kernel = array<i64: 3, 3>, padding = array<i64: 0, 1, 0, 1>, channels_last} : tensor<8x7x9x4xf32> -> tensor<8x9x9x4xf32>
  return %c, %dx, %dw, %t#0, %g#0, %g#1, %dm, %da : tensor<8x5x5x6xf32>, tensor<8x9x9x4xf32>, tensor<6x3x3x2xf32>, tensor<8x5x5x6xf32>, tensor<8x5x5x6xf32>, tensor<6xf32>, tensor<8x5x5x6xf32>, tensor<8x9x9x4xf32>
}

// Results may be more static than inference, as long as they agree.
// CHECK-LABEL: func.func @refined_result
func.func @refined_result(%x: tensor<?x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x7x7xf32> {
  // CHECK: nn.conv2d %{{.*}}, %{{.*}} : tensor<?x3x9x9xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x7x7xf32>
  %y = nn.conv2d %x, %w : tensor<?x3x9x9xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x7x7xf32>
  return %y : tensor<2x4x7x7xf32>
}

// CHECK-LABEL: func.func @broadcast
func.func @broadcast(%x: tensor<4x1xf32>, %s: tensor<f32>) -> (tensor<2x4x3xf32>, tensor<5xf32>) {
  // CHECK: nn.broadcast %{{.*}} : tensor<4x1xf32> -> tensor<2x4x3xf32>
  %0 = nn.broadcast %x : tensor<4x1xf32> -> tensor<2x4x3xf32>
  // CHECK: nn.broadcast %{{.*}} : tensor<f32> -> tensor<5xf32>
  %1 = nn.broadcast %s : tensor<f32> -> tensor<5xf32>
  return %0, %1 : tensor<2x4x3xf32>, tensor<5xf32>
}

// The gradients of the window ops and of training-mode batch norm.
// CHECK-LABEL: func.func @window_and_norm_gradients
func.func @window_and_norm_gradients(%x: tensor<2x4x8x8xf32>, %w: tensor<6x2x3x3xf32>, %dy: tensor<2x6x4x4xf32>,
                        %dp: tensor<2x4x4x4xf32>, %s: tensor<4xf32>) {
  // CHECK: nn.conv2d_backward_data %{{.*}}, %{{.*}} {groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<2x6x4x4xf32>, tensor<6x2x3x3xf32> -> tensor<2x4x8x8xf32>
  %0 = nn.conv2d_backward_data %dy, %w {groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<2x6x4x4xf32>, tensor<6x2x3x3xf32> -> tensor<2x4x8x8xf32>
  // CHECK: nn.conv2d_backward_weights %{{.*}}, %{{.*}} {groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<2x4x8x8xf32>, tensor<2x6x4x4xf32> -> tensor<6x2x3x3xf32>
  %1 = nn.conv2d_backward_weights %x, %dy {groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<2x4x8x8xf32>, tensor<2x6x4x4xf32> -> tensor<6x2x3x3xf32>
  // CHECK: nn.max_pool2d_grad %{{.*}}, %{{.*}} {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<2x4x4x4xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %2 = nn.max_pool2d_grad %dp, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<2x4x4x4xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  // CHECK: nn.avg_pool2d_grad %{{.*}} {count_include_pad, kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<2x4x4x4xf32> -> tensor<2x4x8x8xf32>
  %3 = nn.avg_pool2d_grad %dp {count_include_pad, kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<2x4x4x4xf32> -> tensor<2x4x8x8xf32>
  // CHECK: nn.batch_norm_train_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : {{.*}} -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  %4:3 = nn.batch_norm_train_grad %x, %x, %s, %s, %s : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// CHECK-LABEL: func.func @count_correct
func.func @count_correct(%logits: tensor<8x10xf32>, %labels: tensor<8xi32>) -> tensor<i64> {
  // CHECK: nn.count_correct %{{.*}}, %{{.*}} : tensor<8x10xf32>, tensor<8xi32> -> tensor<i64>
  %0 = nn.count_correct %logits, %labels : tensor<8x10xf32>, tensor<8xi32> -> tensor<i64>
  return %0 : tensor<i64>
}

// CHECK-LABEL: func.func @clip_grad
func.func @clip_grad(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: nn.clip_grad %{{.*}}, %{{.*}} {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<4x8xf32>
  %0 = nn.clip_grad %dy, %x {min = 0.0 : f64, max = 6.0 : f64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// A cast back to the type a widening cast came from folds away; a rounding
// one does not.
// RUN: dtrain-opt %s --canonicalize | FileCheck %s --check-prefix=FOLD
// FOLD-LABEL: func.func @cast_round_trips
// FOLD-SAME: (%[[X:.*]]: tensor<4xbf16>, %[[Y:.*]]: tensor<4xf32>)
// FOLD-NEXT: %[[N:.*]] = nn.cast %[[Y]] : tensor<4xf32> to tensor<4xbf16>
// FOLD-NEXT: %[[W:.*]] = nn.cast %[[N]] : tensor<4xbf16> to tensor<4xf32>
// FOLD-NEXT: return %[[X]], %[[W]] : tensor<4xbf16>, tensor<4xf32>
func.func @cast_round_trips(%x: tensor<4xbf16>, %y: tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xf32>) {
  %0 = nn.cast %x : tensor<4xbf16> to tensor<4xf32>
  %1 = nn.cast %0 : tensor<4xf32> to tensor<4xbf16>
  %2 = nn.cast %y : tensor<4xf32> to tensor<4xbf16>
  %3 = nn.cast %2 : tensor<4xbf16> to tensor<4xf32>
  return %1, %3 : tensor<4xbf16>, tensor<4xf32>
}

// CHECK-LABEL: func.func @embedding
func.func @embedding(%table: tensor<65x32xf32>, %ids: tensor<8x64xi64>) -> (tensor<8x64x32xf32>, tensor<65x32xf32>) {
  // CHECK: nn.embedding %{{.*}}, %{{.*}} : tensor<65x32xf32>, tensor<8x64xi64> -> tensor<8x64x32xf32>
  %x = nn.embedding %table, %ids : tensor<65x32xf32>, tensor<8x64xi64> -> tensor<8x64x32xf32>
  // CHECK: nn.embedding_grad %{{.*}}, %{{.*}} {rows = 65 : i64} : tensor<8x64x32xf32>, tensor<8x64xi64> -> tensor<65x32xf32>
  %dtable = nn.embedding_grad %x, %ids {rows = 65 : i64} : tensor<8x64x32xf32>, tensor<8x64xi64> -> tensor<65x32xf32>
  return %x, %dtable : tensor<8x64x32xf32>, tensor<65x32xf32>
}

// CHECK-LABEL: func.func @sequence_loss
func.func @sequence_loss(%logits: tensor<4x8x16xf32>, %labels: tensor<4x8xi64>) -> tensor<f32> {
  // CHECK: nn.softmax_cross_entropy %{{.*}}, %{{.*}} : tensor<4x8x16xf32>, tensor<4x8xi64> -> tensor<f32>
  %loss = nn.softmax_cross_entropy %logits, %labels : tensor<4x8x16xf32>, tensor<4x8xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// CHECK-LABEL: func.func @select
func.func @select(%mask: tensor<1x1x8x8xi1>, %fill: tensor<f32>, %scores: tensor<4x2x8x8xf32>) -> tensor<4x2x8x8xf32> {
  // CHECK: nn.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<1x1x8x8xi1>, tensor<f32>, tensor<4x2x8x8xf32> -> tensor<4x2x8x8xf32>
  %0 = nn.select %mask, %fill, %scores : tensor<1x1x8x8xi1>, tensor<f32>, tensor<4x2x8x8xf32> -> tensor<4x2x8x8xf32>
  return %0 : tensor<4x2x8x8xf32>
}
