// RUN: dtrain-opt %s --split-input-file --dtrain-outline-parallel-loops --canonicalize | FileCheck %s
// RUN: dtrain-opt %s --split-input-file --dtrain-outline-parallel-loops="min-cost=1" --canonicalize | FileCheck %s --check-prefix=ALL

// A 512 x 128 loop: its 512 rows are the chunked range, each row an inner
// loop of 128 iterations of 3 operations (cost 384). The buffers'
// descriptors and the scalar go through the context, stored just before the
// call; the constants are cloned into the new function.
// CHECK-LABEL: func.func @scale(
// CHECK-SAME:    %[[IN:[^:]*]]: memref<512x128xf32>, %[[OUT:[^:]*]]: memref<512x128xf32>, %[[K:[^:]*]]: f32)
// CHECK-DAG:     %[[ROWS:.*]] = arith.constant 512 : i64
// CHECK-DAG:     %[[COST:.*]] = arith.constant 384 : i64
// CHECK-DAG:     %[[BODY:.*]] = constant @scale_parallel : (!llvm.ptr, i64, i64) -> ()
// CHECK:         %[[CONTEXT:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, f32, struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>)>
// CHECK:         %[[D0:.*]] = builtin.unrealized_conversion_cast %[[IN]] : memref<512x128xf32> to !llvm.struct
// CHECK:         %[[F0:.*]] = llvm.getelementptr %[[CONTEXT]][0, 0]
// CHECK:         llvm.store %[[D0]], %[[F0]]
// CHECK:         %[[F1:.*]] = llvm.getelementptr %[[CONTEXT]][0, 1]
// CHECK:         llvm.store %[[K]], %[[F1]] : f32
// CHECK:         %[[D2:.*]] = builtin.unrealized_conversion_cast %[[OUT]]
// CHECK:         llvm.store %[[D2]]
// CHECK:         call @dtrain_rt_parallel_for(%[[BODY]], %[[CONTEXT]], %[[ROWS]], %[[COST]])
// CHECK-NOT:     scf.parallel
// CHECK:         return
// CHECK-LABEL: func.func private @scale_parallel(
// CHECK-SAME:    %[[CTX:[^:]*]]: !llvm.ptr, %[[BEGIN:[^:]*]]: i64, %[[END:[^:]*]]: i64)
// CHECK-DAG:     %[[C128:.*]] = arith.constant 128 : index
// CHECK:         %[[A0:.*]] = llvm.getelementptr %[[CTX]][0, 0]
// CHECK:         %[[L0:.*]] = llvm.load %[[A0]] : !llvm.ptr -> !llvm.struct
// CHECK:         %[[M0:.*]] = builtin.unrealized_conversion_cast %[[L0]] : {{.*}} to memref<512x128xf32>
// CHECK:         %[[L1:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:         %[[M2:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<512x128xf32>
// CHECK-DAG:     %[[B:.*]] = arith.index_cast %[[BEGIN]] : i64 to index
// CHECK-DAG:     %[[E:.*]] = arith.index_cast %[[END]] : i64 to index
// CHECK:         scf.for %[[I:.*]] = %[[B]] to %[[E]] step
// CHECK:           scf.parallel (%[[J:.*]]) = (%{{.*}}) to (%[[C128]])
// CHECK:             %[[X:.*]] = memref.load %[[M0]][%[[I]], %[[J]]]
// CHECK:             %[[Y:.*]] = arith.mulf %[[X]], %[[L1]]
// CHECK:             memref.store %[[Y]], %[[M2]][%[[I]], %[[J]]]
func.func @scale(%in: memref<512x128xf32>, %out: memref<512x128xf32>, %k: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c512, %c128) step (%c1, %c1) {
    %x = memref.load %in[%i, %j] : memref<512x128xf32>
    %y = arith.mulf %x, %k : f32
    memref.store %y, %out[%i, %j] : memref<512x128xf32>
    scf.reduce
  }
  return
}

// -----

// 4 x 8 leading iterations are too few for many threads: the two leading
// dimensions are one range of 32, whose indices come back by division and
// remainder; the innermost stays a loop of its own.
// CHECK-LABEL: func.func @short_leading(
// CHECK-DAG:     %[[N:.*]] = arith.constant 32 : i64
// CHECK-DAG:     %[[COST:.*]] = arith.constant 3072 : i64
// CHECK:         call @dtrain_rt_parallel_for(%{{.*}}, %{{.*}}, %[[N]], %[[COST]])
// CHECK-LABEL: func.func private @short_leading_parallel(
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
// CHECK:         scf.for %[[L:.*]] = 
// CHECK:           %[[J:.*]] = arith.remsi %[[L]], %[[C8]]
// CHECK:           %[[I:.*]] = arith.divsi %[[L]], %[[C8]]
// CHECK:           scf.parallel (%[[K:.*]]) =
// CHECK:             memref.load %{{.*}}[%[[I]], %[[J]], %[[K]]]
func.func @short_leading(%in: memref<4x8x1024xf32>, %out: memref<4x8x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c4, %c8, %c1024) step (%c1, %c1, %c1) {
    %x = memref.load %in[%i, %j, %k] : memref<4x8x1024xf32>
    %y = math.exp %x : f32
    memref.store %y, %out[%i, %j, %k] : memref<4x8x1024xf32>
    scf.reduce
  }
  return
}

