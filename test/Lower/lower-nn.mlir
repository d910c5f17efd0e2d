// RUN: dtrain-opt %s --dtrain-lower-nn --canonicalize --split-input-file | FileCheck %s
// RUN: dtrain-opt %s --dtrain-lower-nn=target=cuda --canonicalize --split-input-file | FileCheck %s --check-prefix=CUDA

// Elementwise ops are parallel linalg.generic ops on tensors; a broadcast
// operand is read through a map that drops (or pins to 0) its missing dims.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[PIN:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[A:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<3xf32>, %[[C:.*]]: tensor<1x3xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[A]], %[[B]] : tensor<4x3xf32>, tensor<3xf32>)
// CHECK:   arith.addf
// CHECK: %[[PROD:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[PIN]], #[[ID]]], {{.*}}} ins(%[[SUM]], %[[C]] : tensor<4x3xf32>, tensor<1x3xf32>)
// CHECK:   arith.mulf
// CHECK: linalg.generic {{.*}} ins(%[[PROD]] : tensor<4x3xf32>)
// CHECK:   arith.maximumf
// CHECK-NOT: nn.
func.func @elementwise(%a: tensor<4x3xf32>, %b: tensor<3xf32>, %c: tensor<1x3xf32>) -> tensor<4x3xf32> {
  %0 = nn.add %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %1 = nn.mul %0, %c : tensor<4x3xf32>, tensor<1x3xf32> -> tensor<4x3xf32>
  %2 = nn.relu %1 : tensor<4x3xf32>
  return %2 : tensor<4x3xf32>
}

// -----

// Activations: sigmoid as 1 / (1 + exp(-x)), leaky relu and relu_grad as
// selects, clip as max/min, dropout as the identity.
// CHECK-LABEL: func.func @activations
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>)
// CHECK-DAG: %[[SIX:.*]] = arith.constant 6.000000e+00 : f32
// CHECK-DAG: %[[MINUS_ONE:.*]] = arith.constant -1.000000e+00 : f32
// CHECK-DAG: %[[ALPHA:.*]] = arith.constant 2.000000e-01 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: arith.negf
// CHECK: math.exp
// CHECK: arith.addf %{{.*}}, %[[ONE]]
// CHECK: arith.divf %[[ONE]]
// CHECK: math.tanh
// CHECK: %[[POSITIVE:.*]] = arith.cmpf ogt, %[[IN:.*]], %[[ZERO]]
// CHECK: %[[SCALED:.*]] = arith.mulf %[[IN]], %[[ALPHA]]
// CHECK: arith.select %[[POSITIVE]], %[[IN]], %[[SCALED]]
// CHECK: %[[LOW:.*]] = arith.maximumf %{{.*}}, %[[MINUS_ONE]]
// CHECK: arith.minimumf %[[LOW]], %[[SIX]]
// CHECK: ins(%{{.*}}, %[[X]] : tensor<8xf32>, tensor<8xf32>)
// CHECK: ^bb0(%[[G:.*]]: f32, %[[XIN:.*]]: f32, %{{.*}}: f32)
// CHECK: %[[ACTIVE:.*]] = arith.cmpf ogt, %[[XIN]], %[[ZERO]]
// CHECK: arith.select %[[ACTIVE]], %[[G]], %[[ZERO]]
// CHECK-NOT: nn.dropout
func.func @activations(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = nn.sigmoid %x : tensor<8xf32>
  %1 = nn.tanh %0 : tensor<8xf32>
  %2 = nn.leaky_relu %1 {alpha = 2.000000e-01 : f64} : tensor<8xf32>
  %3 = nn.clip %2 {min = -1.0 : f64, max = 6.0 : f64} : tensor<8xf32>
  %4 = nn.dropout %3 {ratio = 5.000000e-01 : f64} : tensor<8xf32>
  %5 = nn.relu_grad %4, %x : tensor<8xf32>
  return %5 : tensor<8xf32>
}

// -----

// Softmax: max, exp(x - max), sum, divide; log_softmax ends with
// x - max - log(sum).
// CHECK-LABEL: func.func @softmax
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[MAXINIT:.*]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%{{.*}} : tensor<2xf32>)
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<2x5xf32>) outs(%[[MAXINIT]] : tensor<2xf32>)
// CHECK:   arith.maximumf
// CHECK: %[[EXP:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[MAX]] : tensor<2x5xf32>, tensor<2xf32>)
// CHECK:   arith.subf
// CHECK:   math.exp
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[EXP]] : tensor<2x5xf32>)
// CHECK:   arith.addf
// CHECK: linalg.generic {{.*}} ins(%[[EXP]], %[[SUM]] : tensor<2x5xf32>, tensor<2xf32>)
// CHECK:   arith.divf
// CHECK: math.log
func.func @softmax(%x: tensor<2x5xf32>) -> (tensor<2x5xf32>, tensor<2x5xf32>) {
  %0 = nn.softmax %x {axis = 1 : i64} : tensor<2x5xf32>
  %1 = nn.log_softmax %x {axis = 1 : i64} : tensor<2x5xf32>
  return %0, %1 : tensor<2x5xf32>, tensor<2x5xf32>
}

// -----

// Reductions drop the reduced dims, then reshape to keep_dims' type; the
// mean divides by the reduced element count.
// CHECK-LABEL: func.func @reductions
// CHECK-DAG: %[[COUNT:.*]] = arith.constant 1.600000e+01 : f32
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK: arith.divf %{{.*}}, %[[COUNT]]
// CHECK: tensor.expand_shape {{.*}} output_shape [2, 3, 1, 1]
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "reduction", "parallel"]
// CHECK-NOT: arith.divf
// CHECK: return
func.func @reductions(%x: tensor<2x3x4x4xf32>) -> (tensor<2x3x1x1xf32>, tensor<3x4xf32>) {
  %0 = nn.global_avg_pool2d %x : tensor<2x3x4x4xf32> -> tensor<2x3x1x1xf32>
  %1 = nn.reduce_sum %x dims = [0, 2] : tensor<2x3x4x4xf32> -> tensor<3x4xf32>
  return %0, %1 : tensor<2x3x1x1xf32>, tensor<3x4xf32>
}

// -----

// Shape ops: views for reshape (flatten then expand, which canonicalization
// simplifies), a generic reading through the inverse permutation for
// transpose (which element-wise ops fuse with), insert_slice for concat and
// pad (into a filled tensor).
// CHECK: #[[$SWAP:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @shapes
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$SWAP]], #{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : tensor<6x4xf32>) outs(%{{.*}} : tensor<4x6xf32>)
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [4, 6] [1, 1] : tensor<4x6xf32> into tensor<4x9xf32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 6] [4, 3] [1, 1] : tensor<4x3xf32> into tensor<4x9xf32>
// CHECK: %[[FILL:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<6x11xf32>)
// CHECK: tensor.insert_slice %{{.*}} into %[[FILL]][1, 2] [4, 9] [1, 1]
func.func @shapes(%x: tensor<2x3x4xf32>, %y: tensor<4x3xf32>) -> tensor<6x11xf32> {
  %0 = nn.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = nn.transpose %0 {permutation = array<i64: 1, 0>} : tensor<6x4xf32> -> tensor<4x6xf32>
  %2 = nn.concat %1, %y {axis = 1 : i64} : tensor<4x6xf32>, tensor<4x3xf32> -> tensor<4x9xf32>
  %3 = nn.pad %2 {pads = array<i64: 1, 2, 1, 0>, value = 5.000000e-01 : f64} : tensor<4x9xf32> -> tensor<6x11xf32>
  return %3 : tensor<6x11xf32>
}

// -----

