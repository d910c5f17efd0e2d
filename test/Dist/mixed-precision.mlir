// RUN: dtrain-opt %s --dtrain-mixed-precision="wire=bf16" | FileCheck %s
// RUN: dtrain-opt %s --dtrain-mixed-precision="wire=f16" | FileCheck %s --check-prefix=F16
// RUN: dtrain-opt %s --dtrain-mixed-precision | FileCheck %s --check-prefix=F32
// RUN: dtrain-opt %s --dtrain-merge-gradients="strategy=threshold threshold-bytes=1000000" --dtrain-mixed-precision="wire=bf16" | FileCheck %s --check-prefix=MERGED
// RUN: dtrain-opt %s --dtrain-sparsify="density=0.01" --dtrain-mixed-precision="wire=bf16" | FileCheck %s --check-prefix=SPARSE
// RUN: not dtrain-opt %s --dtrain-mixed-precision="wire=fp8" 2>&1 | FileCheck %s --check-prefix=BAD-WIRE

// A step as --dtrain-data-parallel leaves it: two gradient exchanges, one of
// them a sum, and the loss's, whose result is returned.
func.func @train_step(%w: tensor<64x32xf32> {train.param = "w"},
                      %b: tensor<32xf32> {train.param = "b"},
                      %gw: tensor<64x32xf32> {train.input = "gw"},
                      %gb: tensor<32xf32> {train.input = "gb"},
                      %loss: tensor<f32> {train.input = "loss"})
    -> (tensor<64x32xf32> {train.updated = "w"},
        tensor<32xf32> {train.updated = "b"},
        tensor<f32> {train.output = "loss"}) {
  %world = comm.world : !comm.communicator
  %rl, %il = comm.all_reduce_start <mean> %loss on %world : tensor<f32>
  %rb, %ib = comm.all_reduce_start <sum> %gb on %world : tensor<32xf32>
  %rw, %iw = comm.all_reduce_start <mean> %gw on %world : tensor<64x32xf32>
  %ab = comm.wait %rb, %ib : tensor<32xf32>
  %nb = train.sgd_update %b, %ab {lr = 1.0e-1 : f64} : tensor<32xf32>
  %aw = comm.wait %rw, %iw : tensor<64x32xf32>
  %nw = train.sgd_update %w, %aw {lr = 1.0e-1 : f64} : tensor<64x32xf32>
  %al = comm.wait %rl, %il : tensor<f32>
  return %nw, %nb, %al : tensor<64x32xf32>, tensor<32xf32>, tensor<f32>
}

// Each gradient is rounded where its exchange starts, exchanged in bf16
// (its reduction kept), and widened where it was waited for; the loss
// stays f32.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[GW:[^:]*]]: tensor<64x32xf32> {train.input = "gw"}, %[[GB:[^:]*]]: tensor<32xf32> {train.input = "gb"}
// CHECK:      comm.all_reduce_start <mean> %{{.*}} on %{{.*}} : tensor<f32>
// CHECK-NEXT: %[[NB:.*]] = arith.truncf %[[GB]] : tensor<32xf32> to tensor<32xbf16>
// CHECK-NEXT: %[[RB:.*]], %[[IB:.*]] = comm.all_reduce_start <sum> %[[NB]] on %{{.*}} : tensor<32xbf16>
// CHECK-NEXT: %[[NW:.*]] = arith.truncf %[[GW]] : tensor<64x32xf32> to tensor<64x32xbf16>
// CHECK-NEXT: %[[RW:.*]], %[[IW:.*]] = comm.all_reduce_start <mean> %[[NW]] on %{{.*}} : tensor<64x32xbf16>
// CHECK-NEXT: %[[AB16:.*]] = comm.wait %[[RB]], %[[IB]] : tensor<32xbf16>
// CHECK-NEXT: %[[AB:.*]] = arith.extf %[[AB16]] : tensor<32xbf16> to tensor<32xf32>
// CHECK-NEXT: train.sgd_update %{{.*}}, %[[AB]]
// CHECK-NEXT: %[[AW16:.*]] = comm.wait %[[RW]], %[[IW]] : tensor<64x32xbf16>
// CHECK-NEXT: %[[AW:.*]] = arith.extf %[[AW16]] : tensor<64x32xbf16> to tensor<64x32xf32>
// CHECK-NEXT: train.sgd_update %{{.*}}, %[[AW]]
// CHECK-NEXT: comm.wait %{{.*}}, %{{.*}} : tensor<f32>

