//===- CommBase.td - comm dialect, types and attributes ----*- tablegen -*-===//

#ifndef DTRAIN_DIALECT_COMM_IR_COMMBASE_TD
#define DTRAIN_DIALECT_COMM_IR_COMMBASE_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"

def Comm_Dialect : Dialect {
  let name = "comm";
  let cppNamespace = "::mlir::dtrain::comm";
  let summary = "Collective communication with explicit semantics";
  let description = [{
    The `comm` dialect expresses the communication of a data-parallel
    program: which buffer is combined across which ranks, with which
    reduction, and when the exchange starts and must be complete.

    Collectives are polymorphic in the way their data is held. On a ranked
    tensor they have value semantics and return the combined tensor; on a
    memref they work in place and return nothing. One-shot bufferization
    turns the first form into the second, and
    `--dtrain-lower-comm-to-runtime` turns the second into calls of the
    runtime's C ABI (`runtime/include/dtrain_rt.h`).

    Asynchronous collectives are split into a `*_start` op, which returns a
    `!comm.request`, and `comm.wait`, which completes it. Between the two the
    buffer belongs to the communication library: the start op returns the
    in-flight tensor and the wait takes it back, so no read or write of the
    data can be scheduled, or bufferized, into that window.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
}

class Comm_Type<string name, string typeMnemonic> : TypeDef<Comm_Dialect, name> {
  let mnemonic = typeMnemonic;
}

def Comm_CommunicatorType : Comm_Type<"Communicator", "communicator"> {
  let summary = "A group of ranks that take part in collectives together";
  let description = [{
    An opaque handle on a group of ranks, such as all ranks of the job
    (`comm.world`). It lowers to the runtime's `dtrain_rt_comm_t *`.
  }];
}

def Comm_RequestType : Comm_Type<"Request", "request"> {
  let summary = "A collective in flight";
  let description = [{
    Returned by the `*_start` ops and consumed by exactly one `comm.wait`.
    It lowers to the runtime's `dtrain_rt_request_t *`.
  }];
}

def Comm_ReductionKind : I32EnumAttr<"ReductionKind",
    "how a collective combines the contributions of the ranks", [
      I32EnumAttrCase<"sum", 0>,
      I32EnumAttrCase<"mean", 1>,
      I32EnumAttrCase<"max", 2>]> {
  let cppNamespace = "::mlir::dtrain::comm";
  let genSpecializedAttr = 0;
}

def Comm_ReductionKindAttr : EnumAttr<Comm_Dialect, Comm_ReductionKind, "reduction"> {
  let assemblyFormat = "`<` $value `>`";
}

def Comm_SelectMethod : I32EnumAttr<"SelectMethod",
    "how a sparsified exchange picks the entries it sends", [
      I32EnumAttrCase<"exact", 0>,
      I32EnumAttrCase<"gaussian", 1>,
      I32EnumAttrCase<"dgc", 2>,
      I32EnumAttrCase<"random", 3>]> {
  let cppNamespace = "::mlir::dtrain::comm";
  let genSpecializedAttr = 0;
}

def Comm_SelectMethodAttr : EnumAttr<Comm_Dialect, Comm_SelectMethod, "select"> {
  let assemblyFormat = "`<` $value `>`";
}

def Comm_SparseAggregate : I32EnumAttr<"SparseAggregate",
    "how the ranks' sparse selections are combined", [
      I32EnumAttrCase<"allgather", 0>,
      I32EnumAttrCase<"gtopk", 1>,
      I32EnumAttrCase<"dense", 2>,
      I32EnumAttrCase<"automatic", 3, "auto">]> {
  let cppNamespace = "::mlir::dtrain::comm";
  let genSpecializedAttr = 0;
}

def Comm_SparseAggregateAttr : EnumAttr<Comm_Dialect, Comm_SparseAggregate,
                                        "aggregate"> {
  let assemblyFormat = "`<` $value `>`";
}

#endif // DTRAIN_DIALECT_COMM_IR_COMMBASE_TD
