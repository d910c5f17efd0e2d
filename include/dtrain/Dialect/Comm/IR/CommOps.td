//===- CommOps.td - comm dialect operations ----------------*- tablegen -*-===//

#ifndef DTRAIN_DIALECT_COMM_IR_COMMOPS_TD
#define DTRAIN_DIALECT_COMM_IR_COMMOPS_TD

include "dtrain/Dialect/Comm/IR/CommBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Comm_Op<string mnemonic, list<Trait> traits = []>
    : Op<Comm_Dialect, mnemonic, traits>;

// The data of a collective: a tensor (value semantics) or a memref (in place).
def Comm_FloatTensor : RankedTensorOf<[F16, BF16, F32, F64]>;
def Comm_Buffer : AnyTypeOf<[Comm_FloatTensor, MemRefOf<[F16, BF16, F32, F64]>],
                            "ranked tensor or memref of f16, bf16, f32 or f64">;

//===----------------------------------------------------------------------===//
// Communicators
//===----------------------------------------------------------------------===//

def Comm_WorldOp : Comm_Op<"world", [Pure]> {
  let summary = "The communicator of all ranks of the job";
  let description = [{
    ```mlir
    %world = comm.world : !comm.communicator
    ```
  }];
  let results = (outs Comm_CommunicatorType:$communicator);
  let assemblyFormat = "attr-dict `:` type($communicator)";
}

def Comm_RankOp : Comm_Op<"rank", [Pure]> {
  let summary = "This process's rank in a communicator, in [0, size)";
  let arguments = (ins Comm_CommunicatorType:$communicator);
  let results = (outs Index:$rank);
  let assemblyFormat = "$communicator attr-dict";
}

def Comm_SizeOp : Comm_Op<"size", [Pure]> {
  let summary = "The number of ranks in a communicator";
  let arguments = (ins Comm_CommunicatorType:$communicator);
  let results = (outs Index:$size);
  let assemblyFormat = "$communicator attr-dict";
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// Collectives order among themselves on a communication resource (every rank
// must issue them in the same order) and read and write their memref.
class Comm_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Comm_Op<mnemonic, traits # [
        DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  code extraCollectiveDeclaration = [{
    /// True once bufferized: the op then works in place on a memref.
    bool hasBufferSemantics() {
      return ::llvm::isa<::mlir::MemRefType>(getBuffer().getType());
    }
  }];
  let hasVerifier = 1;
}

def Comm_AllReduceOp : Comm_CollectiveOp<"all_reduce"> {
  let summary = "Combine a buffer across all ranks of a communicator";
  let description = [{
    Every rank of `communicator` contributes `input`; every rank receives the
    elementwise `sum`, `mean` (the sum divided by the number of ranks) or
    `max` of all contributions. All ranks must reach the op with buffers of
    the same type and the same reduction.

    On a tensor the op returns the combined tensor; on a memref it combines
    in place and has no result.

    ```mlir
    %avg = comm.all_reduce <mean> %grad on %world : tensor<784x128xf32>
    comm.all_reduce <sum> %buf on %world : memref<1024xf32>
    ```
  }];
  let arguments = (ins Comm_ReductionKindAttr:$reduction, Comm_Buffer:$input,
                       Comm_CommunicatorType:$communicator);
  let results = (outs Optional<Comm_FloatTensor>:$result);
  let assemblyFormat = [{
    $reduction $input `on` $communicator attr-dict `:`
    custom<BufferType>(type($input), type($result))
  }];
  let extraClassDeclaration = extraCollectiveDeclaration # [{
    ::mlir::Value getBuffer() { return getInput(); }
    ::mlir::OpOperand &getBufferMutable() { return getInputMutable(); }
  }];
}

def Comm_AllReduceStartOp : Comm_CollectiveOp<"all_reduce_start"> {
  let summary = "Start an all-reduce that completes at a later comm.wait";
  let description = [{
    Starts the all-reduce that `comm.all_reduce` describes and returns at
    once with a request. On a tensor the op also returns the in-flight
    tensor, which only `comm.wait` may use: it returns the combined value.
    This is how communication overlaps the rest of the backward pass.

    ```mlir
    %req, %inflight = comm.all_reduce_start <mean> %grad on %world : tensor<128xf32>
    ...
    %avg = comm.wait %req, %inflight : tensor<128xf32>
    ```
  }];
  let arguments = (ins Comm_ReductionKindAttr:$reduction, Comm_Buffer:$input,
                       Comm_CommunicatorType:$communicator);
  let results = (outs Comm_RequestType:$request,
                      Optional<Comm_FloatTensor>:$inflight);
  let assemblyFormat = [{
    $reduction $input `on` $communicator attr-dict `:`
    custom<BufferType>(type($input), type($inflight))
  }];
  let extraClassDeclaration = extraCollectiveDeclaration # [{
    ::mlir::Value getBuffer() { return getInput(); }
    ::mlir::OpOperand &getBufferMutable() { return getInputMutable(); }
  }];
}

