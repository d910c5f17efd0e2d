// RUN: dtrain-opt %s --dtrain-sparsify | FileCheck %s
// RUN: dtrain-opt %s --dtrain-sparsify="density=0.01 select=exact aggregate=gtopk residuals=false" | FileCheck %s --check-prefix=NORES
// RUN: dtrain-opt %s --dtrain-sparsify="warmup=1,0.1 warmup-steps=100" | FileCheck %s --check-prefix=WARMUP
// RUN: dtrain-opt %s --dtrain-sparsify="aggregate=auto" | FileCheck %s --check-prefix=AUTO
// RUN: dtrain-opt %s --dtrain-sparsify="aggregate=auto ranks=4" | FileCheck %s --check-prefix=AUTO4
// RUN: dtrain-opt %s --dtrain-sparsify="aggregate=auto ranks=64" | FileCheck %s --check-prefix=AUTO64
// RUN: dtrain-opt %s --dtrain-merge-gradients="strategy=threshold threshold-bytes=200" --dtrain-sparsify | FileCheck %s --check-prefix=MERGED
// RUN: dtrain-opt %s --dtrain-merge-gradients="strategy=optimal sparse-density=0.001 report" --dtrain-sparsify --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=OMGS
// RUN: dtrain-opt %s --dtrain-merge-gradients="strategy=optimal sparse-density=0.001" --dtrain-sparsify="granularity=tensor" | FileCheck %s --check-prefix=TENSOR
// RUN: dtrain-opt %s --dtrain-sparsify="granularity=tensor" | FileCheck %s --check-prefix=UNMERGED-TENSOR
// RUN: not dtrain-opt %s --dtrain-merge-gradients="sparse-density=0.5 sparse-aggregate=tree" 2>&1 | FileCheck %s --check-prefix=OMGS-BAD
// RUN: not dtrain-opt %s --dtrain-sparsify="density=0" 2>&1 | FileCheck %s --check-prefix=DENSITY
// RUN: not dtrain-opt %s --dtrain-sparsify="select=sorted" 2>&1 | FileCheck %s --check-prefix=SELECT
// RUN: not dtrain-opt %s --dtrain-sparsify="aggregate=ring" 2>&1 | FileCheck %s --check-prefix=AGGREGATE
// RUN: not dtrain-opt %s --dtrain-sparsify="granularity=layer" 2>&1 | FileCheck %s --check-prefix=GRANULARITY
// RUN: not dtrain-opt %s --dtrain-sparsify="warmup=0.5" 2>&1 | FileCheck %s --check-prefix=WARMUP-STEPS
// RUN: not dtrain-opt %s --dtrain-sparsify="warmup=1.5 warmup-steps=2" 2>&1 | FileCheck %s --check-prefix=WARMUP-DENSITY
// RUN: not dtrain-opt %s --dtrain-sparsify="aggregate=auto ranks=1" 2>&1 | FileCheck %s --check-prefix=RANKS
// RUN: not dtrain-opt %s --dtrain-sparsify="aggregate=auto network=token-ring" 2>&1 | FileCheck %s --check-prefix=NETWORK
// RUN: not dtrain-opt %s --dtrain-sparsify="aggregate=auto network=profile" 2>&1 | FileCheck %s --check-prefix=PROFILE

