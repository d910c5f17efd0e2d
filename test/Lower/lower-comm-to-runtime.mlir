// RUN: dtrain-opt %s --dtrain-lower-comm-to-runtime --canonicalize --split-input-file | FileCheck %s
// RUN: dtrain-opt %s --dtrain-lower-comm-to-runtime=algorithm=ring --canonicalize --split-input-file | FileCheck %s --check-prefix=RING

// The runtime functions are declared once, with the C ABI's signatures.
// A --target=cuda step calls each without waiting for its kernels
// (dtrain.stream_independent): the queries touch no buffer, and a
// collective's thread waits for the kernels queued before its submission
// (the runtime's buffer fence). Across one rank, all but the sparse
// exchange leave the buffers alone (dtrain.inert_on_one_rank).
// CHECK-DAG: func.func private @dtrain_rt_comm_world() -> !llvm.ptr attributes {dtrain.inert_on_one_rank, dtrain.stream_independent}
// CHECK-DAG: func.func private @dtrain_rt_comm_rank(!llvm.ptr) -> i32 attributes {dtrain.inert_on_one_rank, dtrain.stream_independent}
// CHECK-DAG: func.func private @dtrain_rt_comm_size(!llvm.ptr) -> i32 attributes {dtrain.inert_on_one_rank, dtrain.stream_independent}
// CHECK-DAG: func.func private @dtrain_rt_all_reduce_with(!llvm.ptr, !llvm.ptr, i64, i32, i32, i32) attributes {dtrain.inert_on_one_rank, dtrain.stream_independent}
// CHECK-DAG: func.func private @dtrain_rt_all_reduce_start_with(!llvm.ptr, !llvm.ptr, i64, i32, i32, i32) -> !llvm.ptr attributes {dtrain.inert_on_one_rank, dtrain.stream_independent}
// CHECK-DAG: func.func private @dtrain_rt_wait(!llvm.ptr) attributes {dtrain.inert_on_one_rank, dtrain.stream_independent}

