// RUN: dtrain-opt %s | FileCheck %s
// RUN: dtrain-opt %s | dtrain-opt | FileCheck %s
// RUN: dtrain-opt %s --mlir-print-op-generic | dtrain-opt | FileCheck %s

// CHECK-LABEL: func.func @tensors
func.func @tensors(%g: tensor<128xf32>, %h: tensor<4x8xbf16>, %l: tensor<f64>)
    -> (tensor<128xf32>, tensor<4x8xbf16>, tensor<f64>, index, index) {
  // CHECK: %[[WORLD:.*]] = comm.world : !comm.communicator
  %world = comm.world : !comm.communicator
  // CHECK: comm.rank %[[WORLD]]
  %rank = comm.rank %world
  // CHECK: comm.size %[[WORLD]]
  %size = comm.size %world
  // CHECK: %[[REQ:.*]], %[[INFLIGHT:.*]] = comm.all_reduce_start <mean> %{{.*}} on %[[WORLD]] : tensor<128xf32>
  %req, %inflight = comm.all_reduce_start <mean> %g on %world : tensor<128xf32>
  // CHECK: comm.all_reduce <max> %{{.*}} on %[[WORLD]] : tensor<4x8xbf16>
  %m = comm.all_reduce <max> %h on %world : tensor<4x8xbf16>
  // CHECK: comm.all_reduce <sum> %{{.*}} on %[[WORLD]] : tensor<f64>
  %s = comm.all_reduce <sum> %l on %world : tensor<f64>
  // CHECK: comm.wait %[[REQ]], %[[INFLIGHT]] : tensor<128xf32>
  %avg = comm.wait %req, %inflight : tensor<128xf32>
  return %avg, %m, %s, %rank, %size : tensor<128xf32>, tensor<4x8xbf16>, tensor<f64>, index, index
}

// CHECK-LABEL: func.func @memrefs
func.func @memrefs(%world: !comm.communicator, %buf: memref<1024xf16>, %dyn: memref<?x4xf32>) {
  // CHECK: comm.all_reduce <sum> %{{.*}} on %{{.*}} : memref<1024xf16>
  comm.all_reduce <sum> %buf on %world : memref<1024xf16>
  // CHECK: %[[REQ:.*]] = comm.all_reduce_start <mean> %[[DYN:.*]] on %{{.*}} : memref<?x4xf32>
  %req = comm.all_reduce_start <mean> %dyn on %world : memref<?x4xf32>
  // CHECK: comm.wait %[[REQ]], %[[DYN]] : memref<?x4xf32>
  comm.wait %req, %dyn : memref<?x4xf32>
  return
}

// A sparse all-reduce: gradient and residual in flight until the wait, one
// type printed when both buffers have it.
// CHECK-LABEL: func.func @sparse
// CHECK: %[[REQ:.*]], %[[G:.*]], %[[R:.*]] = comm.sparse_all_reduce_start <mean> %{{.*}}, %{{.*}} k %{{.*}} on %{{.*}} select <gaussian> aggregate <gtopk> : tensor<64x4xf32>
// CHECK: comm.sparse_wait %[[REQ]], %[[G]], %[[R]] : tensor<64x4xf32>
// CHECK: comm.sparse_all_reduce_start <sum> %{{.*}}, %{{.*}} k %{{.*}} on %{{.*}} select <random> aggregate <allgather> : memref<8xf32, strided<[1], offset: 8>>, memref<8xf32>
// CHECK: comm.sparse_all_reduce_start <sum> %{{.*}}, %{{.*}} k %{{.*}} on %{{.*}} select <exact> aggregate <gtopk> wire bf16 segments [3, 5] : memref<8xf32, strided<[1], offset: 8>>, memref<8xf32>
// CHECK: comm.sparse_all_reduce_start <sum> %{{.*}}, %{{.*}} k %{{.*}} on %{{.*}} select <exact> aggregate <dense> : memref<8xf32, strided<[1], offset: 8>>, memref<8xf32>
// CHECK: comm.sparse_all_reduce_start <sum> %{{.*}}, %{{.*}} k %[[K:.*]] on %{{.*}} select <exact> aggregate <auto> %[[K]] : memref<8xf32, strided<[1], offset: 8>>, memref<8xf32>
// CHECK: comm.sparse_wait %{{.*}}, %{{.*}}, %{{.*}} : memref<8xf32, strided<[1], offset: 8>>, memref<8xf32>
func.func @sparse(%g: tensor<64x4xf32>, %r: tensor<64x4xf32>, %k: index,
                  %b: memref<8xf32, strided<[1], offset: 8>>, %s: memref<8xf32>)
    -> (tensor<64x4xf32>, tensor<64x4xf32>) {
  %world = comm.world : !comm.communicator
  %req, %gi, %ri = comm.sparse_all_reduce_start <mean> %g, %r k %k on %world select <gaussian> aggregate <gtopk> : tensor<64x4xf32>
  %avg, %res = comm.sparse_wait %req, %gi, %ri : tensor<64x4xf32>
  %req2 = comm.sparse_all_reduce_start <sum> %b, %s k %k on %world select <random> aggregate <allgather> : memref<8xf32, strided<[1], offset: 8>>, memref<8xf32>
  comm.sparse_wait %req2, %b, %s : memref<8xf32, strided<[1], offset: 8>>, memref<8xf32>
  %req3 = comm.sparse_all_reduce_start <sum> %b, %s k %k on %world select <exact> aggregate <gtopk> wire bf16 segments [3, 5] : memref<8xf32, strided<[1], offset: 8>>, memref<8xf32>
  comm.sparse_wait %req3, %b, %s : memref<8xf32, strided<[1], offset: 8>>, memref<8xf32>
  %req4 = comm.sparse_all_reduce_start <sum> %b, %s k %k on %world select <exact> aggregate <dense> : memref<8xf32, strided<[1], offset: 8>>, memref<8xf32>
  comm.sparse_wait %req4, %b, %s : memref<8xf32, strided<[1], offset: 8>>, memref<8xf32>
  %req5 = comm.sparse_all_reduce_start <sum> %b, %s k %k on %world select <exact> aggregate <auto> %k : memref<8xf32, strided<[1], offset: 8>>, memref<8xf32>
  comm.sparse_wait %req5, %b, %s : memref<8xf32, strided<[1], offset: 8>>, memref<8xf32>
  return %avg, %res : tensor<64x4xf32>, tensor<64x4xf32>
}