// A step as --dtrain-data-parallel leaves it: three gradient exchanges
// (1M, 2048 and 32 elements) and the loss's, whose result is returned.
func.func @train_step(%w: tensor<1024x1024xf32> {train.param = "w"},
                      %v: tensor<64x32xf32> {train.param = "v"},
                      %b: tensor<32xf32> {train.param = "b"},
                      %m: tensor<32xf32> {train.optimizer_state = "b.momentum_buffer"},
                      %gw: tensor<1024x1024xf32> {train.input = "gw"},
                      %gv: tensor<64x32xf32> {train.input = "gv"},
                      %gb: tensor<32xf32> {train.input = "gb"},
                      %loss: tensor<f32> {train.input = "loss"})
    -> (tensor<1024x1024xf32> {train.updated = "w"},
        tensor<64x32xf32> {train.updated = "v"},
        tensor<32xf32> {train.updated = "b"},
        tensor<f32> {train.output = "loss"}) {
  %world = comm.world : !comm.communicator
  %rl, %il = comm.all_reduce_start <mean> %loss on %world : tensor<f32>
  %rb, %ib = comm.all_reduce_start <mean> %gb on %world : tensor<32xf32>
  %rv, %iv = comm.all_reduce_start <mean> %gv on %world : tensor<64x32xf32>
  %rw, %iw = comm.all_reduce_start <mean> %gw on %world : tensor<1024x1024xf32>
  %ab = comm.wait %rb, %ib : tensor<32xf32>
  %nb = train.sgd_update %b, %ab {lr = 1.0e-1 : f64} : tensor<32xf32>
  %av = comm.wait %rv, %iv : tensor<64x32xf32>
  %nv = train.sgd_update %v, %av {lr = 1.0e-1 : f64} : tensor<64x32xf32>
  %aw = comm.wait %rw, %iw : tensor<1024x1024xf32>
  %nw = train.sgd_update %w, %aw {lr = 1.0e-1 : f64} : tensor<1024x1024xf32>
  %al = comm.wait %rl, %il : tensor<f32>
  return %nw, %nv, %nb, %al : tensor<1024x1024xf32>, tensor<64x32xf32>, tensor<32xf32>, tensor<f32>
}

// Defaults: density 0.001 (k = max(1, floor(0.001 n)): 1, 2 and 1048),
// Gaussian-k, all-gather. One residual per exchange, numbered in order,
// after the parameters and state, updated by a result of the same name.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[M:.*]]: tensor<32xf32> {train.optimizer_state = "b.momentum_buffer"}
// CHECK-SAME: %[[R0:.*]]: tensor<32xf32> {train.rank_state = "residual.0"}
// CHECK-SAME: %[[R1:.*]]: tensor<64x32xf32> {train.rank_state = "residual.1"}
// CHECK-SAME: %[[R2:.*]]: tensor<1024x1024xf32> {train.rank_state = "residual.2"}
// CHECK-SAME: %{{.*}}: tensor<1024x1024xf32> {train.input = "gw"}
// CHECK-SAME: -> (tensor<1024x1024xf32> {train.updated = "w"}, tensor<64x32xf32> {train.updated = "v"}, tensor<32xf32> {train.updated = "b"}, tensor<f32> {train.output = "loss"}, tensor<32xf32> {train.updated = "residual.0"}, tensor<64x32xf32> {train.updated = "residual.1"}, tensor<1024x1024xf32> {train.updated = "residual.2"})
// CHECK:      comm.all_reduce_start <mean> %{{.*}} on %{{.*}} : tensor<f32>
// CHECK:      %[[K0:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[REQ0:.*]], %[[G0:.*]], %[[F0:.*]] = comm.sparse_all_reduce_start <mean> %{{.*}}, %[[R0]] k %[[K0]] on %{{.*}} select <gaussian> aggregate <allgather> : tensor<32xf32>
// CHECK:      %[[K1:.*]] = arith.constant 2 : index
// CHECK-NEXT: comm.sparse_all_reduce_start <mean> %{{.*}}, %[[R1]] k %[[K1]] on %{{.*}} select <gaussian> aggregate <allgather> : tensor<64x32xf32>
// CHECK:      %[[K2:.*]] = arith.constant 1048 : index
// CHECK-NEXT: comm.sparse_all_reduce_start <mean> %{{.*}}, %[[R2]] k %[[K2]] on %{{.*}} select <gaussian> aggregate <allgather> : tensor<1024x1024xf32>
// CHECK:      %[[AVG0:.*]], %[[NEW0:.*]] = comm.sparse_wait %[[REQ0]], %[[G0]], %[[F0]] : tensor<32xf32>
// CHECK-NEXT: train.sgd_update %{{.*}}, %[[AVG0]]
// CHECK:      %{{.*}}, %[[NEW1:.*]] = comm.sparse_wait
// CHECK:      %{{.*}}, %[[NEW2:.*]] = comm.sparse_wait
// CHECK:      %[[LOSS:.*]] = comm.wait %{{.*}}, %{{.*}} : tensor<f32>
// CHECK:      return %{{.*}}, %{{.*}}, %{{.*}}, %[[LOSS]], %[[NEW0]], %[[NEW1]], %[[NEW2]] :

