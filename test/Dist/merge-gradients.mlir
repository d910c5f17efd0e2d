// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-merge-gradients="strategy=threshold threshold-bytes=8" | FileCheck %s
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-merge-gradients="strategy=none" | FileCheck %s --check-prefix=NONE
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-merge-gradients="strategy=mgwfbp report profile=%S/Inputs/merge-profile.json" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=MGWFBP
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-merge-gradients="strategy=optimal report profile=%S/Inputs/merge-profile.json" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=OPTIMAL
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-merge-gradients="strategy=optimal report profile=%S/Inputs/merge-profile-cores.json" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=CORES
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-merge-gradients="strategy=optimal report profile=%S/Inputs/merge-profile-filled.json" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=FILLED
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-merge-gradients="strategy=optimal report profile=%S/Inputs/merge-profile-spare-cores.json" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=SPARE
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-merge-gradients="strategy=none report profile=%S/Inputs/merge-profile-alone.json" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=ALONE-NONE
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-merge-gradients="strategy=optimal report profile=%S/Inputs/merge-profile-alone.json" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=ALONE
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-merge-gradients="strategy=mgwfbp report profile=%S/Inputs/merge-profile-backward.json" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=BACKWARD
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-merge-gradients="strategy=mgwfbp report profile=%S/Inputs/merge-profile-refit.json" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=UNREFIT
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-merge-gradients="strategy=mgwfbp report profile=%S/Inputs/merge-profile-refit.json refit-profiles=%S/Inputs/merge-profile-refit-bucket.json" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=BACKWARD
// RUN: not dtrain-opt %s --dtrain-merge-gradients="strategy=fastest" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not dtrain-opt %s --dtrain-build-training --dtrain-data-parallel --dtrain-merge-gradients="profile=%S/Inputs/missing.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not dtrain-opt %s --dtrain-merge-gradients="profile=%S/Inputs/missing.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not dtrain-opt %s --dtrain-build-training --dtrain-data-parallel --dtrain-merge-gradients="profile=%S/Inputs/merge-profile-short.json" 2>&1 | FileCheck %s --check-prefix=SHORT
// RUN: not dtrain-opt %s --dtrain-build-training --dtrain-data-parallel --dtrain-merge-gradients="profile=%S/Inputs/merge-profile-bad-cores.json" 2>&1 | FileCheck %s --check-prefix=BAD-CORES
// RUN: not dtrain-opt %s --dtrain-build-training --dtrain-data-parallel --dtrain-merge-gradients="profile=%S/Inputs/merge-profile-bad-alone.json" 2>&1 | FileCheck %s --check-prefix=BAD-ALONE
// RUN: not dtrain-opt %s --dtrain-build-training --dtrain-data-parallel --dtrain-merge-gradients="profile=%S/Inputs/merge-profile-bad-backward.json" 2>&1 | FileCheck %s --check-prefix=BAD-BACKWARD
// RUN: not dtrain-opt %s --dtrain-build-training --dtrain-data-parallel --dtrain-merge-gradients="profile=%S/Inputs/merge-profile-bad-samples.json" 2>&1 | FileCheck %s --check-prefix=BAD-SAMPLES
// RUN: not dtrain-opt %s --dtrain-build-training --dtrain-data-parallel --dtrain-merge-gradients="profile=%S/Inputs/merge-profile-bad-bytes.json" 2>&1 | FileCheck %s --check-prefix=BAD-BYTES
// RUN: not dtrain-opt %s --dtrain-build-training --dtrain-data-parallel --dtrain-merge-gradients="refit-profiles=%S/Inputs/merge-profile-refit-bucket.json" 2>&1 | FileCheck %s --check-prefix=REFIT-ALONE
// RUN: not dtrain-opt %s --dtrain-build-training --dtrain-data-parallel --dtrain-merge-gradients="profile=%S/Inputs/merge-profile-refit.json refit-profiles=%S/Inputs/merge-profile-refit-ranks.json" 2>&1 | FileCheck %s --check-prefix=REFIT-RANKS
// RUN: not dtrain-opt %s --dtrain-build-training --dtrain-data-parallel --dtrain-merge-gradients="profile=%S/Inputs/merge-profile-refit.json refit-profiles=%S/Inputs/merge-profile-refit-bucket.json,%S/Inputs/merge-profile-backward.json" 2>&1 | FileCheck %s --check-prefix=REFIT-UNSAMPLED
// RUN: not dtrain-opt %s --dtrain-build-training --dtrain-data-parallel --dtrain-merge-gradients="profile=%S/Inputs/merge-profile-refit.json refit-profiles=%S/Inputs/missing.json" 2>&1 | FileCheck %s --check-prefix=REFIT-MISSING
// RUN: not dtrain-opt %s --dtrain-build-training --dtrain-data-parallel --dtrain-merge-gradients="profile=%S/Inputs/merge-profile-refit.json refit-profiles=%S/Inputs/merge-profile-refit-other.json" 2>&1 | FileCheck %s --check-prefix=REFIT-OTHER

