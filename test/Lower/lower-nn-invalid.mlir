// RUN: dtrain-opt %s --dtrain-lower-nn --split-input-file --verify-diagnostics

func.func @f16_matmul(%x: tensor<2x4xf16>, %w: tensor<4x3xf16>) -> tensor<2x3xf16> {
  // expected-error @+1 {{'nn.matmul' op is lowered to an f32 or f64 runtime kernel, but has an operand of type 'tensor<2x4xf16>'}}
  %0 = nn.matmul %x, %w : tensor<2x4xf16>, tensor<4x3xf16> -> tensor<2x3xf16>
  return %0 : tensor<2x3xf16>
}

// -----

func.func @dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'nn.relu' op has a dynamic result shape 'tensor<?x4xf32>'; lowering needs static shapes (import with --batch-size or --input-shape)}}
  %0 = nn.relu %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