// F16-LABEL: func.func @train_step
// F16:     comm.all_reduce_start <mean> %{{.*}} on %{{.*}} : tensor<f32>
// F16:     comm.all_reduce_start <sum> %{{.*}} on %{{.*}} : tensor<32xf16>
// F16:     comm.all_reduce_start <mean> %{{.*}} on %{{.*}} : tensor<64x32xf16>

// The default, f32, changes nothing.
// F32-LABEL: func.func @train_step
// F32-NOT: arith.truncf
// F32-NOT: bf16

// Buckets travel as wholes: with one bucket per run of exchanges that
// share a reduction, the bucket that holds the loss (gv, loss: 17
// elements) stays f32, gb's (a sum) and the bucket of gw and gu go in bf16.
func.func @merged_step(%v: tensor<16xf32> {train.param = "v"},
                       %b: tensor<32xf32> {train.param = "b"},
                       %w: tensor<64x32xf32> {train.param = "w"},
                       %u: tensor<8xf32> {train.param = "u"},
                       %gv: tensor<16xf32> {train.input = "gv"},
                       %gb: tensor<32xf32> {train.input = "gb"},
                       %gw: tensor<64x32xf32> {train.input = "gw"},
                       %gu: tensor<8xf32> {train.input = "gu"},
                       %loss: tensor<f32> {train.input = "loss"})
    -> (tensor<16xf32> {train.updated = "v"},
        tensor<32xf32> {train.updated = "b"},
        tensor<64x32xf32> {train.updated = "w"},
        tensor<8xf32> {train.updated = "u"},
        tensor<f32> {train.output = "loss"}) {
  %world = comm.world : !comm.communicator
  %rv, %iv = comm.all_reduce_start <mean> %gv on %world : tensor<16xf32>
  %rl, %il = comm.all_reduce_start <mean> %loss on %world : tensor<f32>
  %rb, %ib = comm.all_reduce_start <sum> %gb on %world : tensor<32xf32>
  %rw, %iw = comm.all_reduce_start <mean> %gw on %world : tensor<64x32xf32>
  %ru, %iu = comm.all_reduce_start <mean> %gu on %world : tensor<8xf32>
  %av = comm.wait %rv, %iv : tensor<16xf32>
  %nv = train.sgd_update %v, %av {lr = 1.0e-1 : f64} : tensor<16xf32>
  %ab = comm.wait %rb, %ib : tensor<32xf32>
  %nb = train.sgd_update %b, %ab {lr = 1.0e-1 : f64} : tensor<32xf32>
  %aw = comm.wait %rw, %iw : tensor<64x32xf32>
  %nw = train.sgd_update %w, %aw {lr = 1.0e-1 : f64} : tensor<64x32xf32>
  %au = comm.wait %ru, %iu : tensor<8xf32>
  %nu = train.sgd_update %u, %au {lr = 1.0e-1 : f64} : tensor<8xf32>
  %al = comm.wait %rl, %il : tensor<f32>
  return %nv, %nb, %nw, %nu, %al : tensor<16xf32>, tensor<32xf32>, tensor<64x32xf32>, tensor<8xf32>, tensor<f32>
}
// MERGED-LABEL: func.func @merged_step
// MERGED:     comm.all_reduce_start <mean> %{{.*}} on %{{.*}} : tensor<17xf32>
// MERGED:     comm.all_reduce_start <sum> %{{.*}} on %{{.*}} : tensor<32xbf16>
// MERGED:     comm.all_reduce_start <mean> %{{.*}} on %{{.*}} : tensor<2056xbf16>
// MERGED-NOT: comm.all_reduce_start

// Sparse exchanges keep f32 gradients and residuals and send their values
// in bf16: here every gradient's.
// SPARSE-LABEL: func.func @train_step
// SPARSE-NOT: arith.truncf
// SPARSE: comm.sparse_all_reduce_start <sum> {{.*}} select <gaussian> aggregate <allgather> wire bf16 : tensor<32xf32>
// SPARSE: comm.sparse_all_reduce_start <mean> {{.*}} select <gaussian> aggregate <allgather> wire bf16 : tensor<64x32xf32>

// BAD-WIRE: error: --dtrain-mixed-precision: wire 'fp8' is not valid (accepted: bf16, f16, f32)
