// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-simulate-step="ranks=1,2,1024 network=1gbe profile=%S/Inputs/simulate-profile.json" -o /dev/null | FileCheck %s
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-simulate-step -o /dev/null | FileCheck %s --check-prefix=DEFAULTS
// RUN: not dtrain-opt %s --dtrain-simulate-step="network=carrier-pigeon" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not dtrain-opt %s --dtrain-simulate-step="profile=%S/Inputs/missing.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-simulate-step="network=profile profile=%S/Inputs/simulate-profile-4.json" -o /dev/null | FileCheck %s --check-prefix=MEASURED
// RUN: not dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-simulate-step="network=profile profile=%S/Inputs/simulate-profile.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NO-RANKS
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-simulate-step="network=profile profile=%S/Inputs/simulate-profile-tail.json" -o /dev/null | FileCheck %s --check-prefix=TAIL
// RUN: not dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-simulate-step="network=profile profile=%S/Inputs/simulate-profile-bad-tail.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-TAIL
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-simulate-step="network=profile profile=%S/Inputs/simulate-profile-timed.json" -o /dev/null | FileCheck %s --check-prefix=TIMED
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-simulate-step="network=profile profile=%S/Inputs/simulate-profile-lines.json" -o /dev/null | FileCheck %s --check-prefix=LINES
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-simulate-step="network=profile profile=%S/Inputs/merge-profile-refit.json refit-profiles=%S/Inputs/merge-profile-refit-bucket.json" -o /dev/null | FileCheck %s --check-prefix=REFIT
// RUN: not dtrain-opt %s --dtrain-simulate-step="refit-profiles=%S/Inputs/merge-profile-refit-bucket.json" 2>&1 | FileCheck %s --check-prefix=REFIT-ALONE
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-simulate-step="network=profile profile=%S/Inputs/simulate-profile-cores.json" -o /dev/null | FileCheck %s --check-prefix=CORES
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-simulate-step="ranks=2,32 network=1gbe profile=%S/Inputs/simulate-profile.json sparse-density=0.001" -o /dev/null | FileCheck %s --check-prefix=SPARSE
// RUN: not dtrain-opt %s --dtrain-simulate-step="sparse-density=2" 2>&1 | FileCheck %s --check-prefix=BAD-DENSITY
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-simulate-step="ranks=1024 network=1gbe profile=%S/Inputs/simulate-profile.json threshold-bytes=8 first-bucket-bytes=0" -o /dev/null | FileCheck %s --check-prefix=THRESHOLD
// RUN: not dtrain-opt %s --dtrain-simulate-step="threshold-bytes=-1" 2>&1 | FileCheck %s --check-prefix=BAD-THRESHOLD
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-simulate-step="network=profile profile=%S/Inputs/simulate-profile-select.json sparse-density=0.001" -o /dev/null | FileCheck %s --check-prefix=SELECT
// RUN: dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-simulate-step="network=profile profile=%S/Inputs/simulate-profile-slow-select.json sparse-density=0.001" -o /dev/null | FileCheck %s --check-prefix=SLOW-SELECT
// RUN: not dtrain-opt %s --dtrain-build-training="optimizer=momentum lr=0.1" --dtrain-data-parallel --dtrain-simulate-step="network=profile profile=%S/Inputs/simulate-profile-bad-select.json sparse-density=0.001" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-SELECT

