// RUN: dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-fuse-sibling-parallel-loops))" | FileCheck %s
// RUN: dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-fuse-sibling-parallel-loops{max-iterations=100}))" | FileCheck %s --check-prefix=SMALL
// RUN: not dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-fuse-sibling-parallel-loops{max-iterations=0}))" 2>&1 | FileCheck %s --check-prefix=ZERO

// Three parameters' updates (64, 128 and 64 values; each buffer a slot or
// an allocation of its own) with a constant between them: one loop over
// (3 loops, 128 iterations), the shorter loops guarded by their bounds.
// CHECK-LABEL: func.func @updates
// CHECK:         %[[P1:.*]] = builtin.unrealized_conversion_cast %arg0
// CHECK:         %[[P2:.*]] = builtin.unrealized_conversion_cast %arg2
// CHECK:         %[[P3:.*]] = memref.alloc()
// CHECK:         scf.parallel (%[[WHICH:.*]], %[[I:.*]]) = (%c0{{.*}}, %c0{{.*}}) to (%c3{{.*}}, %c128{{.*}}) step
// CHECK-NEXT:      scf.index_switch %[[WHICH]]
// CHECK-NEXT:      case 0 {
// CHECK:             %[[IN0:.*]] = arith.cmpi ult, %[[I]], %c64
// CHECK-NEXT:        scf.if %[[IN0]] {
// CHECK:               memref.load %{{.*}}[%[[I]]] : memref<64xf32>
// CHECK:               arith.mulf
// CHECK:               memref.store %{{.*}}, %[[P1]][%[[I]]] : memref<64xf32>
// CHECK:           case 1 {
// CHECK-NOT:         arith.cmpi
// CHECK:             memref.store %{{.*}}, %[[P2]][%[[I]]] : memref<128xf32>
// CHECK:           case 2 {
// CHECK:             arith.cmpi ult, %[[I]], %c64
// CHECK:               arith.addf
// CHECK:               memref.store %{{.*}}, %[[P3]][%[[I]]] : memref<64xf32>
// CHECK:           default {
// CHECK-NOT:     scf.parallel
// CHECK:         return
// With a bound of 100, the 128-value loop stays alone, and its
// neighbours, independent of it, merge after it (where the second was).
// SMALL-LABEL: func.func @updates
// SMALL:         scf.parallel (%{{[^,]*}}) = (%{{.*}}) to (%c128) step
// SMALL:           memref.store %{{.*}} : memref<128xf32>
// SMALL:         scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %{{.*}}) to (%c2{{.*}}, %c64{{.*}}) step
// SMALL-NOT:     scf.parallel
// SMALL:         return
// ZERO: error: --dtrain-fuse-sibling-parallel-loops: max-iterations must be at least 1
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
  %p3 = memref.alloc() : memref<64xf32>
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
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %g = memref.load %b2[%i] : memref<64xf32>
    %d = arith.addf %g, %g : f32
    memref.store %d, %p3[%i] : memref<64xf32>
    scf.reduce
  }
  memref.dealloc %p3 : memref<64xf32>
  return
}

// Not merged: the second loop reads what the first writes; a call
// between loops ends a run; a loop that reaches a buffer of unknown
// origin (a function argument, not a slot or an allocation) stays alone.
// CHECK-LABEL: func.func @kept
// CHECK-NOT:     scf.index_switch
// CHECK-COUNT-5: scf.parallel (%{{[^,]*}}) =
// CHECK-NOT:     scf.index_switch
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

// A loop too large to merge stays between a run's loops when those before
// it may move past it: the first small loop writes what the first large
// one reads, so it stays alone; the next two merge after the second large
// loop, which touches none of their buffers.
// CHECK-LABEL: func.func @across
// CHECK:         scf.parallel (%{{[^,]*}}) = (%{{.*}}) to (%c64) step
// CHECK:           memref.store %{{.*}}, %[[A:.*]][%{{.*}}] : memref<64xf32>
// CHECK:         scf.parallel (%{{[^,]*}}) = (%{{.*}}) to (%c5000) step
// CHECK:           memref.load %[[A]]
// CHECK:         scf.parallel (%{{[^,]*}}) = (%{{.*}}) to (%c5000) step
// CHECK:         scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %{{.*}}) to (%c2{{.*}}, %c64{{.*}}) step
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @across() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c5000 = arith.constant 5000 : index
  %one = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<64xf32>
  %big = memref.alloc() : memref<5000xf32>
  %big2 = memref.alloc() : memref<5000xf32>
  %c = memref.alloc() : memref<64xf32>
  %d = memref.alloc() : memref<64xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %one, %a[%i] : memref<64xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c5000) step (%c1) {
    %v = memref.load %a[%c0] : memref<64xf32>
    memref.store %v, %big[%i] : memref<5000xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %one, %c[%i] : memref<64xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c5000) step (%c1) {
    memref.store %one, %big2[%i] : memref<5000xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %one, %d[%i] : memref<64xf32>
    scf.reduce
  }
  memref.dealloc %a : memref<64xf32>
  memref.dealloc %big : memref<5000xf32>
  memref.dealloc %big2 : memref<5000xf32>
  memref.dealloc %c : memref<64xf32>
  memref.dealloc %d : memref<64xf32>
  return
}

// A merged loop's kernel takes every buffer its loops use as parameters,
// and PTX 8.0 takes at most 4352 bytes of them: runs stop at 4096. 30
// loops, each writing a buffer of rank 8 of its own (152 bytes of
// descriptor), make a run of 26 (3952 bytes) and one of 4.
// RUN: %python -c "print('func.func @many() {'); print('%c0 = arith.constant 0 : index'); print('%c1 = arith.constant 1 : index'); print('%c2 = arith.constant 2 : index'); print('%v = arith.constant 1.0 : f32'); [print('%a' + str(k) + ' = memref.alloc() : memref<2x1x1x1x1x1x1x1xf32>') for k in range(30)]; [print('scf.parallel (%i) = (%c0) to (%c2) step (%c1) {\n  memref.store %v, %a' + str(k) + '[%i, %c0, %c0, %c0, %c0, %c0, %c0, %c0] : memref<2x1x1x1x1x1x1x1xf32>\n  scf.reduce\n}') for k in range(30)]; print('return'); print('}')" > %t.mlir
// RUN: dtrain-opt %t.mlir --pass-pipeline="builtin.module(func.func(dtrain-fuse-sibling-parallel-loops))" | FileCheck %s --check-prefix=BUDGET
// BUDGET-LABEL: func.func @many
// BUDGET:       scf.parallel ({{.*}}) = ({{.*}}) to (%c26{{.*}}, %c2{{.*}})
// BUDGET:       case 25 {
// BUDGET-NOT:   case 26 {
// BUDGET:       scf.parallel ({{.*}}) = ({{.*}}) to (%c4{{.*}}, %c2{{.*}})
// BUDGET:       case 3 {
// BUDGET-NOT:   case 4 {