// CHECK-LABEL: func.func @collectives
// CHECK-SAME: (%[[G:.*]]: memref<128xf32>, %[[H:.*]]: memref<4x8xbf16>, %[[D:.*]]: memref<16xf64>, %[[E:.*]]: memref<3xf16>)
// Codes from dtrain_rt.h: dtypes F32=0 F64=1 F16=2 BF16=3; reductions
// SUM=0 MEAN=1 MAX=2; algorithms DEFAULT=0 MPI=1 RING=2.
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : i32
// CHECK-DAG: %[[N128:.*]] = arith.constant 128 : i64
// CHECK-DAG: %[[N32:.*]] = arith.constant 32 : i64
// CHECK-DAG: %[[N16:.*]] = arith.constant 16 : i64
// CHECK-DAG: %[[N3:.*]] = arith.constant 3 : i64
// CHECK:     %[[WORLD:.*]] = call @dtrain_rt_comm_world() : () -> !llvm.ptr
// CHECK:     %[[GI:.*]] = memref.extract_aligned_pointer_as_index %[[G]]
// CHECK:     %[[GP:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr
// CHECK:     %[[REQ:.*]] = call @dtrain_rt_all_reduce_start_with(%[[WORLD]], %[[GP]], %[[N128]], %[[C0]], %[[C1]], %[[C0]])
// CHECK:     memref.extract_aligned_pointer_as_index %[[H]]
// CHECK:     %[[HP:.*]] = llvm.inttoptr
// CHECK:     call @dtrain_rt_all_reduce_with(%[[WORLD]], %[[HP]], %[[N32]], %[[C3]], %[[C2]], %[[C0]])
// CHECK:     %[[DP:.*]] = llvm.inttoptr
// CHECK:     call @dtrain_rt_all_reduce_with(%[[WORLD]], %[[DP]], %[[N16]], %[[C1]], %[[C0]], %[[C0]])
// CHECK:     %[[EP:.*]] = llvm.inttoptr
// CHECK:     call @dtrain_rt_all_reduce_with(%[[WORLD]], %[[EP]], %[[N3]], %[[C2]], %[[C1]], %[[C0]])
// CHECK:     call @dtrain_rt_wait(%[[REQ]])
// CHECK:     %[[RANK:.*]] = call @dtrain_rt_comm_rank(%[[WORLD]])
// CHECK:     arith.index_cast %[[RANK]] : i32 to index
// CHECK:     %[[SIZE:.*]] = call @dtrain_rt_comm_size(%[[WORLD]])
// CHECK:     arith.index_cast %[[SIZE]] : i32 to index
// CHECK-NOT: comm.
// RING-LABEL: func.func @collectives
// RING-DAG:  %[[C2:.*]] = arith.constant 2 : i32
// RING-DAG:  %[[C3:.*]] = arith.constant 3 : i32
// RING-DAG:  %[[N32:.*]] = arith.constant 32 : i64
// RING:      call @dtrain_rt_all_reduce_start_with(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[C2]])
// RING:      call @dtrain_rt_all_reduce_with(%{{.*}}, %{{.*}}, %[[N32]], %[[C3]], %[[C2]], %[[C2]])
func.func @collectives(%g: memref<128xf32>, %h: memref<4x8xbf16>, %d: memref<16xf64>,
                       %e: memref<3xf16>) -> (index, index) {
  %world = comm.world : !comm.communicator
  %req = comm.all_reduce_start <mean> %g on %world : memref<128xf32>
  comm.all_reduce <max> %h on %world : memref<4x8xbf16>
  comm.all_reduce <sum> %d on %world : memref<16xf64>
  comm.all_reduce <mean> %e on %world : memref<3xf16>
  comm.wait %req, %g : memref<128xf32>
  %rank = comm.rank %world
  %size = comm.size %world
  return %rank, %size : index, index
}

// -----

// Dynamic sizes multiply into the count; a contiguous view is passed as its
// aligned pointer plus offset (in bytes).
// CHECK-LABEL: func.func @dynamic_and_offset
// CHECK-SAME: (%[[C:.*]]: !llvm.ptr, %[[BUF:.*]]: memref<?x4xf32>, %[[N:.*]]: index)
// CHECK:      %{{.*}}, %{{.*}}, %[[SIZES:.*]]:2, %{{.*}}:2 = memref.extract_strided_metadata %[[BUF]]
// CHECK:      %[[CNT:.*]] = arith.muli %[[SIZES]]#0, %c4
// CHECK:      %[[CNT64:.*]] = arith.index_castui %[[CNT]] : index to i64
// CHECK:      call @dtrain_rt_all_reduce_with(%[[C]], %{{.*}}, %[[CNT64]],
// CHECK:      %[[VIEW:.*]] = memref.subview
// CHECK:      %{{.*}}, %[[OFF:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[VIEW]]
// CHECK:      %[[ADDR:.*]] = memref.extract_aligned_pointer_as_index %[[VIEW]]
// CHECK:      %[[BYTES:.*]] = arith.muli %[[OFF]], %c4
// CHECK:      %[[SUM:.*]] = arith.addi %[[ADDR]], %[[BYTES]]
// CHECK:      %[[SUM64:.*]] = arith.index_castui %[[SUM]] : index to i64
// CHECK:      %[[PTR:.*]] = llvm.inttoptr %[[SUM64]]
// CHECK:      call @dtrain_rt_all_reduce_with(%[[C]], %[[PTR]], %c8_i64,
func.func @dynamic_and_offset(%world: !comm.communicator, %buf: memref<?x4xf32>, %n: index) {
  comm.all_reduce <sum> %buf on %world : memref<?x4xf32>
  %view = memref.subview %buf[%n, 0] [2, 4] [1, 1] : memref<?x4xf32> to memref<2x4xf32, strided<[4, 1], offset: ?>>
  comm.all_reduce <sum> %view on %world : memref<2x4xf32, strided<[4, 1], offset: ?>>
  return
}

