// RUN: dtrain-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(dtrain-vectorize-parallel-loops))" | FileCheck %s
// RUN: dtrain-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(dtrain-vectorize-parallel-loops{access-bytes=8}))" | FileCheck %s --check-prefix=EIGHT
// RUN: not dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-vectorize-parallel-loops{access-bytes=12}))" 2>&1 | FileCheck %s --check-prefix=BAD

// A bf16 ReLU that also writes its result doubled in f32 to a buffer at a
// dynamic offset: 8 elements an iteration (16 bytes of bf16; the f32
// vector is 32 bytes, accessed 16 at a time). The vector path runs where
// all three buffers start at a multiple of 16 bytes, the strided one's
// offset included; the scalar path is the original body, 8 times.
// CHECK-LABEL: func.func @relu
// CHECK-SAME:    (%[[IN:.*]]: memref<1024xbf16>, %[[OUT:.*]]: memref<1024xbf16>, %[[WIDE:.*]]: memref<1024xf32, strided<[1], offset: ?>>)
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : bf16
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG:     %[[C128:.*]] = arith.constant 128 : index
// CHECK:         scf.parallel (%[[J:.*]]) = (%{{.*}}) to (%[[C128]]) step
// CHECK:           %[[FIRST:.*]] = arith.muli %[[J]], %[[C8]] : index
// CHECK:           %[[P0:.*]] = memref.extract_aligned_pointer_as_index %[[IN]]
// CHECK:           arith.andi %[[P0]], %c15
// CHECK:           %[[P1:.*]] = memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK:           arith.andi %[[P1]], %c15
// CHECK:           %[[P2:.*]] = memref.extract_aligned_pointer_as_index %[[WIDE]]
// CHECK:           %{{.*}}, %[[OFFSET:.*]], %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[WIDE]]
// CHECK:           %[[BYTES:.*]] = arith.muli %[[OFFSET]], %c4
// CHECK:           %[[START:.*]] = arith.addi %[[P2]], %[[BYTES]]
// CHECK:           arith.andi %[[START]], %c15
// CHECK:           %[[ALIGNED:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK:           scf.if %[[ALIGNED]] {
// CHECK-NEXT:        %[[X:.*]] = vector.load %[[IN]][%[[FIRST]]] {alignment = 16 : i64} : memref<1024xbf16>, vector<8xbf16>
// CHECK-NEXT:        %[[ZEROS:.*]] = vector.broadcast %[[ZERO]] : bf16 to vector<8xbf16>
// CHECK-NEXT:        %[[Y:.*]] = arith.maximumf %[[X]], %[[ZEROS]] : vector<8xbf16>
// CHECK-NEXT:        %[[W:.*]] = arith.extf %[[Y]] : vector<8xbf16> to vector<8xf32>
// CHECK-NEXT:        %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:        %[[TWOS:.*]] = vector.broadcast %[[TWO]] : f32 to vector<8xf32>
// CHECK-NEXT:        %[[Z:.*]] = arith.mulf %[[W]], %[[TWOS]] fastmath<contract> : vector<8xf32>
// CHECK-NEXT:        vector.store %[[Y]], %[[OUT]][%[[FIRST]]] {alignment = 16 : i64} : memref<1024xbf16>, vector<8xbf16>
// CHECK-NEXT:        vector.store %[[Z]], %[[WIDE]][%[[FIRST]]] {alignment = 16 : i64} : memref<1024xf32, strided<[1], offset: ?>>, vector<8xf32>
// CHECK-NEXT:      } else {
// CHECK-NEXT:        scf.for %[[K:.*]] = %{{.*}} to %[[C8]] step
// CHECK-NEXT:          %[[I:.*]] = arith.addi %[[FIRST]], %[[K]] : index
// CHECK-NEXT:          %[[XS:.*]] = memref.load %[[IN]][%[[I]]] : memref<1024xbf16>
// CHECK-NEXT:          %[[YS:.*]] = arith.maximumf %[[XS]], %[[ZERO]] : bf16
// CHECK-NEXT:          %[[WS:.*]] = arith.extf %[[YS]] : bf16 to f32
// CHECK-NEXT:          arith.constant 2.000000e+00 : f32
// CHECK-NEXT:          %[[ZS:.*]] = arith.mulf %[[WS]], %{{.*}} fastmath<contract> : f32
// CHECK-NEXT:          memref.store %[[YS]], %[[OUT]][%[[I]]] : memref<1024xbf16>
// CHECK-NEXT:          memref.store %[[ZS]], %[[WIDE]][%[[I]]]
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.reduce
// CHECK-NOT:     scf.parallel
// Vectors of 8 bytes: 4 bf16 elements, the f32 vector of 16 bytes
// accessed 8 at a time.
// EIGHT-LABEL: func.func @relu
// EIGHT:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%c256{{.*}}) step
// EIGHT:           arith.andi %{{.*}}, %c7
// EIGHT:           vector.load %{{.*}} {alignment = 8 : i64} : memref<1024xbf16>, vector<4xbf16>
// EIGHT:           vector.store %{{.*}} {alignment = 8 : i64} : memref<1024xf32, strided<[1], offset: ?>>, vector<4xf32>
// BAD: error: --dtrain-vectorize-parallel-loops: access-bytes must be a power of 2 of at least 2, not 12
func.func @relu(%in: memref<1024xbf16>, %out: memref<1024xbf16>,
                %wide: memref<1024xf32, strided<[1], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant 0.0 : bf16
  scf.parallel (%i) = (%c0) to (%c1024) step (%c1) {
    %x = memref.load %in[%i] : memref<1024xbf16>
    %y = arith.maximumf %x, %zero : bf16
    %w = arith.extf %y : bf16 to f32
    %two = arith.constant 2.0 : f32
    %z = arith.mulf %w, %two fastmath<contract> : f32
    memref.store %y, %out[%i] : memref<1024xbf16>
    memref.store %z, %wide[%i] : memref<1024xf32, strided<[1], offset: ?>>
    scf.reduce
  }
  return
}