// Heavy ops call the runtime's kernels: inputs read through read-only
// buffers, the result written into a fresh aligned buffer, which becomes the
// result tensor after the call.
// CHECK-DAG: func.func private @dtrain_rt_matmul_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i32, i32, f32)
// CHECK-DAG: func.func private @dtrain_rt_conv2d_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @dtrain_rt_pool2d_f32(!llvm.ptr, !llvm.ptr, i32, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @dtrain_rt_batch_norm_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, f32)
// CHECK-DAG: func.func private @dtrain_rt_batch_norm_train_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, f32)
// With target=cuda the same calls go to the GPU's kernels, with the same
// arguments; they queue their work on the step stream without waiting
// (dtrain.step_stream, which --dtrain-chain-gpu-launches reads).
// CUDA-DAG: func.func private @dtrain_rt_cuda_matmul_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i32, i32, f32) attributes {dtrain.step_stream}
// CUDA-DAG: func.func private @dtrain_rt_cuda_conv2d_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) attributes {dtrain.step_stream}
// CUDA-DAG: func.func private @dtrain_rt_cuda_pool2d_f32({{.*}}) attributes {dtrain.step_stream}
// CUDA-DAG: func.func private @dtrain_rt_cuda_batch_norm_f32({{.*}}) attributes {dtrain.step_stream}
// CUDA-DAG: func.func private @dtrain_rt_cuda_batch_norm_train_f32({{.*}}) attributes {dtrain.step_stream}
// CUDA-LABEL: func.func @matmul
// CUDA: call @dtrain_rt_cuda_matmul_f32(
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>, %[[W:.*]]: tensor<3x4xf32>)
// CHECK-DAG: %[[XB:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<2x4xf32> to memref<2x4xf32>
// CHECK-DAG: %[[WB:.*]] = bufferization.to_buffer %[[W]] read_only
// CHECK-DAG: %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x3xf32>
// M=2, N=3, K=4, transpose_lhs=0, transpose_rhs=1, beta=0
// CHECK: call @dtrain_rt_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %c2_i64, %c3_i64, %c4_i64, %c0_i32, %c1_i32, %cst)
// CHECK: %[[Y:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[Y]]
func.func @matmul(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>) -> tensor<2x3xf32> {
  %0 = nn.matmul %x, %w {transpose_rhs} : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// A missing bias is a NULL pointer; geometry in the C prototype's order:
// N C H W OC KH KW OH OW, strides, padding (top, left, bottom, right),
// dilations, groups.
// CHECK-LABEL: func.func @conv
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @dtrain_rt_conv2d_f32(%{{.*}}, %{{.*}}, %[[NULL]], %{{.*}}, %c1_i64, %c3_i64, %c8_i64, %c8_i64, %c4_i64, %c3_i64, %c3_i64, %c4_i64, %c4_i64, %c2_i64, %c2_i64, %c1_i64, %c0_i64, %c1_i64, %c2_i64, %c1_i64, %c1_i64, %c1_i64)
func.func @conv(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %0 = nn.conv2d %x, %w {padding = array<i64: 1, 0, 1, 2>, strides = array<i64: 2, 2>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// Pool kinds: MAX=0, AVG_INCLUDE_PAD=1, AVG_EXCLUDE_PAD=2.
// CHECK-LABEL: func.func @pools
// CHECK: call @dtrain_rt_pool2d_f32(%{{.*}}, %{{.*}}, %c0_i32, %c1_i64, %c2_i64, %c8_i64, %c8_i64, %c4_i64, %c4_i64, %c2_i64, %c2_i64, %c2_i64, %c2_i64, %c0_i64, %c0_i64, %c0_i64, %c0_i64, %c1_i64, %c1_i64)
// CHECK: call @dtrain_rt_pool2d_f32(%{{.*}}, %{{.*}}, %c1_i32,
// CHECK: call @dtrain_rt_pool2d_f32(%{{.*}}, %{{.*}}, %c2_i32,
func.func @pools(%x: tensor<1x2x8x8xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %0 = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xf32>
  %1 = nn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, count_include_pad} : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xf32>
  %2 = nn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xf32>
  return %0, %1, %2 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// Batch norm: N, C, and the product of the spatial dims.
// CHECK-LABEL: func.func @batch_norm
// CHECK-DAG: %[[EPS_DEFAULT:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK-DAG: %[[EPS:.*]] = arith.constant 1.000000e-03 : f32
// CHECK: call @dtrain_rt_batch_norm_f32({{.*}}, %c2_i64, %c3_i64, %c20_i64, %[[EPS]])
// CHECK: call @dtrain_rt_batch_norm_train_f32({{.*}}, %c2_i64, %c3_i64, %c20_i64, %[[EPS_DEFAULT]])
func.func @batch_norm(%x: tensor<2x3x4x5xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>) {
  %0 = nn.batch_norm %x, %s, %b, %m, %v {epsilon = 1.000000e-03 : f64} : tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<2x3x4x5xf32>
  %1:3 = nn.batch_norm_train %x, %s, %b : tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32> -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>)
  return %0, %1#0, %1#1, %1#2 : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// The loss: row max and sum of exponentials, then the labels' log
// probabilities summed into a scalar (labels index the logits) and scaled
// by -1/N.
// CHECK-LABEL: func.func @cross_entropy
// CHECK-DAG: %[[MINUS_INV_N:.*]] = arith.constant -2.500000e-01 : f32
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>, tensor<4xi64>) outs(%{{.*}} : tensor<f32>)
// CHECK:   linalg.index 0
// CHECK:   arith.index_cast
// CHECK:   tensor.extract
// CHECK:   math.log
// CHECK: arith.mulf %{{.*}}, %[[MINUS_INV_N]]
// The gradient: softmax minus the one-hot label, times grad / N.
// CHECK: linalg.generic
// CHECK:   linalg.index 1
// CHECK:   arith.cmpi eq
// CHECK:   arith.select
func.func @cross_entropy(%logits: tensor<4x10xf32>, %labels: tensor<4xi64>, %one: tensor<f32>) -> (tensor<f32>, tensor<4x10xf32>) {
  %0 = nn.softmax_cross_entropy %logits, %labels : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
  %1 = nn.softmax_cross_entropy_grad %one, %logits, %labels : tensor<f32>, tensor<4x10xf32>, tensor<4xi64> -> tensor<4x10xf32>
  return %0, %1 : tensor<f32>, tensor<4x10xf32>
}

// -----

// nn.broadcast reads its input through a broadcasting map; train.sgd_update
// is p - lr * (g + weight_decay * p) per element.
// CHECK-DAG: #[[BCAST:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @broadcast_and_update
// CHECK-DAG: %[[LR:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG: %[[WD:.*]] = arith.constant 0.00999999977 : f32
// CHECK: linalg.generic {indexing_maps = [#[[BCAST]], #[[ID]]]
// CHECK: linalg.generic
// CHECK: ^bb0(%[[P:.*]]: f32, %[[G:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[DECAY:.*]] = arith.mulf %[[P]], %[[WD]]
// CHECK: %[[SUM:.*]] = arith.addf %[[G]], %[[DECAY]]
// CHECK: %[[STEP:.*]] = arith.mulf %[[SUM]], %[[LR]]
// CHECK: %[[NEW:.*]] = arith.subf %[[P]], %[[STEP]]
// CHECK: linalg.yield %[[NEW]]
func.func @broadcast_and_update(%x: tensor<4x1xf32>, %p: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %g = nn.broadcast %x : tensor<4x1xf32> -> tensor<4x3xf32>
  %0 = train.sgd_update %p, %g {lr = 0.5 : f64, weight_decay = 0.01 : f64} : tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// On the CPU, a 16-bit matrix product runs in the f32 kernel: its operands
// widened, its result rounded back; nn.cast is an elementwise truncf or extf.
// CHECK-LABEL: func.func @bf16_matmul
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: call @dtrain_rt_matmul_f32(
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @bf16_matmul(%x: tensor<2x4xbf16>, %w: tensor<4x3xbf16>) -> tensor<2x3xf16> {
  %0 = nn.matmul %x, %w : tensor<2x4xbf16>, tensor<4x3xbf16> -> tensor<2x3xbf16>
  %1 = nn.cast %0 : tensor<2x3xbf16> to tensor<2x3xf16>
  return %1 : tensor<2x3xf16>
}

// -----

// nn.to_float: signed integers through sitofp, booleans (0 or 1) through
// uitofp; an integer reshape is the same expand (or collapse) as a float one.
// CHECK-LABEL: func.func @integer_masks
// CHECK: tensor.expand_shape %{{.*}} : tensor<2x3xi64> into tensor<2x1x3xi64>
// CHECK: arith.sitofp %{{.*}} : i64 to f32
// CHECK: arith.uitofp %{{.*}} : i1 to bf16
func.func @integer_masks(%ids: tensor<2x3xi64>, %flags: tensor<2x3xi1>)
    -> (tensor<2x1x3xf32>, tensor<2x3xbf16>) {
  %r = nn.reshape %ids : tensor<2x3xi64> -> tensor<2x1x3xi64>
  %f = nn.to_float %r : tensor<2x1x3xi64> to tensor<2x1x3xf32>
  %b = nn.to_float %flags : tensor<2x3xi1> to tensor<2x3xbf16>
  return %f, %b : tensor<2x1x3xf32>, tensor<2x3xbf16>
}

// -----

// nn.maximum and nn.minimum: maximumf and minimumf (NaN-propagating) on
// floats, maxsi and minsi on integers.
// CHECK-LABEL: func.func @extremum
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK: arith.minsi %{{.*}}, %{{.*}} : i64
func.func @extremum(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %i: tensor<4xi64>, %j: tensor<i64>) -> (tensor<2x3xf32>, tensor<4xi64>) {
  %0 = nn.maximum %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %1 = nn.minimum %i, %j : tensor<4xi64>, tensor<i64> -> tensor<4xi64>
  return %0, %1 : tensor<2x3xf32>, tensor<4xi64>
}

// -----

// nn.compare: signed cmpi on integers, ordered cmpf on floats (false with
// NaN), the operands broadcast.
// CHECK-LABEL: func.func @compare
// CHECK: arith.cmpi eq, %{{.*}}, %{{.*}} : i64
// CHECK: arith.cmpf oeq, %{{.*}}, %{{.*}} : f32
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : i64
// CHECK: arith.cmpi sle, %{{.*}}, %{{.*}} : i64
// CHECK: arith.cmpf ogt, %{{.*}}, %{{.*}} : f32
// CHECK: arith.cmpf oge, %{{.*}}, %{{.*}} : f32
func.func @compare(%ids: tensor<2x1x3xi64>, %x: tensor<2x1x3xf32>, %y: tensor<4x3xf32>)
    -> (tensor<2x1x3xi1>, tensor<2x4x3xi1>, tensor<2x1x3xi1>, tensor<2x1x3xi1>, tensor<2x4x3xi1>, tensor<2x4x3xi1>) {
  %zero = arith.constant dense<0> : tensor<i64>
  %pad = nn.compare eq %ids, %zero : tensor<2x1x3xi64>, tensor<i64> -> tensor<2x1x3xi1>
  %same = nn.compare eq %x, %y : tensor<2x1x3xf32>, tensor<4x3xf32> -> tensor<2x4x3xi1>
  %lt = nn.compare lt %ids, %zero : tensor<2x1x3xi64>, tensor<i64> -> tensor<2x1x3xi1>
  %le = nn.compare le %ids, %zero : tensor<2x1x3xi64>, tensor<i64> -> tensor<2x1x3xi1>
  %gt = nn.compare gt %x, %y : tensor<2x1x3xf32>, tensor<4x3xf32> -> tensor<2x4x3xi1>
  %ge = nn.compare ge %x, %y : tensor<2x1x3xf32>, tensor<4x3xf32> -> tensor<2x4x3xi1>
  return %pad, %same, %lt, %le, %gt, %ge : tensor<2x1x3xi1>, tensor<2x4x3xi1>, tensor<2x1x3xi1>, tensor<2x1x3xi1>, tensor<2x4x3xi1>, tensor<2x4x3xi1>
}

// -----

// nn.not: xori with true.
// CHECK-LABEL: func.func @not
// CHECK: %[[TRUE:.*]] = arith.constant true
// CHECK: arith.xori %{{.*}}, %[[TRUE]] : i1
func.func @not(%pad: tensor<2x1x3xi1>) -> tensor<2x1x3xi1> {
  %keep = nn.not %pad : tensor<2x1x3xi1>
  return %keep : tensor<2x1x3xi1>
}

// -----

// For target=cuda, 16-bit matrix products, convolutions and pooling run in
// their 16-bit kernels (tensor cores for the products), on the 16-bit
// buffers themselves, with a fused bias gradient in the same type; BETA
// stays f32. Batch norm still runs in f32, its tensors widened and rounded
// back.
// CUDA-DAG: func.func private @dtrain_rt_cuda_matmul_bf16(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i32, i32, f32) attributes {dtrain.step_stream}
// CUDA-DAG: func.func private @dtrain_rt_cuda_conv2d_f16(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, {{.*}}) attributes {dtrain.step_stream}
// CUDA-LABEL: func.func @kernels_16_bit
// CUDA-NOT:   arith.extf
// CUDA:       memref.alloc() {alignment = 64 : i64} : memref<2x3xbf16>
// CUDA:       call @dtrain_rt_cuda_matmul_bf16(
// CUDA-NOT:   arith.extf
// CUDA:       memref.alloc() {alignment = 64 : i64} : memref<2x6x6x6xf16>
// CUDA:       call @dtrain_rt_cuda_conv2d_f16(
// CUDA-NOT:   arith.extf
// CUDA:       memref.alloc() {alignment = 64 : i64} : memref<2x4x8x8xf16>
// CUDA:       call @dtrain_rt_cuda_conv2d_backward_data_f16(
// CUDA-NOT:   arith.extf
// CUDA:       memref.alloc() {alignment = 64 : i64} : memref<6x4x3x3xf16>
// CUDA:       memref.alloc() {alignment = 64 : i64} : memref<6xf16>
// CUDA:       call @dtrain_rt_cuda_conv2d_backward_weights_f16(
// CUDA-NOT:   arith.extf
// CUDA:       memref.alloc() {alignment = 64 : i64} : memref<2x4x4x4xf16>
// CUDA:       call @dtrain_rt_cuda_pool2d_f16(
// CUDA:       arith.extf %{{.*}} : f16 to f32
// CUDA:       call @dtrain_rt_cuda_batch_norm_f32(
// CUDA:       arith.truncf %{{.*}} : f32 to f16
// CHECK-LABEL: func.func @kernels_16_bit
// CHECK:       arith.extf %{{.*}} : bf16 to f32
// CHECK:       call @dtrain_rt_matmul_f32(
// CHECK:       arith.extf %{{.*}} : f16 to f32
// CHECK:       call @dtrain_rt_conv2d_f32(
// CHECK:       call @dtrain_rt_conv2d_backward_data_f32(
// CHECK:       call @dtrain_rt_conv2d_backward_weights_f32(
func.func @kernels_16_bit(%a: tensor<2x4xbf16>, %b: tensor<4x3xbf16>, %x: tensor<2x4x8x8xf16>, %w: tensor<6x4x3x3xf16>,
                          %bias: tensor<6xf16>, %dy: tensor<2x6x6x6xf16>, %s: tensor<4xf16>)
    -> (tensor<2x3xbf16>, tensor<2x6x6x6xf16>, tensor<2x4x8x8xf16>, tensor<6x4x3x3xf16>, tensor<6xf16>, tensor<2x4x4x4xf16>, tensor<2x4x4x4xf16>) {
  %0 = nn.matmul %a, %b : tensor<2x4xbf16>, tensor<4x3xbf16> -> tensor<2x3xbf16>
  %1 = nn.conv2d %x, %w, %bias : tensor<2x4x8x8xf16>, tensor<6x4x3x3xf16>, tensor<6xf16> -> tensor<2x6x6x6xf16>
  %2 = nn.conv2d_backward_data %dy, %w : tensor<2x6x6x6xf16>, tensor<6x4x3x3xf16> -> tensor<2x4x8x8xf16>
  %3 = nn.conv2d_backward_weights %x, %dy : tensor<2x4x8x8xf16>, tensor<2x6x6x6xf16> -> tensor<6x4x3x3xf16>
  %4 = nn.reduce_sum %dy dims = [0, 2, 3] : tensor<2x6x6x6xf16> -> tensor<6xf16>
  %5 = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<2x4x8x8xf16> -> tensor<2x4x4x4xf16>
  %6 = nn.batch_norm %5, %s, %s, %s, %s {epsilon = 1.000000e-03 : f64} : tensor<2x4x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16> -> tensor<2x4x4x4xf16>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<2x3xbf16>, tensor<2x6x6x6xf16>, tensor<2x4x8x8xf16>, tensor<6x4x3x3xf16>, tensor<6xf16>, tensor<2x4x4x4xf16>, tensor<2x4x4x4xf16>
}

// -----

// A batch norm that --dtrain-mixed-precision keeps in f32 between casts
// from and back to a 16-bit type: for target=cuda its kernels read and
// write the 16-bit data (input, output gradient, result) themselves, the
// scale, bias and statistics f32, and neither cast is left. On the CPU the
// casts stay around the f32 kernel.
// CUDA-DAG: func.func private @dtrain_rt_cuda_batch_norm_train_bf16(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, f32) attributes {dtrain.step_stream}
// CUDA-LABEL: func.func @batch_norm_16_bit
// CUDA-NOT:   linalg.generic
// CUDA:       bufferization.to_buffer %{{.*}} : tensor<2x3x4x5xbf16> to memref<2x3x4x5xbf16>
// CUDA:       memref.alloc() {alignment = 64 : i64} : memref<2x3x4x5xbf16>
// CUDA:       memref.alloc() {alignment = 64 : i64} : memref<3xf32>
// CUDA:       call @dtrain_rt_cuda_batch_norm_train_bf16(
// CUDA-NOT:   linalg.generic
// CUDA:       call @dtrain_rt_cuda_batch_norm_backward_bf16(
// CUDA-NOT:   linalg.generic
// CUDA:       return
// CHECK-LABEL: func.func @batch_norm_16_bit
// CHECK:       arith.extf %{{.*}} : bf16 to f32
// CHECK:       call @dtrain_rt_batch_norm_train_f32(
// CHECK:       arith.truncf %{{.*}} : f32 to bf16
func.func @batch_norm_16_bit(%x: tensor<2x3x4x5xbf16>, %dy: tensor<2x3x4x5xbf16>, %s: tensor<3xf32>, %b: tensor<3xf32>)
    -> (tensor<2x3x4x5xbf16>, tensor<3xf32>, tensor<2x3x4x5xbf16>, tensor<3xf32>) {
  %x32 = nn.cast %x : tensor<2x3x4x5xbf16> to tensor<2x3x4x5xf32>
  %y, %mean, %var = nn.batch_norm_train %x32, %s, %b : tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32> -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>)
  %y16 = nn.cast %y : tensor<2x3x4x5xf32> to tensor<2x3x4x5xbf16>
  %dy32 = nn.cast %dy : tensor<2x3x4x5xbf16> to tensor<2x3x4x5xf32>
  %dx, %ds, %db = nn.batch_norm_train_grad %dy32, %x32, %s, %mean, %var : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>)
  %dx16 = nn.cast %dx : tensor<2x3x4x5xf32> to tensor<2x3x4x5xbf16>
  return %y16, %mean, %dx16, %ds : tensor<2x3x4x5xbf16>, tensor<3xf32>, tensor<2x3x4x5xbf16>, tensor<3xf32>
}

// Where the widened input is read by another op too, or the result is
// used in f32, the batch norm stays f32 between its casts.
// CUDA-LABEL: func.func @batch_norm_f32_uses
// CUDA:       arith.extf %{{.*}} : bf16 to f32
// CUDA:       call @dtrain_rt_cuda_batch_norm_train_f32(
// CUDA:       call @dtrain_rt_cuda_batch_norm_train_f32(
func.func @batch_norm_f32_uses(%x: tensor<2x3x4x5xbf16>, %s: tensor<3xf32>, %b: tensor<3xf32>)
    -> (tensor<2x3x4x5xbf16>, tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) {
  %x32 = nn.cast %x : tensor<2x3x4x5xbf16> to tensor<2x3x4x5xf32>
  %y, %mean, %var = nn.batch_norm_train %x32, %s, %b : tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32> -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>)
  %y16 = nn.cast %y : tensor<2x3x4x5xf32> to tensor<2x3x4x5xbf16>
  %x2 = nn.cast %x : tensor<2x3x4x5xbf16> to tensor<2x3x4x5xf32>
  %z, %mean2, %var2 = nn.batch_norm_train %x2, %s, %b : tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32> -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y16, %x32, %z : tensor<2x3x4x5xbf16>, tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>
}

// -----

// For target=cuda, a ReLU that is a batch norm's only user (through the
// cast back to 16 bits) runs in the batch norm's kernel, and a ReLU
// gradient that is a batch-norm gradient's output gradient in the
// gradient's kernel, which takes the ReLU's output gradient and output
// (DZ, Z) for it: neither ReLU is left, nor the tensor between. The
// gradient that the residual branch reads as well stays. On the CPU both
// stay ReLUs of their own.
// CUDA-DAG: func.func private @dtrain_rt_cuda_batch_norm_train_relu_bf16(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, f32) attributes {dtrain.step_stream}
// CUDA-DAG: func.func private @dtrain_rt_cuda_batch_norm_backward_relu_bf16(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, f32) attributes {dtrain.step_stream}
// CUDA-LABEL: func.func @batch_norm_relu(
// CUDA-SAME:  %[[X:[^:]+]]: tensor<2x3x4x5xbf16>, %[[DZ:[^:]+]]: tensor<2x3x4x5xbf16>
// CUDA-NOT:   linalg.generic
// CUDA:       bufferization.to_buffer %[[X]]
// CUDA:       %[[Z:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x3x4x5xbf16>
// CUDA:       call @dtrain_rt_cuda_batch_norm_train_relu_bf16(
// CUDA:       %[[ZT:.*]] = bufferization.to_tensor %[[Z]]
// CUDA-NOT:   linalg.generic
// CUDA:       bufferization.to_buffer %[[DZ]]
// CUDA:       memref.extract_aligned_pointer_as_index %[[Z]]
// CUDA:       call @dtrain_rt_cuda_batch_norm_backward_relu_bf16(
// CUDA:       %[[DX:.*]] = bufferization.to_tensor
// CUDA:       %[[DW:.*]] = linalg.generic
// CUDA:       call @dtrain_rt_cuda_batch_norm_backward_bf16(
// CUDA:       return %[[ZT]], %[[DX]], %{{.*}}, %[[DW]] :
// CHECK-LABEL: func.func @batch_norm_relu
// CHECK:       call @dtrain_rt_batch_norm_train_f32(
// CHECK:       arith.maximumf
// CHECK:       arith.cmpf ogt
// CHECK:       call @dtrain_rt_batch_norm_backward_f32(
func.func @batch_norm_relu(%x: tensor<2x3x4x5xbf16>, %dz: tensor<2x3x4x5xbf16>, %s: tensor<3xf32>, %b: tensor<3xf32>)
    -> (tensor<2x3x4x5xbf16>, tensor<2x3x4x5xbf16>, tensor<2x3x4x5xbf16>, tensor<2x3x4x5xbf16>) {
  %x32 = nn.cast %x : tensor<2x3x4x5xbf16> to tensor<2x3x4x5xf32>
  %y, %mean, %var = nn.batch_norm_train %x32, %s, %b : tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32> -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>)
  %y16 = nn.cast %y : tensor<2x3x4x5xf32> to tensor<2x3x4x5xbf16>
  %z = nn.relu %y16 : tensor<2x3x4x5xbf16>
  %dy = nn.relu_grad %dz, %z : tensor<2x3x4x5xbf16>
  %dy32 = nn.cast %dy : tensor<2x3x4x5xbf16> to tensor<2x3x4x5xf32>
  %dx, %ds, %db = nn.batch_norm_train_grad %dy32, %x32, %s, %mean, %var : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>)
  %dx16 = nn.cast %dx : tensor<2x3x4x5xf32> to tensor<2x3x4x5xbf16>
  // A ReLU gradient that the residual branch reads too.
  %dw = nn.relu_grad %dx16, %z : tensor<2x3x4x5xbf16>
  %dw32 = nn.cast %dw : tensor<2x3x4x5xbf16> to tensor<2x3x4x5xf32>
  %dv, %ds2, %db2 = nn.batch_norm_train_grad %dw32, %x32, %s, %mean, %var : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>)
  %dv16 = nn.cast %dv : tensor<2x3x4x5xf32> to tensor<2x3x4x5xbf16>
  return %z, %dx16, %dv16, %dw : tensor<2x3x4x5xbf16>, tensor<2x3x4x5xbf16>, tensor<2x3x4x5xbf16>, tensor<2x3x4x5xbf16>
}