// -----

// Communicators and requests cross calls, returns and scf regions as
// pointers.
// CHECK-LABEL: func.func @start_in_callee
// CHECK-SAME: (%{{.*}}: !llvm.ptr, %{{.*}}: memref<8xf32>) -> !llvm.ptr
// CHECK-LABEL: func.func @caller
// CHECK:      %[[W:.*]] = call @dtrain_rt_comm_world()
// CHECK:      %[[R:.*]] = call @start_in_callee(%[[W]], %{{.*}}) : (!llvm.ptr, memref<8xf32>) -> !llvm.ptr
// CHECK:      scf.for {{.*}} iter_args(%[[ITER:.*]] = %[[R]]) -> (!llvm.ptr)
// CHECK:        call @dtrain_rt_wait(%[[ITER]])
// CHECK:        call @dtrain_rt_all_reduce_start_with(%[[W]],
func.func @start_in_callee(%world: !comm.communicator, %buf: memref<8xf32>) -> !comm.request {
  %req = comm.all_reduce_start <sum> %buf on %world : memref<8xf32>
  return %req : !comm.request
}
func.func @caller(%buf: memref<8xf32>, %n: index) {
  %world = comm.world : !comm.communicator
  %req = call @start_in_callee(%world, %buf) : (!comm.communicator, memref<8xf32>) -> !comm.request
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %last = scf.for %i = %c0 to %n step %c1 iter_args(%r = %req) -> (!comm.request) {
    comm.wait %r, %buf : memref<8xf32>
    %next = comm.all_reduce_start <sum> %buf on %world : memref<8xf32>
    scf.yield %next : !comm.request
  }
  comm.wait %last, %buf : memref<8xf32>
  return
}

// -----

