// RUN: dtrain-opt %s --dtrain-lower-comm-to-runtime --split-input-file -verify-diagnostics
// RUN: not dtrain-opt %s --dtrain-lower-comm-to-runtime=algorithm=tree 2>&1 | FileCheck %s --check-prefix=OPTION
// OPTION: for the --algorithm option: Cannot find option named 'tree'!

func.func @tensor_collective(%g: tensor<8xf32>) -> tensor<8xf32> {
  %world = comm.world : !comm.communicator
  // expected-error @+1 {{'comm.all_reduce' on a tensor must be bufferized (e.g. by --one-shot-bufferize) before --dtrain-lower-comm-to-runtime}}
  %s = comm.all_reduce <sum> %g on %world : tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

func.func @strided(%world: !comm.communicator, %buf: memref<4x8xf32>) {
  %col = memref.subview %buf[0, 0] [4, 1] [1, 1] : memref<4x8xf32> to memref<4x1xf32, strided<[8, 1]>>
  // expected-error @+1 {{'comm.all_reduce' needs a contiguous buffer, got 'memref<4x1xf32, strided<[8, 1]>>'}}
  comm.all_reduce <sum> %col on %world : memref<4x1xf32, strided<[8, 1]>>
  return
}

// -----

func.func @dynamic_strides(%world: !comm.communicator, %buf: memref<?xf32, strided<[?], offset: ?>>) {
  // expected-error @+1 {{'comm.all_reduce_start' needs a contiguous buffer}}
  %req = comm.all_reduce_start <sum> %buf on %world : memref<?xf32, strided<[?], offset: ?>>
  comm.wait %req, %buf : memref<?xf32, strided<[?], offset: ?>>
  return
}

// -----

// expected-error @+1 {{symbol 'dtrain_rt_wait' is reserved for the dtrain runtime and must be a func.func of type '(!llvm.ptr) -> ()'}}
func.func private @dtrain_rt_wait(i32)

func.func @uses_wait(%world: !comm.communicator, %buf: memref<8xf32>) {
  %req = comm.all_reduce_start <sum> %buf on %world : memref<8xf32>
  comm.wait %req, %buf : memref<8xf32>
  return
}

// -----

func.func @sparse_strided_residual(%world: !comm.communicator, %g: memref<8xf32>, %r: memref<8xf32, strided<[2]>>, %k: index) {
  // expected-error @+1 {{'comm.sparse_all_reduce_start' needs a contiguous buffer, got 'memref<8xf32, strided<[2]>>'}}
  %req = comm.sparse_all_reduce_start <sum> %g, %r k %k on %world select <exact> aggregate <allgather> : memref<8xf32>, memref<8xf32, strided<[2]>>
  comm.sparse_wait %req, %g, %r : memref<8xf32>, memref<8xf32, strided<[2]>>
  return
}
