// RUN: dtrain-opt %s --dtrain-async-collectives --split-input-file | FileCheck %s

// The wait sinks to the first use; independent work stays in between.
// CHECK-LABEL: func.func @overlap
// CHECK:      %[[G:.*]] = nn.matmul
// CHECK-NEXT: %[[REQ:.*]], %[[INFLIGHT:.*]] = comm.all_reduce_start <mean> %[[G]] on %{{.*}} : tensor<4x8xf32>
// CHECK-NEXT: nn.relu
// CHECK-NEXT: nn.relu
// CHECK-NEXT: %[[AVG:.*]] = comm.wait %[[REQ]], %[[INFLIGHT]] : tensor<4x8xf32>
// CHECK-NEXT: train.sgd_update %{{.*}}, %[[AVG]]
// CHECK-NOT:  comm.all_reduce <
func.func @overlap(%x: tensor<4x2xf32>, %dy: tensor<2x8xf32>, %w: tensor<4x8xf32>,
                   %h: tensor<16xf32>) -> (tensor<4x8xf32>, tensor<16xf32>) {
  %world = comm.world : !comm.communicator
  %g = nn.matmul %x, %dy : tensor<4x2xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  %a = comm.all_reduce <mean> %g on %world : tensor<4x8xf32>
  %h1 = nn.relu %h : tensor<16xf32>
  %h2 = nn.relu %h1 : tensor<16xf32>
  %w1 = train.sgd_update %w, %a {lr = 1.0e-1 : f64} : tensor<4x8xf32>
  return %w1, %h2 : tensor<4x8xf32>, tensor<16xf32>
}

// -----

// Starts keep their order (every rank must start collectives in the same
// order); each wait goes before its own first use, here the return.
// CHECK-LABEL: func.func @order
// CHECK:      %[[R1:.*]], %[[T1:.*]] = comm.all_reduce_start <sum> %arg0
// CHECK-NEXT: %[[R2:.*]], %[[T2:.*]] = comm.all_reduce_start <max> %arg1
// CHECK-NEXT: %[[A2:.*]] = comm.wait %[[R2]], %[[T2]]
// CHECK-NEXT: nn.relu %[[A2]]
// CHECK-NEXT: %[[A1:.*]] = comm.wait %[[R1]], %[[T1]]
// CHECK-NEXT: return %[[A1]]
func.func @order(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %world = comm.world : !comm.communicator
  %sa = comm.all_reduce <sum> %a on %world : tensor<8xf32>
  %sb = comm.all_reduce <max> %b on %world : tensor<8xf32>
  %r = nn.relu %sb : tensor<8xf32>
  return %sa, %r : tensor<8xf32>, tensor<8xf32>
}

// -----

// A use inside a region waits before the op that holds the region.
// CHECK-LABEL: func.func @nested_use
// CHECK:      comm.all_reduce_start
// CHECK-NEXT: arith.constant
// CHECK-NEXT: %[[A:.*]] = comm.wait
// CHECK-NEXT: scf.if
// CHECK-NEXT: nn.relu %[[A]]
func.func @nested_use(%g: tensor<8xf32>, %c: i1) -> tensor<8xf32> {
  %world = comm.world : !comm.communicator
  %s = comm.all_reduce <sum> %g on %world : tensor<8xf32>
  %zero = arith.constant dense<0.0> : tensor<8xf32>
  %r = scf.if %c -> tensor<8xf32> {
    %t = nn.relu %s : tensor<8xf32>
    scf.yield %t : tensor<8xf32>
  } else {
    scf.yield %zero : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

// -----

// Collectives on memrefs are left alone.
// CHECK-LABEL: func.func @memref_untouched
// CHECK-NEXT: comm.all_reduce <sum> %{{.*}} on %{{.*}} : memref<8xf32>
func.func @memref_untouched(%world: !comm.communicator, %buf: memref<8xf32>) {
  comm.all_reduce <sum> %buf on %world : memref<8xf32>
  return
}