def Comm_SparseAllReduceStartOp
    : Comm_CollectiveOp<"sparse_all_reduce_start", [AttrSizedResultSegments]> {
  let summary = "Start a top-k sparse all-reduce with a residual";
  let description = [{
    The exchange of a sparsified gradient with error feedback, started like
    `comm.all_reduce_start` and completed by `comm.sparse_wait`:

    - `u = input + residual`;
    - about `k` entries of `u` are selected by `select` (`exact` top-k by
      magnitude, `gaussian` Gaussian-k, `dgc` a sampled threshold, `random`
      random-k);
    - the residual becomes `u` with the selected entries zeroed;
    - the ranks' selections are combined by `aggregate`: `allgather` sends
      every rank's selection to all and adds them; `gtopk` merges them in a
      tree that keeps the `k` largest sums at each level, which chooses `k`
      global indices, and sums every rank's selected values there (a
      rank's selected entries outside them go back to its own residual);
    - the result is the dense `sum` or `mean` of the combined selection.

    `aggregate <dense>` sends everything instead (`u` summed by a dense
    all-reduce, the residual cleared). `aggregate <auto> %choice` takes the
    aggregate at run time from `%choice`, an index holding one of the
    others' values (allgather 0, gtopk 1, dense 2): the step computes it
    from the rank count.

    With `wire` (bf16 or f16) the selected values travel in that type (6
    bytes an entry with the i32 index), rounded to nearest even and
    saturated; the residual keeps what the rounding drops.

    With `segments` (element counts that add up to the buffer's, as a
    merged bucket's members lie in it), each segment is selected on its
    own (layer-wise top-k in one exchange): segment `s` of `n_s` of the
    buffer's `n` elements gets its share of `k`,
    `k_s = min(n_s, max(1, floor(k * n_s / n)))`, and `gtopk` keeps the
    `k_s` largest sums of each segment at every level.

    Both buffers are f32 of the same shape. On tensors the op returns the
    two in-flight tensors, which only `comm.sparse_wait` may use. `k` is an
    operand so that it may change from step to step (density warm-up);
    values at or above the element count select everything.

    ```mlir
    %req, %g, %r = comm.sparse_all_reduce_start <mean> %grad, %res k %k on %world
        select <gaussian> aggregate <gtopk> : tensor<4096xf32>
    %avg, %newres = comm.sparse_wait %req, %g, %r : tensor<4096xf32>
    ```
  }];
  let arguments = (ins Comm_ReductionKindAttr:$reduction,
                       Comm_SelectMethodAttr:$select,
                       Comm_SparseAggregateAttr:$aggregate,
                       OptionalAttr<TypeAttrOf<AnyTypeOf<[BF16, F16]>>>:$wire,
                       OptionalAttr<DenseI64ArrayAttr>:$segments,
                       Comm_Buffer:$input, Comm_Buffer:$residual, Index:$k,
                       Comm_CommunicatorType:$communicator,
                       Optional<Index>:$chosen_aggregate);
  let results = (outs Comm_RequestType:$request,
                      Optional<Comm_FloatTensor>:$inflight,
                      Optional<Comm_FloatTensor>:$inflight_residual);
  let assemblyFormat = [{
    $reduction $input `,` $residual `k` $k `on` $communicator
    `select` $select `aggregate` $aggregate ($chosen_aggregate^)?
    (`wire` $wire^)?
    (`segments` $segments^)? attr-dict `:`
    custom<BufferPairType>(type($input), type($residual), type($inflight),
                           type($inflight_residual))
  }];
  let extraClassDeclaration = extraCollectiveDeclaration # [{
    ::mlir::Value getBuffer() { return getInput(); }
  }];
}

def Comm_SparseWaitOp
    : Comm_CollectiveOp<"sparse_wait", [AttrSizedResultSegments]> {
  let summary = "Complete a started sparse all-reduce";
  let description = [{
    Blocks until the `comm.sparse_all_reduce_start` of `request` is complete
    on this rank. The buffers are the start op's in-flight tensors (or,
    once bufferized, its memrefs); on tensors the op returns the combined
    gradient and the new residual.
  }];
  let arguments = (ins Comm_RequestType:$request, Comm_Buffer:$buffer,
                       Comm_Buffer:$residual);
  let results = (outs Optional<Comm_FloatTensor>:$result,
                      Optional<Comm_FloatTensor>:$new_residual);
  let assemblyFormat = [{
    $request `,` $buffer `,` $residual attr-dict `:`
    custom<BufferPairType>(type($buffer), type($residual), type($result),
                           type($new_residual))
  }];
  let extraClassDeclaration = extraCollectiveDeclaration;
}

def Comm_WaitOp : Comm_CollectiveOp<"wait"> {
  let summary = "Complete a started collective";
  let description = [{
    Blocks until the collective of `request` is complete on this rank. The
    buffer is the in-flight tensor (or, once bufferized, the memref) of the
    start op; on a tensor the op returns the final value.

    ```mlir
    %avg = comm.wait %req, %inflight : tensor<128xf32>
    comm.wait %req, %buf : memref<128xf32>
    ```
  }];
  let arguments = (ins Comm_RequestType:$request, Comm_Buffer:$buffer);
  let results = (outs Optional<Comm_FloatTensor>:$result);
  let assemblyFormat = [{
    $request `,` $buffer attr-dict `:`
    custom<BufferType>(type($buffer), type($result))
  }];
  let extraClassDeclaration = extraCollectiveDeclaration;
}

#endif // DTRAIN_DIALECT_COMM_IR_COMMOPS_TD
