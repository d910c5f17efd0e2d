// RUN: dtrain-opt %s --split-input-file --dtrain-parallelize-serial-generics | FileCheck %s
// RUN: dtrain-opt %s --split-input-file --dtrain-parallelize-serial-generics=max-serial-iterations=4 | FileCheck %s --check-prefix=SHORT
// RUN: not dtrain-opt %s --split-input-file --dtrain-parallelize-serial-generics=max-serial-iterations=0 2>&1 | FileCheck %s --check-prefix=INVALID
// RUN: not dtrain-opt %s --split-input-file --dtrain-parallelize-serial-generics=partial-sums=1 2>&1 | FileCheck %s --check-prefix=INVALID
// RUN: not dtrain-opt %s --split-input-file --dtrain-parallelize-serial-generics=max-combine-iterations=1 2>&1 | FileCheck %s --check-prefix=INVALID

// INVALID: error: --dtrain-parallelize-serial-generics: max-serial-iterations must be at least 1, partial-sums and max-combine-iterations at least 2

// The loss's sum over the batch, which reads the logit of each sample's
// label (linalg.index 0 becomes linalg.index 1), its scaling, and the fill
// of its accumulator: each a generic with a leading parallel loop of one
// iteration, its scalar output viewed as a one-element buffer.
// CHECK-DAG: #[[FIRST:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[NONE:.*]] = affine_map<(d0) -> ()>
// CHECK-DAG: #[[SAMPLE:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[UNIT:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @loss
// CHECK-SAME:    (%[[LOGITS:.*]]: memref<8x10xf32>, %[[LABELS:.*]]: memref<8xi64>, %[[SUM:.*]]: memref<f32>, %[[LOSS:.*]]: memref<f32>)
// CHECK:         %[[SUM1:.*]] = memref.expand_shape %[[SUM]] [] output_shape [1] : memref<f32> into memref<1xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[NONE]], #[[FIRST]]], iterator_types = ["parallel"]} ins(%{{.*}} : f32) outs(%[[SUM1]] : memref<1xf32>)
// CHECK:         %[[SUM2:.*]] = memref.expand_shape %[[SUM]] [] output_shape [1]
// CHECK:         linalg.generic {indexing_maps = [#[[SAMPLE]], #[[UNIT]]], iterator_types = ["parallel", "reduction"]} ins(%[[LABELS]] : memref<8xi64>) outs(%[[SUM2]] : memref<1xf32>)
// CHECK:           %[[I:.*]] = linalg.index 1 : index
// CHECK:           memref.load %[[LOGITS]][%[[I]], %{{.*}}]
// CHECK:         %[[LOSS1:.*]] = memref.expand_shape %[[LOSS]] [] output_shape [1]
// CHECK:         linalg.generic {indexing_maps = [#[[NONE]], #[[FIRST]]], iterator_types = ["parallel"]} ins(%[[SUM]] : memref<f32>) outs(%[[LOSS1]] : memref<1xf32>)
// CHECK:           arith.mulf
// CHECK-NOT:     linalg.fill
// With max-serial-iterations=4 the sum over 8 samples, which reads the
// logits by its index, is not split, and stays serial; the one-iteration
// fill and scaling do not.
// SHORT-LABEL: func.func @loss
// SHORT:         iterator_types = ["parallel"]
// SHORT:         iterator_types = ["reduction"]
// SHORT:         iterator_types = ["parallel"]
func.func @loss(%logits: memref<8x10xf32>, %labels: memref<8xi64>, %sum: memref<f32>, %loss: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.125 : f32
  linalg.fill ins(%zero : f32) outs(%sum : memref<f32>)
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%labels : memref<8xi64>) outs(%sum : memref<f32>) {
  ^bb0(%label: i64, %acc: f32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %label : i64 to index
    %logit = memref.load %logits[%i, %c] : memref<8x10xf32>
    %s = arith.addf %acc, %logit : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>],
                  iterator_types = []}
      ins(%sum : memref<f32>) outs(%loss : memref<f32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %scale : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// A long norm: the 5000 squares in 2500 rows of 2 (5000's largest divisor
// up to 4096 that leaves rows of two), each row's sum in a partial result
// filled with 0; the 2500 partials, more than max-combine-iterations (64),
// in 50 rows of 50 (the shortest loops in all) the same way; then those 50
// added to the output, in order, by one thread.
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[PARTIAL:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @norm
// CHECK-SAME:    (%[[W:.*]]: memref<50x100xf32>, %[[OUT:.*]]: memref<f32>)
// CHECK:         %[[FLAT:.*]] = memref.collapse_shape %[[W]] {{\[}}[0, 1]] : memref<50x100xf32> into memref<5000xf32>
// CHECK:         %[[VIEW:.*]] = memref.expand_shape %[[FLAT]] {{\[}}[0, 1]] output_shape [2500, 2] : memref<5000xf32> into memref<2500x2xf32>
// CHECK:         %[[PARTIALS:.*]] = memref.alloc() : memref<2500xf32>
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%[[PARTIALS]] : memref<2500xf32>)
// CHECK:         linalg.generic {indexing_maps = [#[[ROWS]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[VIEW]] : memref<2500x2xf32>) outs(%[[PARTIALS]] : memref<2500xf32>)
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK:         %[[VIEW2:.*]] = memref.expand_shape %[[PARTIALS]] {{\[}}[0, 1]] output_shape [50, 50] : memref<2500xf32> into memref<50x50xf32>
// CHECK:         %[[PARTIALS2:.*]] = memref.alloc() : memref<50xf32>
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%[[PARTIALS2]] : memref<50xf32>)
// CHECK:         linalg.generic {indexing_maps = [#[[ROWS]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[VIEW2]] : memref<50x50xf32>) outs(%[[PARTIALS2]] : memref<50xf32>)
// CHECK-NEXT:    ^bb0(%[[P:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT:      linalg.yield %[[SUM]]
// CHECK:         %[[OUT1:.*]] = memref.expand_shape %[[OUT]] [] output_shape [1]
// CHECK:         linalg.generic {indexing_maps = [#[[PARTIAL]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[PARTIALS2]] : memref<50xf32>) outs(%[[OUT1]] : memref<1xf32>)
// CHECK-NEXT:    ^bb0(%[[P2:.*]]: f32, %[[ACC2:.*]]: f32):
// CHECK-NEXT:      %[[SUM2:.*]] = arith.addf %[[ACC2]], %[[P2]] : f32
// CHECK-NEXT:      linalg.yield %[[SUM2]]
// CHECK:         memref.dealloc %[[PARTIALS2]]
// CHECK:         memref.dealloc %[[PARTIALS]]
func.func @norm(%w: memref<50x100xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%w : memref<50x100xf32>) outs(%out : memref<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %a = arith.addf %acc, %sq : f32
    linalg.yield %a : f32
  }
  return
}

