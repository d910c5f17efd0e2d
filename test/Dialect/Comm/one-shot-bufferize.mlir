// RUN: dtrain-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --split-input-file | FileCheck %s

// Collectives bufferize in place: no allocation, no copy, and the wait
// completes into the buffer that the start handed to the network.
// CHECK-LABEL: func.func @in_place
// CHECK-SAME: (%[[G:.*]]: memref<128xf32>, %[[H:.*]]: memref<4x8xbf16>) -> (memref<128xf32>, memref<4x8xbf16>)
// CHECK-NOT:  memref.alloc
// CHECK-NOT:  memref.copy
// CHECK:      %[[REQ:.*]] = comm.all_reduce_start <mean> %[[G]] on %{{.*}} : memref<128xf32>
// CHECK-NEXT: comm.all_reduce <max> %[[H]] on %{{.*}} : memref<4x8xbf16>
// CHECK-NEXT: comm.wait %[[REQ]], %[[G]] : memref<128xf32>
// CHECK-NEXT: return %[[G]], %[[H]]
func.func @in_place(%g: tensor<128xf32>, %h: tensor<4x8xbf16>) -> (tensor<128xf32>, tensor<4x8xbf16>) {
  %world = comm.world : !comm.communicator
  %req, %inflight = comm.all_reduce_start <mean> %g on %world : tensor<128xf32>
  %m = comm.all_reduce <max> %h on %world : tensor<4x8xbf16>
  %avg = comm.wait %req, %inflight : tensor<128xf32>
  return %avg, %m : tensor<128xf32>, tensor<4x8xbf16>
}

// -----

// The input is still read after the collective, so the collective works on
// a copy and the original stays intact.
// CHECK-LABEL: func.func @input_read_later
// CHECK-SAME: (%[[G:.*]]: memref<16xf32>)
// CHECK:      %[[COPY:.*]] = memref.alloc() {{.*}} : memref<16xf32>
// CHECK:      memref.copy %[[G]], %[[COPY]]
// CHECK:      comm.all_reduce <sum> %[[COPY]]
// CHECK:      return %[[COPY]], %[[G]]
func.func @input_read_later(%g: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %world = comm.world : !comm.communicator
  %s = comm.all_reduce <sum> %g on %world : tensor<16xf32>
  return %s, %g : tensor<16xf32>, tensor<16xf32>
}

// -----

// A sparse all-reduce works in place on both buffers: the residual argument
// is updated where it lies.
// CHECK-LABEL: func.func @sparse_in_place
// CHECK-SAME: (%[[G:.*]]: memref<64xf32>, %[[R:.*]]: memref<64xf32>, %[[K:.*]]: index) -> (memref<64xf32>, memref<64xf32>)
// CHECK-NOT:  memref.alloc
// CHECK-NOT:  memref.copy
// CHECK:      %[[REQ:.*]] = comm.sparse_all_reduce_start <mean> %[[G]], %[[R]] k %[[K]] on %{{.*}} select <exact> aggregate <gtopk> : memref<64xf32>
// CHECK-NEXT: comm.sparse_wait %[[REQ]], %[[G]], %[[R]] : memref<64xf32>
// CHECK-NEXT: return %[[G]], %[[R]]
func.func @sparse_in_place(%g: tensor<64xf32>, %r: tensor<64xf32>, %k: index) -> (tensor<64xf32>, tensor<64xf32>) {
  %world = comm.world : !comm.communicator
  %req, %gi, %ri = comm.sparse_all_reduce_start <mean> %g, %r k %k on %world select <exact> aggregate <gtopk> : tensor<64xf32>
  %avg, %res = comm.sparse_wait %req, %gi, %ri : tensor<64xf32>
  return %avg, %res : tensor<64xf32>, tensor<64xf32>
}
