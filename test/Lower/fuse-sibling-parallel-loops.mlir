// RUN: dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-fuse-sibling-parallel-loops))" | FileCheck %s
// RUN: dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-fuse-sibling-parallel-loops{align=64}))" | FileCheck %s --check-prefix=ALIGN
// RUN: not dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-fuse-sibling-parallel-loops{align=0}))" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-fuse-sibling-parallel-loops{max-parameter-bytes=0}))" 2>&1 | FileCheck %s --check-prefix=ZERO-BYTES
// ZERO-BYTES: error: --dtrain-fuse-sibling-parallel-loops: max-parameter-bytes must be at least 1

// Three parameters' updates (64, 128 and 64 values; each buffer a slot or
// an allocation of its own) with a constant and an allocation between
// them: one loop over their ranges end to end, each starting at a multiple
// of 256 (0, 256, 512), where the last was. A tree of comparisons with the
// starts picks the loop; the iterations past a loop's bound do nothing.
// CHECK-LABEL: func.func @updates
// CHECK:         %[[P1:.*]] = builtin.unrealized_conversion_cast %arg0
// CHECK:         %[[P2:.*]] = builtin.unrealized_conversion_cast %arg2
// CHECK:         %[[P3:.*]] = memref.alloc()
// CHECK:         scf.parallel (%[[I:.*]]) = (%c0{{.*}}) to (%c768{{.*}}) step
// CHECK-NEXT:      %[[FIRST:.*]] = arith.cmpi ult, %[[I]], %c256
// CHECK-NEXT:      scf.if %[[FIRST]] {
// CHECK-NEXT:        %[[IN0:.*]] = arith.cmpi ult, %[[I]], %c64
// CHECK-NEXT:        scf.if %[[IN0]] {
// CHECK:               memref.load %{{.*}}[%[[I]]] : memref<64xf32>
// CHECK:               arith.mulf
// CHECK:               memref.store %{{.*}}, %[[P1]][%[[I]]] : memref<64xf32>
// CHECK:           } else {
// CHECK-NEXT:        %[[SECOND:.*]] = arith.cmpi ult, %[[I]], %c512
// CHECK-NEXT:        scf.if %[[SECOND]] {
// CHECK-NEXT:          %[[J1:.*]] = arith.subi %[[I]], %c256
// CHECK-NEXT:          %[[IN1:.*]] = arith.cmpi ult, %[[J1]], %c128
// CHECK-NEXT:          scf.if %[[IN1]] {
// CHECK:                 memref.store %{{.*}}, %[[P2]][%[[J1]]] : memref<128xf32>
// CHECK:             } else {
// CHECK-NEXT:          %[[J2:.*]] = arith.subi %[[I]], %c512
// CHECK-NEXT:          %[[IN2:.*]] = arith.cmpi ult, %[[J2]], %c64
// CHECK-NEXT:          scf.if %[[IN2]] {
// CHECK:                 arith.addf
// CHECK:                 memref.store %{{.*}}, %[[P3]][%[[J2]]] : memref<64xf32>
// CHECK-NOT:     scf.parallel
// CHECK:         return
// Ranges that are multiples of the alignment need no bound.
// ALIGN-LABEL: func.func @updates
// ALIGN:         scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%c256{{.*}}) step
// ALIGN-NEXT:      arith.cmpi ult, %[[I]], %c64
// ALIGN-NEXT:      scf.if
// ALIGN-NEXT:        memref.load
// ALIGN:           } else {
// ALIGN-NEXT:        arith.cmpi ult, %[[I]], %c192
// ALIGN-NEXT:        scf.if
// ALIGN-NEXT:          %[[J1:.*]] = arith.subi %[[I]], %c64
// ALIGN-NEXT:          memref.load %{{.*}}[%[[J1]]] : memref<128xf32>
// ALIGN:             } else {
// ALIGN-NEXT:          %[[J2:.*]] = arith.subi %[[I]], %c192
// ALIGN-NEXT:          memref.load %{{.*}}[%[[J2]]] : memref<64xf32>
// ALIGN-NOT:     scf.parallel
// ALIGN:         return
// ZERO: error: --dtrain-fuse-sibling-parallel-loops: align must be at least 1
func.func @updates(%p1: memref<64xf32>, %g1: memref<64xf32>,
                   %p2: memref<128xf32>, %g2: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %lr = arith.constant 0.5 : f32
  %b1 = builtin.unrealized_conversion_cast %p1 : memref<64xf32> to memref<64xf32>
  %b2 = builtin.unrealized_conversion_cast %g1 : memref<64xf32> to memref<64xf32>
  %b3 = builtin.unrealized_conversion_cast %p2 : memref<128xf32> to memref<128xf32>
  %b4 = builtin.unrealized_conversion_cast %g2 : memref<128xf32> to memref<128xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %g = memref.load %b2[%i] : memref<64xf32>
    %d = arith.mulf %g, %lr : f32
    memref.store %d, %b1[%i] : memref<64xf32>
    scf.reduce
  }
  %two = arith.constant 2.0 : f32
  scf.parallel (%i) = (%c0) to (%c128) step (%c1) {
    %g = memref.load %b4[%i] : memref<128xf32>
    %d = arith.mulf %g, %two : f32
    memref.store %d, %b3[%i] : memref<128xf32>
    scf.reduce
  }
  %p3 = memref.alloc() : memref<64xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %g = memref.load %b2[%i] : memref<64xf32>
    %d = arith.addf %g, %g : f32
    memref.store %d, %p3[%i] : memref<64xf32>
    scf.reduce
  }
  memref.dealloc %p3 : memref<64xf32>
  return
}