// -----

// Left alone: long reductions that cannot be split (a prime length; one
// that combines with subtraction; a dynamic length), and generics with
// parallel loops (they are kernels already).
// CHECK-LABEL: func.func @unchanged
// CHECK-NOT:     memref.expand_shape
// CHECK:         iterator_types = ["reduction"]
// CHECK:         iterator_types = ["reduction"]
// CHECK:         iterator_types = ["reduction"]
// CHECK:         iterator_types = ["parallel", "reduction"]
func.func @unchanged(%long: memref<5003xf32>, %any: memref<?xf32>, %rows: memref<4x6xf32>, %s: memref<f32>, %r: memref<4xf32>, %even: memref<5000xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%long : memref<5003xf32>) outs(%s : memref<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%even : memref<5000xf32>) outs(%s : memref<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.subf %acc, %v : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%any : memref<?xf32>) outs(%s : memref<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%rows : memref<4x6xf32>) outs(%r : memref<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  }
  return
}

// -----

// A long reduction beside few parallel iterations (softmax's sum over 1000
// classes at batch 32: 32 threads of 1000 iterations): the reduction is
// split into rows within partial-sums threads, as many as make the
// shortest loops in all (40 rows of 25, then the 40 rows: 65 iterations,
// against 125 rows of 8 for the most threads: 133), each reduced into a
// partial beside the parallel loop, then the partials folded into the
// output, in order. The input broadcast along the reduction keeps its map.
// CHECK-LABEL: func.func @beside_parallel
// CHECK:       %[[ROWS:.*]] = memref.expand_shape %{{.*}} {{\[}}[0], [1, 2]] output_shape [32, 40, 25] : memref<32x1000xf32> into memref<32x40x25xf32>
// CHECK:       %[[PARTIALS:.*]] = memref.alloc() : memref<32x40xf32>
// CHECK:       linalg.fill ins(%{{.*}} : f32) outs(%[[PARTIALS]] : memref<32x40xf32>)
// CHECK:       linalg.generic {indexing_maps = [#[[IN:.*]], #[[BCAST:.*]], #[[PART:.*]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME:    ins(%[[ROWS]], %{{.*}} : memref<32x40x25xf32>, memref<32xf32>) outs(%[[PARTIALS]] : memref<32x40xf32>)
// CHECK:         math.exp
// CHECK:       linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:    ins(%[[PARTIALS]] : memref<32x40xf32>) outs(%{{.*}} : memref<32xf32>)
// CHECK:         arith.addf %{{.*}}, %{{.*}} : f32
// CHECK:       memref.dealloc %[[PARTIALS]]
func.func @beside_parallel(%x: memref<32x1000xf32>, %m: memref<32xf32>, %out: memref<32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : memref<32x1000xf32>, memref<32xf32>) outs(%out : memref<32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    %s = arith.addf %acc, %e : f32
    linalg.yield %s : f32
  }
  return
}

