// RUN: dtrain-opt %s --split-input-file --dtrain-register-graph-steps | FileCheck %s

// @main registers each function it hands to the runtime: @step, whose host
// code loads its buffers' pointers from its table, allocates, launches,
// calls a heavy op and waits once, may be replayed (a null reason, not
// only on one rank); @eval, which starts a sparse exchange, may not, and
// says why; @dense, whose only other host code is a dense all-reduce and
// its wait (inert across one rank), may be on one rank.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%buf: memref<16xf32>) kernel {
      gpu.return
    }
  }
  func.func private @heavy(memref<16xf32>) attributes {dtrain.step_stream}
  func.func private @sparse_exchange(memref<16xf32>) -> !llvm.ptr attributes {dtrain.stream_independent}
  func.func private @all_reduce(memref<16xf32>) -> !llvm.ptr attributes {dtrain.inert_on_one_rank, dtrain.stream_independent}
  func.func private @wait(!llvm.ptr) attributes {dtrain.inert_on_one_rank, dtrain.stream_independent}
  func.func private @dtrain_rt_trainer_main(i32, !llvm.ptr, !llvm.ptr, (!llvm.ptr) -> (), (!llvm.ptr) -> ()) -> i32

  // CHECK-DAG: llvm.mlir.global internal constant @dtrain_graph_step_why_not_1("@eval calls @sparse_exchange, which communicates on the host between its kernels\00")
  // CHECK-DAG: llvm.mlir.global internal constant @dtrain_graph_step_why_not_2("@dense calls @all_reduce, which communicates on the host between its kernels across more than one rank\00")

  func.func @step(%table: !llvm.ptr) {
    %c1 = arith.constant 1 : index
    %p = llvm.getelementptr %table[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
    %buffer = llvm.load %p : !llvm.ptr -> !llvm.ptr
    %tmp = memref.alloc() : memref<16xf32>
    %t0 = gpu.wait async
    %t1 = gpu.launch_func async [%t0] @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%tmp : memref<16xf32>)
    call @heavy(%tmp) : (memref<16xf32>) -> ()
    memref.dealloc %tmp : memref<16xf32>
    gpu.wait [%t1]
    return
  }
  func.func @eval(%table: !llvm.ptr) {
    %tmp = memref.alloc() : memref<16xf32>
    %r = call @sparse_exchange(%tmp) : (memref<16xf32>) -> !llvm.ptr
    call @wait(%r) : (!llvm.ptr) -> ()
    memref.dealloc %tmp : memref<16xf32>
    return
  }
  func.func @dense(%table: !llvm.ptr) {
    %tmp = memref.alloc() : memref<16xf32>
    %r = call @all_reduce(%tmp) : (memref<16xf32>) -> !llvm.ptr
    call @wait(%r) : (!llvm.ptr) -> ()
    memref.dealloc %tmp : memref<16xf32>
    return
  }

  // CHECK-LABEL: func.func @main(
  // CHECK:         %[[STEP:.*]] = constant @step
  // CHECK-NEXT:    %[[NONE:.*]] = llvm.mlir.zero : !llvm.ptr
  // CHECK-NEXT:    %[[NO:.*]] = arith.constant 0 : i32
  // CHECK-NEXT:    call @dtrain_rt_cuda_set_graph_step(%[[STEP]], %[[NONE]], %[[NO]])
  // CHECK-NEXT:    %[[EVAL:.*]] = constant @eval
  // CHECK-NEXT:    %[[WHY:.*]] = llvm.mlir.addressof @dtrain_graph_step_why_not_1
  // CHECK-NEXT:    %[[NO1:.*]] = arith.constant 0 : i32
  // CHECK-NEXT:    call @dtrain_rt_cuda_set_graph_step(%[[EVAL]], %[[WHY]], %[[NO1]])
  // CHECK-NEXT:    %[[DENSE:.*]] = constant @dense
  // CHECK-NEXT:    %[[WHY2:.*]] = llvm.mlir.addressof @dtrain_graph_step_why_not_2
  // CHECK-NEXT:    %[[YES:.*]] = arith.constant 1 : i32
  // CHECK-NEXT:    call @dtrain_rt_cuda_set_graph_step(%[[DENSE]], %[[WHY2]], %[[YES]])
  // CHECK-NEXT:    call @dtrain_rt_trainer_main(%{{.*}}, %{{.*}}, %{{.*}}, %[[STEP]], %[[EVAL]])
  func.func @main(%argc: i32, %argv: !llvm.ptr) -> i32 {
    %info = llvm.mlir.zero : !llvm.ptr
    %step = constant @step : (!llvm.ptr) -> ()
    %eval = constant @eval : (!llvm.ptr) -> ()
    %dense = constant @dense : (!llvm.ptr) -> ()
    %rc = call @dtrain_rt_trainer_main(%argc, %argv, %info, %step, %eval) : (i32, !llvm.ptr, !llvm.ptr, (!llvm.ptr) -> (), (!llvm.ptr) -> ()) -> i32
    return %rc : i32
  }
}