// Vectorized loops (--dtrain-vectorize-parallel-loops) of any length
// merge: vector loads and stores are accesses of their buffers, and the
// alignment test's pointer extraction touches no memory. Casts of two
// parameters to bf16, of 1000 and 16 vectors, start at 0 and 1024.
// CHECK-LABEL: func.func @casts
// CHECK:         scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%c1280{{.*}}) step
// CHECK-NEXT:      arith.cmpi ult, %[[I]], %c1024
// CHECK-NEXT:      scf.if
// CHECK-NEXT:        arith.cmpi ult, %[[I]], %c1000
// CHECK:               vector.load %{{.*}} : memref<8000xf32>, vector<8xf32>
// CHECK:           } else {
// CHECK-NEXT:        %[[J:.*]] = arith.subi %[[I]], %c1024
// CHECK:               memref.extract_aligned_pointer_as_index
// CHECK:               vector.store %{{.*}} : memref<128xbf16>, vector<8xbf16>
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @casts(%w1: memref<8000xf32>, %w2: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c1000 = arith.constant 1000 : index
  %p1 = builtin.unrealized_conversion_cast %w1 : memref<8000xf32> to memref<8000xf32>
  %p2 = builtin.unrealized_conversion_cast %w2 : memref<128xf32> to memref<128xf32>
  %h1 = memref.alloc() : memref<8000xbf16>
  scf.parallel (%i) = (%c0) to (%c1000) step (%c1) {
    %first = arith.muli %i, %c8 : index
    %x = vector.load %p1[%first] : memref<8000xf32>, vector<8xf32>
    %y = arith.truncf %x : vector<8xf32> to vector<8xbf16>
    vector.store %y, %h1[%first] : memref<8000xbf16>, vector<8xbf16>
    scf.reduce
  }
  %h2 = memref.alloc() : memref<128xbf16>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %first = arith.muli %i, %c8 : index
    %pointer = memref.extract_aligned_pointer_as_index %h2 : memref<128xbf16> -> index
    %x = vector.load %p2[%first] : memref<128xf32>, vector<8xf32>
    %y = arith.truncf %x : vector<8xf32> to vector<8xbf16>
    vector.store %y, %h2[%first] : memref<128xbf16>, vector<8xbf16>
    scf.reduce
  }
  memref.dealloc %h1 : memref<8000xbf16>
  memref.dealloc %h2 : memref<128xbf16>
  return
}

