// RUN: dtrain-opt --dtrain-channels-last %s | FileCheck %s

// A residual block: its input transposed to NHWC once (the convolution and
// the residual add share it), the weight to OHWI, the batch norm, add and
// ReLU on NHWC, one transpose back at the end.
// CHECK-LABEL: func.func @residual_block
// CHECK-SAME: (%[[X:.*]]: tensor<8x16x32x32xf32>, %[[W:.*]]: tensor<16x16x3x3xf32>
// CHECK-DAG: %[[XT:.*]] = nn.transpose %[[X]] {permutation = array<i64: 0, 2, 3, 1>} : tensor<8x16x32x32xf32> -> tensor<8x32x32x16xf32>
// CHECK-DAG: %[[WT:.*]] = nn.transpose %[[W]] {permutation = array<i64: 0, 2, 3, 1>} : tensor<16x16x3x3xf32> -> tensor<16x3x3x16xf32>
// CHECK: %[[Y:.*]] = nn.conv2d %[[XT]], %[[WT]] {channels_last, padding = array<i64: 1, 1, 1, 1>} : tensor<8x32x32x16xf32>, tensor<16x3x3x16xf32> -> tensor<8x32x32x16xf32>
// CHECK: %[[N:.*]], %{{.*}}, %{{.*}} = nn.batch_norm_train %[[Y]], %{{.*}}, %{{.*}} {channels_last} : tensor<8x32x32x16xf32>, tensor<16xf32>, tensor<16xf32> -> (tensor<8x32x32x16xf32>, tensor<16xf32>, tensor<16xf32>)
// CHECK: %[[A:.*]] = nn.add %[[N]], %[[XT]] : tensor<8x32x32x16xf32>
// CHECK: %[[R:.*]] = nn.relu %[[A]] : tensor<8x32x32x16xf32>
// CHECK: %[[OUT:.*]] = nn.transpose %[[R]] {permutation = array<i64: 0, 3, 1, 2>} : tensor<8x32x32x16xf32> -> tensor<8x16x32x32xf32>
// CHECK-NOT: nn.transpose
// CHECK: return %[[OUT]]

