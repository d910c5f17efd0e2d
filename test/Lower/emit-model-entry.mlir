// RUN: dtrain-opt %s --dtrain-emit-model-entry --split-input-file --verify-diagnostics | FileCheck %s

// The model info lists every buffer in call order: arguments with their
// roles, then results (named by train.output, else output<i>); '-' is the
// shape of a scalar.
// CHECK: func.func private @dtrain_rt_model_main(i32, !llvm.ptr, !llvm.ptr, (!llvm.ptr) -> ()) -> i32
// CHECK: func.func private @forward(
// CHECK: llvm.mlir.global external constant @dtrain_model_info("dtrain-model 1\0Aonnx /models/m.onnx\0Amode infer\0Aarg param f32 4x3 fc.weight\0Aarg buffer f32 3 bn.running_mean\0Aarg input f32 2x4 x\0Aarg input i64 2 ids\0Aarg output f32 2x3 y\0Aarg output f32 - output1\0A\00")
// The run function views each pointer of its array as a memref: read-only
// tensors for the arguments, output buffers loaded before the call and
// materialized in place after it.
// CHECK-LABEL: func.func @dtrain_model_run(
// CHECK-SAME: %[[BUFFERS:.*]]: !llvm.ptr)
// CHECK: %[[SLOT0:.*]] = llvm.getelementptr %[[BUFFERS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[W_PTR:.*]] = llvm.load %[[SLOT0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[W_BUF:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<4x3xf32>
// CHECK: %[[W:.*]] = bufferization.to_tensor %[[W_BUF]] restrict : memref<4x3xf32> to tensor<4x3xf32>
// CHECK: llvm.getelementptr %[[BUFFERS]][4]
// CHECK: %[[Y_BUF:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<2x3xf32>
// CHECK: llvm.getelementptr %[[BUFFERS]][5]
// CHECK: %[[S_BUF:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64)> to memref<f32>
// CHECK: %[[RESULTS:.*]]:2 = call @forward(%[[W]],
// CHECK: bufferization.materialize_in_destination %[[RESULTS]]#0 in restrict writable %[[Y_BUF]]
// CHECK: bufferization.materialize_in_destination %[[RESULTS]]#1 in restrict writable %[[S_BUF]]
// main hands both to the runtime.
// CHECK-LABEL: func.func @main(%{{.*}}: i32, %{{.*}}: !llvm.ptr) -> i32
// CHECK: %[[INFO:.*]] = llvm.mlir.addressof @dtrain_model_info
// CHECK: %[[RUN_FN:.*]] = constant @dtrain_model_run : (!llvm.ptr) -> ()
// CHECK: %[[CODE:.*]] = call @dtrain_rt_model_main(%{{.*}}, %{{.*}}, %[[INFO]], %[[RUN_FN]])
// CHECK: return %[[CODE]] : i32
module attributes {train.onnx_model = "/models/m.onnx"} {
func.func @forward(%w: tensor<4x3xf32> {train.param = "fc.weight"}, %m: tensor<3xf32> {train.buffer = "bn.running_mean"}, %x: tensor<2x4xf32> {train.input = "x"}, %l: tensor<2xi64> {train.input = "ids"}) -> (tensor<2x3xf32> {train.output = "y"}, tensor<f32>) {
  %0 = nn.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
  %1 = nn.reduce_sum %0 dims = [0, 1] : tensor<2x3xf32> -> tensor<f32>
  return %0, %1 : tensor<2x3xf32>, tensor<f32>
}
}

// -----