// Not merged: the second loop reads what the first writes; a call
// between loops ends a run; a loop that reaches a buffer of unknown
// origin (a function argument, not a slot or an allocation) stays alone.
// CHECK-LABEL: func.func @kept
// CHECK-NOT:     scf.if
// CHECK-COUNT-5: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c64) step
// CHECK-NOT:     scf.if
// CHECK:         return
func.func private @opaque()
func.func @kept(%arg: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<64xf32>
  %b = memref.alloc() : memref<64xf32>
  %c = memref.alloc() : memref<64xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %one, %a[%i] : memref<64xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %v = memref.load %a[%i] : memref<64xf32>
    memref.store %v, %b[%i] : memref<64xf32>
    scf.reduce
  }
  func.call @opaque() : () -> ()
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %one, %c[%i] : memref<64xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %one, %arg[%i] : memref<64xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %one, %b[%i] : memref<64xf32>
    scf.reduce
  }
  memref.dealloc %a : memref<64xf32>
  memref.dealloc %b : memref<64xf32>
  memref.dealloc %c : memref<64xf32>
  return
}

// Nests join runs too, their indices taken apart from the merged loop's
// (row-major: the remainder by the last size, then the quotient): the
// three 1-D loops and the independent 2-D nest merge where the first loop
// was, before the nest that reads what the first loop writes.
// CHECK-LABEL: func.func @across
// CHECK:         %[[A:.*]] = memref.alloc() : memref<64xf32>
// CHECK:         memref.alloc() : memref<50x100xf32>
// CHECK:         %[[BIG2:.*]] = memref.alloc() : memref<50x100xf32>
// CHECK:         scf.parallel (%{{[^,]*}}) = (%{{.*}}) to (%c5888{{.*}}) step
// CHECK:           memref.store %{{.*}}, %[[A]][%{{.*}}] : memref<64xf32>
// CHECK:           %[[J:.*]] = arith.subi %{{.*}}, %c512
// CHECK:           %[[COL:.*]] = arith.remui %[[J]], %c100
// CHECK-NEXT:      %[[ROW:.*]] = arith.divui %[[J]], %c100
// CHECK-NEXT:      memref.store %{{.*}}, %[[BIG2]][%[[ROW]], %[[COL]]] : memref<50x100xf32>
// CHECK:         scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %{{.*}}) to (%c50, %c100) step
// CHECK-NEXT:      memref.load %[[A]]
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @across() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c50 = arith.constant 50 : index
  %c64 = arith.constant 64 : index
  %c100 = arith.constant 100 : index
  %one = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<64xf32>
  %big = memref.alloc() : memref<50x100xf32>
  %big2 = memref.alloc() : memref<50x100xf32>
  %c = memref.alloc() : memref<64xf32>
  %d = memref.alloc() : memref<64xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %one, %a[%i] : memref<64xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c50, %c100) step (%c1, %c1) {
    %v = memref.load %a[%c0] : memref<64xf32>
    memref.store %v, %big[%i, %j] : memref<50x100xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %one, %c[%i] : memref<64xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c50, %c100) step (%c1, %c1) {
    memref.store %one, %big2[%i, %j] : memref<50x100xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %one, %d[%i] : memref<64xf32>
    scf.reduce
  }
  memref.dealloc %a : memref<64xf32>
  memref.dealloc %big : memref<50x100xf32>
  memref.dealloc %big2 : memref<50x100xf32>
  memref.dealloc %c : memref<64xf32>
  memref.dealloc %d : memref<64xf32>
  return
}

