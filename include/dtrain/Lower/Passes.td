//===- Passes.td - Lower phase passes ----------------------*- tablegen -*-===//
//
// The Lower phase turns nn, train and comm ops into upstream dialects and
// calls of the runtime's C ABI, on the way to LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_LOWER_PASSES_TD
#define DTRAIN_LOWER_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerCommToRuntime : Pass<"dtrain-lower-comm-to-runtime", "ModuleOp"> {
  let summary = "Lower comm ops on memrefs to calls of the dtrain runtime";
  let description = [{
    Rewrites every `comm` op into calls of the runtime's C ABI declared in
    `runtime/include/dtrain_rt.h`:

    | op | runtime call |
    |----|--------------|
    | `comm.world` | `dtrain_rt_comm_world()` |
    | `comm.rank`, `comm.size` | `dtrain_rt_comm_rank(comm)`, `dtrain_rt_comm_size(comm)` |
    | `comm.all_reduce` | `dtrain_rt_all_reduce_with(comm, ptr, count, dtype, reduction, algorithm)` |
    | `comm.all_reduce_start` | `dtrain_rt_all_reduce_start_with(comm, ptr, count, dtype, reduction, algorithm)` |
    | `comm.wait` | `dtrain_rt_wait(request)` |

    `!comm.communicator` and `!comm.request` values become `!llvm.ptr`,
    across function signatures, calls, returns and structured control flow.
    A buffer is passed as the address of its first element (aligned pointer
    plus offset) and its number of elements, so it must be contiguous:
    bufferize with `function-boundary-type-conversion=identity-layout-map`
    (dynamic sizes are fine; dynamic strides are rejected with an error).

    Collectives must be bufferized first (`--one-shot-bufferize`): an op
    still on tensors is reported as an error.
  }];
  let options = [
    Option<"algorithm", "algorithm", "::mlir::dtrain::lower::AllReduceAlgorithm",
           /*default=*/"::mlir::dtrain::lower::AllReduceAlgorithm::Default",
           "Algorithm of all-reduces",
           [{::llvm::cl::values(
               clEnumValN(::mlir::dtrain::lower::AllReduceAlgorithm::Default, "default",
                          "chosen at run time by DTRAIN_ALLREDUCE=mpi|ring "
                          "(mpi when unset)"),
               clEnumValN(::mlir::dtrain::lower::AllReduceAlgorithm::Mpi, "mpi",
                          "MPI_Allreduce of the MPI library"),
               clEnumValN(::mlir::dtrain::lower::AllReduceAlgorithm::Ring, "ring",
                          "dtrain's ring all-reduce (reduce-scatter + "
                          "all-gather)"))}]>,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def EmitModelEntry : Pass<"dtrain-emit-model-entry", "ModuleOp"> {
  let summary = "Wrap @forward into the compiled-model ABI of the runtime";
  let description = [{
    Gives a module with a `func.func @forward` on tensors the entry points
    that `runtime/include/dtrain_rt.h` ("Compiled models") specifies:

    - `dtrain_model_info`: a constant string describing, in order, every
      buffer of the model: one `arg <role> <dtype> <shape> <name>` line per
      argument of `@forward` (role and name from its `train.param`,
      `train.buffer` or `train.input` attribute) and per result (role
      `output`, name from `train.output`, else `output<i>`), after the
      `dtrain-model 1`, `onnx <path>` (the module's `train.onnx_model`) and
      `mode infer` lines.
    - `func.func @dtrain_model_run(%buffers: !llvm.ptr)`: loads one pointer
      per line from `%buffers`, views each as a memref of the argument's
      type, calls `@forward` on them (as tensors) and materializes each
      result into its output buffer. `@forward` becomes private, so that
      `--inline` and `--symbol-dce` leave one function whose outputs are
      written in place.
    - `func.func @main(i32, !llvm.ptr) -> i32`, which returns
      `dtrain_rt_model_main(argc, argv, dtrain_model_info, dtrain_model_run)`.

    A `@train_step` of `--dtrain-build-training` (mode `step`, or `train`
    with an `@eval_step`, which gets `dtrain_model_eval` and
    `dtrain_rt_trainer_main`) updates in place: each result marked
    `train.updated` with the name and type of a parameter, buffer or
    optimizer-state argument is materialized, after the other results,
    into that argument's tensor (`to_tensor restrict writable`) and stored
    into its buffer, and the runtime passes one pointer for both. One-shot
    bufferization then has the fused update write straight into the
    argument's buffer, or writes a new buffer and copies it when the old
    value is still read later.

    Shapes must be static and element types among f32, f64, f16, bf16, i64
    and i32.

    With `target=cuda`, `@main` first calls `dtrain_rt_cuda_init_trainer()`
    (runtime/include/dtrain_rt_cuda.h), which picks the rank's GPU and has
    the runtime allocate the model's buffers in CUDA managed memory.
  }];
  let options = [
    Option<"target", "target", "std::string", "\"cpu\"",
           "cpu (default) or cuda">,
  ];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def ChannelsLast : Pass<"dtrain-channels-last", "func::FuncOp"> {
  let summary = "Run convolutions, pooling and batch norms on NHWC activations";
  let description = [{
    Gives every 4-D `nn.conv2d`, `nn.conv2d_backward_data`,
    `nn.conv2d_backward_weights`, `nn.max_pool2d`, `nn.avg_pool2d`, their
    gradients, `nn.batch_norm`, `nn.batch_norm_train` and
    `nn.batch_norm_train_grad` that is not f64 the `channels_last`
    layout: its activations `N x H x W x C`, a convolution's weight
    `O x Kh x Kw x C/groups` (not to a convolution padded asymmetrically,
    which cuDNN runs on padded NCHW copies). cuDNN's tensor-core
    convolutions work on that layout; on NCHW tensors they transpose their
    input and output (1.93 ms of resnet50's 14.4 ms bf16 step on an H200),
    and oneDNN reorders NCHW to its blocked layouts around each
    convolution.

    Each op gets `nn.transpose`s around it (to NHWC and OHWI before, back to
    NCHW after); then transposes move past element-wise ops (add, sub,
    mul, div, the activations and their gradients, casts) whose other
    operands are 0-d, transposed the same way, or already transposed the
    other way somewhere, and a sum of a transposed tensor sums the
    untransposed one, a global average pooling of a transposed tensor
    averages its dimensions 1 and 2, and a broadcast of an N x C x 1 x 1
    tensor (that pooling's gradient) whose uses lead to NHWC tensors
    broadcasts its N x 1 x 1 x C reshape to NHWC, until transposes meet
    their inverses and cancel. What remains transposes where the layouts
    change: at the model's input, its weights (each once a step, to OHWI,
    and their gradients back to OIHW), and around the ops left NCHW.

    ```mlir
    // Before: a convolution, a ReLU and a batch norm on NCHW tensors.
    %y = nn.conv2d %x, %w : tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<8x16x30x30xf32>
    %r = nn.relu %y : tensor<8x16x30x30xf32>
    %n, %m, %v = nn.batch_norm_train %r, %s, %b : ...
    // After: one transpose in, the ReLU on NHWC, the batch norm on NHWC.
    %xt = nn.transpose %x {permutation = array<i64: 0, 2, 3, 1>} : ...
    %wt = nn.transpose %w {permutation = array<i64: 0, 2, 3, 1>} : ...
    %y = nn.conv2d %xt, %wt {channels_last} : tensor<8x32x32x3xf32>, tensor<16x3x3x3xf32> -> tensor<8x30x30x16xf32>
    %r = nn.relu %y : tensor<8x30x30x16xf32>
    %n, %m, %v = nn.batch_norm_train %r, %s, %b {channels_last} : ...
    ```

    `dtrain-compile --channels-last` runs it after the graph passes
    (merging, sparsification, mixed precision), so that the transposes
    move 16-bit data where the convolutions compute in 16 bits.
  }];
}

def LowerNN : Pass<"dtrain-lower-nn", "ModuleOp"> {
  let summary = "Lower nn ops to linalg on tensors and runtime kernel calls";
  let description = [{
    Rewrites every `nn` op and optimizer update (static shapes required):

    | ops | become |
    |-----|--------|
    | `add`, `sub`, `mul`, `div` (broadcasting), `broadcast`, `relu`, `relu_grad`, `sigmoid`, `tanh`, `leaky_relu`, `clip`, `clip_grad`, `train.sgd_update`, `train.momentum_update`, `train.adam_update`, `train.lars_update` (with the norms it needs) | one parallel `linalg.generic` each, ready for `--linalg-fuse-elementwise-ops` |
    | `softmax`, `log_softmax`, `reduce_sum`, `reduce_mean`, `global_avg_pool2d`, `softmax_cross_entropy(_grad)`, `count_correct` | `linalg.generic` reductions (max-shifted exponentials) and parallel ops |
    | `reshape`, `transpose`, `concat`, `pad`, `slice` | `tensor.collapse_shape`/`expand_shape`, a `linalg.generic` reading through the inverse permutation, `tensor.insert_slice` into a (filled) `tensor.empty`, `tensor.extract_slice` |
    | `dropout` | its input (forward execution is inference) |
    | `dropout_mask` | a parallel `linalg.generic` hashing each element's index (SplitMix64, the key computed once) |
    | `matmul`, `conv2d`, `max_pool2d`, `avg_pool2d`, `batch_norm`, `batch_norm_train` | calls of `dtrain_rt_matmul_f32`, `dtrain_rt_conv2d_f32`, `dtrain_rt_pool2d_f32`, `dtrain_rt_batch_norm_f32`, `dtrain_rt_batch_norm_train_f32` |
    | `conv2d_backward_data`, `conv2d_backward_weights`, `max_pool2d_grad`, `avg_pool2d_grad`, `batch_norm_train_grad` | calls of `dtrain_rt_conv2d_backward_data_f32`, `dtrain_rt_conv2d_backward_weights_f32`, `dtrain_rt_pool2d_backward_f32`, `dtrain_rt_batch_norm_backward_f32` |

    A kernel call reads its inputs through `bufferization.to_buffer
    read_only` and writes a fresh 64-byte-aligned `memref.alloc` that
    `bufferization.to_tensor restrict writable` turns back into the result
    tensor, so that one-shot bufferization can run on the whole function
    afterwards. The kernels take f32 (oneDNN) or f64 (`..._f64`, plain
    reference loops, for gradient checks); bf16 and f16 tensors are
    widened to f32 before the call and its results rounded back. Another
    element type is an error on the op. A convolution or pooling op (or
    gradient) with `channels_last` calls the NHWC form of its kernel
    (`dtrain_rt_conv2d_nhwc_f32`, `dtrain_rt_pool2d_backward_nhwc_f32`,
    ...), with the same geometry arguments; f64 has none (an error). A
    batch norm with `channels_last` runs as N H W rows of C channels.

    With `target=cuda` the f32 kernels are the GPU's, with the same
    arguments: `dtrain_rt_cuda_matmul_f32` (cuBLAS), `dtrain_rt_cuda_conv2d_f32`
    and the other convolution and batch-norm kernels (cuDNN), and
    `dtrain_rt_cuda_pool2d_f32` (CUDA kernels), declared in
    runtime/include/dtrain_rt_cuda.h. 16-bit matrix products,
    convolutions and pooling call their 16-bit kernels on the 16-bit
    buffers themselves (`dtrain_rt_cuda_matmul_bf16`,
    `dtrain_rt_cuda_conv2d_f16`, `dtrain_rt_cuda_pool2d_bf16`, ...: tensor
    cores for the products, f32 sums). A batch norm (or its gradient)
    whose f32 data come from `nn.cast`s of a 16-bit type and go back to it
    (one that `--dtrain-mixed-precision` keeps in f32) reads and writes the
    16-bit data itself (`dtrain_rt_cuda_batch_norm_train_bf16`, ...; f32
    scale, bias and statistics), and the casts go. A batch norm in
    training whose data result (or its cast back to 16 bits) has one user,
    an `nn.relu`, computes the ReLU too
    (`dtrain_rt_cuda_batch_norm_train_relu_bf16`, ...), or an `nn.add` of
    it and a residual there before it, whose one user is an `nn.relu` (a
    residual block's end), computes the add and the ReLU, rounded as they
    are (`dtrain_rt_cuda_batch_norm_train_add_relu_bf16`, ...); a batch-norm
    gradient whose output gradient is an `nn.relu_grad` (or its cast to
    f32) that nothing else reads takes the ReLU's output gradient and
    output in its place (`dtrain_rt_cuda_batch_norm_backward_relu_bf16`,
    ...): the ReLU, its gradient and the tensors between go. A
    convolution's bias gradient (an `nn.reduce_sum` of its output gradient
    over N, OH and OW) is computed by its weight gradient's call. The f64
    reference loops stay on the host.
  }];
  let options = [
    Option<"target", "target", "std::string", "\"cpu\"",
           "cpu (default: oneDNN kernels) or cuda (cuBLAS/cuDNN kernels)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def ElideSlotCopies : Pass<"dtrain-elide-slot-copies", "ModuleOp"> {
  let summary = "Have buffers that are only copied into a flat buffer's "
                "slot be that slot";
  let description = [{
    After bufferization, a gradient bucket (`--dtrain-merge-gradients`) is a
    1-D buffer filled by one `memref.copy` per member, each from a fresh
    buffer that the member's producer (a kernel call, a loop nest) wrote.
    This pass removes such a copy by making the source buffer a view of its
    slot, so the producer writes straight into the bucket.

    It applies to `memref.copy %src, %slot` in a function's entry block
    where:
    - `%src` is a static `memref.alloc` (identity layout), or a reshape of
      one, whose every use (through any derived value) precedes the copy;
    - `%slot` is a static, unit-stride `memref.subview` of a 1-D static
      `memref.alloc` (the bucket) with the same element type and as many
      elements as `%src`;
    - between the source's allocation and the copy, nothing touches the
      bucket's bytes in that slot.

    The bucket becomes a byte buffer (`memref.alloc` of i8, allocated
    before its earliest member) with `memref.view`s of its whole and of
    each elided member's slot; types are unchanged, so every user of the
    old buffers stays valid. `--dtrain-plan-buffers` then places the bucket
    in the arena from its first member's production on. Copies that do not
    qualify are left alone.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def PlanBuffers : Pass<"dtrain-plan-buffers", "ModuleOp"> {
  let summary = "Place the static buffers of each function in one arena";
  let description = [{
    After bufferization, every `memref.alloc` of static shape in the entry
    block of a function is given an offset in one static arena per function
    (a `memref.global` of bytes, 64-byte aligned) and replaced by a
    `memref.view` of it, so that a step allocates nothing at run time.
    Buffers whose lifetimes do not overlap share bytes: a buffer lives from
    its allocation to the last operation of the block that uses it or
    anything derived from it (views, extracted pointers, ...), and offsets
    are assigned greedily, largest buffers first, to the lowest free offset.

    Buffers that are returned, deallocated, or allocated inside nested
    regions keep their `memref.alloc`. The arena makes the function
    non-reentrant: it must not run concurrently with itself.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def FlattenElementwise : Pass<"dtrain-flatten-elementwise"> {
  let summary = "Collapse runs of loops of linalg.generic ops on buffers";
  let description = [{
    Rewrites a `linalg.generic` on contiguous buffers (the identity layout,
    or a view that is one row-major run at an offset, as a gradient's
    slice of a merged bucket):
    each run of adjacent loops of one iterator type (parallel or
    reduction) that every operand's indexing map also keeps together, in
    order, becomes one loop, the operands viewed through
    `memref.collapse_shape`. An `N x C x H x W` elementwise op becomes one
    loop over every element, and the sum of a bias gradient over `N`, `H`
    and `W` runs over `H x W` as one contiguous dimension; LLVM vectorizes
    both with contiguous loads, where the short innermost loops of the
    nests led it to gathers across an outer dimension. Runs that a map
    splits or reorders (broadcasts, transposes) and views with gaps are
    left alone.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def LowerStridedCopies : Pass<"dtrain-lower-strided-copies"> {
  let summary = "Turn memref.copy of strided views into linalg.copy";
  let description = [{
    The LLVM lowering of `memref.copy` emits a `memcpy` when both buffers
    are contiguous and otherwise a call of `memrefCopy`, a function of
    MLIR's C runner utilities that compiled models do not link. This pass
    rewrites the second kind (a concat along an inner axis, the interior of
    a pad) into `linalg.copy`, which later passes turn into loops, and
    leaves contiguous copies alone. With `contiguous`, it rewrites those
    too, as `linalg.generic`s (which `--dtrain-parallelize-serial-generics`
    gives a thread where they are 0-d): the CUDA target's loops become
    kernels, where a host `memcpy` of
    its managed buffers would wait for the GPU and move their pages to the
    host (and keep the step from being replayed as a CUDA graph).
  }];
  let options = [
    Option<"contiguous", "contiguous", "bool", /*default=*/"false",
           "Rewrite copies between contiguous buffers too">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def CopyConstantGlobals : Pass<"dtrain-copy-constant-globals",
                                "func::FuncOp"> {
  let summary = "Read constant globals through buffers the function "
                "allocates";
  let description = [{
    Replaces the `memref.get_global`s of each constant global by one buffer
    allocated at the function's entry, filled from the global, and freed
    before each return. For `--target=cuda`: every buffer a trainer
    allocates is in CUDA managed memory (libdtrain_runtime_cuda defines
    the allocation functions that `finalize-memref-to-llvm
    {use-generic-functions}` calls), which GPU kernels can read, while a
    global lives in the executable's host memory, which they cannot. A
    global that is not constant is an error: its value could not stay in
    one place for host and device.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def ScalarCodeToLinalg : Pass<"dtrain-scalar-code-to-linalg",
                               "func::FuncOp"> {
  let summary = "Compute 0-d tensors made of scalar code in linalg.generics";
  let description = [{
    For `--target=cuda`, after `--dtrain-lower-nn`: a 0-d tensor built by
    `tensor.from_elements` from scalar arithmetic on `tensor.extract`s of
    0-d tensors (the loss scale's update and the overflow flag of
    `--dtrain-mixed-precision`) would be host code once bufferized: the
    host would wait for the step's stream to read what kernels wrote, and
    fault the pages to the host. Each such tensor becomes a
    `linalg.generic` with no loops over the extracted tensors, its body the
    arithmetic (constants cloned into it), which
    `--dtrain-parallelize-serial-generics` then makes a one-thread kernel.

    The arithmetic is every operation without memory effects, and with
    one block or none, that the element's value depends on, up to the
    extracts and constants; an element that depends on anything else (a
    block argument, an op with effects or regions) stays as it is. Shared
    subexpressions are computed once per tensor that uses them.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def ParallelizeSerialGenerics : Pass<"dtrain-parallelize-serial-generics",
                                      "func::FuncOp"> {
  let summary = "Give linalg.generics without parallel loops a parallel "
                "loop: one iteration, or partial sums";
  let description = [{
    For `--target=cuda`, before `convert-linalg-to-parallel-loops`: a
    generic with no parallel dimension (a sum to a scalar, such as the
    loss's over the batch or a norm of LARS, or arithmetic on scalars)
    becomes host code, which reads what the kernels wrote: the host waits
    for the step's stream and the driver migrates the pages to it, and
    back on the next kernel's access.

    A generic of at most `max-serial-iterations` iterations (static
    shapes) gets a leading parallel loop of one iteration: a GPU kernel of
    one thread, queued after the kernels whose results it reads. Its
    scalar outputs are viewed as one-element buffers
    (`memref.expand_shape`), and its `linalg.index` ops shift by one.
    `linalg.fill`s of scalars are generalized first.

    A longer one is split, when it reads same-shaped contiguous buffers
    element by element, has one scalar output, no `linalg.index`, and
    combines each element into its output with one associative arith op
    (`addf`, `maximumf`, ...: one with a neutral element): its inputs are
    viewed as rows, as many as the largest divisor of the element count up
    to `partial-sums` and `max-serial-iterations`, each reduced by one
    thread into a buffer of partial results (filled with the combiner's
    neutral element); a second generic combines the partials into the
    output, in order, and becomes one thread as above. More partials than
    `max-combine-iterations` are split again the same way, into rows as
    long as there are rows (4096 partials: 64 rows of 64, then 64), so
    that no thread's loop over partials is longer. The sums run in
    another order than the serial loop's (within rounding). Element counts
    with no such divisor above 1 stay serial.

    A generic whose one reduction loop of at least 256 iterations sits
    beside parallel loops of at most `partial-sums` / 2 iterations in all
    (softmax's sums over 1000 classes at batch 32: 32 threads of 1000
    iterations) is split the same way beside them, when it takes the same
    combiner and its inputs (contiguous buffers, projected maps) read the
    reduction loop as one dimension or not at all: that dimension viewed as
    rows (the divisor of its extent that makes at most `partial-sums`
    threads with the parallel loops and the shortest loops in all, a row's
    then the rows': 1000 as 40 rows of 25), each row reduced into
    a buffer of partials (the output's shape, then the rows), which a
    second generic folds into the output in order, beside the same
    parallel loops. An arg-reduction beside them is split the same way
    (the count of correct answers' argmax over 1000 classes): one input
    scanned for the first element that a strict ordered compare (`ogt`,
    `olt`, `sgt`, ...) finds better than the best so far, its value and
    its index along the reduction (`linalg.index`) the two outputs, and
    nothing else in the body; each row's pick starts from the outputs'
    values and takes its index from the row and the index in it, and the
    rows' picks are folded into the outputs, in order, by the same
    compare: the first best of all, as the serial loop finds it.

    `max-serial-iterations`, 4096, is an estimate of where one thread's
    loop takes as long as the host's wait and migration. On an H200 a
    one-thread loop of dependent loads took 80 to 180 ns an iteration
    (softmax's 125 partials: 23 us), so `max-combine-iterations` is 64.
  }];
  let options = [
    Option<"maxSerialIterations", "max-serial-iterations", "int64_t", "4096",
           "the longest generic that runs as a one-thread loop">,
    Option<"partialSums", "partial-sums", "int64_t", "4096",
           "the most partial results of a split reduction">,
    Option<"maxCombineIterations", "max-combine-iterations", "int64_t", "64",
           "the most partial results one thread combines; more are split "
           "again">,
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def InterchangeParallelOuter : Pass<"dtrain-interchange-parallel-outer",
                                     "func::FuncOp"> {
  let summary = "Interchange the loops of each linalg.generic so that its "
                "parallel dimensions enclose its reductions";
  let description = [{
    For `--target=cuda`, before `convert-linalg-to-parallel-loops`: a
    generic's loops come out in the order of its iterators, and a
    reduction ahead of a parallel dimension (a bias gradient's sum over
    the batch: `["reduction", "parallel"]`) becomes a host loop around a
    kernel launch per iteration, the sum carried through memory between
    launches. Interchanged, each thread of one kernel runs the reduction
    over its own outputs, in the same order of the reduced elements (the
    same sums as before). The parallel dimensions keep their order among
    themselves, and so do the reductions. Generics with no reduction, or
    with their reductions innermost already, are left alone.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def FuseFillsIntoParallelLoops : Pass<"dtrain-fuse-fills-into-parallel-loops",
                                       "func::FuncOp"> {
  let summary = "Make a loop that fills a buffer the first store of each "
                "iteration of the loop that then accumulates into it";
  let description = [{
    For `--target=cuda`, after `convert-linalg-to-parallel-loops` and before
    `dtrain-vectorize-parallel-loops`: a reduction's output is first filled
    with its initial value (`linalg.fill`), a loop of its own, and so a
    kernel launch of its own that stores one value an element (resnet50's
    bf16 step has 14, of softmax's and the loss's partial and final sums
    and maxima; 9 move: 9 launches fewer).

    A fill is an `scf.parallel` whose body is one `memref.store`, at its
    induction variables, of a value from above into a known buffer (an
    allocation or a model slot, through views). It moves into the first
    `scf.parallel` after it that touches that buffer, as the first op of
    its body, when that loop runs over the same constant range and each of
    its iterations loads and stores the buffer only at its own element
    (the fill's memref, at the loop's induction variables), so that each
    element is still filled before anything reads it. The ops between them
    must be free of side effects, allocations, or parallel loops whose
    accesses are known and do not touch the buffer; else the fill stays.

    ```mlir
    scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
      memref.store %zero, %sum[%i] : memref<32xf32>
    }
    scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
      scf.for %k = %c0 to %c40 step %c1 {
        %s = memref.load %sum[%i] : memref<32xf32>
        ...
        memref.store %t, %sum[%i] : memref<32xf32>
      }
    }
    ```

    becomes one loop whose body starts with
    `memref.store %zero, %sum[%i]`.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def FuseSiblingParallelLoops : Pass<"dtrain-fuse-sibling-parallel-loops",
                                     "func::FuncOp"> {
  let summary = "Merge independent scf.parallel loops into one 1-D loop, "
                "so that a GPU runs them as one kernel";
  let description = [{
    For `--target=cuda`, after `dtrain-vectorize-parallel-loops` and before
    `dtrain-tile-parallel-loops-for-gpu`: an optimizer updates each
    parameter in a loop of its own, and the 16-bit compute of
    `--dtrain-mixed-precision` casts each parameter in one; every loop is a
    kernel launch, of a few microseconds of the host's and the GPU's time
    however little it does (resnet50's bf16 step: 55 updates and 56 casts,
    of 256 to 2.4 million elements; with LARS, each parameter's norms are
    a chain of 3 more loops).

    Independent outermost loops (bounds 0 to constants, steps 1, no
    results) merge into one 1-D loop over their ranges laid end to end; a
    nest of several dimensions takes its iterations in row-major order,
    its indices taken apart from the range's (the remainder by the last
    size, then the quotient): such as the transposes that
    `--dtrain-channels-last` adds where no element-wise op fused with them
    (resnet50's bf16 step: 29 launches, 38 when only 1-D loops merged).
    Each range starts at a multiple of `align`, the threads of a block, so
    that every block of the kernel runs one loop's body: a tree of
    comparisons of the index with the starts, which a block's threads take
    alike, picks it, and the padding past a loop's own bound does nothing.
    Two sweeps of each block find the loops to merge:

    - *Up*: each loop joins the earliest run that it may move up to, where
      the run's merged loop goes (before its first loop): it must be
      independent of the run's loops and of everything after them that it
      passes, and the allocations and side-effect-free ops that define the
      values it uses move up with it. A chain of dependent loops per
      parameter (LARS's partial sums, their sum, the update) so becomes
      one loop per link (resnet50's bf16 step with LARS: 124 launches;
      447 before this sweep and the budget of PTX 8.1).
    - *Down*: then a run of loops that may each move down to the run's
      last loop merges there: a data-parallel trainer's updates, each after
      its gradient's wait, merge after the last wait.

    Both sweeps pass the runtime's calls (collectives and waits,
    `dtrain.stream_independent`; heavy-op kernels, `dtrain.step_stream`)
    whose buffers, those their pointers address, the loops leave alone: a
    batch norm's running-statistics update moves past the next layers'
    kernels and merges with theirs (resnet50's bf16 step: 54 launches, 91
    when only collectives were passed; with LARS, 59 and 95).

    ```mlir
    scf.parallel (%i) = (%c0) to (%c100) step (%c1) { A(%i) }
    scf.parallel (%i) = (%c0) to (%c512) step (%c1) { B(%i) }
    ```

    becomes (with `align=256`)

    ```mlir
    scf.parallel (%i) = (%c0) to (%c768) step (%c1) {
      %first = arith.cmpi ult, %i, %c256 : index
      scf.if %first {
        %in = arith.cmpi ult, %i, %c100 : index
        scf.if %in { A(%i) }
      } else {
        %j = arith.subi %i, %c256 : index
        B(%j)
      }
    }
    ```

    A loop moves past side-effect-free ops and allocations (up, past
    deallocations too), and past loops that no run takes (a 2-D nest) when their loads and
    stores alone, of known buffers, are independent of it. So it does past
    the runtime's collectives and their waits (the functions
    `--dtrain-lower-comm-to-runtime` marks `dtrain.stream_independent`)
    when it touches none of their buffers: those their pointers address,
    and a wait's those of the collective whose request it takes. Any other
    op ends the runs before it. Loops are merged only when none
    writes a buffer that another of the run reads or writes, buffers
    compared by the allocation or model slot their memrefs view (every
    allocation is a buffer of its own, and so is every slot that a
    compiled model's code reaches: a parameter and its updated output
    share one buffer, which `--dtrain-emit-model-entry` reaches through the
    parameter's slot alone, not loading the output's), and while the
    buffers and values the run uses, a kernel's parameters, stay within
    `max-parameter-bytes` (ptxas takes 4352 bytes with PTX 8.0, 32764 from
    PTX 8.1: `--dtrain-lower-to-nvvm` passes 256 less than its features
    allow); a loop whose body has other memory effects, or reaches a
    buffer of unknown origin, stays alone.
  }];
  let options = [
    Option<"align", "align", "int64_t", "256",
           "the multiple each loop's range starts at in the merged loop: "
           "dtrain-tile-parallel-loops-for-gpu's threads (default 256)">,
    Option<"maxParameterBytes", "max-parameter-bytes", "int64_t", "4096",
           "the most bytes of buffers and values a merged loop may use, "
           "its kernel's parameters (default 4096, within PTX 8.0's "
           "4352)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def OutlineParallelLoops : Pass<"dtrain-outline-parallel-loops", "ModuleOp"> {
  let summary = "Run large scf.parallel loops on the runtime's threads";
  let description = [{
    For the CPU target, after `convert-linalg-to-parallel-loops`: the loop
    nests of element-wise chains, reductions and copies that dtrain
    generates would otherwise run on one thread while the heavy-op kernels
    use them all. Each `scf.parallel` that no other encloses, that has no
    results and calls no function, and whose estimated work is at least
    `min-cost` operations (each operation of its body once per iteration of
    the loops around it; a loop of unknown trip count counts 16), becomes a
    call of `dtrain_rt_parallel_for` (dtrain_rt.h), which runs chunks of
    its iterations on the threads of the heavy-op kernels' OpenMP runtime.

    The loop's body moves into a new private function (internal to the
    object file) `@<function>_parallel(%context: !llvm.ptr, %begin: i64,
    %end: i64)`, numbered from the second on, that runs iterations `[%begin, %end)` of its leading dimensions, taken
    as one: the first, and the next ones until they reach 64 iterations
    (never the innermost of several, so that it stays one contiguous loop
    that LLVM vectorizes). The other dimensions stay an `scf.parallel`
    inside. Values the body uses from above are stored, in their LLVM
    types (a memref as its descriptor), into a stack context that the
    function loads; constants are cloned into it instead.

    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%c512, %c128) step (%c1, %c1) {
      %x = memref.load %in[%i, %j] : memref<512x128xf32>
      ...
    }
    ```

    becomes, in the function, a store of `%in`'s descriptor into the
    context and

    ```mlir
    %body = func.constant @step_parallel_0 : (!llvm.ptr, i64, i64) -> ()
    call @dtrain_rt_parallel_for(%body, %context, %c512_i64, %cost)
    ```

    Results do not depend on the number of threads: each iteration runs
    whole on one thread, and iterations of an `scf.parallel` are independent
    (`--dtrain-lower-to-llvm` runs `dtrain-check-parallel-stores` first,
    which reports an iteration's store that another would repeat).
  }];
  let options = [
    Option<"minCost", "min-cost", "int64_t", "32768",
           "the fewest estimated operations of a loop worth several "
           "threads (default 32768)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::scf::SCFDialect"];
}

def ApproximateMath : Pass<"dtrain-approximate-math"> {
  let summary = "Compute f32 math functions with vectorizable polynomials";
  let description = [{
    Rewrites the f32 `math` ops named by `ops` (default `erf`, `exp` and
    `tanh`) into MLIR's polynomial approximations: range reduction, a
    polynomial or rational function evaluated with `math.fma`, and bit
    manipulation of the exponent, all ops that LLVM vectorizes with the
    loop around them. Lowered as they are (`convert-math-to-libm`), these
    functions are calls of libm's `erff`, `expf` and `tanhf`, one element
    at a time: LLVM 22 has no vector library entry for `erff` on x86, and
    GELU's erf and softmax's exp took 12% of a GPT training step.

    `--dtrain-lower-to-llvm` runs it on the CPU unless `exact-math` is set
    (`dtrain-compile --exact-math`). Measured against float64 over 2^20
    arguments and the special values (approximate-math-accuracy.test), the
    default functions stay within 6 units in the last place: erf 4.3, tanh
    4.4, exp 0.9 but 5.5 above 88.38, next to its overflow at 88.72 (libm:
    0.8, 2.0, 0.5). inf and NaN come out as from libm, and `exp` flushes
    results below 2^-126 (subnormals) to 0. `log` is not a default:
    its approximation is off by millions of units on subnormal arguments.
    f16, bf16 and f64 ops are left alone.

    ```mlir
    %y = math.erf %x : f32
    ```

    becomes `arith.cmpf`s and `arith.select`s of the coefficients of three
    intervals, two `math.fma` chains and an `arith.divf`.
  }];
  let options = [
    ListOption<"ops", "ops", "std::string",
               "the math functions to approximate, by name (default: erf, "
               "exp, tanh; also acos, asin, atan, atan2, cbrt, cos, erfc, "
               "expm1, log, log1p, log2, sin)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def VectorizeParallelLoops : Pass<"dtrain-vectorize-parallel-loops",
                                   "func::FuncOp"> {
  let summary = "Give each iteration of a 1-D element-wise scf.parallel "
                "several elements, with vector loads and stores";
  let description = [{
    For `--target=cuda`, before `dtrain-fuse-sibling-parallel-loops` and
    `dtrain-tile-parallel-loops-for-gpu`. A kernel that moves one
    16-bit element a thread (a ReLU or a residual add in bf16) is bound by
    its instructions and by the scheduling of its many blocks, well below
    the memory's bandwidth; one 128-bit access a thread is what the
    hardware's widest load and store move.

    A loop qualifies when it is 1-D from 0 to a constant in steps of 1,
    without results, and its body holds only loads and stores at the
    induction variable of rank-1 buffers of unit stride (floats of 16 to
    64 bits, integers of 8 to 64), constants and element-wise `arith` ops
    on scalars; values from above must be buffers or scalars. Its trip
    count N becomes N / W for the widest W that divides N with W times the
    narrowest element within `access-bytes` (8 for bf16, 4 for f32 with
    the default 16); a loop where W would be 1 is left alone.

    ```mlir
    scf.parallel (%i) = (%c0) to (%c1024) step (%c1) {
      %x = memref.load %in[%i] : memref<1024xbf16>
      %y = arith.maximumf %x, %zero : bf16
      memref.store %y, %out[%i] : memref<1024xbf16>
      scf.reduce
    }
    ```

    becomes a loop of 128 iterations whose body, where both buffers start
    at a multiple of 16 bytes (checked in the loop, on the buffers' aligned
    pointers and offsets), loads a `vector<8xbf16>` at `8 * %j`, takes
    `arith.maximumf` with the zero broadcast, and stores the vector, each
    access with `alignment = 16`; where they do not, an `scf.for` runs the
    original body for the 8 elements one by one.
  }];
  let options = [
    Option<"accessBytes", "access-bytes", "int64_t", "16",
           "bytes of a vector of the narrowest element type (a power of 2, "
           "default 16)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def TileParallelLoopsForGPU : Pass<"dtrain-tile-parallel-loops-for-gpu",
                                    "func::FuncOp"> {
  let summary = "Tile each outermost scf.parallel into blocks and threads "
                "along its innermost dimension";
  let description = [{
    Tiles every `scf.parallel` that no other encloses: its innermost
    dimension by `threads`, every other by 1, without min/max bounds (the
    inner loop guards the last tile). `gpu-map-parallel-loops` then maps
    the outer loop to blocks and the inner one to threads, so that the
    threads of a warp take consecutive elements of the innermost,
    contiguous dimension: coalesced loads and stores. Tiling the outermost
    dimension instead (`scf-parallel-loop-tiling`) puts a warp's threads a
    row apart, on a 2-D loop nest such as a bias broadcast over a batch.

    A loop of more than three dimensions, or whose innermost dimension has
    fewer than `threads` iterations, is first made one dimension
    (`collapseParallelLoops`; the indices come back by division by
    constants): `gpu-map-parallel-loops` gives processors to the first
    three dimensions only, so a fourth, the tiled one, ran sequentially in
    a block of one thread (resnet18's average-pool gradient: 114688 such
    blocks, 0.9 ms of an 8.2 ms step on an H200), and a short innermost
    dimension leaves most of each block idle.
  }];
  let options = [
    Option<"threads", "threads", "int64_t", "256",
           "threads per block, along the innermost dimension (default 256)">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}

def CheckParallelStores : Pass<"dtrain-check-parallel-stores",
                                "func::FuncOp"> {
  let summary = "Report stores that every iteration of a parallel loop "
                "makes to one element";
  let description = [{
    Checks each `memref.store` and `vector.store` inside an `scf.parallel`:
    every dimension of more than one iteration of each enclosing parallel
    loop must reach the store's indices, or a condition it is under
    (`scf.if`, `scf.index_switch`), through the operations that compute
    them. Where one does not, every iteration along it writes the same
    element, which on a GPU is a race between the kernel's threads: a lost
    update where the store follows a load of the element (a reduction run
    as parallel). Buffers allocated inside the loop are each iteration's
    own and are not checked. A store that fails the check is an error,
    with the loop in a note.

    `--dtrain-lower-to-llvm{cuda-loops}` (`dtrain-compile --cuda-loops`)
    runs it on the CUDA target's loop nests as
    `convert-linalg-to-parallel-loops` makes them, one dimension a
    generic's: running them on the CPU, in order or reversed, cannot show
    a lost update, since both orders sum the same. `--dtrain-lower-to-llvm`
    runs it on the CPU's nests too, before
    `dtrain-outline-parallel-loops` spreads them over threads. It runs before the
    nests are merged, vectorized and tiled, whose index arithmetic
    (divisions of a collapsed dimension included) reaches every dimension
    and would hide a missing one from this check.
  }];
}

def ReverseParallelLoops : Pass<"dtrain-reverse-parallel-loops",
                                 "func::FuncOp"> {
  let summary = "Run each scf.parallel's iterations in reverse order";
  let description = [{
    Rewrites every `scf.parallel` so that its body, run for the iterations
    in their order, sees their indices from the last to the first (in each
    dimension: `lower + last - index`). A parallel loop promises that its
    iterations may run in any order, as the threads of a GPU kernel do.
    `--dtrain-lower-to-llvm{cuda-loops cuda-loops-reversed}`
    (`dtrain-compile --cuda-loops=reverse`) runs the CUDA target's loop
    nests on the CPU so, after its tiling: a result that depends on the
    order (two iterations writing one element, or one reading what another
    writes: a race between the kernel's threads) then differs from the
    run in order.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def ChainGPULaunches : Pass<"dtrain-chain-gpu-launches", "ModuleOp"> {
  let summary = "Make the host's kernel launches asynchronous on one stream, "
                "waiting only where the host needs their results";
  let description = [{
    For `--target=cuda`. A synchronous `gpu.launch_func` makes the host
    wait for each kernel: on a step of small kernels the GPU idles while
    the host launches the next one. This pass makes the launches of each
    block asynchronous on one chain of tokens, started by `gpu.wait
    async`, and ends the chain with `gpu.wait` only before the host code
    that may touch memory: an op with memory effects other than allocation
    and deallocation, or unknown ones (a call of the runtime, such as a
    collective's, which reads the buffers on the host or hands them to the
    communication thread), an op with regions, and the block's terminator.

    Calls of functions that carry the unit attribute `dtrain.step_stream`
    (the CUDA heavy-op kernels of `dtrain_rt_cuda.h`, which
    `--dtrain-lower-nn{target=cuda}` marks) enqueue their work on the same
    stream and return without waiting: they join the chain, starting one
    if none is open, rather than end it. Every stream the generated code
    makes is the runtime's step stream (`mgpuStreamCreate` in
    `libdtrain_runtime_cuda`), so kernels, heavy ops and the waits that
    end chains are ordered on one stream.

    Calls of functions that carry the unit attribute
    `dtrain.stream_independent` leave the chain open: they touch no buffer
    that queued kernels may use, or make their accesses wait for those
    kernels themselves. `--dtrain-lower-comm-to-runtime` marks the
    runtime's collectives so (a collective's buffers are its own from its
    submission to its wait, and the thread that runs it first waits for
    the kernels queued before its submission: the runtime's buffer fence,
    which `--target=cuda` trainers install), and the communicator's
    queries.

    Deallocations need no wait: the runtime's pool hands a freed block
    only to later work of the same step, in stream order, or to host code
    after a wait. The work of marked calls is invisible to MLIR's token
    semantics (a chain they start is an empty `gpu.wait async`, which
    canonicalization would drop with its wait), so the pass runs after the
    last canonicalization before `gpu-to-llvm`.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def RegisterGraphSteps : Pass<"dtrain-register-graph-steps", "ModuleOp"> {
  let summary = "Tell the CUDA runtime which run functions CUDA graphs may "
                "replay";
  let description = [{
    For `--target=cuda`, after `--dtrain-chain-gpu-launches`. A CUDA graph
    replays the work a step queued on the step stream while it was
    captured, with the same buffers and the same values the host computed
    for it; the host code itself does not run again. That is sound for a
    run function whose host code does nothing but queue work and compute
    values from the buffers' addresses: its one block (no host branches)
    holds only kernel launches, waits, copies and fills of the `gpu`
    dialect, calls of functions that carry the unit attribute
    `dtrain.step_stream` (the heavy ops), allocations and deallocations,
    loads of buffer pointers from its argument (the runtime's table of
    buffers, by which the runtime keys its graphs), and ops without memory
    effects. Anything else that `--dtrain-chain-gpu-launches` waits for,
    such as a sparse exchange (which selects on the host's orders and
    another thread) or a load of a buffer's contents, rules the function
    out. Calls of functions that carry the unit attribute
    `dtrain.inert_on_one_rank` (the communicator's queries, dense
    all-reduces and waits, which `--dtrain-lower-comm-to-runtime` marks)
    rule it out only where the job has more than one rank: across one,
    the runtime's dense collectives neither wait for the GPU nor touch
    their buffers.

    For each function that `@main` hands to the runtime (the `func.constant`s
    in `@main`), `@main` then calls
    `dtrain_rt_cuda_set_graph_step(function, why_not, on_one_rank)` before
    them: a null `why_not` for a function graphs may replay, else a string
    that says why not, which the runtime prints once under
    `DTRAIN_CUDA_GRAPH=1`, and `on_one_rank` 1 where graphs may replay it
    on one rank all the same. A module without `@main` is left as it is.

    ```mlir
    // After: a step of launches and a heavy op may be replayed.
    %run = constant @dtrain_model_run : (!llvm.ptr) -> ()
    %none = llvm.mlir.zero : !llvm.ptr
    %c0 = arith.constant 0 : i32
    call @dtrain_rt_cuda_set_graph_step(%run, %none, %c0) : ((!llvm.ptr) -> (), !llvm.ptr, i32) -> ()
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

#endif // DTRAIN_LOWER_PASSES_TD