func.func @residual_block(%x: tensor<8x16x32x32xf32>, %w: tensor<16x16x3x3xf32>, %s: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<8x16x32x32xf32> {
  %y = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<8x16x32x32xf32>, tensor<16x16x3x3xf32> -> tensor<8x16x32x32xf32>
  %n, %m, %v = nn.batch_norm_train %y, %s, %b : tensor<8x16x32x32xf32>, tensor<16xf32>, tensor<16xf32> -> (tensor<8x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>)
  %a = nn.add %n, %x : tensor<8x16x32x32xf32>, tensor<8x16x32x32xf32> -> tensor<8x16x32x32xf32>
  %r = nn.relu %a : tensor<8x16x32x32xf32>
  return %r : tensor<8x16x32x32xf32>
}

// Gradients: one transpose of the weight for the convolution and its data
// gradient, the weight gradient transposed back to OIHW, and the bias
// gradient a sum over N, H and W of the NHWC tensor.
// CHECK-LABEL: func.func @backward
// CHECK-COUNT-3: nn.transpose %arg{{[0-2]}} {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: nn.conv2d_backward_data %{{.*}} {channels_last}
// CHECK-NEXT: nn.transpose %{{.*}} {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: nn.conv2d %{{.*}} {channels_last}
// CHECK-NEXT: %[[G:.*]] = nn.mul %{{.*}} : tensor<8x30x30x16xf32>
// CHECK-NEXT: %[[DW:.*]] = nn.conv2d_backward_weights %{{.*}}, %[[G]] {channels_last} : tensor<8x32x32x3xf32>, tensor<8x30x30x16xf32> -> tensor<16x3x3x3xf32>
// CHECK: %[[DWT:.*]] = nn.transpose %[[DW]] {permutation = array<i64: 0, 3, 1, 2>}
// CHECK: %[[DB:.*]] = nn.reduce_sum %[[G]] dims = [0, 1, 2] : tensor<8x30x30x16xf32> -> tensor<16xf32>
// CHECK: return %{{.*}}, %[[DWT]], %[[DB]]

func.func @backward(%x: tensor<8x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %dy: tensor<8x16x30x30xf32>) -> (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) {
  %dx = nn.conv2d_backward_data %dy, %w : tensor<8x16x30x30xf32>, tensor<16x3x3x3xf32> -> tensor<8x3x32x32xf32>
  %y = nn.conv2d %x, %w : tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<8x16x30x30xf32>
  %g = nn.mul %y, %dy : tensor<8x16x30x30xf32>, tensor<8x16x30x30xf32> -> tensor<8x16x30x30xf32>
  %dw = nn.conv2d_backward_weights %x, %g : tensor<8x3x32x32xf32>, tensor<8x16x30x30xf32> -> tensor<16x3x3x3xf32>
  %db = nn.reduce_sum %g dims = [0, 2, 3] : tensor<8x16x30x30xf32> -> tensor<16xf32>
  return %dx, %dw, %db : tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>
}

// Pooling runs NHWC too, with any padding: from the input's transpose to
// the output's, the convolutions, the ReLU, both poolings and the add read
// NHWC tensors.
// CHECK-LABEL: func.func @pooling
// CHECK-COUNT-2: nn.transpose %arg{{[01]}} {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: nn.conv2d %{{.*}} {channels_last}
// CHECK-NEXT: %[[R:.*]] = nn.relu %{{.*}} : tensor<8x32x24x16xf32>
// CHECK-NEXT: %[[P:.*]] = nn.max_pool2d %[[R]] {channels_last, kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x32x24x16xf32> -> tensor<8x16x12x16xf32>
// CHECK-NEXT: %[[Z:.*]] = nn.conv2d %[[P]], %{{.*}} {channels_last}
// CHECK-NEXT: %[[Q:.*]] = nn.avg_pool2d %[[Z]] {channels_last, count_include_pad, kernel = array<i64: 3, 3>, padding = array<i64: 0, 1, 2, 1>} : tensor<8x16x12x16xf32> -> tensor<8x16x12x16xf32>
// CHECK-NEXT: %[[A:.*]] = nn.add %[[Q]], %[[P]] : tensor<8x16x12x16xf32>
// CHECK-NEXT: %[[OUT:.*]] = nn.transpose %[[A]] {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: return %[[OUT]]

func.func @pooling(%x: tensor<8x16x32x24xf32>, %w: tensor<16x16x1x1xf32>) -> tensor<8x16x16x12xf32> {
  %y = nn.conv2d %x, %w : tensor<8x16x32x24xf32>, tensor<16x16x1x1xf32> -> tensor<8x16x32x24xf32>
  %r = nn.relu %y : tensor<8x16x32x24xf32>
  %p = nn.max_pool2d %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x16x32x24xf32> -> tensor<8x16x16x12xf32>
  %z = nn.conv2d %p, %w : tensor<8x16x16x12xf32>, tensor<16x16x1x1xf32> -> tensor<8x16x16x12xf32>
  %q = nn.avg_pool2d %z {count_include_pad, kernel = array<i64: 3, 3>, padding = array<i64: 0, 1, 2, 1>} : tensor<8x16x16x12xf32> -> tensor<8x16x16x12xf32>
  %a = nn.add %q, %p : tensor<8x16x16x12xf32>, tensor<8x16x16x12xf32> -> tensor<8x16x16x12xf32>
  return %a : tensor<8x16x16x12xf32>
}

// The pooling gradients: max pooling's reads the convolution's NHWC output
// as its input.
// CHECK-LABEL: func.func @pooling_gradients
// CHECK: %[[Y:.*]] = nn.conv2d %{{.*}} {channels_last, {{.*}}} : {{.*}} -> tensor<8x8x6x16xf32>
// CHECK-NEXT: %[[DZ:.*]] = nn.transpose %arg2 {permutation = array<i64: 0, 2, 3, 1>} : tensor<8x16x4x3xf32> -> tensor<8x4x3x16xf32>
// CHECK-NEXT: %[[DP:.*]] = nn.max_pool2d_grad %[[DZ]], %[[Y]] {channels_last, kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x4x3x16xf32>, tensor<8x8x6x16xf32> -> tensor<8x8x6x16xf32>
// CHECK-NEXT: %[[DA:.*]] = nn.avg_pool2d_grad %[[DP]] {channels_last, kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>} : tensor<8x8x6x16xf32> -> tensor<8x8x6x16xf32>
// CHECK-NEXT: %[[DX:.*]] = nn.conv2d_backward_data %[[DA]], %{{.*}} {channels_last, {{.*}}}
// CHECK-NEXT: %[[OUT:.*]] = nn.transpose %[[DX]] {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: return %[[OUT]]

func.func @pooling_gradients(%x: tensor<8x16x8x6xf32>, %w: tensor<16x16x3x3xf32>, %dz: tensor<8x16x4x3xf32>) -> tensor<8x16x8x6xf32> {
  %y = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<8x16x8x6xf32>, tensor<16x16x3x3xf32> -> tensor<8x16x8x6xf32>
  %dp = nn.max_pool2d_grad %dz, %y {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x16x4x3xf32>, tensor<8x16x8x6xf32> -> tensor<8x16x8x6xf32>
  %da = nn.avg_pool2d_grad %dp {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>} : tensor<8x16x8x6xf32> -> tensor<8x16x8x6xf32>
  %dx = nn.conv2d_backward_data %da, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<8x16x8x6xf32>, tensor<16x16x3x3xf32> -> tensor<8x16x8x6xf32>
  return %dx : tensor<8x16x8x6xf32>
}

// 16-bit data: the casts around the batch norm move with it, so the
// transposes move 16-bit data and the batch norm's casts stay adjacent to
// it (--dtrain-lower-nn fuses them into its 16-bit kernel).
// CHECK-LABEL: func.func @sixteen_bits
// CHECK: %[[Y:.*]] = nn.conv2d %{{.*}} {channels_last, {{.*}}} : tensor<8x8x8x16xbf16>
// CHECK-NEXT: %[[WIDE:.*]] = nn.cast %[[Y]] : tensor<8x8x8x16xbf16> to tensor<8x8x8x16xf32>
// CHECK-NEXT: %[[N:.*]], %{{.*}}, %{{.*}} = nn.batch_norm_train %[[WIDE]], {{.*}} {channels_last}
// CHECK-NEXT: %[[NARROW:.*]] = nn.cast %[[N]] : tensor<8x8x8x16xf32> to tensor<8x8x8x16xbf16>
// CHECK-NEXT: %[[R:.*]] = nn.relu %[[NARROW]] : tensor<8x8x8x16xbf16>
// CHECK-NEXT: nn.conv2d %[[R]]

func.func @sixteen_bits(%x: tensor<8x16x8x8xbf16>, %w: tensor<16x16x3x3xbf16>, %s: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<8x16x8x8xbf16> {
  %y = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<8x16x8x8xbf16>, tensor<16x16x3x3xbf16> -> tensor<8x16x8x8xbf16>
  %wide = nn.cast %y : tensor<8x16x8x8xbf16> to tensor<8x16x8x8xf32>
  %n, %m, %v = nn.batch_norm_train %wide, %s, %b : tensor<8x16x8x8xf32>, tensor<16xf32>, tensor<16xf32> -> (tensor<8x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>)
  %narrow = nn.cast %n : tensor<8x16x8x8xf32> to tensor<8x16x8x8xbf16>
  %r = nn.relu %narrow : tensor<8x16x8x8xbf16>
  %z = nn.conv2d %r, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<8x16x8x8xbf16>, tensor<16x16x3x3xbf16> -> tensor<8x16x8x8xbf16>
  return %z : tensor<8x16x8x8xbf16>
}

// Left NCHW: f64 (the reference loops' type) convolutions and pooling,
// batch norms of rank 2, and a convolution padded asymmetrically.
// CHECK-LABEL: func.func @unchanged
// CHECK-NOT: nn.transpose
// CHECK-NOT: channels_last
// CHECK: return

func.func @unchanged(%x: tensor<8x3x8x8xf64>, %w: tensor<4x3x3x3xf64>, %h: tensor<8x16xf32>, %s: tensor<16xf32>, %b: tensor<16xf32>, %p: tensor<8x3x8x8xf32>, %pw: tensor<4x3x2x2xf32>) -> (tensor<8x4x3x3xf64>, tensor<8x16xf32>, tensor<8x4x8x8xf32>) {
  %c = nn.conv2d %x, %w : tensor<8x3x8x8xf64>, tensor<4x3x3x3xf64> -> tensor<8x4x6x6xf64>
  %y = nn.max_pool2d %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x4x6x6xf64> -> tensor<8x4x3x3xf64>
  %n, %m, %v = nn.batch_norm_train %h, %s, %b : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32> -> (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>)
  %a = nn.conv2d %p, %pw {padding = array<i64: 0, 0, 1, 1>} : tensor<8x3x8x8xf32>, tensor<4x3x2x2xf32> -> tensor<8x4x8x8xf32>
  return %y, %n, %a : tensor<8x4x3x3xf64>, tensor<8x16xf32>, tensor<8x4x8x8xf32>
}

// Transposes move 16-bit data: a 16-bit weight gradient goes back to OIHW
// before it is widened for the f32 optimizer, and an f32 batch norm's
// 16-bit input is transposed before it is widened.
// CHECK-LABEL: func.func @widening_casts
// CHECK: %[[DW:.*]] = nn.conv2d_backward_weights %{{.*}} {channels_last, {{.*}}} : tensor<8x8x8x16xbf16>, tensor<8x8x8x16xbf16> -> tensor<16x3x3x16xbf16>
// CHECK-NEXT: %[[DWT:.*]] = nn.transpose %[[DW]] {permutation = array<i64: 0, 3, 1, 2>} : tensor<16x3x3x16xbf16> -> tensor<16x16x3x3xbf16>
// CHECK-NEXT: nn.cast %[[DWT]] : tensor<16x16x3x3xbf16> to tensor<16x16x3x3xf32>
// CHECK: %[[PT:.*]] = nn.transpose %{{.*}} {permutation = array<i64: 0, 2, 3, 1>} : tensor<8x16x8x8xbf16> -> tensor<8x8x8x16xbf16>
// CHECK-NEXT: %[[WIDE:.*]] = nn.cast %[[PT]] : tensor<8x8x8x16xbf16> to tensor<8x8x8x16xf32>
// CHECK-NEXT: nn.batch_norm_train %[[WIDE]], {{.*}} {channels_last}
func.func @widening_casts(%x: tensor<8x16x8x8xbf16>, %dy: tensor<8x16x8x8xbf16>, %p: tensor<8x16x8x8xbf16>, %s: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<16x16x3x3xf32>, tensor<8x16x8x8xf32>) {
  %dw = nn.conv2d_backward_weights %x, %dy {padding = array<i64: 1, 1, 1, 1>} : tensor<8x16x8x8xbf16>, tensor<8x16x8x8xbf16> -> tensor<16x16x3x3xbf16>
  %dw32 = nn.cast %dw : tensor<16x16x3x3xbf16> to tensor<16x16x3x3xf32>
  %wide = nn.cast %p : tensor<8x16x8x8xbf16> to tensor<8x16x8x8xf32>
  %n, %mean, %var = nn.batch_norm_train %wide, %s, %b : tensor<8x16x8x8xf32>, tensor<16xf32>, tensor<16xf32> -> (tensor<8x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>)
  return %dw32, %n : tensor<16x16x3x3xf32>, tensor<8x16x8x8xf32>
}

// The head: global average pooling of an NHWC tensor averages its
// dimensions 1 and 2, and its gradient, a broadcast of N x C x 1 x 1 that
// leads to NHWC tensors, broadcasts N x 1 x 1 x C to NHWC: no transpose
// but the input's, the weight's and the output's.
// CHECK-LABEL: func.func @head
// CHECK-COUNT-2: nn.transpose %arg{{[01]}} {permutation = array<i64: 0, 2, 3, 1>}
// CHECK: %[[R:.*]] = nn.relu %{{.*}} : tensor<8x6x6x16xf32>
// CHECK-NEXT: %[[MEAN:.*]] = nn.reduce_mean %[[R]] dims = [1, 2] {keep_dims} : tensor<8x6x6x16xf32> -> tensor<8x1x1x16xf32>
// CHECK-NEXT: nn.reshape %[[MEAN]] : tensor<8x1x1x16xf32> -> tensor<8x16x1x1xf32>
// CHECK: %[[PIXEL:.*]] = nn.reshape %{{.*}} : tensor<8x16x1x1xf32> -> tensor<8x1x1x16xf32>
// CHECK-NEXT: %[[SPREAD:.*]] = nn.broadcast %[[PIXEL]] : tensor<8x1x1x16xf32> -> tensor<8x6x6x16xf32>
// CHECK-NEXT: %[[SCALED:.*]] = nn.mul %[[SPREAD]], %{{.*}} : tensor<8x6x6x16xf32>, tensor<f32>
// CHECK-NEXT: %[[DR:.*]] = nn.relu_grad %[[SCALED]], %[[R]] : tensor<8x6x6x16xf32>
// CHECK-NEXT: %[[DX:.*]] = nn.conv2d_backward_data %[[DR]], %{{.*}} {channels_last, {{.*}}}
// CHECK-NEXT: %[[OUT:.*]] = nn.transpose %[[DX]] {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: return %{{.*}}, %[[OUT]]

func.func @head(%x: tensor<8x16x6x6xf32>, %w: tensor<16x16x3x3xf32>, %dz: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16x6x6xf32>) {
  %y = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<8x16x6x6xf32>, tensor<16x16x3x3xf32> -> tensor<8x16x6x6xf32>
  %r = nn.relu %y : tensor<8x16x6x6xf32>
  %g = nn.global_avg_pool2d %r : tensor<8x16x6x6xf32> -> tensor<8x16x1x1xf32>
  %f = nn.reshape %g : tensor<8x16x1x1xf32> -> tensor<8x16xf32>
  %d = nn.reshape %dz : tensor<8x16xf32> -> tensor<8x16x1x1xf32>
  %b = nn.broadcast %d : tensor<8x16x1x1xf32> -> tensor<8x16x6x6xf32>
  %s = arith.constant dense<0.0277777780> : tensor<f32>
  %m = nn.mul %b, %s : tensor<8x16x6x6xf32>, tensor<f32> -> tensor<8x16x6x6xf32>
  %dr = nn.relu_grad %m, %r : tensor<8x16x6x6xf32>
  %dx = nn.conv2d_backward_data %dr, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<8x16x6x6xf32>, tensor<16x16x3x3xf32> -> tensor<8x16x6x6xf32>
  return %f, %dx : tensor<8x16xf32>, tensor<8x16x6x6xf32>
}

// A broadcast whose uses stay NCHW stays as it is.
// CHECK-LABEL: func.func @broadcast_to_nchw
// CHECK: %[[B:.*]] = nn.broadcast %arg2 : tensor<8x16x1x1xf32> -> tensor<8x16x6x6xf32>
// CHECK-NEXT: nn.mul %[[B]], %[[B]] : tensor<8x16x6x6xf32>

func.func @broadcast_to_nchw(%x: tensor<8x16x6x6xf32>, %w: tensor<16x16x3x3xf32>, %d: tensor<8x16x1x1xf32>) -> (tensor<8x16x6x6xf32>, tensor<8x16x6x6xf32>) {
  %y = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<8x16x6x6xf32>, tensor<16x16x3x3xf32> -> tensor<8x16x6x6xf32>
  %b = nn.broadcast %d : tensor<8x16x1x1xf32> -> tensor<8x16x6x6xf32>
  %m = nn.mul %b, %b : tensor<8x16x6x6xf32>, tensor<8x16x6x6xf32> -> tensor<8x16x6x6xf32>
  return %y, %m : tensor<8x16x6x6xf32>, tensor<8x16x6x6xf32>
}