// Without residuals every step starts from zero, and the step gains no
// state. k at density 0.01: 1, 20, 10485.
// NORES-LABEL: func.func @train_step
// NORES-NOT:  "residual.
// NORES:      %[[Z0:.*]] = arith.constant dense<0.000000e+00> : tensor<32xf32>
// NORES:      comm.sparse_all_reduce_start <mean> %{{.*}}, %[[Z0]] k %{{.*}} on %{{.*}} select <exact> aggregate <gtopk> : tensor<32xf32>
// NORES:      arith.constant 20 : index
// NORES:      arith.constant 10485 : index
// NORES-NOT:  "residual.

// Warm-up: the step count is state; k is dense (density 1) for steps
// 0..99, at density 0.1 for 100..199, then 0.001.
// WARMUP-LABEL: func.func @train_step
// WARMUP-SAME: %[[STEP:[^ ]*]]: tensor<i64> {train.optimizer_state = "sparsify.step"}
// WARMUP-SAME: tensor<i64> {train.updated = "sparsify.step"}
// WARMUP:      %[[OLD:.*]] = tensor.extract %[[STEP]][] : tensor<i64>
// WARMUP-NEXT: %[[S:.*]] = arith.index_cast %[[OLD]] : i64 to index
// WARMUP:      %[[NEXT:.*]] = arith.addi %[[STEP]], %{{.*}} : tensor<i64>
// WARMUP:      %[[FINAL:.*]] = arith.constant 1048 : index
// WARMUP-NEXT: %[[C200:.*]] = arith.constant 200 : index
// WARMUP-NEXT: %[[IN1:.*]] = arith.cmpi slt, %[[S]], %[[C200]] : index
// WARMUP-NEXT: %[[K01:.*]] = arith.constant 104857 : index
// WARMUP-NEXT: %[[SEL1:.*]] = arith.select %[[IN1]], %[[K01]], %[[FINAL]] : index
// WARMUP-NEXT: %[[C100:.*]] = arith.constant 100 : index
// WARMUP-NEXT: %[[IN0:.*]] = arith.cmpi slt, %[[S]], %[[C100]] : index
// WARMUP-NEXT: %[[K1:.*]] = arith.constant 1048576 : index
// WARMUP-NEXT: %[[K:.*]] = arith.select %[[IN0]], %[[K1]], %[[SEL1]] : index
// WARMUP-NEXT: comm.sparse_all_reduce_start <mean> %{{.*}}, %{{.*}} k %[[K]] on %{{.*}} : tensor<1024x1024xf32>
// WARMUP:      return %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NEXT]],