// The step's exchanges, in production order: the loss (4 bytes), fc2.bias
// (8), fc2.weight (24), fc1.weight (48). threshold-bytes=8 closes a bucket
// once it holds 8 bytes: [loss, fc2.bias], [fc2.weight], [fc1.weight].
// The first bucket is filled where fc2.bias's exchange started, waited for
// where its earliest member was needed (fc2.bias's update, before the
// return that needs the loss), and sliced back into the members.
// CHECK-LABEL: func.func @train_step
// CHECK:      %[[LOSS:.*]] = nn.softmax_cross_entropy
// CHECK:      %[[DB2:.*]] = nn.reduce_sum %{{.*}} dims = [0] : tensor<5x2xf32> -> tensor<2xf32>
// CHECK-NEXT: %[[EMPTY:.*]] = tensor.empty() : tensor<3xf32>
// CHECK-NEXT: %[[FLAT_L:.*]] = tensor.expand_shape %[[LOSS]] [] output_shape [1] : tensor<f32> into tensor<1xf32>
// CHECK-NEXT: %[[B0:.*]] = tensor.insert_slice %[[FLAT_L]] into %[[EMPTY]][0] [1] [1] : tensor<1xf32> into tensor<3xf32>
// CHECK-NEXT: %[[B1:.*]] = tensor.insert_slice %[[DB2]] into %[[B0]][1] [2] [1] : tensor<2xf32> into tensor<3xf32>
// CHECK-NEXT: %[[REQ:.*]], %[[FLY:.*]] = comm.all_reduce_start <mean> %[[B1]] on %{{.*}} : tensor<3xf32>
// CHECK:      %[[DW2:.*]] = nn.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<5x3xf32>, tensor<5x2xf32> -> tensor<3x2xf32>
// CHECK-NEXT: comm.all_reduce_start <mean> %[[DW2]] on %{{.*}} : tensor<3x2xf32>
// CHECK:      comm.all_reduce_start <mean> %{{.*}} on %{{.*}} : tensor<4x3xf32>
// CHECK:      train.momentum_update
// CHECK:      train.momentum_update
// CHECK-NEXT: %[[AVG:.*]] = comm.wait %[[REQ]], %[[FLY]] : tensor<3xf32>
// CHECK-NEXT: %[[L:.*]] = tensor.extract_slice %[[AVG]][0] [1] [1] : tensor<3xf32> to tensor<1xf32>
// CHECK-NEXT: %[[AVG_L:.*]] = tensor.collapse_shape %[[L]] [] : tensor<1xf32> into tensor<f32>
// CHECK-NEXT: %[[AVG_B2:.*]] = tensor.extract_slice %[[AVG]][1] [2] [1] : tensor<3xf32> to tensor<2xf32>
// CHECK-NEXT: train.momentum_update %{{.*}}, %[[AVG_B2]], %{{.*}}
// CHECK-NEXT: return {{.*}}, %[[AVG_L]], %{{.*}} :

// NONE-LABEL: func.func @train_step
// NONE-COUNT-4: comm.all_reduce_start
// NONE-NOT: tensor.insert_slice

// With the profile's model (start-up 1 s, 0.25 s per byte, gradients ready
// at 0, 0.9, 1.8 and 2.7 s), MG-WFBP's rule merges everything: each
// gradient is ready less than a start-up after the bucket could start; the
// bucket then waits for the last one: 2.7 + 1 + 0.25 * 84 = 24.7 s. Sending
// the loss at once (0 to 2 s) and the rest together (2.7 + 1 + 20) ends
// at 23.7 s, the optimum; one exchange each ends at 25 s.
// MGWFBP: remark: bucket 0: exchanges 0..3, 84 bytes, predicted 2.700000 s to 24.700000 s
// MGWFBP: remark: mgwfbp: 1 buckets for 4 exchanges, predicted end 24.700000 s (none: 25.000000 s)
// OPTIMAL: remark: bucket 0: exchanges 0..0, 4 bytes, predicted 0.000000 s to 2.000000 s
// OPTIMAL: remark: bucket 1: exchanges 1..3, 80 bytes, predicted 2.700000 s to 23.700000 s
// OPTIMAL: remark: optimal: 2 buckets for 4 exchanges, predicted end 23.700000 s (none: 25.000000 s)