// The four exchanges (loss 4 bytes, fc2.bias 8, fc2.weight 24, fc1.weight
// 48) are ready at 0, 0.05, 0.1 and 0.3 ms (the profile); on 2 ranks over
// 1 GbE an all-reduce costs 2 x 50 us + 8.51 ns per byte. One exchange
// each: 0 to 0.100034, then back to back until 0.400714 ms: efficiency
// 0.3 / 0.4007 = 0.75. The optimum sends fc1.weight once it exists (0.3
// to 0.400408); of the plans that end then, the fewest buckets send the
// loss and fc2's two gradients together before it (0.1 to 0.200306): 2
// buckets. On 1 rank exchanges cost nothing, so one bucket; on 1024 ranks
// a start-up is 102.3 ms, so again one bucket.
// CHECK:      @train_step: 4 exchanges, 0.0 MB; compute 0.30 ms per step (measured ({{.*}}simulate-profile.json), the updates estimated; 0.30 ms up to the last exchange, 0.00 ms after it); network 1gbe (50.00 us, 0.117 GB/s)
// CHECK-NEXT: ranks  none ms (eff)      threshold ms (eff) mgwfbp ms (eff)    optimal ms (eff)   optimal buckets
// CHECK-NEXT: 1          0.30 (1.00)        0.30 (1.00)        0.30 (1.00)        0.30 (1.00)   1
// CHECK-NEXT: 2          0.40 (0.75)        0.40 (0.75)        0.40 (0.75)        0.40 (0.75)   2
// CHECK-NEXT: 1024     409.{{[0-9]+}} (0.00)      102.{{[0-9]+}} (0.00)      102.{{[0-9]+}} (0.00)      102.{{[0-9]+}} (0.00)   1

// Without a profile the compute times are estimated from the ops; the
// default rank counts run from 8 to 1024 on 10 GbE.
// DEFAULTS:      @train_step: 4 exchanges, 0.0 MB; compute {{[0-9.]+}} ms per step (estimated; {{.*}}); network 10gbe (20.00 us, 1.175 GB/s)
// DEFAULTS-NEXT: ranks
// DEFAULTS-NEXT: 8
// DEFAULTS:      1024
// DEFAULTS-NOT:  @forward

// BAD: error: --dtrain-simulate-step: network 'carrier-pigeon' is not valid (accepted: 1gbe, 10gbe, 100gb-ib, and profile with a profile=FILE)
// MISSING: error: --dtrain-simulate-step: profile {{.*}}missing.json: cannot read it: No such file or directory

// network=profile: the profile's all-reduce cost (1 ms + 1 us per byte)
// at its 4 ranks. One exchange each: 0 to 1.004, 1.004 to 2.012, 2.012 to
// 3.036, 3.036 to 4.084 ms; start-ups dominate, so the optimum is one
// bucket once fc1.weight exists: 0.3 + 1 + 0.084 = 1.384 ms, efficiency
// 0.3 / 1.384 = 0.22 (and so for the threshold and MG-WFBP's rule).
// MEASURED:      all-reduce 1000.0 us + 1000.000 ns/byte measured on 4 ranks
// MEASURED-NEXT: ranks
// MEASURED-NEXT: 4          4.08 (0.07)        1.38 (0.22)        1.38 (0.22)        1.38 (0.22)   1

// With lines beside the backward pass (2 ms + 1 us per byte) and alone
// (0.1 ms + 0.5 us per byte): the loss's exchange would take 2.004 ms
// beside the backward pass, which ends at 0.3 ms; 0.3 / 2.004 of it is
// done then, the rest takes 1.704 / 2.004 of its 0.102 ms alone (0.3867
// ms), then the others alone: 0.104, 0.112 and 0.124 ms, to 0.7267 ms.
// One bucket, alone at 0.3 ms: 0.3 + 0.1 + 0.042 = 0.442 ms; MG-WFBP's
// rule merges within the 2 ms startup.
// LINES:      all-reduce 1000.0 us + 1000.000 ns/byte measured on 4 ranks; beside the backward pass 2000.0 us + 1000.000 ns/byte; alone 100.0 us + 500.000 ns/byte
// LINES-NEXT: ranks
// LINES-NEXT: 4          0.73 (0.41)        0.44 (0.68)        0.44 (0.68)        0.44 (0.68)   1

