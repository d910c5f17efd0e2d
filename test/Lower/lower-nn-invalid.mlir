// RUN: dtrain-opt %s --dtrain-lower-nn --split-input-file --verify-diagnostics
// RUN: not dtrain-opt %s --dtrain-lower-nn=target=tpu --split-input-file 2>&1 | FileCheck %s --check-prefix=TARGET

// TARGET: error: --dtrain-lower-nn: target 'tpu' is not valid (accepted: cpu, cuda)

func.func @dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'nn.relu' op has a dynamic result shape 'tensor<?x4xf32>'; lowering needs static shapes (import with --batch-size or --input-shape)}}
  %0 = nn.relu %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @channels_last_f64(%x: tensor<1x8x8x3xf64>, %w: tensor<4x3x3x3xf64>) -> tensor<1x6x6x4xf64> {
  // expected-error @+1 {{'nn.conv2d' op with channels_last has no f64 kernel (the f64 reference loops are NCHW)}}
  %0 = nn.conv2d %x, %w {channels_last} : tensor<1x8x8x3xf64>, tensor<4x3x3x3xf64> -> tensor<1x6x6x4xf64>
  return %0 : tensor<1x6x6x4xf64>
}

// -----

func.func @pooling_channels_last_f64(%x: tensor<1x8x8x3xf64>) -> tensor<1x4x4x3xf64> {
  // expected-error @+1 {{'nn.max_pool2d' op with channels_last has no f64 kernel (the f64 reference loops are NCHW)}}
  %0 = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, channels_last} : tensor<1x8x8x3xf64> -> tensor<1x4x4x3xf64>
  return %0 : tensor<1x4x4x3xf64>
}
