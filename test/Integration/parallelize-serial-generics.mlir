// --dtrain-parallelize-serial-generics keeps what the generics compute: the
// pass, then the CPU's lowering, compiled and run. Short serial generics
// become one-iteration loops; long reductions are split into partial
// results (max-serial-iterations=100: a sum of 4608 elements in 96 rows of
// 48; the 96 partials, more than max-combine-iterations, in 12 rows of 8;
// then the 12 in order), and so are long reductions beside few parallel
// iterations. The values are integers, so every
// order of the sums gives the same bits: hand-computed below.
// REQUIRES: mpi
// RUN: dtrain-opt %s --dtrain-parallelize-serial-generics=max-serial-iterations=100 \
// RUN:   | FileCheck %s --check-prefix=SPLIT
// RUN: dtrain-opt %s --dtrain-parallelize-serial-generics=max-serial-iterations=100 \
// RUN:   --convert-linalg-to-loops --convert-vector-to-scf --convert-scf-to-cf \
// RUN:   --expand-strided-metadata --finalize-memref-to-llvm --convert-vector-to-llvm \
// RUN:   --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-translate --mlir-to-llvmir -o %t.ll
// RUN: %clang -O1 %t.ll -o %t.exe -L%llvm_lib_dir -lmlir_c_runner_utils \
// RUN:   -Wl,-rpath,%llvm_lib_dir
// RUN: %t.exe | FileCheck %s

// Each reduction of 4608 elements is split into 96 partials, and those
// into 12; the scalar fill and the scaling become one-iteration loops. The
// two reductions of 1152 elements beside 4 parallel iterations are split
// into 36 rows of 32 each (68 iterations in all; 576 rows of 2 would make
// 578).
// SPLIT:         memref.alloc() : memref<96xf32>
// SPLIT:         memref.alloc() : memref<12xf32>
// SPLIT:         memref.alloc() : memref<96xf32>
// SPLIT:         memref.alloc() : memref<12xf32>
// SPLIT:         memref.alloc() : memref<96xi64>
// SPLIT:         memref.alloc() : memref<12xi64>
// SPLIT-COUNT-2: memref.alloc() : memref<4x36xi64>
// SPLIT:         memref.alloc() : memref<4x36xf32>
// SPLIT-NEXT:    memref.alloc() : memref<4x36xi64>
// SPLIT-NOT:     iterator_types = ["reduction"]
// SPLIT-NOT:     iterator_types = []