// -----

// An f32 add over 12 elements: vectors of 4
// (16 bytes), 3 iterations. A static offset of 2 elements adds 8 bytes to
// the buffer's pointer before the check.
// CHECK-LABEL: func.func @add
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%c3{{.*}}) step
// CHECK:           %[[P:.*]] = memref.extract_aligned_pointer_as_index %arg2
// CHECK:           %[[START:.*]] = arith.addi %[[P]], %c8
// CHECK:           arith.andi %[[START]], %c15
// CHECK:           vector.load %arg0[%{{.*}}] {alignment = 16 : i64} : memref<12xf32>, vector<4xf32>
// CHECK:           arith.addf %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK:           vector.store %{{.*}}, %arg2[%{{.*}}] {alignment = 16 : i64} : memref<12xf32, strided<[1], offset: 2>>, vector<4xf32>
func.func @add(%a: memref<12xf32>, %b: memref<12xf32>,
               %c: memref<12xf32, strided<[1], offset: 2>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  scf.parallel (%i) = (%c0) to (%c12) step (%c1) {
    %x = memref.load %a[%i] : memref<12xf32>
    %y = memref.load %b[%i] : memref<12xf32>
    %s = arith.addf %x, %y : f32
    memref.store %s, %c[%i] : memref<12xf32, strided<[1], offset: 2>>
    scf.reduce
  }
  return
}

// -----

// bf16 over 12 elements: 8 do not divide 12, 4 do.
// CHECK-LABEL: func.func @narrower
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%c3{{.*}}) step
// CHECK:           arith.andi %{{.*}}, %c7
// CHECK:           vector.load %{{.*}} {alignment = 8 : i64} : memref<12xbf16>, vector<4xbf16>
func.func @narrower(%a: memref<12xbf16>, %b: memref<12xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  scf.parallel (%i) = (%c0) to (%c12) step (%c1) {
    %x = memref.load %a[%i] : memref<12xbf16>
    %y = arith.negf %x : bf16
    memref.store %y, %b[%i] : memref<12xbf16>
    scf.reduce
  }
  return
}

// -----

// Left alone: an odd trip count; a load at another index than the
// induction variable; the induction variable as a value; a buffer of i1
// (a byte an element in memory, a bit in a vector); a math op; a 2-D loop;
// a reduction; a strided buffer; a loop inside another.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT:     vector.
// CHECK-COUNT-10: scf.parallel
// CHECK-NOT:     vector.
func.func @untouched(%a: memref<7xf32>, %b: memref<16xf32>,
                     %m: memref<16xi1>, %d: memref<4x4xf32>,
                     %s: memref<16xf32, strided<[2]>>, %r: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c7 = arith.constant 7 : index
  %c16 = arith.constant 16 : index
  scf.parallel (%i) = (%c0) to (%c7) step (%c1) {
    %x = memref.load %a[%i] : memref<7xf32>
    memref.store %x, %a[%i] : memref<7xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %b[%c0] : memref<16xf32>
    memref.store %x, %b[%i] : memref<16xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %n = arith.index_cast %i : index to i32
    %x = arith.sitofp %n : i32 to f32
    memref.store %x, %b[%i] : memref<16xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %m[%i] : memref<16xi1>
    %y = arith.xori %x, %x : i1
    memref.store %y, %m[%i] : memref<16xi1>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %b[%i] : memref<16xf32>
    %y = math.exp %x : f32
    memref.store %y, %b[%i] : memref<16xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    %x = memref.load %d[%i, %j] : memref<4x4xf32>
    memref.store %x, %d[%i, %j] : memref<4x4xf32>
    scf.reduce
  }
  %zero = arith.constant 0.0 : f32
  %sum = scf.parallel (%i) = (%c0) to (%c16) step (%c1) init (%zero) -> f32 {
    %x = memref.load %b[%i] : memref<16xf32>
    scf.reduce(%x : f32) {
    ^bb0(%l: f32, %rr: f32):
      %t = arith.addf %l, %rr : f32
      scf.reduce.return %t : f32
    }
  }
  memref.store %sum, %r[] : memref<f32>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %s[%i] : memref<16xf32, strided<[2]>>
    memref.store %x, %s[%i] : memref<16xf32, strided<[2]>>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.parallel (%j) = (%c0) to (%c16) step (%c1) {
      %x = memref.load %b[%j] : memref<16xf32>
      memref.store %x, %b[%j] : memref<16xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}