// aggregate=auto at run time: per exchange, the runs of the cheapest
// aggregate over the rank counts, chosen by comm.size (allgather 0, gtopk
// 1, dense 2). 1 GbE (50 us, 117.5 MB/s), selection at 1e9 elements/s:
// - 32 elements (k = 1): all-gather's P-1 messages of 8 bytes cost 50.1 us
//   at 2 ranks and 100.2 us at 3, against recursive doubling's 51.1 and
//   102.2 us; from 4 ranks dense wins (102.2 against 150.2 us);
// - 2048 elements (k = 2): all-gather (P-1) x 50.14 us + 2 us against
//   doubling's ceil(log2 P) x 119.7 us: all-gather up to 10 ranks (453 us
//   against 479), dense from 11 (503 against 479);
// - 1M elements (k = 1048): all-gather (P-1) x 121.4 us against gTop-k's
//   ceil(log2 P) x 292.7 us: all-gather up to 10 ranks (1092 against
//   1171 us), gTop-k from 11 (1213 against 1171).
// AUTO-LABEL: func.func @train_step
// AUTO:      %[[P0:.*]] = comm.size %[[WORLD:.*]]
// AUTO-NEXT: %[[AG0:.*]] = arith.constant 0 : index
// AUTO-NEXT: %[[C4:.*]] = arith.constant 4 : index
// AUTO-NEXT: %[[FROM4:.*]] = arith.cmpi sge, %[[P0]], %[[C4]] : index
// AUTO-NEXT: %[[DENSE0:.*]] = arith.constant 2 : index
// AUTO-NEXT: %[[CHOICE0:.*]] = arith.select %[[FROM4]], %[[DENSE0]], %[[AG0]] : index
// AUTO-NEXT: comm.sparse_all_reduce_start <mean> %{{.*}}, %{{.*}} k %{{.*}} on %[[WORLD]] select <gaussian> aggregate <auto> %[[CHOICE0]] : tensor<32xf32>
// AUTO:      %[[P1:.*]] = comm.size %[[WORLD]]
// AUTO:      %[[C11:.*]] = arith.constant 11 : index
// AUTO-NEXT: %[[FROM11:.*]] = arith.cmpi sge, %[[P1]], %[[C11]] : index
// AUTO-NEXT: %[[DENSE1:.*]] = arith.constant 2 : index
// AUTO-NEXT: %[[CHOICE1:.*]] = arith.select %[[FROM11]], %[[DENSE1]], %{{.*}} : index
// AUTO-NEXT: comm.sparse_all_reduce_start {{.*}} aggregate <auto> %[[CHOICE1]] : tensor<64x32xf32>
// AUTO:      %[[P2:.*]] = comm.size %[[WORLD]]
// AUTO:      %[[C11B:.*]] = arith.constant 11 : index
// AUTO-NEXT: %[[FROM11B:.*]] = arith.cmpi sge, %[[P2]], %[[C11B]] : index
// AUTO-NEXT: %[[GTOPK:.*]] = arith.constant 1 : index
// AUTO-NEXT: %[[CHOICE2:.*]] = arith.select %[[FROM11B]], %[[GTOPK]], %{{.*}} : index
// AUTO-NEXT: comm.sparse_all_reduce_start {{.*}} aggregate <auto> %[[CHOICE2]] : tensor<1024x1024xf32>

// aggregate=auto ranks=4: chosen here, 1 GbE (50 us, 117.5 MB/s), 4 ranks: all-gather takes 3
// messages, gTop-k 6, so all-gather wins where sparse wins. The 32-element
// gradient stays dense (2 messages of recursive doubling, 102 us, against
// 150 us); 2048 elements: dense 240 us, all-gather 152 us.
// AUTO4-LABEL: func.func @train_step
// AUTO4:     comm.all_reduce_start <mean> %{{.*}} on %{{.*}} : tensor<32xf32>
// AUTO4:     comm.sparse_all_reduce_start {{.*}} aggregate <allgather> : tensor<64x32xf32>
// AUTO4:     comm.sparse_all_reduce_start {{.*}} aggregate <allgather> : tensor<1024x1024xf32>

// 64 ranks: all-gather's 63 messages lose to gTop-k's 18; the 32 and 2048
// elements stay dense (recursive doubling: 0.31 and 0.72 ms, gTop-k 0.9
// ms); the 1M elements take gTop-k (2.8 ms against 214 ms).
// AUTO64-LABEL: func.func @train_step
// AUTO64:     comm.all_reduce_start <mean> %{{.*}} on %{{.*}} : tensor<32xf32>
// AUTO64:     comm.all_reduce_start <mean> %{{.*}} on %{{.*}} : tensor<64x32xf32>
// AUTO64:     comm.sparse_all_reduce_start {{.*}} aggregate <gtopk> : tensor<1024x1024xf32>