// -----

// Bounds known at run time: the trip count is computed before the call,
// the bounds go through the context, and the body maps chunk positions
// back to indices.
// CHECK-LABEL: func.func @dynamic(
// CHECK-SAME:    %{{[^:]*}}: memref<?xf32>, %[[LO:[^:]*]]: index, %[[HI:[^:]*]]: index, %[[STEP:[^:]*]]: index)
// CHECK:         %[[SPAN:.*]] = arith.subi %[[HI]], %[[LO]]
// CHECK:         %[[POS:.*]] = arith.maxsi %[[SPAN]]
// CHECK:         %[[TRIPS:.*]] = arith.ceildivsi %[[POS]], %[[STEP]]
// CHECK:         %[[N:.*]] = arith.index_cast %[[TRIPS]] : index to i64
// CHECK:         call @dtrain_rt_parallel_for(%{{.*}}, %{{.*}}, %[[N]], %{{.*}})
// CHECK-LABEL: func.func private @dynamic_parallel(
// CHECK:         %[[LOWER:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK:         %[[LOWERI:.*]] = builtin.unrealized_conversion_cast %[[LOWER]] : i64 to index
// CHECK:         %[[STEPL:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK:         %[[STEPI:.*]] = builtin.unrealized_conversion_cast %[[STEPL]] : i64 to index
// CHECK:         scf.for %[[P:.*]] =
// CHECK:           %[[OFF:.*]] = arith.muli %[[P]], %[[STEPI]]
// CHECK:           %[[IDX:.*]] = arith.addi %[[LOWERI]], %[[OFF]]
// CHECK:           memref.store %{{.*}}, %{{.*}}[%[[IDX]]]
func.func @dynamic(%buf: memref<?xf32>, %lo: index, %hi: index, %step: index) {
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%lo) to (%hi) step (%step) {
    memref.store %one, %buf[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// 16 stores are below min-cost: the loop stays (and is outlined with
// min-cost=1).
// CHECK-LABEL: func.func @small(
// CHECK:         scf.parallel
// CHECK-NOT:     dtrain_rt_parallel_for
// CHECK:         return
// ALL-LABEL:   func.func @small(
// ALL:           call @dtrain_rt_parallel_for
// ALL-LABEL:   func.func private @small_parallel(
func.func @small(%buf: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    memref.store %one, %buf[%i] : memref<16xf32>
    scf.reduce
  }
  return
}

// -----

// A call in the body may not be safe on other threads: the loop stays.
// CHECK-LABEL: func.func @calls(
// CHECK:         scf.parallel
// CHECK:           func.call @opaque
// CHECK-NOT:     dtrain_rt_parallel_for
// CHECK:         return
// ALL-LABEL:   func.func @calls(
// ALL-NOT:       dtrain_rt_parallel_for
// ALL:           return
func.func private @opaque(f32)

func.func @calls(%buf: memref<65536xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 65536 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %buf[%i] : memref<65536xf32>
    func.call @opaque(%x) : (f32) -> ()
    scf.reduce
  }
  return
}

// -----

// A loop inside another loop: its context is allocated once at the
// function's entry and filled before each call. Only the outermost
// parallel loop is outlined; the nested one moves with its body. The cost
// of a row: 256 x 2 for the sum, 1 store, 256 x 1 for the inner loop.
// CHECK-LABEL: func.func @row_sums(
// CHECK-DAG:     %[[COST:.*]] = arith.constant 769 : i64
// CHECK:         %[[CONTEXT:.*]] = llvm.alloca
// CHECK:         scf.for
// CHECK:           llvm.store %{{.*}}, %{{.*}}
// CHECK:           llvm.store %{{.*}}, %{{.*}}
// CHECK:           func.call @dtrain_rt_parallel_for(%{{.*}}, %[[CONTEXT]], %{{.*}}, %[[COST]])
// CHECK-LABEL: func.func private @row_sums_parallel(
// CHECK:         scf.for %[[I:.*]] =
// CHECK:           %[[SUM:.*]] = scf.for
// CHECK:           memref.store %[[SUM]], %{{.*}}[%[[I]]]
// CHECK:           scf.parallel
// CHECK-NOT:     dtrain_rt_parallel_for
// CHECK:         return
func.func @row_sums(%in: memref<256x256xf32>, %out: memref<256xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  scf.for %t = %c0 to %n step %c1 {
    scf.parallel (%i) = (%c0) to (%c256) step (%c1) {
      %sum = scf.for %j = %c0 to %c256 step %c1 iter_args(%acc = %zero) -> f32 {
        %x = memref.load %in[%i, %j] : memref<256x256xf32>
        %s = arith.addf %acc, %x : f32
        scf.yield %s : f32
      }
      memref.store %sum, %out[%i] : memref<256xf32>
      scf.parallel (%j) = (%c0) to (%c256) step (%c1) {
        memref.store %zero, %in[%i, %j] : memref<256x256xf32>
        scf.reduce
      }
      scf.reduce
    }
  }
  return
}