// refit-profiles: the line beside the backward pass fitted to both
// profiles' exchanges within it (see merge-gradients.mlir), which the
// first profile alone has none of; the same timelines as there.
// REFIT: all-reduce 1000000.0 us + 250000000.000 ns/byte measured on 4 ranks; beside the backward pass 200000.0 us + 100000000.000 ns/byte; alone 500000.0 us + 50000000.000 ns/byte
// REFIT-NEXT: ranks
// REFIT-NEXT: 4       6776.92 (0.40)     7400.00 (0.36)     6776.92 (0.40)     6776.92 (0.40)   4
// REFIT-ALONE: error: --dtrain-simulate-step: refit-profiles needs profile=FILE.json

// The profile's updates (tail_s, 0.5 ms) follow the last exchange: 4.084 +
// 0.5 ms unmerged, 1.384 + 0.5 ms in one bucket; efficiency (0.3 + 0.5) /
// 4.584 = 0.17 and 0.8 / 1.884 = 0.42.
// TAIL:      @train_step: 4 exchanges, 0.0 MB; compute 0.80 ms per step (measured ({{.*}}simulate-profile-tail.json); 0.30 ms up to the last exchange, 0.50 ms after it); all-reduce 1000.0 us + 1000.000 ns/byte measured on 4 ranks
// TAIL-NEXT: ranks
// TAIL-NEXT: 4          4.58 (0.17)        1.88 (0.42)        1.88 (0.42)        1.88 (0.42)   1
// BAD-TAIL: error: --dtrain-simulate-step: profile {{.*}}simulate-profile-bad-tail.json: tail_s must be a number >= 0
// NO-RANKS: error: --dtrain-simulate-step: network=profile needs the profile's "ranks"

func.func @forward(%w1: tensor<4x3xf32> {train.param = "fc1.weight"}, %w2: tensor<3x2xf32> {train.param = "fc2.weight"}, %b2: tensor<2xf32> {train.param = "fc2.bias"}, %x: tensor<5x4xf32> {train.input = "x"}) -> tensor<5x2xf32> {
  %0 = nn.matmul %x, %w1 : tensor<5x4xf32>, tensor<4x3xf32> -> tensor<5x3xf32>
  %1 = nn.relu %0 : tensor<5x3xf32>
  %2 = nn.matmul %1, %w2 : tensor<5x3xf32>, tensor<3x2xf32> -> tensor<5x2xf32>
  %3 = nn.add %2, %b2 : tensor<5x2xf32>, tensor<2xf32> -> tensor<5x2xf32>
  return %3 : tensor<5x2xf32>
}

// The same profile with timed all-reduces of 4, 48 and 84 bytes (1, 2 and
// 100 ms): between them the cost is interpolated (1 + (M - 4) / 44 ms up
// to 48 bytes), and never below the line. One exchange each: 1.004, then
// 1.091, 1.455 and 2 ms back to back, ending at 5.549 ms. The 84-byte
// bucket of the threshold and MG-WFBP plans costs 100 ms (100.3 ms). The
// optimum sends the first three together once fc2.weight exists (0.1 +
// 1.727 ms) and fc1.weight after them: 3.827 ms, efficiency 0.08.
// TIMED:      all-reduce 1000.0 us + 1000.000 ns/byte measured on 4 ranks, never below 3 timed all-reduces
// TIMED-NEXT: ranks
// TIMED-NEXT: 4          5.55 (0.05)      100.30 (0.00)      100.30 (0.00)        3.83 (0.08)   2