// After merging, the bucket that holds the loss (loss, gb, gv: 2081
// elements) stays dense; gw's bucket is sparsified.
// MERGED-LABEL: func.func @train_step
// MERGED:     comm.all_reduce_start <mean> %{{.*}} on %{{.*}} : tensor<2081xf32>
// MERGED:     comm.sparse_all_reduce_start {{.*}} : tensor<1024x1024xf32>
// MERGED-NOT: comm.sparse_all_reduce_start

// Merged sparsification (OMGS-SGD): planned for sparse buckets, the loss
// stays alone and the three gradients share one bucket. The default cost
// (100 us + 12.8 ns/byte, a 4-rank ring) is a network of 16.7 us and
// 117.2 MB/s; a sparse bucket then costs 3 messages (50 us) plus, per byte,
// the selection (1 / 4e9 s) and 3 x 8 x 0.001 / 4 bytes sent: 0.301 ns. The
// gradients' bucket (4202624 bytes) takes 1.266 ms after the loss's 50 us.
// OMGS: remark: bucket 0: exchanges 0..0, 4 bytes, predicted 0.000000 s to 0.000050 s
// OMGS: remark: bucket 1: exchanges 1..3, 4202624 bytes, predicted 0.000050 s to 0.001366 s
// OMGS: comm.all_reduce_start <mean> %{{.*}} on %{{.*}} : tensor<f32>
// OMGS: comm.sparse_all_reduce_start {{.*}} aggregate <allgather> : tensor<1050656xf32>
// OMGS-NOT: comm.sparse_all_reduce_start
// granularity=tensor: the bucket of gb, gv and gw is selected per member
// gradient (segments of 32, 2048 and 1048576 elements; k for the bucket,
// floor(0.001 * 1050656) = 1050, shared among them by the runtime). The
// default (bucket) has no segments.
// TENSOR-LABEL: func.func @train_step
// TENSOR:     %[[K:.*]] = arith.constant 1050 : index
// TENSOR-NEXT: comm.sparse_all_reduce_start <mean> %{{.*}}, %{{.*}} k %[[K]] on %{{.*}} select <gaussian> aggregate <allgather> segments [32, 2048, 1048576] : tensor<1050656xf32>

// Without merging, each exchange is one tensor: no segments.
// UNMERGED-TENSOR-LABEL: func.func @train_step
// UNMERGED-TENSOR-COUNT-3: comm.sparse_all_reduce_start {{.*}} aggregate <allgather> :
// UNMERGED-TENSOR-NOT: segments

// OMGS-BAD: error: --dtrain-merge-gradients: sparse-density must be in [0, 1], ranks >= 2 and sparse-aggregate allgather or gtopk

// DENSITY: error: --dtrain-sparsify: density=0 is not in (0, 1]
// SELECT: error: --dtrain-sparsify: select 'sorted' is not valid (accepted: exact, gaussian, dgc, random)
// GRANULARITY: error: --dtrain-sparsify: granularity 'layer' is not valid (accepted: bucket, tensor)
// AGGREGATE: error: --dtrain-sparsify: aggregate 'ring' is not valid (accepted: allgather, gtopk, auto)
// WARMUP-STEPS: error: --dtrain-sparsify: warmup needs warmup-steps=N with N >= 1 (steps per warm-up stage)
// WARMUP-DENSITY: error: --dtrain-sparsify: warmup density 1.5 is not in (0, 1]
// RANKS: error: --dtrain-sparsify: aggregate=auto needs ranks >= 2, or 0 to choose at run time (got 1)
// NETWORK: error: --dtrain-sparsify: network 'token-ring' is not valid (accepted: 1gbe, 10gbe, 100gb-ib, profile)
// PROFILE: error: --dtrain-sparsify: network=profile needs profile=FILE.json