// The runtime's collectives and waits (dtrain.stream_independent) touch
// the buffers their pointers address, a wait those of the collective whose
// request it takes: an optimizer's update, after its gradient's wait, moves
// past the next gradients' waits, and the three updates merge after the
// last. The loop that writes a gradient stays before the collective that
// sends it, and a collective on a pointer of unknown origin ends a run:
// the loop after it stays alone.
// CHECK-LABEL: func.func @waits
// CHECK:         scf.parallel (%{{[^,]*}}) = (%{{.*}}) to (%c64) step
// CHECK-NEXT:      memref.store %{{.*}}, %[[G3:.*]][%{{.*}}] : memref<64xf32>
// CHECK:         %[[R3:.*]] = call @dtrain_rt_all_reduce_start_with(
// CHECK-NEXT:    call @dtrain_rt_wait(%{{.*}})
// CHECK-NEXT:    call @dtrain_rt_wait(%{{.*}})
// CHECK-NEXT:    call @dtrain_rt_wait(%[[R3]])
// CHECK:         scf.parallel (%{{[^,]*}}) = (%{{.*}}) to (%c768{{.*}}) step
// CHECK:         call @dtrain_rt_all_reduce_start_with(%{{.*}}, %arg0,
// CHECK-NEXT:    scf.parallel (%{{[^,]*}}) = (%{{.*}}) to (%c64) step
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func private @dtrain_rt_comm_world() -> !llvm.ptr attributes {dtrain.stream_independent}
func.func private @dtrain_rt_all_reduce_start_with(!llvm.ptr, !llvm.ptr, i64, i32, i32, i32) -> !llvm.ptr attributes {dtrain.stream_independent}
func.func private @dtrain_rt_wait(!llvm.ptr) attributes {dtrain.stream_independent}
func.func @waits(%unknown: !llvm.ptr) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %n = arith.constant 64 : i64
  %z = arith.constant 0 : i32
  %one = arith.constant 1.0 : f32
  %g1 = memref.alloc() : memref<64xf32>
  %g2 = memref.alloc() : memref<64xf32>
  %g3 = memref.alloc() : memref<64xf32>
  %p1 = memref.alloc() : memref<64xf32>
  %p2 = memref.alloc() : memref<64xf32>
  %p3 = memref.alloc() : memref<64xf32>
  %p4 = memref.alloc() : memref<64xf32>
  %world = call @dtrain_rt_comm_world() : () -> !llvm.ptr
  %x1 = memref.extract_aligned_pointer_as_index %g1 : memref<64xf32> -> index
  %i1 = arith.index_castui %x1 : index to i64
  %a1 = llvm.inttoptr %i1 : i64 to !llvm.ptr
  %r1 = call @dtrain_rt_all_reduce_start_with(%world, %a1, %n, %z, %z, %z) : (!llvm.ptr, !llvm.ptr, i64, i32, i32, i32) -> !llvm.ptr
  %x2 = memref.extract_aligned_pointer_as_index %g2 : memref<64xf32> -> index
  %i2 = arith.index_castui %x2 : index to i64
  %a2 = llvm.inttoptr %i2 : i64 to !llvm.ptr
  %r2 = call @dtrain_rt_all_reduce_start_with(%world, %a2, %n, %z, %z, %z) : (!llvm.ptr, !llvm.ptr, i64, i32, i32, i32) -> !llvm.ptr
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %one, %g3[%i] : memref<64xf32>
    scf.reduce
  }
  %x3 = memref.extract_aligned_pointer_as_index %g3 : memref<64xf32> -> index
  %i3 = arith.index_castui %x3 : index to i64
  %a3 = llvm.inttoptr %i3 : i64 to !llvm.ptr
  %r3 = call @dtrain_rt_all_reduce_start_with(%world, %a3, %n, %z, %z, %z) : (!llvm.ptr, !llvm.ptr, i64, i32, i32, i32) -> !llvm.ptr
  call @dtrain_rt_wait(%r1) : (!llvm.ptr) -> ()
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %g = memref.load %g1[%i] : memref<64xf32>
    memref.store %g, %p1[%i] : memref<64xf32>
    scf.reduce
  }
  call @dtrain_rt_wait(%r2) : (!llvm.ptr) -> ()
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %g = memref.load %g2[%i] : memref<64xf32>
    memref.store %g, %p2[%i] : memref<64xf32>
    scf.reduce
  }
  call @dtrain_rt_wait(%r3) : (!llvm.ptr) -> ()
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %g = memref.load %g3[%i] : memref<64xf32>
    memref.store %g, %p3[%i] : memref<64xf32>
    scf.reduce
  }
  %r4 = call @dtrain_rt_all_reduce_start_with(%world, %unknown, %n, %z, %z, %z) : (!llvm.ptr, !llvm.ptr, i64, i32, i32, i32) -> !llvm.ptr
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %one, %p4[%i] : memref<64xf32>
    scf.reduce
  }
  call @dtrain_rt_wait(%r4) : (!llvm.ptr) -> ()
  memref.dealloc %g1 : memref<64xf32>
  memref.dealloc %g2 : memref<64xf32>
  memref.dealloc %g3 : memref<64xf32>
  memref.dealloc %p1 : memref<64xf32>
  memref.dealloc %p2 : memref<64xf32>
  memref.dealloc %p3 : memref<64xf32>
  memref.dealloc %p4 : memref<64xf32>
  return
}