// -----

// A batch norm whose result is added to a residual that is there before
// it, the sum's one user a ReLU (a residual block's end), computes the add
// and the ReLU too, reading the residual: neither op is left. Where the
// residual comes only after the batch norm (the other branch of a
// downsampling block, whose batch norm is later), the add stays.
// CUDA-DAG: func.func private @dtrain_rt_cuda_batch_norm_train_add_relu_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, f32) attributes {dtrain.step_stream}
// CUDA-LABEL: func.func @batch_norm_add_relu(
// CUDA-SAME:  %[[X:[^:]+]]: tensor<2x3x4x5xf32>, %[[R:[^:]+]]: tensor<2x3x4x5xf32>
// CUDA-NOT:   linalg.generic
// CUDA:       bufferization.to_buffer %[[R]]
// CUDA:       call @dtrain_rt_cuda_batch_norm_train_add_relu_f32(
// CUDA:       %[[Z:.*]] = bufferization.to_tensor
// CUDA:       call @dtrain_rt_cuda_batch_norm_train_f32(
// CUDA:       call @dtrain_rt_cuda_batch_norm_train_f32(
// CUDA-COUNT-3: linalg.generic
// CUDA:       return %[[Z]], %{{.*}} :
func.func @batch_norm_add_relu(%x: tensor<2x3x4x5xf32>, %r: tensor<2x3x4x5xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>)
    -> (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) {
  %y, %mean, %var = nn.batch_norm_train %x, %s, %b : tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32> -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>)
  %sum = nn.add %r, %y : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32> -> tensor<2x3x4x5xf32>
  %z = nn.relu %sum : tensor<2x3x4x5xf32>
  // Two batch norms into one add: the first's residual comes after it.
  %u, %mean2, %var2 = nn.batch_norm_train %x, %s, %b : tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32> -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>)
  %v, %mean3, %var3 = nn.batch_norm_train %r, %s, %b : tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32> -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>)
  %sum2 = nn.add %u, %v : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32> -> tensor<2x3x4x5xf32>
  %w = nn.relu %sum2 : tensor<2x3x4x5xf32>
  %w2 = nn.add %w, %v : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32> -> tensor<2x3x4x5xf32>
  return %z, %w2 : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>
}

