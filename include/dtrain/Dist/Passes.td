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

#endif // DTRAIN_DIST_PASSES_TD