// The same profile with a line for exchanges alone (0.5 s + 0.05 s per
// byte), which the exchanges take once the backward pass has ended (2.7
// s): exchange 1 starts at 2 s and would end at 5 s; 0.7 s of its 3 s is
// done at 2.7 s, the rest takes 2.3 / 3 of its 0.9 s alone. The last 80
// bytes take 4.5 s alone.
// ALONE-NONE: remark: bucket 1: exchanges 1..1, 8 bytes, predicted 2.000000 s to 3.390000 s
// ALONE-NONE: remark: bucket 2: exchanges 2..2, 24 bytes, predicted 3.390000 s to 5.090000 s
// ALONE-NONE: remark: bucket 3: exchanges 3..3, 48 bytes, predicted 5.090000 s to 7.990000 s
// ALONE: remark: bucket 1: exchanges 1..3, 80 bytes, predicted 2.700000 s to 7.200000 s
// ALONE: remark: optimal: 2 buckets for 4 exchanges, predicted end 7.200000 s (none: 7.990000 s)

// With a line for exchanges beside the backward pass too (0.2 s + 0.1 s
// per byte), never below the line alone: exchange 0 takes 0.7 s (not 0.6),
// exchange 1 1 s (not 0.9). Exchange 2 starts at 1.9 s and would end at
// 4.5 s; 0.8 s of its 2.6 s is done at 2.7 s, the rest takes 1.8 / 2.6 of
// its 1.7 s alone. MG-WFBP's rule merges within the backward line's
// startup, 0.2 s, which no gradient is ready within: one bucket each.
// BACKWARD: remark: bucket 0: exchanges 0..0, 4 bytes, predicted 0.000000 s to 0.700000 s
// BACKWARD: remark: bucket 1: exchanges 1..1, 8 bytes, predicted 0.900000 s to 1.900000 s
// BACKWARD: remark: bucket 2: exchanges 2..2, 24 bytes, predicted 1.900000 s to 3.876923 s
// BACKWARD: remark: bucket 3: exchanges 3..3, 48 bytes, predicted 3.876923 s to 6.776923 s
// BACKWARD: remark: mgwfbp: 4 buckets for 4 exchanges, predicted end 6.776923 s (none: 6.776923 s)

// A profile whose exchanges within the backward pass are all of 1 KiB
// (102.6 s each, a mean of 3): no line beside the backward pass, which
// then costs the steps' line (1 s + 0.25 s per byte). MG-WFBP merges
// within its startup, 1 s: one bucket after the backward pass, at the line
// alone, 2.7 + 0.5 + 0.05 * 84 = 7.4 s.
// UNREFIT: remark: mgwfbp: 1 buckets for 4 exchanges, predicted end 7.400000 s (none: 7.990000 s)
// Refitted with a merged trainer's profile, whose one bucket of 16 KiB
// within the backward pass took 1638.6 s: the line through both sizes is
// 0.2 s + 0.1 s per byte, the line above (BACKWARD), and the line alone,
// refitted to the same two sizes (none in the bucket's profile), stays 0.5
// s + 0.05 s per byte: the same plan and timeline as BACKWARD.

// The same model on 4 ranks sharing 2 cores, each exchange taking 11 s +
// 0.1 s per byte of CPU time: twice that is taken from the computation,
// but for the last bucket's, which starts once the backward pass has
// ended. Two buckets then end no earlier than 2.7 + 22 + 0.2 * 4 = 25.5 s
// (the loss alone first), one at 24.7 s (its exchange), one exchange each
// at 2.7 + 3 * 22 + 0.2 * 36 = 75.9 s (the last one holds 48 bytes).
// CORES: remark: bucket 0: exchanges 0..3, 84 bytes, predicted 2.700000 s to 24.700000 s
// CORES: remark: optimal: 1 buckets for 4 exchanges, predicted end 24.700000 s (none: 75.900000 s)

