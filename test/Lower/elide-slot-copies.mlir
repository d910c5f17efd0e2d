// RUN: dtrain-opt %s --dtrain-elide-slot-copies --split-input-file | FileCheck %s

// A bucket of two members, as --dtrain-merge-gradients leaves it after
// bufferization: a 2x3 gradient written by a loop nest and a scalar, each
// copied into its slot. Both producers now write into the bucket, which
// becomes a byte buffer allocated before the first member, and no copy is
// left. The exchange and the reads of the result use the bucket's view.
// CHECK-LABEL: func.func @two_members
// CHECK-SAME: (%[[X:.*]]: memref<2x3xf32>, %[[S:.*]]: memref<f32>, %{{.*}}: memref<6xf32>)
// CHECK:      %[[BYTES:.*]] = memref.alloc() {alignment = 64 : i64} : memref<28xi8>
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[BUCKET:.*]] = memref.view %[[BYTES]][%[[C0]]][] : memref<28xi8> to memref<7xf32>
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT: %[[G:.*]] = memref.view %[[BYTES]][%[[C4]]][] : memref<28xi8> to memref<2x3xf32>
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[X]] : memref<2x3xf32>) outs(%[[G]] : memref<2x3xf32>)
// CHECK:      %[[C0_2:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[L:.*]] = memref.view %[[BYTES]][%[[C0_2]]][] : memref<28xi8> to memref<f32>
// CHECK-NEXT: memref.copy %[[S]], %[[L]] : memref<f32> to memref<f32>
// CHECK:      %[[REQ:.*]] = comm.all_reduce_start <mean> %[[BUCKET]] on %{{.*}} : memref<7xf32>
// CHECK-NOT:  memref.copy
// CHECK:      %[[AVERAGED:.*]] = memref.subview %[[BUCKET]][1] [6] [1]
// CHECK-NEXT: memref.copy %[[AVERAGED]], %{{.*}} : memref<6xf32, strided<[1], offset: 1>> to memref<6xf32>
func.func @two_members(%x: memref<2x3xf32>, %s: memref<f32>, %result: memref<6xf32>) {
  %g = memref.alloc() {alignment = 64 : i64} : memref<2x3xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<2x3xf32>) outs(%g : memref<2x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %twice = arith.addf %in, %in : f32
    linalg.yield %twice : f32
  }
  %loss = memref.alloc() {alignment = 64 : i64} : memref<f32>
  memref.copy %s, %loss : memref<f32> to memref<f32>
  %bucket = memref.alloc() {alignment = 64 : i64} : memref<7xf32>
  %loss_slot = memref.subview %bucket[0] [1] [1] : memref<7xf32> to memref<1xf32, strided<[1]>>
  %loss_flat = memref.expand_shape %loss [] output_shape [1] : memref<f32> into memref<1xf32>
  memref.copy %loss_flat, %loss_slot : memref<1xf32> to memref<1xf32, strided<[1]>>
  %g_slot = memref.subview %bucket[1] [6] [1] : memref<7xf32> to memref<6xf32, strided<[1], offset: 1>>
  %g_flat = memref.collapse_shape %g [[0, 1]] : memref<2x3xf32> into memref<6xf32>
  memref.copy %g_flat, %g_slot : memref<6xf32> to memref<6xf32, strided<[1], offset: 1>>
  %world = comm.world : !comm.communicator
  %request = comm.all_reduce_start <mean> %bucket on %world : memref<7xf32>
  comm.wait %request, %bucket : memref<7xf32>
  %averaged = memref.subview %bucket[1] [6] [1] : memref<7xf32> to memref<6xf32, strided<[1], offset: 1>>
  memref.copy %averaged, %result : memref<6xf32, strided<[1], offset: 1>> to memref<6xf32>
  return
}

// -----