// A fast network (10 us + 10 ns per byte) on 4 ranks sharing 2 cores,
// each exchange taking 10 us of CPU time: 20 us of the computation's. The
// exchanges alone would end 10 us after fc1.weight is ready (0.31 ms) in
// any plan, but each bucket before the last also delays the computation
// (the last starts once the backward pass has ended): one bucket ends at
// 0.31 ms (threshold and optimal), four (none, and MG-WFBP's rule, which
// merges nothing: the gradients are 50 us apart) at 0.3 + 3 * 0.02 = 0.36
// ms. Then the computing thread's calls to submit and wait for each
// bucket, 5 us of its CPU time (10 us at 2 ranks per core): 0.32 and 0.40
// ms.
// CORES:      all-reduce 10.0 us + 10.000 ns/byte measured on 4 ranks; the computing threads fill the cores: each exchange takes 20.0 us + 0.000 ns/byte from the computation, and 10.0 us of its thread's
// CORES-NEXT: ranks
// CORES-NEXT: 4          0.40 (0.75)        0.32 (0.94)        0.40 (0.75)        0.32 (0.94)   1

// sparse-density=0.001: each exchange sends k = 1 entry (8 bytes: 68 ns at
// 117.5 MB/s) after a pass over its 1, 2, 6 and 12 elements (1 ns each).
// All-gather on 2 ranks: one message, 50.068 us + n ns: the exchanges end
// at 0.050069, 0.100139, 0.150213 and, from 0.3, 0.350080 ms: efficiency
// 0.3 / 0.35008 = 0.86. gTop-k on 2 ranks: a merge, a broadcast of the
// indices and an all-reduce of the values, 3 x 50 us + 2 x 68 ns + n ns
// each: back to back until 0.450417, then 0.600565 ms (0.50). On 32 ranks
// all-gather takes 31 messages (1.552 ms each, 6.21 ms for all four),
// gTop-k 3 log2(32) = 15 (0.751 ms, 3.00 ms: 0.10).
// SPARSE: ranks none ms (eff) threshold ms (eff) mgwfbp ms (eff) optimal ms (eff) optimal buckets top-k ms (eff) gtop-k ms (eff)
// SPARSE-NEXT: 2 {{.*}} 2 0.35 (0.86) 0.60 (0.50)
// SPARSE-NEXT: 32 {{.*}} 1 6.21 (0.05) 3.00 (0.10)
// BAD-DENSITY: error: --dtrain-simulate-step: sparse-density must be in [0, 1]

// 8-byte buckets (no first bucket of its own): the loss and fc2.bias (12
// bytes, ready at 0.05 ms), fc2.weight, fc1.weight. On 1024 ranks over
// 1 GbE each costs a 102.3 ms start-up (2 x 1023 x 50 us): 0.05 + 3 x
// 102.3 = 306.95 ms, where the default 25 MiB bucket ends at 0.3 + 102.3.
// THRESHOLD: 1024 409.20 (0.00) 306.95 (0.00) 102.60 (0.00) 102.60 (0.00) 1
// BAD-THRESHOLD: error: --dtrain-simulate-step: threshold-bytes and first-bucket-bytes must be >= 0

// A profile with a measured selection speed (1e6 elements/s) and an
// all-reduce of 600 us + 15 ns/byte on 4 ranks, which the ring model gives
// with 100 us per message and 100 MB/s: all-gather costs n us + 3 x
// (100 us + 80 ns) and ends at 1.22 ms (0.301, 0.603, 0.910, 1.222); gTop-k
// costs n us + 6 x 100 us + 4 x 80 ns and ends at 2.42 ms (0.601, 1.203,
// 1.809, 2.421).
// SELECT: all-reduce 600.0 us + 15.000 ns/byte measured on 4 ranks
// SELECT-NEXT: ranks
// SELECT-NEXT: 4 {{.*}} 1.22 (0.25) 2.42 (0.12)
// BAD-SELECT: select_elements_per_s must be a number > 0

// Selection at 1e4 elements/s (100 us per element, 2.1 ms for the 21) and
// the last gradient ready at 10 ms: the exchanges end at 11.50 ms
// (all-gather; gTop-k 11.80), but the selections also take the cores from
// the computation, which then ends at 10 + 2.1 = 12.10 ms.
// SLOW-SELECT: ranks none ms
// SLOW-SELECT-NEXT: 4 {{.*}} 12.10 (0.83) 12.10 (0.83)