// 2 ranks, one computing thread each, on 2 cores: the communication threads
// share the cores with the computation, which pays each exchange's CPU
// time, 6 s + 0.1 s per byte (times 1 rank per core) before the last
// bucket: one exchange each would end at 2.7 + 18 + 0.1 * 36 = 24.3 s, so
// its exchanges set its end, 25 s; two buckets end at 23.7 s, as without
// the bound. Then the computing thread submits and waits for each bucket,
// 1.5 s of its CPU time, which its measured CPU time left out: two buckets
// end at 26.7 s, one at 24.7 + 1.5 = 26.2 s, one exchange each at 31 s.
// FILLED: remark: bucket 0: exchanges 0..3, 84 bytes, predicted 2.700000 s to 24.700000 s
// FILLED: remark: optimal: 1 buckets for 4 exchanges, predicted end 26.200000 s (none: 31.000000 s)
// The same on 4 cores: the communication threads have cores to spare, and
// the computation's wall time holds its thread's calls.
// SPARE: remark: optimal: 2 buckets for 4 exchanges, predicted end 23.700000 s (none: 25.000000 s)

// BAD: error: --dtrain-merge-gradients: strategy 'fastest' is not valid (accepted: none, threshold, mgwfbp, optimal)
// MISSING: error: --dtrain-merge-gradients: profile {{.*}}missing.json: cannot read it: No such file or directory
// SHORT: error: --dtrain-merge-gradients: profile {{.*}}merge-profile-short.json has 2 compute_s values but @train_step has 4 exchanges
// BAD-ALONE: error: --dtrain-merge-gradients: profile {{.*}}merge-profile-bad-alone.json: alone_startup_s and alone_per_byte_s must both be numbers >= 0, or both absent
// BAD-BACKWARD: error: --dtrain-merge-gradients: profile {{.*}}merge-profile-bad-backward.json: backward_startup_s and backward_per_byte_s must both be numbers >= 0, or both absent
// BAD-SAMPLES: error: --dtrain-merge-gradients: profile {{.*}}merge-profile-bad-samples.json: backward_exchanges must be an array of [bytes > 0, seconds >= 0, count > 0]
// BAD-BYTES: error: --dtrain-merge-gradients: profile {{.*}}merge-profile-bad-bytes.json: exchange_bytes must be an array of numbers > 0
// REFIT-ALONE: error: --dtrain-merge-gradients: refit-profiles needs profile=FILE.json
// REFIT-RANKS: error: --dtrain-merge-gradients: refit-profiles: profile {{.*}}merge-profile-refit-ranks.json is of 2 ranks, but {{.*}}merge-profile-refit.json of 4
// REFIT-UNSAMPLED: error: --dtrain-merge-gradients: refit-profiles: profile {{.*}}merge-profile-backward.json has no backward_exchanges and alone_exchanges to refit to (a trainer's --profile writes them)
// REFIT-OTHER: error: --dtrain-merge-gradients: refit-profiles: profile {{.*}}merge-profile-refit-other.json exchanges 44 bytes a step, but {{.*}}merge-profile-refit.json 84: not profiles of one trainer
// REFIT-MISSING: error: --dtrain-merge-gradients: profile {{.*}}missing.json: cannot read it: No such file or directory
// BAD-CORES: error: --dtrain-merge-gradients: profile {{.*}}merge-profile-bad-cores.json: exchange_cpu_startup_s, exchange_cpu_per_byte_s and exchange_caller_cpu_s must be >= 0, host_ranks, host_threads and host_cores >= 1

func.func @forward(%w1: tensor<4x3xf32> {train.param = "fc1.weight"}, %w2: tensor<3x2xf32> {train.param = "fc2.weight"}, %b2: tensor<2xf32> {train.param = "fc2.bias"}, %x: tensor<5x4xf32> {train.input = "x"}) -> tensor<5x2xf32> {
  %0 = nn.matmul %x, %w1 : tensor<5x4xf32>, tensor<4x3xf32> -> tensor<5x3xf32>
  %1 = nn.relu %0 : tensor<5x3xf32>
  %2 = nn.matmul %1, %w2 : tensor<5x3xf32>, tensor<3x2xf32> -> tensor<5x2xf32>
  %3 = nn.add %2, %b2 : tensor<5x2xf32>, tensor<2xf32> -> tensor<5x2xf32>
  return %3 : tensor<5x2xf32>
}
