//===- Passes.td - Dist phase passes -----------------------*- tablegen -*-===//
//
// The Dist phase rewrites a training step into a data-parallel one: gradient
// exchange, merging into buckets, sparsification and precision.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_DIST_PASSES_TD
#define DTRAIN_DIST_PASSES_TD

include "mlir/Pass/PassBase.td"

def AsyncCollectives : Pass<"dtrain-async-collectives", "func::FuncOp"> {
  let summary = "Split blocking collectives into start/wait pairs that overlap "
                "with computation";
  let description = [{
    Replaces each `comm.all_reduce` on a tensor by a `comm.all_reduce_start`
    at the same place and a `comm.wait` sunk to just before the first use of
    the result in the same block (or to the block's terminator). The
    computation between the two, such as the rest of the backward pass, then
    runs while the gradient is on the network: this is wait-free
    backpropagation (WFBP) once the data-parallel pass has issued each
    exchange as soon as its gradient exists.

    Every rank runs the same rewrite, so the order in which collectives are
    started is the same on all ranks, as MPI and NCCL require. Collectives
    already on memrefs are left alone: their buffers may be aliased, and
    sinking a wait past an aliasing access would be wrong.

    Example:

    ```mlir
    %g = nn.matmul ...
    %a = comm.all_reduce <mean> %g on %world : tensor<4x8xf32>
    %h = nn.relu %x : ...          // independent work
    %p = train.sgd_update %w, %a {lr = 1.0e-1 : f64} : tensor<4x8xf32>
    ```

    becomes

    ```mlir
    %g = nn.matmul ...
    %req, %inflight = comm.all_reduce_start <mean> %g on %world : tensor<4x8xf32>
    %h = nn.relu %x : ...
    %a = comm.wait %req, %inflight : tensor<4x8xf32>
    %p = train.sgd_update %w, %a {lr = 1.0e-1 : f64} : tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::dtrain::comm::CommDialect"];
}

def DataParallel : Pass<"dtrain-data-parallel", "func::FuncOp"> {
  let summary = "Average every gradient over the ranks, overlapped with the "
                "backward pass";
  let description = [{
    Makes a training step of `--dtrain-build-training` synchronous
    data-parallel: the gradient operand of every optimizer update
    (`train.sgd_update`, `momentum_update`, `lars_update`, `adam_update`)
    is replaced by its `comm.all_reduce <mean>` over `comm.world`, issued
    right after the op that produces the gradient, in production order
    (the backward pass's, from the last layer to the first, the same on
    every rank). The exchanges are then split as `--dtrain-async-collectives`
    does: each starts as soon as its gradient exists and is waited for just
    before its update, so it overlaps the rest of the backward pass
    (wait-free backpropagation). The loss the step returns
    (`train.output = "loss"`) is averaged too, waited for at the end. Each rank
    computes its gradient on its own
    share of the batch, so the mean is the gradient of the global batch;
    batch-norm statistics stay local to each rank, as in PyTorch's
    DistributedDataParallel by default.

    ```mlir
    %dw = nn.matmul %x, %dy {transpose_lhs} : ...
    %p = train.sgd_update %w, %dw {lr = 1.0e-1 : f64} : tensor<4x8xf32>
    ```

    becomes

    ```mlir
    %world = comm.world : !comm.communicator
    ...
    %dw = nn.matmul %x, %dy {transpose_lhs} : ...
    %req, %inflight = comm.all_reduce_start <mean> %dw on %world : tensor<4x8xf32>
    ...
    %avg = comm.wait %req, %inflight : tensor<4x8xf32>
    %p = train.sgd_update %w, %avg {lr = 1.0e-1 : f64} : tensor<4x8xf32>
    ```

    `schedule=after-backward` starts the gradients' exchanges only once the
    whole backward pass is done (still in production order, still one per
    gradient): the baseline that WFBP's overlap is measured against.
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", "\"wfbp\"",
           "When the gradients' exchanges start: wfbp (as soon as each "
           "gradient exists; default) or after-backward (all after the "
           "last gradient)">,
  ];
  let dependentDialects = ["::mlir::dtrain::comm::CommDialect"];
}

def MergeGradients : Pass<"dtrain-merge-gradients", "func::FuncOp"> {
  let summary = "Merge gradient exchanges into buckets: one all-reduce per "
                "bucket (MG-WFBP, an exact optimal plan, fixed thresholds)";
  let description = [{
    Groups the tensor `comm.all_reduce_start`s of a step (as
    `--dtrain-data-parallel` leaves them: one per gradient, in production
    order) into buckets of consecutive exchanges with the same reduction,
    element type and communicator. Each bucket becomes one exchange: the
    members are flattened and inserted into one 1-D bucket tensor where
    the last member's exchange started, the bucket is all-reduced once,
    waited for where the first member's wait was, and the members' values
    are sliced back out (`tensor.extract_slice` and `tensor.expand_shape`).
    After bufferization, `--dtrain-elide-slot-copies` has each member's
    producer write straight into its slot, and the slices are views of
    the bucket: a bucket costs no copies where a gradient has no other use.
    Merging saves a start-up cost per exchange; it delays the earlier
    members, so where to cut is a trade-off that the strategies decide:

    - `none`: no merging (each gradient its own exchange, plain WFBP).
    - `threshold`: a bucket closes once it holds `threshold-bytes`
      (`first-bucket-bytes` for the first one): Horovod's tensor fusion is
      128 MiB, PyTorch DDP's buckets are 25 MiB with a 1 MiB first bucket.
    - `mgwfbp`: MG-WFBP's greedy rule (Shi et al., INFOCOM'19): a gradient
      joins the current bucket when it is ready less than one start-up time
      after that bucket's exchange could start.
    - `optimal` (default): the plan with the earliest end under the same
      model, by an O(n^2) dynamic program over contiguous buckets (per
      bucket count, O(c n^2) for up to c buckets, where the cores' bound
      below applies); never worse than `mgwfbp` under the model. Of the
      plans that end then, it takes one with the fewest buckets: each
      exchange costs more than the model says (queueing, the ranks' skew).

    The model (the wait-free backpropagation model of MG-WFBP): an
    all-reduce of M bytes takes `startup + per-byte * M` seconds, exchanges
    run one at a time in order, and each starts once its last gradient is
    ready and the previous exchange is done. A gradient is ready after the
    computation before its exchange: from `profile`, a JSON file
    `{"startup_s": a, "per_byte_s": b, "compute_s": [t0, t1, ...]}` with the
    seconds of computation before each exchange (in order, the first from
    the start of the step), whose cost (a, b) replaces `startup` and
    `per-byte`; when it also has timed all-reduces (`"allreduce_bytes"`,
    `"allreduce_s"`, as a trainer's `--profile` writes them), the cost
    never drops below their piecewise-linear interpolation. While the
    backward pass runs, an exchange costs the profile's line for exchanges
    beside it where it has one (`backward_startup_s + backward_per_byte_s
    * M`, fitted to the steps' exchanges that ran within the backward
    pass; where the computation fills the cores, an exchange waits for its
    threads' turns at every message), and `mgwfbp` merges within that
    line's startup. Once the backward pass has ended, nothing computes
    beside an exchange, and it, or what is left of it, costs the profile's
    line for exchanges alone (`alone_startup_s + alone_per_byte_s * M`,
    fitted to the steps' exchanges that began after the backward pass),
    never below the timed all-reduces' interpolation, or that
    interpolation without such a line (they were timed alone); an exchange
    beside the backward pass never costs less than alone. The profile
    also lists the exchanges each line was fitted to (`backward_exchanges`
    and `alone_exchanges`: `[bytes, seconds, count]` each). The unmerged
    trainer's exchanges within its backward pass are small, so a bucket's
    cost there is extrapolated: `refit-profiles=P1.json,...` names profiles
    of the same trainer merged (a first plan of `profile`, say), and both
    lines are refitted (least squares) to the exchanges of all the
    profiles, where their sizes span 16x; a second plan then costs buckets
    on a line that was measured on buckets. Where the
    profile's `host_threads` (the ranks' computing threads on a machine,
    default `host_ranks`) fill its `host_cores`, so that the communication
    threads share the cores with the computation, every thread's CPU time
    has to fit in the cores: each exchange takes its CPU time
    (`exchange_cpu_startup_s + exchange_cpu_per_byte_s * M`, its
    transfers, reductions and polling on the communication thread) times
    the ranks per core from the computation, and a plan ends no earlier
    than the computation plus that for every bucket but the last, which
    starts once the backward pass has ended. The computing thread's calls
    to submit each exchange and wait for it
    (`exchange_caller_cpu_s` of its CPU time, which the profile's
    computation leaves out) then add that times the ranks per core per
    bucket. Otherwise the
    computation is estimated from the ops in between: matmul and
    convolutions (with their gradients) at `flops-per-second` (2 flops per
    multiply-add), every other op at `elements-per-second` per result
    element. The default start-up and per-byte costs model a 4-rank ring
    all-reduce over 1 Gbit/s Ethernet (100 us, 2(P-1)/P / 117.5 MB/s).
    `report` prints the plan as remarks: each bucket's exchanges, bytes and
    predicted start and end, and the predicted end against `none`.

    `sparse-density=D` plans buckets that `--dtrain-sparsify` will send
    sparsified at density D (OMGS-SGD: merged gradient sparsification): a
    bucket of n elements then costs a pass over them (the residual update
    and selection, at `elements-per-second` or the profile's measured
    `select_elements_per_s`) plus `sparse-aggregate`'s messages of 8 D n
    bytes (`allgather`: P-1, `gtopk`: 2 log2(P)), with the latency and
    bandwidth of the ring model that gives the all-reduce cost on P ranks
    (the profile's `ranks`, else `ranks`). Merging saves latencies and
    selections are linear, so sparse buckets grow larger than dense ones.
    The exchange of the loss is then never merged, so that the sparsified
    buckets hold gradients only.
  }];
  let options = [
    Option<"strategy", "strategy", "std::string", "\"optimal\"",
           "none, threshold, mgwfbp or optimal (default)">,
    Option<"thresholdBytes", "threshold-bytes", "int64_t", "25 << 20",
           "strategy=threshold: bytes at which a bucket closes (default "
           "25 MiB)">,
    Option<"firstBucketBytes", "first-bucket-bytes", "int64_t", "0",
           "strategy=threshold: bytes at which the first bucket closes (0: "
           "threshold-bytes)">,
    Option<"startup", "startup", "double", "1e-4",
           "seconds an all-reduce costs regardless of size">,
    Option<"perByte", "per-byte", "double", "1.28e-8",
           "seconds an all-reduce costs per byte">,
    Option<"flopsPerSecond", "flops-per-second", "double", "2e10",
           "speed of matmul and convolutions, to estimate compute times">,
    Option<"elementsPerSecond", "elements-per-second", "double", "1e9",
           "speed of other ops per result element">,
    Option<"profile", "profile", "std::string", "\"\"",
           "a trainer's --profile JSON: measured compute times and "
           "all-reduce cost (startup_s, per_byte_s, compute_s, ...)">,
    ListOption<"refitProfiles", "refit-profiles", "std::string",
               "--profile JSONs of this trainer merged (planned with "
               "profile=): refit the lines beside and after the backward "
               "pass to their exchanges and profile's">,
    Option<"report", "report", "bool", "false",
           "print the plan and its predicted timeline as remarks">,
    Option<"sparseDensity", "sparse-density", "double", "0",
           "plan for buckets sparsified at this density (0: dense)">,
    Option<"sparseAggregate", "sparse-aggregate", "std::string",
           "\"allgather\"",
           "with sparse-density: allgather (default) or gtopk">,
    Option<"ranks", "ranks", "int64_t", "4",
           "with sparse-density: the rank count that the all-reduce cost "
           "is for, unless the profile says (default 4)">,
  ];
  let dependentDialects = ["::mlir::dtrain::comm::CommDialect",
                           "::mlir::tensor::TensorDialect"];
}

def Sparsify : Pass<"dtrain-sparsify", "func::FuncOp"> {
  let summary = "Top-k sparsification of the gradient exchanges, with "
                "residuals (error feedback)";
  let description = [{
    Rewrites each gradient exchange of a step (the f32 tensor
    `comm.all_reduce_start`/`comm.wait` pairs that `--dtrain-data-parallel`
    leaves, one per gradient, or one per bucket after
    `--dtrain-merge-gradients`) into a `comm.sparse_all_reduce_start` /
    `comm.sparse_wait` pair: the gradient plus its residual is sparsified
    to about k = max(1, floor(density * elements)) entries by `select`, the
    ranks' selections are combined by `aggregate`, and what was not sent
    stays in the residual for the next steps. Exchanges whose result the
    step returns (the averaged loss) stay dense, and so does the bucket that
    holds the loss after `--dtrain-merge-gradients`.

    Each residual is a new argument of the step with role `train.rank_state`
    (named `residual.<n>`, the n-th sparsified exchange, f32, of the
    exchange's shape; each rank has its own) and its `train.updated`
    result: a compiled trainer starts it at zero and saves every rank's in
    checkpoints. `residuals=false`
    starts every step from a zero residual instead (top-k without error
    feedback, to compare).

    - `select`: `exact` (top-k by magnitude, radix select), `gaussian`
      (Gaussian-k: a threshold from the mean and deviation, corrected up
      to 3 times; default), `dgc` (a threshold from a 1% sample) or
      `random` (random-k).
    - `aggregate`: `allgather` (every rank gets every selection: (P-1)
      messages of 8k bytes), `gtopk` (a tree of merges that keep the k
      largest sums chooses k global indices, which are broadcast, and one
      all-reduce sums every rank's selected values there: 3 log2(P)
      messages, of 8k bytes up the tree and 4k bytes after), or
      `auto`: per exchange, the cheapest of those two and the dense
      all-reduce under the alpha-beta model of `network` (`1gbe` default,
      `10gbe`, `100gb-ib`, or the cost measured in `profile`); a sparse
      exchange also pays a pass over its elements at `elements-per-second`
      (or the profile's measured `select_elements_per_s`). The dense
      all-reduce costs the less of a ring (2(P-1) messages, 2(P-1)/P of the
      bytes per link) and recursive doubling (log2(P) messages of all the
      bytes). By default the choice is made at run time, for the job's
      rank count: the pass finds the cheapest at every rank count from 2 to
      65536, and the step picks from those runs by `comm.size`
      (`aggregate <auto>`; a dense choice then sends `u` whole and clears
      the residual). With `ranks=P` it is made here, for P ranks, and an
      exchange that costs least dense stays dense.
    - `granularity`: what one selection covers in a merged bucket:
      `bucket` (the bucket's k largest, wherever they lie; default) or
      `tensor` (each member gradient its share of k, `segments` on the op:
      layer-wise top-k, still one exchange per bucket). Without
      `--dtrain-merge-gradients` every exchange is one tensor and both are
      the same.
    - `warmup`: densities for the first steps, `warmup-steps` steps each
      (e.g. `warmup=0.25,0.063,0.015,0.004 warmup-steps=500`; `warmup=1`
      is dense warm-up); then `density`. The step count is one more state
      argument, `sparsify.step`.

    ```mlir
    %req, %inflight = comm.all_reduce_start <mean> %dw on %world : tensor<784x128xf32>
    ...
    %avg = comm.wait %req, %inflight : tensor<784x128xf32>
    ```

    becomes, with `%res` the new argument `residual.0`,

    ```mlir
    %k = arith.constant 100 : index
    %req, %g, %r = comm.sparse_all_reduce_start <mean> %dw, %res k %k on %world
        select <gaussian> aggregate <allgather> : tensor<784x128xf32>
    ...
    %avg, %newres = comm.sparse_wait %req, %g, %r : tensor<784x128xf32>
    ```
  }];
  let options = [
    Option<"density", "density", "double", "0.001",
           "fraction of each exchange's entries to send, in (0, 1] "
           "(default 0.001)">,
    Option<"select", "select", "std::string", "\"gaussian\"",
           "exact, gaussian (default), dgc or random">,
    Option<"aggregate", "aggregate", "std::string", "\"allgather\"",
           "allgather (default), gtopk or auto">,
    Option<"granularity", "granularity", "std::string", "\"bucket\"",
           "bucket (default: top-k over each merged bucket) or tensor "
           "(top-k per member gradient inside it)">,
    ListOption<"warmup", "warmup", "double",
               "densities of the warm-up stages, in (0, 1] (default none)">,
    Option<"warmupSteps", "warmup-steps", "int64_t", "0",
           "steps per warm-up stage">,
    Option<"residuals", "residuals", "bool", "true",
           "keep what is not sent for the next steps (default); false "
           "drops it, to measure what error feedback is worth">,
    Option<"ranks", "ranks", "int64_t", "0",
           "aggregate=auto: the rank count to decide for here, or 0 to "
           "decide at run time (default)">,
    Option<"network", "network", "std::string", "\"1gbe\"",
           "aggregate=auto: 1gbe (default), 10gbe, 100gb-ib, or profile">,
    Option<"elementsPerSecond", "elements-per-second", "double", "1e9",
           "aggregate=auto: speed of selection per element">,
    Option<"profile", "profile", "std::string", "\"\"",
           "aggregate=auto with network=profile: a trainer's --profile "
           "JSON, whose measured all-reduce cost gives the network">,
  ];
  let dependentDialects = ["::mlir::dtrain::comm::CommDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def MixedPrecision : Pass<"dtrain-mixed-precision", "func::FuncOp"> {
  let summary = "16-bit compute, loss scaling with overflow skip, and "
                "16-bit gradient exchanges";
  let description = [{
    Mixed-precision training on a step built by `--dtrain-build-training`
    (after the other Dist passes):

    **16-bit compute** (`compute=bf16|f16`). Every nn op of the forward
    and backward passes computes in the 16-bit type: its f32 operands
    (parameters, inputs, constants) are cast (`nn.cast`, rounded to nearest
    even) once, and its results are 16-bit. The step's arguments (the
    parameters, the batch) are cast at its start, in the order of their
    first users, where the GPU path runs the casts as one kernel
    (`--dtrain-fuse-sibling-parallel-loops`; a 16-bit parameter is kept
    until its gradient's product anyway); other values where they are
    first needed.
    The ops of the `keep-f32` groups stay f32 islands (`batch_norm`:
    batch-norm statistics and their gradient; `softmax`; `loss`: the loss,
    its gradient and the correct-prediction count; `reduce`: sums and
    means, so they accumulate in f32), and so does everything that is not
    an nn op: the optimizer updates read f32 gradients and keep f32 master
    weights and state, and the exchanges and the averaged loss are f32 (or
    `wire`). The arithmetic that computes a buffer's new value (a
    `train.updated` result that is not a parameter's update: batch norm's
    running statistics, `running * momentum + statistic * (1 - momentum)`)
    stays f32 too, as PyTorch's autocast leaves it: rounded to 16 bits
    every step, an update of a moving average smaller than half a 16-bit
    unit (with bf16, a statistic within 2 to 4% of the running value at a
    momentum of 0.9) would be lost. A cast back to the type a widening cast came from folds away.
    The runtime's kernels (matrix products, convolutions, pooling) run on
    16-bit tensors in f32, rounding their results to 16 bits.

    **Loss scaling** (`loss-scale=dynamic` or `static:<s>`). The backward
    pass starts from the scale S instead of 1 (its `train.loss_seed`), so
    every gradient is S times the true one, which keeps small gradients
    representable in 16 bits. Before its exchange, each rank checks its
    gradients (the inputs of the exchanges, or of the updates without
    data parallelism) for infinities and NaNs; one small all-reduce of
    that check makes all ranks agree. Each gradient is divided by S where
    the optimizer reads it. When any rank overflowed, the step is skipped
    on every rank: parameters, optimizer state and rank state (residuals)
    keep their old values (`train.skip_update`, fused with the updates so
    they stay in place); batch-norm running statistics are updated as
    PyTorch's `GradScaler` leaves them.

    `dynamic` keeps S as optimizer state `loss_scale` (0 in a fresh
    trainer stands for `init-scale`) with `loss_scale.clean_steps`: S is
    multiplied by `backoff-factor` (floored at `min-scale`) on overflow,
    and by `growth-factor` after `growth-interval` steps without one, as
    PyTorch's `GradScaler` does. `static:<s>` keeps S = s. Both count the
    skipped steps in `loss_scale.skipped_steps`; all of it is checkpointed,
    and a trainer's progress lines show `loss_scale=` and `skipped=`. The
    averaged loss is reported unscaled.

    **16-bit exchanges** (`wire=bf16|f16`). Each dense gradient exchange (a
    tensor f32 `comm.all_reduce_start`/`comm.wait` pair with `sum` or
    `mean`, as `--dtrain-data-parallel` and `--dtrain-merge-gradients`
    leave them) travels in the 16-bit float type `wire`: the gradient is
    rounded to it (to nearest, ties to even) where it is produced, the
    ranks' values are reduced in f32 and rounded once per step of the
    reduction (the runtime's 16-bit all-reduce), and the result is widened
    back to f32 before the optimizer, which keeps f32 master weights and
    state. Each exchange then carries half the bytes. The averaged loss
    (an exchange the step returns) stays f32, and so does a bucket that
    holds it. The exchanges `--dtrain-sparsify` made sparse keep their f32
    gradient and residual but send their selected values in the wire type
    (6 bytes an entry with the index; rounded to nearest even and
    saturated, the residual keeping what the rounding drops). With loss
    scaling, dense gradients travel scaled (S times the true ones), which
    keeps small ones out of f16's subnormal range.

    - `wire`: `bf16` (bfloat16: f32's range, 8 significant bits), `f16`
      (IEEE binary16: 11 bits, but values beyond 65504 overflow to
      infinity, which loss scaling then reports as an overflow), or `f32`
      (default: no change).

    ```mlir
    %req, %inflight = comm.all_reduce_start <mean> %dw on %world : tensor<784x128xf32>
    ...
    %avg = comm.wait %req, %inflight : tensor<784x128xf32>
    ```

    becomes, with `wire=bf16`,

    ```mlir
    %dw16 = arith.truncf %dw : tensor<784x128xf32> to tensor<784x128xbf16>
    %req, %inflight = comm.all_reduce_start <mean> %dw16 on %world : tensor<784x128xbf16>
    ...
    %avg16 = comm.wait %req, %inflight : tensor<784x128xbf16>
    %avg = arith.extf %avg16 : tensor<784x128xbf16> to tensor<784x128xf32>
    ```
  }];
  let options = [
    Option<"compute", "compute", "std::string", "\"f32\"",
           "the type the forward and backward passes compute in: bf16, f16 "
           "or f32 (default)">,
    ListOption<"keepF32", "keep-f32", "std::string",
               "with compute=bf16|f16, the op groups that stay f32: "
               "batch_norm, softmax, loss, reduce (default: all four), or "
               "none">,
    Option<"wire", "wire", "std::string", "\"f32\"",
           "the type gradients travel in: bf16, f16 or f32 (default)">,
    Option<"lossScale", "loss-scale", "std::string", "\"none\"",
           "none (default), dynamic, or static:<s> (a fixed scale s > 0)">,
    Option<"initScale", "init-scale", "double", "65536.0",
           "loss-scale=dynamic: the first scale (default 2^16)">,
    Option<"growthFactor", "growth-factor", "double", "2.0",
           "loss-scale=dynamic: factor after growth-interval clean steps "
           "(default 2)">,
    Option<"backoffFactor", "backoff-factor", "double", "0.5",
           "loss-scale=dynamic: factor on overflow, in (0, 1) (default 0.5)">,
    Option<"growthInterval", "growth-interval", "int64_t", "2000",
           "loss-scale=dynamic: clean steps before growing (default 2000)">,
    Option<"minScale", "min-scale", "double", "1.0",
           "loss-scale=dynamic: the floor of the scale (default 1)">,
  ];
  let dependentDialects = ["::mlir::dtrain::comm::CommDialect",
                           "::mlir::dtrain::nn::NNDialect",
                           "::mlir::dtrain::train::TrainDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SimulateStep : Pass<"dtrain-simulate-step", "func::FuncOp"> {
  let summary = "Predict a data-parallel step's iteration time and scaling "
                "efficiency for many ranks (prints a report)";
  let description = [{
    An analysis: prints, for a step with gradient exchanges (after
    `--dtrain-data-parallel`), the predicted iteration time and weak-scaling
    efficiency at each rank count of `ranks`, for the merge strategies none
    (one exchange per gradient, WFBP), threshold (`threshold-bytes`
    buckets with a `first-bucket-bytes` first one; by default 25 MiB and
    1 MiB, PyTorch DDP's), mgwfbp and optimal, planned for each rank
    count, on `network`:

    | network | latency per message | bandwidth per link |
    |---|---|---|
    | `1gbe` | 50 us | 117.5 MB/s |
    | `10gbe` | 20 us | 1.175 GB/s |
    | `100gb-ib` | 2 us | 12 GB/s |

    The model is the DAG model of Shi et al. (2018) as MG-WFBP uses it: the
    computation before each exchange (estimated from the ops at
    `flops-per-second` and `elements-per-second`, or measured: `profile`,
    a trainer's `--profile` file), exchanges one at a time in order, each a
    ring all-reduce costing 2(P-1) latencies plus 2(P-1)/P of its bytes
    over a link, each starting once its last gradient is ready and the
    previous exchange is done. Iteration time = max(end of the last
    exchange, end of the backward pass) + the computation after the last
    exchange (the updates: the profile's `tail_s` where it has one, else
    estimated from the ops; the header line says which), where a profile
    whose computation fills the cores also bounds the end of the last
    exchange from below by the computation plus the exchanges' CPU time
    (see `--dtrain-merge-gradients`); efficiency = the iteration time of
    one rank (no exchange) / that of P ranks, each rank with the same
    batch.
    Compute times are per rank and do not change with P. The IR is left
    unchanged.

    `network=profile` takes the all-reduce cost measured in the profile
    instead (its `startup_s` and `per_byte_s`, never below its timed
    all-reduces, at its `ranks`): a prediction for the machine and rank
    count the profile came from, to compare with measured step times. Its
    lines beside and after the backward pass apply as in
    `--dtrain-merge-gradients`, refitted as there with `refit-profiles`.

    `sparse-density=D` adds two columns: every exchange sparsified as
    `--dtrain-sparsify` does at density D (one per gradient, k = max(1,
    floor(D n)) entries of 8 bytes), aggregated by all-gather ((P-1)
    messages of 8k bytes) or by gTop-k (2 log2(P) messages of 8k bytes),
    each also paying a pass over its n elements at `elements-per-second`
    (residual and selection); with `network=profile` the latency and
    bandwidth are those of the ring model that gives the measured cost, and
    the selection runs at the profile's measured `select_elements_per_s`
    when it has one. The selections run on the communication thread but on
    the cores that compute, so they also delay the backward pass: iteration
    = max(end of the last exchange, backward + all selections) + the
    computation after it.
  }];
  let options = [
    ListOption<"ranks", "ranks", "int64_t",
               "rank counts (default 8,16,32,64,128,256,512,1024)">,
    Option<"network", "network", "std::string", "\"10gbe\"",
           "1gbe, 10gbe (default), 100gb-ib, or profile (the profile's "
           "measured all-reduce cost at its rank count)">,
    Option<"flopsPerSecond", "flops-per-second", "double", "2e10",
           "speed of matmul and convolutions, to estimate compute times">,
    Option<"elementsPerSecond", "elements-per-second", "double", "1e9",
           "speed of other ops per result element">,
    Option<"profile", "profile", "std::string", "\"\"",
           "a trainer's --profile JSON: measured compute times">,
    ListOption<"refitProfiles", "refit-profiles", "std::string",
               "--profile JSONs of this trainer merged: refit the lines "
               "beside and after the backward pass to their exchanges and "
               "profile's">,
    Option<"thresholdBytes", "threshold-bytes", "int64_t", "25 << 20",
           "the threshold column: bytes at which a bucket closes (default "
           "25 MiB)">,
    Option<"firstBucketBytes", "first-bucket-bytes", "int64_t", "1 << 20",
           "the threshold column: bytes at which the first bucket closes "
           "(default 1 MiB; 0: threshold-bytes)">,
    Option<"sparseDensity", "sparse-density", "double", "0",
           "also predict top-k sparsified exchanges at this density, "
           "aggregated by all-gather and by gTop-k (0: not)">,
  ];
}

#endif // DTRAIN_DIST_PASSES_TD
