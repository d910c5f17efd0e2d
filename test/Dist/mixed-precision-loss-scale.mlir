// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-mixed-precision="loss-scale=dynamic" | FileCheck %s
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-mixed-precision="loss-scale=static:1024 wire=f16" | FileCheck %s --check-prefix=STATIC
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=sgd lr=0.1" --dtrain-mixed-precision="loss-scale=dynamic init-scale=8 growth-factor=4 backoff-factor=0.25 growth-interval=10 min-scale=2" | FileCheck %s --check-prefix=SINGLE
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-sparsify="density=0.5" --dtrain-mixed-precision="loss-scale=dynamic" | FileCheck %s --check-prefix=SPARSE
// RUN: not dtrain-opt %s --dtrain-mixed-precision="loss-scale=always" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not dtrain-opt %s --dtrain-mixed-precision="loss-scale=static:-1" 2>&1 | FileCheck %s --check-prefix=BAD-STATIC
// RUN: not dtrain-opt %s --dtrain-mixed-precision="loss-scale=dynamic growth-interval=0" 2>&1 | FileCheck %s --check-prefix=BAD-INTERVAL
// RUN: not dtrain-opt %s --dtrain-mixed-precision="loss-scale=dynamic min-scale=1e9" 2>&1 | FileCheck %s --check-prefix=BAD-MIN

func.func @forward(%w: tensor<4x2xf32> {train.param = "fc.weight"}, %b: tensor<2xf32> {train.param = "fc.bias"}, %x: tensor<5x4xf32> {train.input = "x"}) -> tensor<5x2xf32> {
  %0 = nn.matmul %x, %w : tensor<5x4xf32>, tensor<4x2xf32> -> tensor<5x2xf32>
  %1 = nn.add %0, %b : tensor<5x2xf32>, tensor<2xf32> -> tensor<5x2xf32>
  return %1 : tensor<5x2xf32>
}

// Dynamic: the scale and its clean-step count are optimizer state (a stored
// 0 stands for 2^16), and so is the count of skipped steps.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x2xf32> {train.param = "fc.weight"}, %[[B:[^:]*]]: tensor<2xf32> {train.param = "fc.bias"}, %[[VW:[^:]*]]: tensor<4x2xf32> {train.optimizer_state = "fc.weight.momentum_buffer"}, %[[VB:[^:]*]]: tensor<2xf32> {train.optimizer_state = "fc.bias.momentum_buffer"}, %[[S:[^:]*]]: tensor<f32> {train.optimizer_state = "loss_scale"}, %[[CLEAN:[^:]*]]: tensor<i64> {train.optimizer_state = "loss_scale.clean_steps"}, %[[SKIPPED:[^:]*]]: tensor<i64> {train.optimizer_state = "loss_scale.skipped_steps"}
// CHECK-SAME: tensor<f32> {train.updated = "loss_scale"}, tensor<i64> {train.updated = "loss_scale.clean_steps"}, tensor<i64> {train.updated = "loss_scale.skipped_steps"})
// CHECK:      %[[STORED:.*]] = tensor.extract %[[S]][] : tensor<f32>
// CHECK:      %[[UNSET:.*]] = arith.cmpf oeq, %[[STORED]], %{{.*}} : f32
// CHECK:      %[[INIT:.*]] = arith.constant 6.553600e+04 : f32
// CHECK:      %[[SCALE:.*]] = arith.select %[[UNSET]], %[[INIT]], %[[STORED]] : f32
// CHECK:      %[[INV:.*]] = arith.divf %{{.*}}, %[[SCALE]] : f32
// CHECK:      %[[INVT:.*]] = tensor.from_elements %[[INV]] : tensor<f32>
// CHECK:      %[[SEED:.*]] = tensor.from_elements %[[SCALE]] : tensor<f32>
// The backward pass starts from S; the averaged loss is the unscaled one.
// CHECK:      %[[LOSS:.*]] = nn.softmax_cross_entropy
// CHECK:      comm.all_reduce_start <mean> %[[LOSS]]
// CHECK:      nn.softmax_cross_entropy_grad %[[SEED]],
// Each gradient is checked (the sum of it times 0) before its exchange.
// CHECK:      %[[DB:.*]] = nn.reduce_sum %{{.*}} dims = [0] : tensor<5x2xf32> -> tensor<2xf32>
// CHECK:      %[[ZB:.*]] = nn.mul %[[DB]], %{{.*}} : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
// CHECK:      %[[FB:.*]] = nn.reduce_sum %[[ZB]] dims = [0] : tensor<2xf32> -> tensor<f32>
// CHECK:      comm.all_reduce_start <mean> %[[DB]]
// CHECK:      %[[DW:.*]] = nn.matmul
// CHECK:      %[[ZW:.*]] = nn.mul %[[DW]], %{{.*}} : tensor<4x2xf32>, tensor<f32> -> tensor<4x2xf32>
// CHECK:      %[[FW:.*]] = nn.reduce_sum %[[ZW]] dims = [0, 1] : tensor<4x2xf32> -> tensor<f32>
// CHECK:      %[[FLAGS:.*]] = nn.add %[[FB]], %[[FW]]
// One sum of the checks over the ranks, after the last gradient.
// CHECK:      %[[AGREE:.*]], %[[AGREEING:.*]] = comm.all_reduce_start <sum> %[[FLAGS]] on %{{.*}} : tensor<f32>
// CHECK:      comm.all_reduce_start <mean> %[[DW]]
// The updates read the averaged gradients divided by S.
// CHECK:      %[[AW:.*]] = comm.wait
// CHECK:      %[[UW:.*]] = nn.mul %[[AW]], %[[INVT]]
// CHECK:      %[[NW:.*]], %[[NVW:.*]] = train.momentum_update %[[W]], %[[UW]], %[[VW]]
// CHECK:      %[[AB:.*]] = comm.wait
// CHECK:      %[[UB:.*]] = nn.mul %[[AB]], %[[INVT]]
// CHECK:      %[[NB:.*]], %[[NVB:.*]] = train.momentum_update %[[B]], %[[UB]], %[[VB]]
// A NaN in the agreed sum skips the step: every parameter and state keeps
// its old value.
// CHECK:      %[[AGREED:.*]] = comm.wait %[[AGREE]], %[[AGREEING]] : tensor<f32>
// CHECK:      %[[TOTAL:.*]] = tensor.extract %[[AGREED]][] : tensor<f32>
// CHECK:      %[[OVERFLOW:.*]] = arith.cmpf uno, %[[TOTAL]], %[[TOTAL]] : f32
// CHECK:      %[[SKIP:.*]] = tensor.from_elements %[[OVERFLOW]] : tensor<i1>
// CHECK:      %[[KW:.*]] = train.skip_update %[[SKIP]], %[[W]], %[[NW]]
// CHECK:      %[[KB:.*]] = train.skip_update %[[SKIP]], %[[B]], %[[NB]]
// CHECK:      %[[KVW:.*]] = train.skip_update %[[SKIP]], %[[VW]], %[[NVW]]
// CHECK:      %[[KVB:.*]] = train.skip_update %[[SKIP]], %[[VB]], %[[NVB]]
// The skipped count, and the next scale: x2 after 2000 clean steps, x0.5
// (at least 1) on overflow.
// CHECK:      arith.select %[[OVERFLOW]], %c1_i64, %c0_i64 : i64
// CHECK:      %[[GROW:.*]] = arith.cmpi sge, %{{.*}}, %c2000_i64 : i64
// CHECK:      %[[GROWN:.*]] = arith.mulf %[[SCALE]], %cst{{.*}} : f32
// CHECK:      %[[KEPT:.*]] = arith.select %[[GROW]], %[[GROWN]], %[[SCALE]] : f32
// CHECK:      %[[HALF:.*]] = arith.mulf %[[SCALE]], %{{.*}} : f32
// CHECK:      %[[FLOORED:.*]] = arith.maximumf %[[HALF]], %{{.*}} : f32
// CHECK:      arith.select %[[OVERFLOW]], %[[FLOORED]], %[[KEPT]] : f32
// CHECK:      return %[[KW]], %[[KB]], %[[KVW]], %[[KVB]],

