// --dtrain-fuse-sibling-parallel-loops keeps what the loops compute: three
// loops of 3, 5 and 2 iterations and a 2 x 3 nest merged into one over
// their ranges end to end, each padded to a multiple of 4 (starting at 0,
// 4, 12 and 16; 24 in all), lowered for the CPU and run. Each writes its
// own buffer from its indices: a[i] = 2i, b[j] = j + 100, c[k] = in[0] - k
// (in, which none of them writes, holds 7), and the nest transposes:
// t[q][p] = 10p + q. Hand-computed: 0 2 4 / 100 101 102 103 104 / 7 6 /
// 0 10 1 11 2 12.
// REQUIRES: mpi
// RUN: dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-fuse-sibling-parallel-loops{align=4}))" \
// RUN:   | FileCheck %s --check-prefix=FUSED
// RUN: dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-fuse-sibling-parallel-loops{align=4}),convert-scf-to-cf,expand-strided-metadata,finalize-memref-to-llvm,convert-to-llvm,reconcile-unrealized-casts)" \
// RUN:   | mlir-translate --mlir-to-llvmir -o %t.ll
// RUN: %clang -O1 %t.ll -o %t.exe -L%llvm_lib_dir -lmlir_c_runner_utils \
// RUN:   -Wl,-rpath,%llvm_lib_dir
// RUN: %t.exe | FileCheck %s

// FUSED-LABEL: func.func @main
// FUSED:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%c24{{.*}})
// FUSED:         arith.cmpi ult, %{{.*}}, %c12
// FUSED:         arith.cmpi ult, %{{.*}}, %c4
// FUSED:         arith.cmpi ult, %{{.*}}, %c16
// FUSED-NOT:     scf.parallel

func.func private @printF32(f32)
func.func private @printNewline()

func.func @print(%m: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %m, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %m[%i] : memref<?xf32>
    func.call @printF32(%v) : (f32) -> ()
    func.call @printNewline() : () -> ()
  }
  return
}

// CHECK: 0
// CHECK-NEXT: 2
// CHECK-NEXT: 4
// CHECK-NEXT: 100
// CHECK-NEXT: 101
// CHECK-NEXT: 102
// CHECK-NEXT: 103
// CHECK-NEXT: 104
// CHECK-NEXT: 7
// CHECK-NEXT: 6
// CHECK-NEXT: 0
// CHECK-NEXT: 10
// CHECK-NEXT: 1
// CHECK-NEXT: 11
// CHECK-NEXT: 2
// CHECK-NEXT: 12
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %hundred = arith.constant 100.0 : f32
  %two = arith.constant 2.0 : f32
  %seven = arith.constant 7.0 : f32
  %in = memref.alloc() : memref<1xf32>
  memref.store %seven, %in[%c0] : memref<1xf32>
  %a = memref.alloc() : memref<3xf32>
  %b = memref.alloc() : memref<5xf32>
  %c = memref.alloc() : memref<2xf32>
  scf.parallel (%i) = (%c0) to (%c3) step (%c1) {
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    %v = arith.mulf %f, %two : f32
    memref.store %v, %a[%i] : memref<3xf32>
    scf.reduce
  }
  scf.parallel (%j) = (%c0) to (%c5) step (%c1) {
    %jj = arith.index_cast %j : index to i32
    %f = arith.sitofp %jj : i32 to f32
    %v = arith.addf %f, %hundred : f32
    memref.store %v, %b[%j] : memref<5xf32>
    scf.reduce
  }
  scf.parallel (%k) = (%c0) to (%c2) step (%c1) {
    %kk = arith.index_cast %k : index to i32
    %f = arith.sitofp %kk : i32 to f32
    %base = memref.load %in[%c0] : memref<1xf32>
    %v = arith.subf %base, %f : f32
    memref.store %v, %c[%k] : memref<2xf32>
    scf.reduce
  }
  %ten = arith.constant 10.0 : f32
  %t = memref.alloc() : memref<3x2xf32>
  scf.parallel (%p, %q) = (%c0, %c0) to (%c2, %c3) step (%c1, %c1) {
    %pp = arith.index_cast %p : index to i32
    %qq = arith.index_cast %q : index to i32
    %pf = arith.sitofp %pp : i32 to f32
    %qf = arith.sitofp %qq : i32 to f32
    %tens = arith.mulf %pf, %ten : f32
    %v = arith.addf %tens, %qf : f32
    memref.store %v, %t[%q, %p] : memref<3x2xf32>
    scf.reduce
  }
  %ad = memref.cast %a : memref<3xf32> to memref<?xf32>
  %bd = memref.cast %b : memref<5xf32> to memref<?xf32>
  %cd = memref.cast %c : memref<2xf32> to memref<?xf32>
  func.call @print(%ad) : (memref<?xf32>) -> ()
  func.call @print(%bd) : (memref<?xf32>) -> ()
  func.call @print(%cd) : (memref<?xf32>) -> ()
  %tflat = memref.collapse_shape %t [[0, 1]] : memref<3x2xf32> into memref<6xf32>
  %td = memref.cast %tflat : memref<6xf32> to memref<?xf32>
  func.call @print(%td) : (memref<?xf32>) -> ()
  memref.dealloc %in : memref<1xf32>
  memref.dealloc %a : memref<3xf32>
  memref.dealloc %b : memref<5xf32>
  memref.dealloc %c : memref<2xf32>
  memref.dealloc %t : memref<3x2xf32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}
