// RUN: dtrain-opt %s --dtrain-lower-to-llvm | FileCheck %s

// The whole pipeline leaves only the LLVM dialect: @forward is inlined into
// the run function, the intermediate buffer lives in the static arena (no
// malloc), the kernel is called and the fused bias-add + relu writes the
// caller's output buffer directly.
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