// Without a recorded ONNX model there are no weights to read.
// CHECK: @dtrain_model_info("dtrain-model 1\0Aonnx -\0Amode infer\0Aarg input f32 3 x\0Aarg output f32 3 output0\0A\00")
func.func @forward(%x: tensor<3xf32> {train.input = "x"}) -> tensor<3xf32> {
  %0 = nn.relu %x : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Booleans cross as bool, one byte an element (an i1 memref's layout).
// CHECK: @dtrain_model_info("dtrain-model 1\0Aonnx -\0Amode infer\0Aarg input bool 3 m\0Aarg input f32 3 x\0Aarg output bool 3 output0\0A\00")
func.func @forward(%m: tensor<3xi1> {train.input = "m"}, %x: tensor<3xf32> {train.input = "x"}) -> tensor<3xi1> {
  %0 = nn.compare eq %x, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xi1>
  %1 = nn.compare eq %0, %m : tensor<3xi1>, tensor<3xi1> -> tensor<3xi1>
  return %1 : tensor<3xi1>
}

// -----

// expected-error @+1 {{a compiled model needs a func.func @forward (or the @train_step of --dtrain-build-training) with a body}}
module {
  func.func @model(%x: tensor<3xf32>) -> tensor<3xf32> {
    return %x : tensor<3xf32>
  }
}

// -----

// expected-error @+1 {{'func.func' op argument #0 needs a train.param, train.buffer, train.optimizer_state, train.rank_state, train.input or train.label attribute to be passed by a compiled model}}
func.func @forward(%x: tensor<3xf32>) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}

// -----

// expected-error @+1 {{'x' has type 'tensor<?xf32>'; a compiled model needs tensors of static shape (import with --batch-size or --input-shape)}}
func.func @forward(%x: tensor<?xf32> {train.input = "x"}) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}

// -----

// expected-error @+1 {{'x' has element type 'i8', which a compiled model cannot pass (f32, f64, f16, bf16, i64, i32 or i1)}}
func.func @forward(%x: tensor<3xi8> {train.input = "x"}) -> tensor<3xi8> {
  return %x : tensor<3xi8>
}

// -----

func.func @forward(%x: tensor<3xf32> {train.input = "x"}) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}
// expected-error @+1 {{'func.func' op uses the symbol 'main', which the compiled-model ABI defines}}
func.func @main() {
  return
}

// -----

// A training step updates its parameters and state in place: each new
// value is materialized into its argument's tensor (writable, so one-shot
// bufferization can have the update write in place, or copy when the old
// value is still read) and stored into the argument's buffer; the runtime
// gives the output of the same name the argument's pointer. The loss goes
// to its own output buffer first (before any old value is overwritten), the
// input stays read-only.
// CHECK: @dtrain_model_info("dtrain-model 1\0Aonnx -\0Amode step\0Aarg param f32 3 w\0Aarg state f32 3 w.momentum_buffer\0Aarg input f32 3 x\0Aarg output f32 3 w\0Aarg output f32 3 w.momentum_buffer\0Aarg output f32 - loss\0A\00")
// CHECK: func.func @dtrain_model_run(
// CHECK: %[[W_BUF:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<3xf32>
// CHECK: %[[W:.*]] = bufferization.to_tensor %[[W_BUF]] restrict writable
// CHECK: %[[V_BUF:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<3xf32>
// CHECK: %[[V:.*]] = bufferization.to_tensor %[[V_BUF]] restrict writable
// CHECK: %[[X_BUF:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<3xf32>
// CHECK: %[[X:.*]] = bufferization.to_tensor %[[X_BUF]] restrict :
// CHECK: %[[LOSS_BUF:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<f32>
// CHECK: %[[R:.*]]:3 = call @train_step(%[[W]], %[[V]], %[[X]])
// CHECK: bufferization.materialize_in_destination %[[R]]#2 in restrict writable %[[LOSS_BUF]]
// CHECK: %[[NEW_W:.*]] = bufferization.materialize_in_destination %[[R]]#0 in %[[W]] : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK: bufferization.materialize_in_destination %[[NEW_W]] in restrict writable %[[W_BUF]]
// CHECK: %[[NEW_V:.*]] = bufferization.materialize_in_destination %[[R]]#1 in %[[V]]
// CHECK: bufferization.materialize_in_destination %[[NEW_V]] in restrict writable %[[V_BUF]]
func.func @train_step(%w: tensor<3xf32> {train.param = "w"}, %v: tensor<3xf32> {train.optimizer_state = "w.momentum_buffer"}, %x: tensor<3xf32> {train.input = "x"}) -> (tensor<3xf32> {train.updated = "w"}, tensor<3xf32> {train.updated = "w.momentum_buffer"}, tensor<f32> {train.output = "loss"}) {
  %0 = nn.mul %w, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %1 = nn.reduce_sum %0 dims = [0] : tensor<3xf32> -> tensor<f32>
  %2:2 = train.momentum_update %w, %x, %v {lr = 0.1 : f64, momentum = 0.9 : f64} : tensor<3xf32>
  return %2#0, %2#1, %1 : tensor<3xf32>, tensor<3xf32>, tensor<f32>
}