// A sparse all-reduce: both addresses, the element count, k as i64, the
// segments (null and 0 without them, else the address of a constant global
// and their count), and the codes of dtrain_rt.h: SELECT_GAUSSIAN=1,
// SPARSE_GTOPK=1 (SPARSE_DENSE=2; with `aggregate <auto>` its operand as
// i32), MEAN=1, the value type F32=0 without `wire` and BF16=3
// with it; the seed is 0 (the runtime varies it per call). Its wait is a
// plain wait. Across one rank the exchange still selects: it is not
// inert there.
// CHECK:     memref.global "private" constant @__dtrain_segments_0 : memref<2xi64> = dense<[16, 48]>
// CHECK:     func.func private @dtrain_rt_sparse_all_reduce_start({{.*}}) -> !llvm.ptr attributes {dtrain.stream_independent}
// CHECK-NOT: memref.global
// CHECK-LABEL: func.func @sparse
// CHECK-SAME: (%[[G:.*]]: memref<4x16xf32>, %[[R:.*]]: memref<4x16xf32>, %[[K:.*]]: index)
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : i32
// CHECK-DAG: %[[N64:.*]] = arith.constant 64 : i64
// CHECK-DAG: %[[SEED:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[K64:.*]] = arith.index_cast %[[K]] : index to i64
// CHECK-DAG: %[[GP:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr
// CHECK-DAG: %[[RP:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr
// CHECK-DAG: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2 : i64
// CHECK:     %[[REQ:.*]] = call @dtrain_rt_sparse_all_reduce_start(%{{.*}}, %[[GP]], %[[RP]], %[[N64]], %[[K64]], %[[NULL]], %[[SEED]], %[[C1]], %[[C1]], %[[C1]], %[[C0]], %[[SEED]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, !llvm.ptr, i64, i32, i32, i32, i32, i64) -> !llvm.ptr
// CHECK:     call @dtrain_rt_wait(%[[REQ]])
// CHECK:     %[[REQ16:.*]] = call @dtrain_rt_sparse_all_reduce_start(%{{.*}}, %{{.*}}, %{{.*}}, %[[N64]], %{{.*}}, %[[NULL]], %[[SEED]], %[[C1]], %[[C1]], %[[C1]], %[[C3]], %[[SEED]])
// CHECK:     call @dtrain_rt_wait(%[[REQ16]])
// CHECK:     %[[SEGMENTS:.*]] = memref.get_global @__dtrain_segments_0 : memref<2xi64>
// CHECK:     memref.extract_aligned_pointer_as_index %[[SEGMENTS]]
// CHECK:     %[[SP:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr
// CHECK:     %[[REQSEG:.*]] = call @dtrain_rt_sparse_all_reduce_start(%{{.*}}, %{{.*}}, %{{.*}}, %[[N64]], %{{.*}}, %[[SP]], %[[TWO]], %[[C1]], %[[C1]], %[[C1]], %[[C0]], %[[SEED]])
// CHECK:     call @dtrain_rt_wait(%[[REQSEG]])
// CHECK:     call @dtrain_rt_sparse_all_reduce_start(%{{.*}}, %{{.*}}, %{{.*}}, %[[N64]], %{{.*}}, %{{.*}}, %[[TWO]],
// CHECK:     %[[DENSE:.*]] = call @dtrain_rt_sparse_all_reduce_start(%{{.*}}, %{{.*}}, %{{.*}}, %[[N64]], %{{.*}}, %[[NULL]], %[[SEED]], %[[C1]], %[[C2:.*]], %[[C1]], %[[C0]], %[[SEED]])
// CHECK:     call @dtrain_rt_wait(%[[DENSE]])
// CHECK:     %[[CHOSEN:.*]] = arith.index_cast %[[K]] : index to i32
// CHECK:     %[[AUTO:.*]] = call @dtrain_rt_sparse_all_reduce_start(%{{.*}}, %{{.*}}, %{{.*}}, %[[N64]], %{{.*}}, %[[NULL]], %[[SEED]], %[[C1]], %[[CHOSEN]], %[[C1]], %[[C0]], %[[SEED]])
// CHECK:     call @dtrain_rt_wait(%[[AUTO]])
// CHECK-NOT: comm.
func.func @sparse(%g: memref<4x16xf32>, %r: memref<4x16xf32>, %k: index) {
  %world = comm.world : !comm.communicator
  %req = comm.sparse_all_reduce_start <mean> %g, %r k %k on %world select <gaussian> aggregate <gtopk> : memref<4x16xf32>
  comm.sparse_wait %req, %g, %r : memref<4x16xf32>
  %req16 = comm.sparse_all_reduce_start <mean> %g, %r k %k on %world select <gaussian> aggregate <gtopk> wire bf16 : memref<4x16xf32>
  comm.sparse_wait %req16, %g, %r : memref<4x16xf32>
  %reqs = comm.sparse_all_reduce_start <mean> %g, %r k %k on %world select <gaussian> aggregate <gtopk> segments [16, 48] : memref<4x16xf32>
  comm.sparse_wait %reqs, %g, %r : memref<4x16xf32>
  %reqt = comm.sparse_all_reduce_start <mean> %g, %r k %k on %world select <gaussian> aggregate <gtopk> segments [16, 48] : memref<4x16xf32>
  comm.sparse_wait %reqt, %g, %r : memref<4x16xf32>
  %reqd = comm.sparse_all_reduce_start <mean> %g, %r k %k on %world select <gaussian> aggregate <dense> : memref<4x16xf32>
  comm.sparse_wait %reqd, %g, %r : memref<4x16xf32>
  %reqa = comm.sparse_all_reduce_start <mean> %g, %r k %k on %world select <gaussian> aggregate <auto> %k : memref<4x16xf32>
  comm.sparse_wait %reqa, %g, %r : memref<4x16xf32>
  return
}
