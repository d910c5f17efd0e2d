// RUN: dtrain-opt %s --split-input-file --dtrain-lower-to-llvm | FileCheck %s
// RUN: dtrain-opt %s --split-input-file --dtrain-lower-to-llvm --mlir-print-ir-after=one-shot-bufferize 2>&1 >/dev/null | FileCheck %s --check-prefix=BUFFERS

// The whole pipeline leaves only the LLVM dialect: @forward is inlined into
// the run function, the intermediate buffer lives in the static arena (no
// malloc), the kernel is called and the fused bias-add + relu writes the
// caller's output buffer directly.
// BUFFERS-LABEL: IR Dump After OneShotBufferizePass
// CHECK-NOT: func.func
// CHECK-DAG: llvm.func @dtrain_rt_matmul_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i32, i32, f32)
// CHECK-DAG: llvm.func @dtrain_rt_model_main(i32, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-DAG: llvm.mlir.global external constant @dtrain_model_info(
// CHECK-DAG: llvm.mlir.global private @__dtrain_arena_dtrain_model_run() {{.*}}alignment = 64 : i64{{.*}} : !llvm.array<64 x i8>
// CHECK-LABEL: llvm.func @dtrain_model_run(
// CHECK-NOT: @malloc
// CHECK-NOT: @forward
// CHECK: llvm.call @dtrain_rt_matmul_f32
// CHECK: llvm.intr.maximum
// CHECK-NOT: llvm.intr.memcpy
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @main(
// CHECK: llvm.call @dtrain_rt_model_main
func.func @forward(%w: tensor<4x3xf32> {train.param = "w"}, %b: tensor<3xf32> {train.param = "b"}, %x: tensor<2x4xf32> {train.input = "x"}) -> (tensor<2x3xf32> {train.output = "y"}) {
  %0 = nn.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
  %1 = nn.add %0, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %2 = nn.relu %1 : tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// -----

// A loop nest of 131072 elements runs on the runtime's threads: the run
// function passes the address of its outlined body, internal to the object
// file, and a stack context holding the buffers' descriptors to
// dtrain_rt_parallel_for, which calls it for chunks of the iterations.
// BUFFERS-LABEL: IR Dump After OneShotBufferizePass
// CHECK-DAG: llvm.func @dtrain_rt_parallel_for(!llvm.ptr, !llvm.ptr, i64, i64)
// CHECK-LABEL: llvm.func @dtrain_model_run(
// CHECK-DAG: %[[BODY:.*]] = llvm.mlir.addressof @dtrain_model_run_parallel : !llvm.ptr
// CHECK-DAG: %[[N:.*]] = llvm.mlir.constant(131072 : i64) : i64
// CHECK-DAG: %[[CONTEXT:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>, struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>)>
// CHECK: llvm.call @dtrain_rt_parallel_for(%[[BODY]], %[[CONTEXT]], %[[N]], %{{.*}})
// CHECK-NOT: llvm.intr.maximum
// CHECK: llvm.return
// CHECK-LABEL: llvm.func internal @dtrain_model_run_parallel(%{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64)
// CHECK: llvm.intr.maximum
// CHECK: llvm.return
func.func @forward(%x: tensor<256x512xf32> {train.input = "x"}) -> (tensor<256x512xf32> {train.output = "y"}) {
  %0 = nn.relu %x : tensor<256x512xf32>
  return %0 : tensor<256x512xf32>
}

// -----

// A training step's fused update reads and writes the parameter's and the
// momentum's own buffers (the copies onto themselves that remain are
// removed by canonicalization).
// BUFFERS-LABEL: IR Dump After OneShotBufferizePass
// BUFFERS: %[[W:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<3xf32>
// BUFFERS: %[[V:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<3xf32>
// BUFFERS: %[[X:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<3xf32>
// BUFFERS-NOT: memref.alloc
// BUFFERS: linalg.generic {{.*}} ins(%[[W]], %[[X]], %[[V]] : memref<3xf32>, memref<3xf32>, memref<3xf32>) outs(%[[W]], %[[V]] : memref<3xf32>, memref<3xf32>)
// BUFFERS-NOT: memref.alloc
// BUFFERS: return
// CHECK-LABEL: llvm.func @dtrain_model_run(
// CHECK-NOT: @malloc
// CHECK-NOT: llvm.intr.memcpy
// CHECK: llvm.return
func.func @train_step(%w: tensor<3xf32> {train.param = "w"}, %v: tensor<3xf32> {train.optimizer_state = "w.momentum_buffer"}, %x: tensor<3xf32> {train.input = "x"}) -> (tensor<3xf32> {train.updated = "w"}, tensor<3xf32> {train.updated = "w.momentum_buffer"}, tensor<f32> {train.output = "loss"}) {
  %0 = nn.mul %w, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %1 = nn.reduce_sum %0 dims = [0] : tensor<3xf32> -> tensor<f32>
  %2:2 = train.momentum_update %w, %x, %v {lr = 0.1 : f64, momentum = 0.9 : f64} : tensor<3xf32>
  return %2#0, %2#1, %1 : tensor<3xf32>, tensor<3xf32>, tensor<f32>
}

// -----

// When the old value is still read after the update (here an output
// materialized later), the update writes a new buffer and the new value is
// copied over the parameter only after that read.
// BUFFERS-LABEL: IR Dump After OneShotBufferizePass
// BUFFERS: %[[W:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<3xf32>
// BUFFERS: %[[X:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<3xf32>
// BUFFERS: %[[OLD:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<3xf32>
// BUFFERS: %[[NEW:.*]] = memref.alloc() {{.*}} : memref<3xf32>
// BUFFERS: linalg.generic {{.*}} ins(%[[W]], %[[X]] : memref<3xf32>, memref<3xf32>) outs(%[[NEW]] : memref<3xf32>)
// BUFFERS: memref.copy %[[W]], %[[OLD]]
// BUFFERS: memref.copy %[[NEW]], %[[W]]
func.func @train_step(%w: tensor<3xf32> {train.param = "w"}, %x: tensor<3xf32> {train.input = "x"}) -> (tensor<3xf32> {train.updated = "w"}, tensor<3xf32> {train.output = "old"}) {
  %0 = train.sgd_update %w, %x {lr = 0.1 : f64} : tensor<3xf32>
  return %0, %w : tensor<3xf32>, tensor<3xf32>
}