// The runtime's heavy-op kernels (dtrain.step_stream) touch the buffers
// their pointers address too: each batch norm's running-statistics update
// (after the kernel that makes its batch statistics) moves past the next
// layers' kernels, and the two updates merge before the kernel that reads
// the first's result.
// CHECK-LABEL: func.func @kernels
// CHECK:         call @dtrain_rt_cuda_batch_norm_train_bf16(
// CHECK-NEXT:    call @dtrain_rt_cuda_batch_norm_train_bf16(
// CHECK:         scf.parallel (%{{[^,]*}}) = (%{{.*}}) to (%c512{{.*}}) step
// CHECK:         call @dtrain_rt_cuda_batch_norm_train_bf16(
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func private @dtrain_rt_cuda_batch_norm_train_bf16(!llvm.ptr, !llvm.ptr) attributes {dtrain.step_stream}
func.func @kernels() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %m1 = memref.alloc() : memref<64xf32>
  %m2 = memref.alloc() : memref<64xf32>
  %running1 = memref.alloc() : memref<64xf32>
  %running2 = memref.alloc() : memref<64xf32>
  %x1 = memref.extract_aligned_pointer_as_index %m1 : memref<64xf32> -> index
  %i1 = arith.index_castui %x1 : index to i64
  %a1 = llvm.inttoptr %i1 : i64 to !llvm.ptr
  %x2 = memref.extract_aligned_pointer_as_index %m2 : memref<64xf32> -> index
  %i2 = arith.index_castui %x2 : index to i64
  %a2 = llvm.inttoptr %i2 : i64 to !llvm.ptr
  %xr = memref.extract_aligned_pointer_as_index %running1 : memref<64xf32> -> index
  %ir = arith.index_castui %xr : index to i64
  %ar = llvm.inttoptr %ir : i64 to !llvm.ptr
  call @dtrain_rt_cuda_batch_norm_train_bf16(%a1, %a1) : (!llvm.ptr, !llvm.ptr) -> ()
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %m = memref.load %m1[%i] : memref<64xf32>
    memref.store %m, %running1[%i] : memref<64xf32>
    scf.reduce
  }
  call @dtrain_rt_cuda_batch_norm_train_bf16(%a2, %a2) : (!llvm.ptr, !llvm.ptr) -> ()
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %m = memref.load %m2[%i] : memref<64xf32>
    memref.store %m, %running2[%i] : memref<64xf32>
    scf.reduce
  }
  call @dtrain_rt_cuda_batch_norm_train_bf16(%ar, %a2) : (!llvm.ptr, !llvm.ptr) -> ()
  memref.dealloc %m1 : memref<64xf32>
  memref.dealloc %m2 : memref<64xf32>
  memref.dealloc %running1 : memref<64xf32>
  memref.dealloc %running2 : memref<64xf32>
  return
}

