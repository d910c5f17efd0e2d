// RUN: dtrain-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline="builtin.module(func.func(dtrain-check-parallel-stores))"

// A sum over the rows run as a parallel loop: every row's iteration reads
// and writes the same column element, a lost update on a GPU.
func.func @reduction_as_parallel(%x: memref<8x16xf32>, %sum: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  // expected-note @below {{the parallel loop}}
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c16) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<8x16xf32>
    %s = memref.load %sum[%j] : memref<16xf32>
    %t = arith.addf %s, %v : f32
    // expected-error @below {{--dtrain-check-parallel-stores: every iteration of dimension 0 of the enclosing parallel loop writes this element: a race between a kernel's threads}}
    memref.store %t, %sum[%j] : memref<16xf32>
    scf.reduce
  }
  return
}

// -----

// The same through a tile's inner loop of threads and a vector store:
// the outer dimension (the blocks) is missing from the indices.
func.func @vector_store_in_tile(%x: memref<1024xf32>, %y: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  // expected-note @below {{the parallel loop}}
  scf.parallel (%block) = (%c0) to (%c4) step (%c1) {
    scf.parallel (%thread) = (%c0) to (%c64) step (%c1) {
      %at = arith.muli %thread, %c4 : index
      %v = vector.load %x[%at] : memref<1024xf32>, vector<4xf32>
      // expected-error @below {{every iteration of dimension 0 of the enclosing parallel loop writes this element}}
      vector.store %v, %y[%at] : memref<256xf32>, vector<4xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

// Accepted: indices from every dimension, also through arithmetic, a
// tile's block and thread, and an scf.for's bounds; a store under a
// condition on the index (one iteration writes); a loop of one iteration
// (a one-thread kernel); a buffer that each iteration allocates.
func.func @accepted(%x: memref<8x16xf32>, %y: memref<128xf32>, %s: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c16) step (%c1, %c1) {
    %row = arith.muli %i, %c16 : index
    %at = arith.addi %row, %j : index
    %v = memref.load %x[%i, %j] : memref<8x16xf32>
    memref.store %v, %y[%at] : memref<128xf32>
    scf.reduce
  }
  scf.parallel (%block) = (%c0) to (%c8) step (%c1) {
    scf.parallel (%thread) = (%c0) to (%c16) step (%c1) {
      %base = arith.muli %block, %c16 : index
      %next = arith.addi %base, %c1 : index
      scf.for %k = %base to %next step %c1 {
        %at = arith.addi %k, %thread : index
        memref.store %zero, %y[%at] : memref<128xf32>
      }
      scf.reduce
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %first = arith.cmpi eq, %i, %c0 : index
    scf.if %first {
      memref.store %zero, %s[%c0] : memref<1xf32>
    }
    scf.reduce
  }
  scf.parallel (%one) = (%c0) to (%c1) step (%c1) {
    %t = memref.load %s[%c0] : memref<1xf32>
    scf.for %k = %c0 to %c8 step %c1 {
      memref.store %t, %s[%c0] : memref<1xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %own = memref.alloca() : memref<4xf32>
    %view = memref.subview %own[0] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1]>>
    memref.store %zero, %view[%c0] : memref<2xf32, strided<[1]>>
    scf.reduce
  }
  return
}