// Shorter reductions (a bias gradient's sum over a batch of 32), and those
// beside many parallel iterations, stay in their threads.
// CHECK-LABEL: func.func @kept_in_threads
// CHECK-NOT:   memref.alloc
// CHECK:       iterator_types = ["reduction", "parallel"]
// CHECK:       iterator_types = ["parallel", "reduction"]
func.func @kept_in_threads(%dy: memref<32x1000xf32>, %db: memref<1000xf32>, %x: memref<4096x512xf32>, %s: memref<4096xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%dy : memref<32x1000xf32>) outs(%db : memref<1000xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4096x512xf32>) outs(%s : memref<4096xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// An argmax beside few parallel iterations (the count of correct answers'
// first maximal logit over 1000 classes at batch 32): split as the sums,
// 40 rows of 25. Every row's pick starts from the outputs (copied into
// the partials), takes its index along the classes from the row and the
// index in it, and the rows' picks are folded into the outputs, in order,
// by the same strict compare: the first maximum of all.
// CHECK-LABEL: func.func @argmax
// CHECK-SAME:    (%[[X:.*]]: memref<32x1000xf32>, %[[BEST:.*]]: memref<32xf32>, %[[AT:.*]]: memref<32xi64>)
// CHECK:         %[[ROWS:.*]] = memref.expand_shape %[[X]] {{\[}}[0], [1, 2]] output_shape [32, 40, 25]
// CHECK:         %[[PV:.*]] = memref.alloc() : memref<32x40xf32>
// CHECK:         %[[PI:.*]] = memref.alloc() : memref<32x40xi64>
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%[[BEST]], %[[AT]] : memref<32xf32>, memref<32xi64>) outs(%[[PV]], %[[PI]] : memref<32x40xf32>, memref<32x40xi64>)
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[ROWS]] : memref<32x40x25xf32>) outs(%[[PV]], %[[PI]] : memref<32x40xf32>, memref<32x40xi64>)
// CHECK-NEXT:    ^bb0(%[[E:.*]]: f32, %[[V:.*]]: f32, %[[I:.*]]: i64):
// CHECK-NEXT:      %[[ROW:.*]] = linalg.index 1 : index
// CHECK-NEXT:      %[[IN:.*]] = linalg.index 2 : index
// CHECK-NEXT:      %[[LEN:.*]] = arith.constant 25 : index
// CHECK-NEXT:      %[[START:.*]] = arith.muli %[[ROW]], %[[LEN]] : index
// CHECK-NEXT:      %[[ALONG:.*]] = arith.addi %[[START]], %[[IN]] : index
// CHECK-NEXT:      %[[ALONG64:.*]] = arith.index_cast %[[ALONG]] : index to i64
// CHECK-NEXT:      %[[GT:.*]] = arith.cmpf ogt, %[[E]], %[[V]] : f32
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[PV]], %[[PI]] : memref<32x40xf32>, memref<32x40xi64>) outs(%[[BEST]], %[[AT]] : memref<32xf32>, memref<32xi64>)
// CHECK-NEXT:    ^bb0(%[[RV:.*]]: f32, %[[RI:.*]]: i64, %[[BV:.*]]: f32, %[[BI:.*]]: i64):
// CHECK-NEXT:      %[[WINS:.*]] = arith.cmpf ogt, %[[RV]], %[[BV]] : f32
// CHECK-NEXT:      %[[NV:.*]] = arith.select %[[WINS]], %[[RV]], %[[BV]] : f32
// CHECK-NEXT:      %[[NI:.*]] = arith.select %[[WINS]], %[[RI]], %[[BI]] : i64
// CHECK-NEXT:      linalg.yield %[[NV]], %[[NI]]
// CHECK:         memref.dealloc %[[PV]]
// CHECK:         memref.dealloc %[[PI]]
func.func @argmax(%x: memref<32x1000xf32>, %best: memref<32xf32>, %at: memref<32xi64>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<32x1000xf32>) outs(%best, %at : memref<32xf32>, memref<32xi64>) {
  ^bb0(%in: f32, %v: f32, %i: i64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %gt = arith.cmpf ogt, %in, %v : f32
    %nv = arith.select %gt, %in, %v : f32
    %ni = arith.select %gt, %ji, %i : i64
    linalg.yield %nv, %ni : f32, i64
  }
  return
}

// Kept in their threads: a non-strict compare (the last maximum: rows
// starting from the outputs would not fold to it), and a body that does
// more than pick.
// CHECK-LABEL: func.func @arg_reductions_kept
// CHECK-NOT:   memref.alloc
func.func @arg_reductions_kept(%x: memref<32x1000xf32>, %best: memref<32xf32>, %at: memref<32xi64>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<32x1000xf32>) outs(%best, %at : memref<32xf32>, memref<32xi64>) {
  ^bb0(%in: f32, %v: f32, %i: i64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %ge = arith.cmpf oge, %in, %v : f32
    %nv = arith.select %ge, %in, %v : f32
    %ni = arith.select %ge, %ji, %i : i64
    linalg.yield %nv, %ni : f32, i64
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<32x1000xf32>) outs(%best, %at : memref<32xf32>, memref<32xi64>) {
  ^bb0(%in: f32, %v: f32, %i: i64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %sq = arith.mulf %in, %in : f32
    %gt = arith.cmpf ogt, %sq, %v : f32
    %nv = arith.select %gt, %sq, %v : f32
    %ni = arith.select %gt, %ji, %i : i64
    linalg.yield %nv, %ni : f32, i64
  }
  return
}
