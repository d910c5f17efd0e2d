// --dtrain-interchange-parallel-outer keeps what the generics compute: the
// pass, then the CPU's lowering, compiled and run, against hand-computed
// sums (integers: exact in any order).
// REQUIRES: mpi
// RUN: dtrain-opt %s --dtrain-interchange-parallel-outer \
// RUN:   | FileCheck %s --check-prefix=MOVED
// RUN: dtrain-opt %s --dtrain-interchange-parallel-outer \
// RUN:   --convert-linalg-to-loops --convert-vector-to-scf --convert-scf-to-cf \
// RUN:   --expand-strided-metadata --finalize-memref-to-llvm --convert-vector-to-llvm \
// RUN:   --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-translate --mlir-to-llvmir -o %t.ll
// RUN: %clang -O1 %t.ll -o %t.exe -L%llvm_lib_dir -lmlir_c_runner_utils \
// RUN:   -Wl,-rpath,%llvm_lib_dir
// RUN: %t.exe | FileCheck %s

// MOVED-COUNT-2: iterator_types = ["parallel", {{.*}}"reduction"]
// MOVED-NOT:     iterator_types = ["reduction"

func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c9 = arith.constant 9 : index
  // dy[n, c] = 10 n + c.
  %dy = memref.alloc() : memref<8x10xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      outs(%dy : memref<8x10xf32>) {
  ^bb0(%out: f32):
    %n = linalg.index 0 : index
    %c = linalg.index 1 : index
    %c10 = arith.constant 10 : index
    %t = arith.muli %n, %c10 : index
    %v = arith.addi %t, %c : index
    %vi = arith.index_cast %v : index to i64
    %f = arith.sitofp %vi : i64 to f32
    linalg.yield %f : f32
  }
  // A bias gradient onto 1: db[c] = 1 + 280 + 8 c.
  %db = memref.alloc() : memref<10xf32>
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%db : memref<10xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d1)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%dy : memref<8x10xf32>) outs(%db : memref<10xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  }
  // CHECK: 281
  // CHECK-NEXT: 353
  %b0 = memref.load %db[%c0] : memref<10xf32>
  vector.print %b0 : f32
  %b9 = memref.load %db[%c9] : memref<10xf32>
  vector.print %b9 : f32

  // (r0, p0, r1, p1) over x[a, b, c, d] = its row-major index:
  // y[b, d] = sum over a and c = 160 b + 8 d + 300.
  %x = memref.alloc() : memref<2x3x4x5xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%x : memref<2x3x4x5xf32>) {
  ^bb0(%out: f32):
    %a = linalg.index 0 : index
    %b = linalg.index 1 : index
    %c = linalg.index 2 : index
    %d = linalg.index 3 : index
    %c3 = arith.constant 3 : index
    %c4i = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %t0 = arith.muli %a, %c3 : index
    %t1 = arith.addi %t0, %b : index
    %t2 = arith.muli %t1, %c4i : index
    %t3 = arith.addi %t2, %c : index
    %t4 = arith.muli %t3, %c5 : index
    %t5 = arith.addi %t4, %d : index
    %ti = arith.index_cast %t5 : index to i64
    %f = arith.sitofp %ti : i64 to f32
    linalg.yield %f : f32
  }
  %y = memref.alloc() : memref<3x5xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<3x5xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d1, d3)>],
                  iterator_types = ["reduction", "parallel", "reduction", "parallel"]}
      ins(%x : memref<2x3x4x5xf32>) outs(%y : memref<3x5xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  }
  // CHECK-NEXT: 300
  // CHECK-NEXT: 652
  %y0 = memref.load %y[%c0, %c0] : memref<3x5xf32>
  vector.print %y0 : f32
  %y24 = memref.load %y[%c2, %c4] : memref<3x5xf32>
  vector.print %y24 : f32
  %ok = arith.constant 0 : i32
  return %ok : i32
}