// The source is read after its copy: it must stay a buffer of its own.
// CHECK-LABEL: func.func @read_after_copy
// CHECK: %[[G:.*]] = memref.alloc() : memref<4xf32>
// CHECK: %[[BUCKET:.*]] = memref.alloc() : memref<4xf32>
// CHECK: memref.copy %[[G]], %{{.*}}
// CHECK: memref.load %[[G]]
func.func @read_after_copy(%x: memref<4xf32>) -> f32 {
  %g = memref.alloc() : memref<4xf32>
  memref.copy %x, %g : memref<4xf32> to memref<4xf32>
  %bucket = memref.alloc() : memref<4xf32>
  %slot = memref.subview %bucket[0] [4] [1] : memref<4xf32> to memref<4xf32, strided<[1]>>
  memref.copy %g, %slot : memref<4xf32> to memref<4xf32, strided<[1]>>
  %c0 = arith.constant 0 : index
  %v = memref.load %g[%c0] : memref<4xf32>
  %world = comm.world : !comm.communicator
  %request = comm.all_reduce_start <sum> %bucket on %world : memref<4xf32>
  comm.wait %request, %bucket : memref<4xf32>
  return %v : f32
}

// -----

// The slot is written in the meantime (a copy into overlapping elements
// after the source exists): writing the source there early would be
// overwritten, so the copy stays. The disjoint slot [4, 6) is elided.
// CHECK-LABEL: func.func @slot_written_meanwhile
// CHECK: %[[G:.*]] = memref.alloc() : memref<4xf32>
// CHECK: memref.copy %[[G]], %{{.*}} : memref<4xf32> to memref<4xf32, strided<[1]>>
// CHECK-NOT: memref.copy %{{.*}} : memref<2xf32> to memref<2xf32, strided<[1], offset: 4>>
func.func @slot_written_meanwhile(%x: memref<4xf32>, %y: memref<2xf32>) {
  %g = memref.alloc() : memref<4xf32>
  %h = memref.alloc() : memref<2xf32>
  memref.copy %x, %g : memref<4xf32> to memref<4xf32>
  memref.copy %y, %h : memref<2xf32> to memref<2xf32>
  %bucket = memref.alloc() : memref<6xf32>
  %early = memref.subview %bucket[2] [2] [1] : memref<6xf32> to memref<2xf32, strided<[1], offset: 2>>
  memref.copy %y, %early : memref<2xf32> to memref<2xf32, strided<[1], offset: 2>>
  %slot = memref.subview %bucket[0] [4] [1] : memref<6xf32> to memref<4xf32, strided<[1]>>
  memref.copy %g, %slot : memref<4xf32> to memref<4xf32, strided<[1]>>
  %tail = memref.subview %bucket[4] [2] [1] : memref<6xf32> to memref<2xf32, strided<[1], offset: 4>>
  memref.copy %h, %tail : memref<2xf32> to memref<2xf32, strided<[1], offset: 4>>
  %world = comm.world : !comm.communicator
  %request = comm.all_reduce_start <sum> %bucket on %world : memref<6xf32>
  comm.wait %request, %bucket : memref<6xf32>
  return
}

// -----

// Not slots of a bucket: a strided subview, and a slice of a slice.
// CHECK-LABEL: func.func @not_slots
// CHECK-COUNT-2: memref.copy %{{.*}}, %{{.*}}strided
func.func @not_slots(%x: memref<2xf32>) {
  %g = memref.alloc() : memref<2xf32>
  memref.copy %x, %g : memref<2xf32> to memref<2xf32>
  %h = memref.alloc() : memref<2x1xf32>
  %bucket = memref.alloc() : memref<8xf32>
  %strided = memref.subview %bucket[0] [2] [2] : memref<8xf32> to memref<2xf32, strided<[2]>>
  memref.copy %g, %strided : memref<2xf32> to memref<2xf32, strided<[2]>>
  %h_flat = memref.collapse_shape %h [[0, 1]] : memref<2x1xf32> into memref<2xf32>
  %wide = memref.subview %bucket[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  %part = memref.subview %wide[0] [2] [1] : memref<4xf32, strided<[1], offset: 4>> to memref<2xf32, strided<[1], offset: 4>>
  memref.copy %h_flat, %part : memref<2xf32> to memref<2xf32, strided<[1], offset: 4>>
  %world = comm.world : !comm.communicator
  %request = comm.all_reduce_start <sum> %bucket on %world : memref<8xf32>
  comm.wait %request, %bucket : memref<8xf32>
  return
}