// Static: a constant scale, only the skipped count as state. With an f16
// wire, the widened sums are checked too (an f16 sum can overflow).
// STATIC-LABEL: func.func @train_step
// STATIC-NOT: "loss_scale"
// STATIC-SAME: %{{[^:]*}}: tensor<i64> {train.optimizer_state = "loss_scale.skipped_steps"}
// STATIC:     arith.constant 1.024000e+03 : f32
// STATIC:     comm.all_reduce_start <sum> %{{.*}} : tensor<f32>
// STATIC:     %[[W16:.*]] = comm.wait %{{.*}} : tensor<4x2xf16>
// STATIC:     %[[WIDE:.*]] = arith.extf %[[W16]]
// STATIC:     nn.mul %[[WIDE]], %{{.*}} : tensor<4x2xf32>, tensor<f32>

// Without data parallelism the updates' gradients are checked, and there is
// nothing to agree on. The options set the scale's rule.
// SINGLE-LABEL: func.func @train_step
// SINGLE-NOT: comm.
// SINGLE:     arith.constant 8.000000e+00 : f32
// SINGLE:     train.sgd_update
// SINGLE:     arith.cmpf uno
// SINGLE:     arith.constant 10 : i64
// SINGLE:     arith.constant 4.000000e+00 : f32
// SINGLE:     arith.constant 2.500000e-01 : f32
// SINGLE:     arith.constant 2.000000e+00 : f32
// SINGLE:     arith.maximumf

// Sparse exchanges get the gradient divided by S (the residual keeps true
// gradients) and a copy of the residual (a skipped step returns the old
// one); their results are not divided again.
// SPARSE-LABEL: func.func @train_step
// SPARSE:      %[[INVT:.*]] = tensor.from_elements %{{.*}} : tensor<f32>
// SPARSE:      %[[IN:.*]] = nn.mul %{{.*}}, %[[INVT]] : tensor<4x2xf32>, tensor<f32>
// SPARSE-NEXT: %[[COPY:.*]] = bufferization.alloc_tensor() copy(%[[RES:.*]]) : tensor<4x2xf32>
// SPARSE-NEXT: comm.sparse_all_reduce_start <mean> %[[IN]], %[[COPY]]
// SPARSE-NEXT: %[[G:.*]], %[[NR:.*]] = comm.sparse_wait
// SPARSE-NEXT: train.momentum_update %{{.*}}, %[[G]],
// SPARSE:      train.skip_update %{{.*}}, %[[RES]], %[[NR]] : tensor<i1>, tensor<4x2xf32>

// BAD: error: --dtrain-mixed-precision: loss-scale 'always' is not valid (accepted: none, dynamic, static:<s>)
// BAD-STATIC: error: --dtrain-mixed-precision: loss-scale=static:-1 needs a finite scale > 0
// BAD-INTERVAL: error: --dtrain-mixed-precision: growth-interval=0 must be >= 1
// BAD-MIN: error: --dtrain-mixed-precision: min-scale=1e+09 must be > 0 and at most init-scale
