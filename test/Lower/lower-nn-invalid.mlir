// RUN: dtrain-opt %s --dtrain-lower-nn --split-input-file --verify-diagnostics
// RUN: not dtrain-opt %s --dtrain-lower-nn=target=tpu --split-input-file 2>&1 | FileCheck %s --check-prefix=TARGET

// TARGET: error: --dtrain-lower-nn: target 'tpu' is not valid (accepted: cpu, cuda)

func.func @dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'nn.relu' op has a dynamic result shape 'tensor<?x4xf32>'; lowering needs static shapes (import with --batch-size or --input-shape)}}
  %0 = nn.relu %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
