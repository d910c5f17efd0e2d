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

#endif // DTRAIN_LOWER_PASSES_TD