// -----

// Host code that reads a buffer's contents, or branches, rules a function
// out; so does a call of a function that does not queue its work.
module {
  func.func private @dtrain_rt_model_main(i32, !llvm.ptr, !llvm.ptr, (!llvm.ptr) -> ()) -> i32
  func.func private @print(f32)

  // CHECK-DAG: @dtrain_graph_step_why_not_0("@reads runs memref.load on the host between its kernels\00")
  // CHECK-DAG: @dtrain_graph_step_why_not_1("@branches branches on the host\00")
  // CHECK-DAG: @dtrain_graph_step_why_not_2("@prints calls @print on the host between its kernels\00")
  func.func @reads(%table: !llvm.ptr) {
    %c0 = arith.constant 0 : index
    %tmp = memref.alloc() : memref<16xf32>
    %v = memref.load %tmp[%c0] : memref<16xf32>
    memref.dealloc %tmp : memref<16xf32>
    return
  }
  func.func @branches(%table: !llvm.ptr) {
    cf.br ^next
  ^next:
    return
  }
  func.func @prints(%table: !llvm.ptr) {
    %x = arith.constant 1.0 : f32
    call @print(%x) : (f32) -> ()
    return
  }
  // A pointer loaded from elsewhere than the table is a read of memory.
  // CHECK-DAG: @dtrain_graph_step_why_not_3("@chases runs llvm.load on the host between its kernels\00")
  func.func @chases(%table: !llvm.ptr) {
    %p = llvm.load %table : !llvm.ptr -> !llvm.ptr
    %q = llvm.load %p : !llvm.ptr -> !llvm.ptr
    return
  }

  // CHECK-LABEL: func.func @main(
  // CHECK-COUNT-4: call @dtrain_rt_cuda_set_graph_step
  func.func @main(%argc: i32, %argv: !llvm.ptr) -> i32 {
    %info = llvm.mlir.zero : !llvm.ptr
    %reads = constant @reads : (!llvm.ptr) -> ()
    %branches = constant @branches : (!llvm.ptr) -> ()
    %prints = constant @prints : (!llvm.ptr) -> ()
    %chases = constant @chases : (!llvm.ptr) -> ()
    %0 = call @dtrain_rt_model_main(%argc, %argv, %info, %reads) : (i32, !llvm.ptr, !llvm.ptr, (!llvm.ptr) -> ()) -> i32
    %1 = call @dtrain_rt_model_main(%argc, %argv, %info, %branches) : (i32, !llvm.ptr, !llvm.ptr, (!llvm.ptr) -> ()) -> i32
    %2 = call @dtrain_rt_model_main(%argc, %argv, %info, %prints) : (i32, !llvm.ptr, !llvm.ptr, (!llvm.ptr) -> ()) -> i32
    %3 = call @dtrain_rt_model_main(%argc, %argv, %info, %chases) : (i32, !llvm.ptr, !llvm.ptr, (!llvm.ptr) -> ()) -> i32
    return %0 : i32
  }
}

// -----

// Without @main (not a compiled model), nothing changes.
// CHECK-LABEL: func.func @alone(
// CHECK-NOT:   dtrain_rt_cuda_set_graph_step
func.func @alone(%table: !llvm.ptr) {
  return
}