// Chains of dependent loops, one per parameter (LARS: a norm's partial
// sums, their sum, the update): each loop joins the earliest run it may
// move up to, past the loops it is independent of, with the allocations
// and views it uses: one merged loop per link, where its first loop was.
// CHECK-LABEL: func.func @levels
// CHECK-COUNT-3: scf.parallel (%{{[^,]*}}) = (%{{.*}}) to (%c512{{.*}}) step
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @levels(%w1arg: memref<64xf32>, %w2arg: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %w1 = builtin.unrealized_conversion_cast %w1arg : memref<64xf32> to memref<64xf32>
  %w2 = builtin.unrealized_conversion_cast %w2arg : memref<64xf32> to memref<64xf32>
  %p1 = memref.alloc() : memref<64xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %w = memref.load %w1[%i] : memref<64xf32>
    %s = arith.mulf %w, %w : f32
    memref.store %s, %p1[%i] : memref<64xf32>
    scf.reduce
  }
  %f1 = memref.alloc() : memref<1xf32>
  scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
    scf.for %k = %c0 to %c64 step %c1 {
      %a = memref.load %f1[%i] : memref<1xf32>
      %b = memref.load %p1[%k] : memref<64xf32>
      %t = arith.addf %a, %b : f32
      memref.store %t, %f1[%i] : memref<1xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %n = memref.load %f1[%c0] : memref<1xf32>
    %w = memref.load %w1[%i] : memref<64xf32>
    %u = arith.subf %w, %n : f32
    memref.store %u, %w1[%i] : memref<64xf32>
    scf.reduce
  }
  %p2 = memref.alloc() : memref<64xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %w = memref.load %w2[%i] : memref<64xf32>
    %s = arith.mulf %w, %w : f32
    memref.store %s, %p2[%i] : memref<64xf32>
    scf.reduce
  }
  %f2 = memref.alloc() : memref<1xf32>
  scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
    scf.for %k = %c0 to %c64 step %c1 {
      %a = memref.load %f2[%i] : memref<1xf32>
      %b = memref.load %p2[%k] : memref<64xf32>
      %t = arith.addf %a, %b : f32
      memref.store %t, %f2[%i] : memref<1xf32>
    }
    scf.reduce
  }
  %f2view = memref.subview %f2[0] [1] [1] : memref<1xf32> to memref<1xf32, strided<[1]>>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %n = memref.load %f2view[%c0] : memref<1xf32, strided<[1]>>
    %w = memref.load %w2[%i] : memref<64xf32>
    %u = arith.subf %w, %n : f32
    memref.store %u, %w2[%i] : memref<64xf32>
    scf.reduce
  }
  memref.dealloc %p1 : memref<64xf32>
  memref.dealloc %f1 : memref<1xf32>
  memref.dealloc %p2 : memref<64xf32>
  memref.dealloc %f2 : memref<1xf32>
  return
}

// A merged loop's kernel takes every buffer its loops use as parameters,
// and ptxas takes at most 4352 bytes of them with PTX 8.0: runs stop at
// max-parameter-bytes, 4096 by default. 30 loops, each writing a buffer of
// rank 8 of its own (152 bytes of descriptor), make a run of 26 (3952
// bytes) and one of 4.
// RUN: %python -c "print('func.func @many() {'); print('%c0 = arith.constant 0 : index'); print('%c1 = arith.constant 1 : index'); print('%c2 = arith.constant 2 : index'); print('%v = arith.constant 1.0 : f32'); [print('%a' + str(k) + ' = memref.alloc() : memref<2x1x1x1x1x1x1x1xf32>') for k in range(30)]; [print('scf.parallel (%i) = (%c0) to (%c2) step (%c1) {\n  memref.store %v, %a' + str(k) + '[%i, %c0, %c0, %c0, %c0, %c0, %c0, %c0] : memref<2x1x1x1x1x1x1x1xf32>\n  scf.reduce\n}') for k in range(30)]; print('return'); print('}')" > %t.mlir
// RUN: dtrain-opt %t.mlir --pass-pipeline="builtin.module(func.func(dtrain-fuse-sibling-parallel-loops))" | FileCheck %s --check-prefix=BUDGET
// With max-parameter-bytes=1520, runs of 10.
// RUN: dtrain-opt %t.mlir --pass-pipeline="builtin.module(func.func(dtrain-fuse-sibling-parallel-loops{max-parameter-bytes=1520}))" | FileCheck %s --check-prefix=BUDGET1520
// BUDGET1520-COUNT-3: scf.parallel ({{.*}}) = ({{.*}}) to (%c2560{{.*}})
// BUDGET1520-NOT:     scf.parallel
// BUDGET-LABEL: func.func @many
// BUDGET:       scf.parallel ({{.*}}) = ({{.*}}) to (%c6656{{.*}})
// BUDGET:       scf.parallel ({{.*}}) = ({{.*}}) to (%c1024{{.*}})
// BUDGET-NOT:   scf.parallel