func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c7 = arith.constant 7 : index
  %c3 = arith.constant 3 : index
  %w = memref.alloc() : memref<32x16x3x3xf32>
  %v = memref.alloc() : memref<4608xi64>
  // w[i] = (i mod 7) - 3 in row-major order, v[i] = i.
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%w : memref<32x16x3x3xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %c16 = arith.constant 16 : index
    %a0 = arith.muli %i0, %c16 : index
    %a1 = arith.addi %a0, %i1 : index
    %a2 = arith.muli %a1, %c3 : index
    %a3 = arith.addi %a2, %i2 : index
    %a4 = arith.muli %a3, %c3 : index
    %a = arith.addi %a4, %i3 : index
    %m = arith.remui %a, %c7 : index
    %s = arith.subi %m, %c3 : index
    %si = arith.index_cast %s : index to i64
    %f = arith.sitofp %si : i64 to f32
    linalg.yield %f : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      outs(%v : memref<4608xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    linalg.yield %ii : i64
  }

  // The sum of squares onto an output holding 5: 5 + 658 * 28 + 9 + 4.
  %sum = memref.alloc() : memref<f32>
  %five = arith.constant 5.0 : f32
  linalg.fill ins(%five : f32) outs(%sum : memref<f32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> ()>],
                  iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%w : memref<32x16x3x3xf32>) outs(%sum : memref<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %sq = arith.mulf %x, %x : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  }
  // CHECK: 18442
  %s0 = memref.load %sum[] : memref<f32>
  vector.print %s0 : f32

  // The maximum of w times -1 onto -100: 3.
  %max = memref.alloc() : memref<f32>
  %low = arith.constant -100.0 : f32
  linalg.fill ins(%low : f32) outs(%max : memref<f32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> ()>],
                  iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%w : memref<32x16x3x3xf32>) outs(%max : memref<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %neg = arith.negf %x : f32
    %r = arith.maximumf %neg, %acc : f32
    linalg.yield %r : f32
  }
  // CHECK-NEXT: 3
  %m0 = memref.load %max[] : memref<f32>
  vector.print %m0 : f32

  // The sum of v onto 0: 4607 * 4608 / 2, then doubled by a scalar
  // generic: 21229056.
  %total = memref.alloc() : memref<i64>
  %zero = arith.constant 0 : i64
  linalg.fill ins(%zero : i64) outs(%total : memref<i64>)
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%v : memref<4608xi64>) outs(%total : memref<i64>) {
  ^bb0(%x: i64, %acc: i64):
    %r = arith.addi %acc, %x : i64
    linalg.yield %r : i64
  }
  %doubled = memref.alloc() : memref<i64>
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
      ins(%total : memref<i64>) outs(%doubled : memref<i64>) {
  ^bb0(%x: i64, %out: i64):
    %r = arith.addi %x, %x : i64
    linalg.yield %r : i64
  }
  // CHECK-NEXT: 21229056
  %t0 = memref.load %doubled[] : memref<i64>
  vector.print %t0 : i64

  // A short sum with linalg.index (now index 1): v[i] * i over the first
  // 10 elements of a 10-element view: 0 + 1 + 4 + ... + 81 = 285.
  %first = memref.subview %v[0] [10] [1] : memref<4608xi64> to memref<10xi64, strided<[1]>>
  %short = memref.alloc() : memref<i64>
  linalg.fill ins(%zero : i64) outs(%short : memref<i64>)
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%first : memref<10xi64, strided<[1]>>) outs(%short : memref<i64>) {
  ^bb0(%x: i64, %acc: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %p = arith.muli %x, %ii : i64
    %r = arith.addi %acc, %p : i64
    linalg.yield %r : i64
  }
  // CHECK-NEXT: 285
  %h0 = memref.load %short[] : memref<i64>
  vector.print %h0 : i64

  // Reductions beside parallel loops. v as 4 rows of 1152, less m[i] = i
  // per row: row i sums 1152 * 1152 i + 1151 * 1152 / 2 - 1152 i, i.e.
  // 662976 + 1325952 i.
  %rows = memref.expand_shape %v [[0, 1]] output_shape [4, 1152] : memref<4608xi64> into memref<4x1152xi64>
  %m = memref.alloc() : memref<4xi64>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      outs(%m : memref<4xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    linalg.yield %ii : i64
  }
  %rowSums = memref.alloc() : memref<4xi64>
  linalg.fill ins(%zero : i64) outs(%rowSums : memref<4xi64>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%rows, %m : memref<4x1152xi64>, memref<4xi64>) outs(%rowSums : memref<4xi64>) {
  ^bb0(%x: i64, %mi: i64, %acc: i64):
    %d = arith.subi %x, %mi : i64
    %r = arith.addi %acc, %d : i64
    linalg.yield %r : i64
  }
  // CHECK-NEXT: 662976
  // CHECK-NEXT: 4640832
  %c0i = arith.constant 0 : index
  %c3i = arith.constant 3 : index
  %r0 = memref.load %rowSums[%c0i] : memref<4xi64>
  vector.print %r0 : i64
  %r3 = memref.load %rowSums[%c3i] : memref<4xi64>
  vector.print %r3 : i64

  // The reduction first, the output by the second dimension: v as 1152 x
  // 4, column k sums 4 * 1151 * 1152 / 2 + 1152 k.
  %cols = memref.expand_shape %v [[0, 1]] output_shape [1152, 4] : memref<4608xi64> into memref<1152x4xi64>
  %colSums = memref.alloc() : memref<4xi64>
  linalg.fill ins(%zero : i64) outs(%colSums : memref<4xi64>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%cols : memref<1152x4xi64>) outs(%colSums : memref<4xi64>) {
  ^bb0(%x: i64, %acc: i64):
    %r = arith.addi %acc, %x : i64
    linalg.yield %r : i64
  }
  // CHECK-NEXT: 2651904
  // CHECK-NEXT: 2655360
  %k0 = memref.load %colSums[%c0i] : memref<4xi64>
  vector.print %k0 : i64
  %k3 = memref.load %colSums[%c3i] : memref<4xi64>
  vector.print %k3 : i64

  // An argmax beside 4 rows of 1152, split as the sums (36 rows of 32):
  // the first maximum of each row, strictly greater winning, NaN never.
  // Row 0: j mod 97, first maximum 96 at 96 (again at 193, ...). Row 1:
  // 5 everywhere: the first element. Row 2: NaN at 0, then j up to 499 and
  // 0 after: 499 at 499. Row 3: j mod 13, and 1000000 at the last, 1151.
  %scores = memref.alloc() : memref<4x1152xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      outs(%scores : memref<4x1152xf32>) {
  ^bb0(%g_out: f32):
    %g_i = linalg.index 0 : index
    %g_j = linalg.index 1 : index
    %g_c97 = arith.constant 97 : index
    %g_c13 = arith.constant 13 : index
    %g_c499 = arith.constant 499 : index
    %g_c1151 = arith.constant 1151 : index
    %g_c1 = arith.constant 1 : index
    %g_c2 = arith.constant 2 : index
    %g_mod97 = arith.remui %g_j, %g_c97 : index
    %g_mod13 = arith.remui %g_j, %g_c13 : index
    %g_upTo499 = arith.cmpi ule, %g_j, %g_c499 : index
    %g_zeroIdx = arith.constant 0 : index
    %g_ramp = arith.select %g_upTo499, %g_j, %g_zeroIdx : index
    %g_isLast = arith.cmpi eq, %g_j, %g_c1151 : index
    %g_isRow1 = arith.cmpi eq, %g_i, %g_c1 : index
    %g_isRow2 = arith.cmpi eq, %g_i, %g_c2 : index
    %g_isRow3 = arith.cmpi eq, %g_i, %c3 : index
    %g_r3i = arith.select %g_isRow3, %g_mod13, %g_mod97 : index
    %g_r2i = arith.select %g_isRow2, %g_ramp, %g_r3i : index
    %g_asInt = arith.index_cast %g_r2i : index to i64
    %g_asF = arith.sitofp %g_asInt : i64 to f32
    %g_five = arith.constant 5.0 : f32
    %g_nan = arith.constant 0x7FC00000 : f32
    %g_peak = arith.constant 1000000.0 : f32
    %g_v1 = arith.select %g_isRow1, %g_five, %g_asF : f32
    %g_first = arith.cmpi eq, %g_j, %g_zeroIdx : index
    %g_nanHere = arith.andi %g_isRow2, %g_first : i1
    %g_v2 = arith.select %g_nanHere, %g_nan, %g_v1 : f32
    %g_peakHere = arith.andi %g_isRow3, %g_isLast : i1
    %g_v3 = arith.select %g_peakHere, %g_peak, %g_v2 : f32
    linalg.yield %g_v3 : f32
  }
  %bestValue = memref.alloc() : memref<4xf32>
  %minusInf = arith.constant 0xFF800000 : f32
  linalg.fill ins(%minusInf : f32) outs(%bestValue : memref<4xf32>)
  %bestAt = memref.alloc() : memref<4xi64>
  linalg.fill ins(%zero : i64) outs(%bestAt : memref<4xi64>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%scores : memref<4x1152xf32>) outs(%bestValue, %bestAt : memref<4xf32>, memref<4xi64>) {
  ^bb0(%m_x: f32, %m_bv: f32, %m_bi: i64):
    %m_j = linalg.index 1 : index
    %m_ji = arith.index_cast %m_j : index to i64
    %m_gt = arith.cmpf ogt, %m_x, %m_bv : f32
    %m_v = arith.select %m_gt, %m_x, %m_bv : f32
    %m_a = arith.select %m_gt, %m_ji, %m_bi : i64
    linalg.yield %m_v, %m_a : f32, i64
  }
  // CHECK-NEXT: ( 96, 0, 499, 1151 )
  // CHECK-NEXT: ( 96, 5, 499, 1e+06 )
  %atVec = vector.transfer_read %bestAt[%c0i], %zero : memref<4xi64>, vector<4xi64>
  vector.print %atVec : vector<4xi64>
  %fzero = arith.constant 0.0 : f32
  %valueVec = vector.transfer_read %bestValue[%c0i], %fzero : memref<4xf32>, vector<4xf32>
  vector.print %valueVec : vector<4xf32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}