// -----

// train.loss_seed is the constant 1; train.skip_update selects per element
// between the old and the updated value, the flag read as a scalar.
// CHECK-LABEL: func.func @loss_scaling
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: linalg.generic
// CHECK: ^bb0(%[[SKIP:.*]]: i1, %[[OLD:.*]]: f32, %[[NEW:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[KEPT:.*]] = arith.select %[[SKIP]], %[[OLD]], %[[NEW]] : f32
// CHECK: linalg.yield %[[KEPT]]
// CHECK: return %[[ONE]],
func.func @loss_scaling(%skip: tensor<i1>, %w: tensor<4x3xf32>, %w1: tensor<4x3xf32>) -> (tensor<f32>, tensor<4x3xf32>) {
  %seed = train.loss_seed : tensor<f32>
  %0 = train.skip_update %skip, %w, %w1 : tensor<i1>, tensor<4x3xf32>
  return %seed, %0 : tensor<f32>, tensor<4x3xf32>
}

// -----

// The gradients of the window ops and of batch norm are kernel calls; the
// weight gradient passes no bias gradient, and the average-pooling gradient
// no input (NULL).
// CUDA-LABEL: func.func @backward_kernels
// CUDA: call @dtrain_rt_cuda_conv2d_backward_data_f32(
// CUDA: call @dtrain_rt_cuda_conv2d_backward_weights_f32(
// CUDA: call @dtrain_rt_cuda_pool2d_backward_f32(
// CUDA: call @dtrain_rt_cuda_pool2d_backward_f32(
// CUDA: call @dtrain_rt_cuda_batch_norm_backward_f32(
// CHECK-LABEL: func.func @backward_kernels
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @dtrain_rt_conv2d_backward_data_f32(
// CHECK: call @dtrain_rt_conv2d_backward_weights_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[NULL]],
// CHECK: call @dtrain_rt_pool2d_backward_f32(%{{.*}}, %{{.*}}, %{{.*}}, %c0_i32,
// CHECK: call @dtrain_rt_pool2d_backward_f32(%[[NULL]], %{{.*}}, %{{.*}}, %c2_i32,
// CHECK: call @dtrain_rt_batch_norm_backward_f32(
func.func @backward_kernels(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %dy: tensor<2x6x6x6xf32>,
                            %dp: tensor<2x4x4x4xf32>, %s: tensor<4xf32>)
    -> (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) {
  %0 = nn.conv2d_backward_data %dy, %w : tensor<2x6x6x6xf32>, tensor<6x4x3x3xf32> -> tensor<2x4x8x8xf32>
  %1 = nn.conv2d_backward_weights %x, %dy : tensor<2x4x8x8xf32>, tensor<2x6x6x6xf32> -> tensor<6x4x3x3xf32>
  %2 = nn.max_pool2d_grad %dp, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<2x4x4x4xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %3 = nn.avg_pool2d_grad %dp {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<2x4x4x4xf32> -> tensor<2x4x8x8xf32>
  %4:3 = nn.batch_norm_train_grad %x, %x, %s, %s, %s : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return %0, %1, %2, %3, %4#0 : tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>
}

// -----

// An optimizer update and its new state come out of one loop nest.
// CHECK-LABEL: func.func @stateful_updates
// CHECK: %{{.*}}:2 = linalg.generic
// CHECK: linalg.yield %{{.*}}, %{{.*}} : f32, f32
// CHECK: %{{.*}}:3 = linalg.generic
// CHECK: math.powf
// CHECK: math.sqrt
// CHECK: linalg.yield %{{.*}}, %{{.*}}, %{{.*}} : f32, f32, f32
func.func @stateful_updates(%w: tensor<8x4xf32>, %dw: tensor<8x4xf32>, %v: tensor<8x4xf32>, %step: tensor<i64>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %w1, %v1 = train.momentum_update %w, %dw, %v {lr = 0.05 : f64, momentum = 0.9 : f64} : tensor<8x4xf32>
  %w2, %m2, %s2 = train.adam_update %w1, %dw, %v1, %v, %step {lr = 1.0e-3 : f64} : tensor<8x4xf32>, tensor<i64>
  return %v1, %w2, %m2, %s2 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// count_correct: a per-row argmax where only a strictly greater logit
// replaces the kept one (the first maximum wins), then a count of matches.
// CHECK-LABEL: func.func @count_correct
// CHECK: %[[ARGMAX:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: %[[COLUMN:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK: %[[GREATER:.*]] = arith.cmpf ogt
// CHECK: arith.select %[[GREATER]], %{{.*}}, %{{.*}} : f32
// CHECK: arith.select %[[GREATER]], %[[COLUMN]], %{{.*}} : i64
// CHECK: linalg.generic {{.*}} ins(%[[ARGMAX]]#1, %{{.*}} : tensor<4xi64>, tensor<4xi64>)
// CHECK: arith.cmpi eq
// CHECK: arith.extui
// CHECK: arith.addi
func.func @count_correct(%logits: tensor<4x3xf32>, %labels: tensor<4xi64>) -> tensor<i64> {
  %0 = nn.count_correct %logits, %labels : tensor<4x3xf32>, tensor<4xi64> -> tensor<i64>
  return %0 : tensor<i64>
}

// -----

// LARS: the squared norms of the parameter and the gradient are reductions
// of the whole tensors, read as scalars by the update's loop nest.
// CHECK-LABEL: func.func @lars
// CHECK: %[[PN:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]
// CHECK: %[[GN:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]
// CHECK: %{{.*}}:2 = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %[[PN]], %[[GN]] : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, tensor<f32>)
// CHECK: math.sqrt
// CHECK: math.sqrt
// CHECK: arith.select
func.func @lars(%w: tensor<8x4xf32>, %dw: tensor<8x4xf32>, %v: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %w1, %v1 = train.lars_update %w, %dw, %v {lr = 2.0 : f64, momentum = 0.9 : f64, weight_decay = 5.0e-5 : f64} : tensor<8x4xf32>
  return %w1, %v1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// clip_grad passes the gradient strictly inside the bounds.
// CHECK-LABEL: func.func @clip_grad
// CHECK: ^bb0(%[[G:.*]]: f32, %[[X:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[ABOVE:.*]] = arith.cmpf ogt, %[[X]], %{{.*}} : f32
// CHECK: %[[BELOW:.*]] = arith.cmpf olt, %[[X]], %{{.*}} : f32
// CHECK: %[[INSIDE:.*]] = arith.andi %[[ABOVE]], %[[BELOW]] : i1
// CHECK: arith.select %[[INSIDE]], %[[G]], %{{.*}} : f32
func.func @clip_grad(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = nn.clip_grad %dy, %x {min = 0.0 : f64, max = 6.0 : f64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A dropout mask: the key from the seed, step and stream once (three
// SplitMix64 steps) into a 0-d tensor, then one parallel generic hashing
// each element's row-major index with it; elements whose top 24 bits are below 0.25 * 2^24 are 0,
// the others 1 / (1 - 0.25).
// CHECK-LABEL: func.func @dropout_mask
// CHECK-DAG: %[[KEPT:.*]] = arith.constant 1.33333337 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[THRESHOLD:.*]] = arith.constant 4194304 : i64
// CHECK-DAG: %[[STREAM:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[FORTY:.*]] = arith.constant 40 : i64
// CHECK: %[[SEED:.*]] = tensor.extract %{{.*}}[] : tensor<i64>
// CHECK: %[[STEP:.*]] = tensor.extract %{{.*}}[] : tensor<i64>
// CHECK-COUNT-2: arith.muli
// CHECK: arith.xori %{{.*}}, %[[STEP]] : i64
// CHECK-COUNT-2: arith.muli
// CHECK: arith.xori %{{.*}}, %[[STREAM]] : i64
// CHECK: %[[KEY:.*]] = tensor.from_elements %{{.*}} : tensor<i64>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}} ins(%[[KEY]] : tensor<i64>)
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: %[[TOP:.*]] = arith.shrui %{{.*}}, %[[FORTY]] : i64
// CHECK: %[[DROPPED:.*]] = arith.cmpi ult, %[[TOP]], %[[THRESHOLD]] : i64
// CHECK: arith.select %[[DROPPED]], %[[ZERO]], %[[KEPT]] : f32
func.func @dropout_mask(%seed: tensor<i64>, %step: tensor<i64>) -> tensor<2x3xf32> {
  %mask = nn.dropout_mask %seed, %step {ratio = 0.25 : f64, stream = 3 : i64} : tensor<i64>, tensor<i64> -> tensor<2x3xf32>
  return %mask : tensor<2x3xf32>
}

// -----

// A convolution's bias gradient, the sum of its output gradient over N, OH
// and OW: for target=cuda the weight gradient's kernel computes it too
// (the ABI's DB: one block per channel) rather than a loop nest
// whose threads each sum a channel; on the CPU it stays a reduction.
// CUDA-LABEL: func.func @bias_gradient
// CUDA:       %[[DW:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6x4x3x3xf32>
// CUDA:       %[[DB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6xf32>
// CUDA:       %[[DBP:.*]] = llvm.inttoptr {{.*}} : i64 to !llvm.ptr
// CUDA:       call @dtrain_rt_cuda_conv2d_backward_weights_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[DBP]],
// CUDA-NOT:   linalg.generic
// CUDA:       %[[B:.*]] = bufferization.to_tensor %[[DB]]
// CUDA:       return %{{.*}}, %[[B]]
// CHECK-LABEL: func.func @bias_gradient
// CHECK:       %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:       call @dtrain_rt_conv2d_backward_weights_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[NULL]],
// CHECK:       linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]
func.func @bias_gradient(%x: tensor<2x4x8x8xf32>, %dy: tensor<2x6x6x6xf32>) -> (tensor<6x4x3x3xf32>, tensor<6xf32>) {
  %dw = nn.conv2d_backward_weights %x, %dy : tensor<2x4x8x8xf32>, tensor<2x6x6x6xf32> -> tensor<6x4x3x3xf32>
  %db = nn.reduce_sum %dy dims = [0, 2, 3] : tensor<2x6x6x6xf32> -> tensor<6xf32>
  return %dw, %db : tensor<6x4x3x3xf32>, tensor<6xf32>
}

// Two weight gradients of one output gradient: the first computes the sum.
// CUDA-LABEL: func.func @shared_output_gradient
// CUDA:       %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CUDA:       call @dtrain_rt_cuda_conv2d_backward_weights_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[DBP:[^,]*]],
// CUDA:       call @dtrain_rt_cuda_conv2d_backward_weights_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[NULL]],
// CUDA-NOT:   linalg.generic
func.func @shared_output_gradient(%x: tensor<2x4x8x8xf32>, %x2: tensor<2x4x8x8xf32>, %dy: tensor<2x6x6x6xf32>) -> (tensor<6x4x3x3xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>) {
  %dw = nn.conv2d_backward_weights %x, %dy : tensor<2x4x8x8xf32>, tensor<2x6x6x6xf32> -> tensor<6x4x3x3xf32>
  %dw2 = nn.conv2d_backward_weights %x2, %dy : tensor<2x4x8x8xf32>, tensor<2x6x6x6xf32> -> tensor<6x4x3x3xf32>
  %db = nn.reduce_sum %dy dims = [0, 2, 3] : tensor<2x6x6x6xf32> -> tensor<6xf32>
  return %dw, %dw2, %db : tensor<6x4x3x3xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>
}

// -----

// In f64 the kernels are the runtime's reference loops (dtrain_rt_*_f64),
// their floating-point scalars f64 too.
// CHECK-DAG: func.func private @dtrain_rt_matmul_f64(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i32, i32, f64)
// CHECK-DAG: func.func private @dtrain_rt_batch_norm_train_f64(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, f64)
// The f64 reference loops stay on the host for target=cuda too: the host
// waits for the step stream before them.
// CUDA-DAG: func.func private @dtrain_rt_matmul_f64({{[^)]*}}){{$}}
// CUDA-LABEL: func.func @kernels_f64
// CUDA: call @dtrain_rt_matmul_f64(
// CUDA: call @dtrain_rt_batch_norm_train_f64(
// CHECK-LABEL: func.func @kernels_f64
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<2x3xf64>
// CHECK: call @dtrain_rt_matmul_f64(
// CHECK: call @dtrain_rt_batch_norm_train_f64(
func.func @kernels_f64(%x: tensor<2x4xf64>, %w: tensor<3x4xf64>, %s: tensor<3xf64>, %b: tensor<3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>, tensor<3xf64>, tensor<3xf64>) {
  %0 = nn.matmul %x, %w {transpose_rhs} : tensor<2x4xf64>, tensor<3x4xf64> -> tensor<2x3xf64>
  %1:3 = nn.batch_norm_train %0, %s, %b : tensor<2x3xf64>, tensor<3xf64>, tensor<3xf64> -> (tensor<2x3xf64>, tensor<3xf64>, tensor<3xf64>)
  return %0, %1#0, %1#1, %1#2 : tensor<2x3xf64>, tensor<2x3xf64>, tensor<3xf64>, tensor<3xf64>
}

// -----

// A slice is a strided tensor.extract_slice (a view once bufferized).
// CHECK-LABEL: func.func @slice
// CHECK: tensor.extract_slice %{{.*}}[0, 1] [2, 3] [1, 2] : tensor<2x8xf32> to tensor<2x3xf32>
func.func @slice(%x: tensor<2x8xf32>) -> tensor<2x3xf32> {
  %0 = nn.slice %x {sizes = array<i64: 2, 3>, starts = array<i64: 0, 1>, steps = array<i64: 1, 2>} : tensor<2x8xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Channels last: the convolutions' NHWC kernels, with the geometry read
// from NHWC and OHWI shapes (N 2, C 4, H 8, W 8, OC 6, KH 3, KW 3, OH 6,
// OW 6), and a fused bias gradient (CUDA) over N, H and W; a batch norm as
// N H W rows of C channels, one spatial element each.
// CUDA-LABEL: func.func @channels_last
// CUDA:       call @dtrain_rt_cuda_conv2d_nhwc_bf16(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c2_i64, %c4_i64, %c8_i64, %c8_i64, %c6_i64, %c3_i64, %c3_i64, %c6_i64, %c6_i64,
// CUDA:       call @dtrain_rt_cuda_conv2d_backward_data_nhwc_bf16(
// CUDA:       call @dtrain_rt_cuda_conv2d_backward_weights_nhwc_bf16(
// CUDA-NOT:   linalg.generic
// CUDA:       call @dtrain_rt_cuda_batch_norm_train_f32(%{{.*}}, %c72_i64, %c6_i64, %c1_i64,
// CHECK-LABEL: func.func @channels_last
// CHECK:       call @dtrain_rt_conv2d_nhwc_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c2_i64, %c4_i64, %c8_i64, %c8_i64, %c6_i64, %c3_i64, %c3_i64, %c6_i64, %c6_i64,
// CHECK:       call @dtrain_rt_conv2d_backward_data_nhwc_f32(
// CHECK:       call @dtrain_rt_conv2d_backward_weights_nhwc_f32(
// CHECK:       call @dtrain_rt_batch_norm_train_f32(%{{.*}}, %c72_i64, %c6_i64, %c1_i64,
func.func @channels_last(%x: tensor<2x8x8x4xbf16>, %w: tensor<6x3x3x4xbf16>, %dy: tensor<2x6x6x6xbf16>,
                         %s: tensor<6xf32>, %b: tensor<6xf32>, %y32: tensor<2x6x6x6xf32>)
    -> (tensor<2x6x6x6xbf16>, tensor<2x8x8x4xbf16>, tensor<6x3x3x4xbf16>, tensor<6xbf16>, tensor<2x6x6x6xf32>) {
  %0 = nn.conv2d %x, %w {channels_last} : tensor<2x8x8x4xbf16>, tensor<6x3x3x4xbf16> -> tensor<2x6x6x6xbf16>
  %1 = nn.conv2d_backward_data %dy, %w {channels_last} : tensor<2x6x6x6xbf16>, tensor<6x3x3x4xbf16> -> tensor<2x8x8x4xbf16>
  %2 = nn.conv2d_backward_weights %x, %dy {channels_last} : tensor<2x8x8x4xbf16>, tensor<2x6x6x6xbf16> -> tensor<6x3x3x4xbf16>
  %3 = nn.reduce_sum %dy dims = [0, 1, 2] : tensor<2x6x6x6xbf16> -> tensor<6xbf16>
  %4:3 = nn.batch_norm_train %y32, %s, %b {channels_last} : tensor<2x6x6x6xf32>, tensor<6xf32>, tensor<6xf32> -> (tensor<2x6x6x6xf32>, tensor<6xf32>, tensor<6xf32>)
  return %0, %1, %2, %3, %4#0 : tensor<2x6x6x6xbf16>, tensor<2x8x8x4xbf16>, tensor<6x3x3x4xbf16>, tensor<6xbf16>, tensor<2x6x6x6xf32>
}

// -----

// Channels-last pooling: the NHWC kernels, with the geometry read from NHWC
// shapes (N 2, C 4, H 8, W 6, OH 4, OW 3); bf16 on CUDA, widened to f32 on
// the CPU.
// CUDA-LABEL: func.func @pooling_channels_last
// CUDA:       call @dtrain_rt_cuda_pool2d_nhwc_bf16(%{{.*}}, %{{.*}}, %c0_i32, %c2_i64, %c4_i64, %c8_i64, %c6_i64, %c4_i64, %c3_i64, %c2_i64, %c2_i64, %c2_i64, %c2_i64,
// CUDA:       call @dtrain_rt_cuda_pool2d_backward_nhwc_bf16(%{{.*}}, %{{.*}}, %{{.*}}, %c0_i32, %c2_i64, %c4_i64, %c8_i64, %c6_i64, %c4_i64, %c3_i64,
// CUDA:       call @dtrain_rt_cuda_pool2d_backward_nhwc_bf16(%{{.*}}, %{{.*}}, %{{.*}}, %c1_i32, %c2_i64, %c4_i64, %c8_i64, %c6_i64, %c4_i64, %c3_i64,
// CHECK-LABEL: func.func @pooling_channels_last
// CHECK:       call @dtrain_rt_pool2d_nhwc_f32(%{{.*}}, %{{.*}}, %c0_i32, %c2_i64, %c4_i64, %c8_i64, %c6_i64, %c4_i64, %c3_i64, %c2_i64, %c2_i64, %c2_i64, %c2_i64,
// CHECK:       call @dtrain_rt_pool2d_backward_nhwc_f32(%{{.*}}, %{{.*}}, %{{.*}}, %c0_i32, %c2_i64, %c4_i64, %c8_i64, %c6_i64, %c4_i64, %c3_i64,
// CHECK:       call @dtrain_rt_pool2d_backward_nhwc_f32(%{{.*}}, %{{.*}}, %{{.*}}, %c1_i32, %c2_i64, %c4_i64, %c8_i64, %c6_i64, %c4_i64, %c3_i64,
func.func @pooling_channels_last(%x: tensor<2x8x6x4xbf16>, %dy: tensor<2x4x3x4xbf16>)
    -> (tensor<2x4x3x4xbf16>, tensor<2x8x6x4xbf16>, tensor<2x8x6x4xbf16>) {
  %0 = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, channels_last} : tensor<2x8x6x4xbf16> -> tensor<2x4x3x4xbf16>
  %1 = nn.max_pool2d_grad %dy, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, channels_last} : tensor<2x4x3x4xbf16>, tensor<2x8x6x4xbf16> -> tensor<2x8x6x4xbf16>
  %2 = nn.avg_pool2d_grad %dy {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, count_include_pad, channels_last} : tensor<2x4x3x4xbf16> -> tensor<2x8x6x4xbf16>
  return %0, %1, %2 : tensor<2x4x3x4xbf16>, tensor<2x8x6x4xbf16>, tensor<2x8x6x4xbf16>
}

// -----

// The transformers' element-wise ops: sqrt, exp, log and erf as math ops;
// pow by products, a division, a square root or math.powf; in f32 for
// 16-bit elements.
// CHECK-LABEL: func.func @transcendentals
// CHECK: math.sqrt %{{.*}} : f32
// CHECK: math.exp %{{.*}} : f32
// CHECK: math.log %{{.*}} : f32
// CHECK: math.erf %{{.*}} : f32
// CHECK: ^bb0(%[[SQ:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.mulf %[[SQ]], %[[SQ]] : f32
// CHECK: ^bb0(%[[CUBE:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[SQUARE:.*]] = arith.mulf %[[CUBE]], %[[CUBE]] : f32
// CHECK-NEXT: arith.mulf %[[SQUARE]], %[[CUBE]] : f32
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: math.sqrt %{{.*}} : f32
// CHECK: math.powf %{{.*}}, %{{.*}} : f32
// CHECK: ^bb0(%[[HALF:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: %[[WIDE:.*]] = arith.extf %[[HALF]] : bf16 to f32
// CHECK-NEXT: %[[ERF:.*]] = math.erf %[[WIDE]] : f32
// CHECK-NEXT: arith.truncf %[[ERF]] : f32 to bf16
// CHECK-NOT: nn.
func.func @transcendentals(%x: tensor<8xf32>, %h: tensor<8xbf16>) -> (tensor<8xf32>, tensor<8xbf16>) {
  %0 = nn.sqrt %x : tensor<8xf32>
  %1 = nn.exp %0 : tensor<8xf32>
  %2 = nn.log %1 : tensor<8xf32>
  %3 = nn.erf %2 : tensor<8xf32>
  %4 = nn.pow %3 {exponent = 2.0 : f64} : tensor<8xf32>
  %5 = nn.pow %4 {exponent = 3.0 : f64} : tensor<8xf32>
  %6 = nn.pow %5 {exponent = -1.0 : f64} : tensor<8xf32>
  %7 = nn.pow %6 {exponent = 0.5 : f64} : tensor<8xf32>
  %8 = nn.pow %7 {exponent = 2.5 : f64} : tensor<8xf32>
  %9 = nn.erf %h : tensor<8xbf16>
  return %8, %9 : tensor<8xf32>, tensor<8xbf16>
}

// -----

// A rank-3 product is a batch of products, one batched kernel call (oneDNN,
// cuBLAS's strided batched GEMM): batch, M, N, K, the transposes, beta.
// 16-bit operands are widened for the CPU's f32 kernel and the result
// rounded; the CUDA target has 16-bit kernels.
// CHECK-LABEL: func.func @batch_matmul
// CHECK: call @dtrain_rt_batch_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %c2_i64, %c4_i64, %c5_i64, %c3_i64, %c1_i32, %c0_i32, %cst)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: call @dtrain_rt_batch_matmul_f32(
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CUDA-LABEL: func.func @batch_matmul
// CUDA: call @dtrain_rt_cuda_batch_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %c2_i64, %c4_i64, %c5_i64, %c3_i64, %c1_i32, %c0_i32, %cst)
// CUDA-NOT: arith.extf
// CUDA: call @dtrain_rt_cuda_batch_matmul_bf16(
func.func @batch_matmul(%a: tensor<2x3x4xf32>, %b: tensor<2x3x5xf32>, %c: tensor<2x3x4xbf16>, %d: tensor<2x3x5xbf16>) -> (tensor<2x4x5xf32>, tensor<2x4x5xbf16>) {
  %0 = nn.matmul %a, %b {transpose_lhs} : tensor<2x3x4xf32>, tensor<2x3x5xf32> -> tensor<2x4x5xf32>
  %1 = nn.matmul %c, %d {transpose_lhs} : tensor<2x3x4xbf16>, tensor<2x3x5xbf16> -> tensor<2x4x5xbf16>
  return %0, %1 : tensor<2x4x5xf32>, tensor<2x4x5xbf16>
}

// -----

// nn.embedding is one loop nest over the result that reads the table where
// each index points: a negative index wraps, then the row is clamped into
// the table. i32 indices are widened first.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[TABLE:.*]]: tensor<10x3xf32>, %[[IDS:.*]]: tensor<2x4xi64>, %[[IDS32:.*]]: tensor<5xi32>)
// CHECK-DAG: %[[LAST:.*]] = arith.constant 9 : i64
// CHECK-DAG: %[[ROWS:.*]] = arith.constant 10 : i64
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[IDS]] : tensor<2x4xi64>)
// CHECK: ^bb0(%[[ID:.*]]: i64, %{{.*}}: f32):
// CHECK:   %[[NEG:.*]] = arith.cmpi slt, %[[ID]], %[[ZERO]]
// CHECK:   %[[WRAP:.*]] = arith.addi %[[ID]], %[[ROWS]]
// CHECK:   %[[ROW:.*]] = arith.select %[[NEG]], %[[WRAP]], %[[ID]]
// CHECK:   %[[LOW:.*]] = arith.maxsi %[[ROW]], %[[ZERO]]
// CHECK:   %[[CLAMPED:.*]] = arith.minsi %[[LOW]], %[[LAST]]
// CHECK:   %[[I:.*]] = arith.index_cast %[[CLAMPED]] : i64 to index
// CHECK:   %[[J:.*]] = linalg.index 2
// CHECK:   tensor.extract %[[TABLE]][%[[I]], %[[J]]] : tensor<10x3xf32>
// CHECK: ins(%[[IDS32]] : tensor<5xi32>)
// CHECK:   arith.extsi %{{.*}} : i32 to i64
func.func @embedding(%table: tensor<10x3xf32>, %ids: tensor<2x4xi64>, %ids32: tensor<5xi32>) -> (tensor<2x4x3xf32>, tensor<5x3xf32>) {
  %0 = nn.embedding %table, %ids : tensor<10x3xf32>, tensor<2x4xi64> -> tensor<2x4x3xf32>
  %1 = nn.embedding %table, %ids32 : tensor<10x3xf32>, tensor<5xi32> -> tensor<5x3xf32>
  return %0, %1 : tensor<2x4x3xf32>, tensor<5x3xf32>
}

// -----

// Its gradient is the runtime's scatter-add kernel: grad, 64-bit indices
// (i32 ones widened), the zeroed result, then the count of indices, the
// rows and a row's width. 16-bit gradients go through the f32 kernel.
// CHECK-LABEL: func.func @embedding_grad
// CHECK: call @dtrain_rt_embedding_grad_f32(%{{.*}}, %{{.*}}, %{{.*}}, %c8_i64, %c10_i64, %c3_i64)
// CHECK: arith.extsi %{{.*}} : i32 to i64
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: call @dtrain_rt_embedding_grad_f32(%{{.*}}, %{{.*}}, %{{.*}}, %c5_i64, %c10_i64, %c3_i64)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CUDA-LABEL: func.func @embedding_grad
// CUDA: call @dtrain_rt_cuda_embedding_grad_f32(%{{.*}}, %{{.*}}, %{{.*}}, %c8_i64, %c10_i64, %c3_i64)
// CUDA: call @dtrain_rt_cuda_embedding_grad_f32(%{{.*}}, %{{.*}}, %{{.*}}, %c5_i64, %c10_i64, %c3_i64)
func.func @embedding_grad(%g: tensor<2x4x3xf32>, %ids: tensor<2x4xi64>, %h: tensor<5x3xbf16>, %ids32: tensor<5xi32>) -> (tensor<10x3xf32>, tensor<10x3xbf16>) {
  %0 = nn.embedding_grad %g, %ids {rows = 10 : i64} : tensor<2x4x3xf32>, tensor<2x4xi64> -> tensor<10x3xf32>
  %1 = nn.embedding_grad %h, %ids32 {rows = 10 : i64} : tensor<5x3xbf16>, tensor<5xi32> -> tensor<10x3xbf16>
  return %0, %1 : tensor<10x3xf32>, tensor<10x3xbf16>
}

// -----

// Logits with positions (B x T x V) are the loss's rows flattened: the loss
// divides by all B * T of them, and the gradient takes the logits' shape.
// CHECK-LABEL: func.func @cross_entropy_positions
// CHECK-DAG: arith.constant 8.000000e+00 : f32
// CHECK-DAG: arith.constant -1.250000e-01 : f32
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<2x4x5xf32> into tensor<8x5xf32>
// CHECK: %[[LABELS:.*]] = tensor.collapse_shape %arg1 {{\[\[}}0, 1]] : tensor<2x4xi64> into tensor<8xi64>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [2, 4, 5] : tensor<8x5xf32> into tensor<2x4x5xf32>
func.func @cross_entropy_positions(%logits: tensor<2x4x5xf32>, %labels: tensor<2x4xi64>, %one: tensor<f32>) -> (tensor<f32>, tensor<i64>, tensor<2x4x5xf32>) {
  %0 = nn.softmax_cross_entropy %logits, %labels : tensor<2x4x5xf32>, tensor<2x4xi64> -> tensor<f32>
  %1 = nn.count_correct %logits, %labels : tensor<2x4x5xf32>, tensor<2x4xi64> -> tensor<i64>
  %2 = nn.softmax_cross_entropy_grad %one, %logits, %labels : tensor<f32>, tensor<2x4x5xf32>, tensor<2x4xi64> -> tensor<2x4x5xf32>
  return %0, %1, %2 : tensor<f32>, tensor<i64>, tensor<2x4x5xf32>
}

// -----

// nn.select is one element-wise loop nest of arith.select, its operands
// broadcast.
// CHECK-DAG: #[[MASK:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0, d1) -> ()>
// CHECK-DAG: #[[ALL:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @select
// CHECK: linalg.generic {indexing_maps = [#[[MASK]], #[[SCALAR]], #[[ALL]], #[[ALL]]], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1, %arg2 : tensor<1x4xi1>, tensor<f32>, tensor<3x4xf32>)
// CHECK: ^bb0(%[[C:.*]]: i1, %[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK:   %[[R:.*]] = arith.select %[[C]], %[[A]], %[[B]] : f32
// CHECK:   linalg.yield %[[R]]
func.func @select(%mask: tensor<1x4xi1>, %fill: tensor<f32>, %x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = nn.select %mask, %fill, %x : tensor<1x4xi1>, tensor<f32>, tensor<3x4xf32> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
