// RUN: dtrain-opt %s --dtrain-plan-buffers --split-input-file | FileCheck %s

// Three buffers in a chain: %a dies when %c is written, so %c reuses its
// bytes; %b overlaps both and gets its own. Largest first: %a (4096 bytes)
// at 0, %b (1024) at 4096, %c (2048) at 0. The arena is 64-byte aligned
// and uninitialized.
// CHECK: memref.global "private" @__dtrain_arena_chain : memref<5120xi8> = uninitialized {alignment = 64 : i64}
// CHECK-LABEL: func.func @chain
// CHECK: %[[ARENA:.*]] = memref.get_global @__dtrain_arena_chain : memref<5120xi8>
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[A:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<5120xi8> to memref<1024xf32>
// CHECK: %[[C4096:.*]] = arith.constant 4096 : index
// CHECK: %[[B:.*]] = memref.view %[[ARENA]][%[[C4096]]][] : memref<5120xi8> to memref<256xf32>
// CHECK: linalg.fill {{.*}} outs(%[[A]]
// CHECK: %[[A_VIEW:.*]] = memref.subview %[[A]]
// CHECK: linalg.copy ins(%[[A_VIEW]] : {{.*}}) outs(%[[B]] : memref<256xf32>)
// CHECK: %[[C0_2:.*]] = arith.constant 0 : index
// CHECK: %[[C:.*]] = memref.view %[[ARENA]][%[[C0_2]]][] : memref<5120xi8> to memref<512xf32>
// CHECK-NOT: memref.alloc
func.func @chain(%out: memref<512xf32>) {
  %cst = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<1024xf32>
  %b = memref.alloc() : memref<256xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<1024xf32>)
  %a_view = memref.subview %a[0] [256] [1] : memref<1024xf32> to memref<256xf32, strided<[1]>>
  linalg.copy ins(%a_view : memref<256xf32, strided<[1]>>) outs(%b : memref<256xf32>)
  %c = memref.alloc() : memref<512xf32>
  %b_view = memref.subview %c[0] [256] [1] : memref<512xf32> to memref<256xf32, strided<[1]>>
  linalg.copy ins(%b : memref<256xf32>) outs(%b_view : memref<256xf32, strided<[1]>>)
  linalg.copy ins(%c : memref<512xf32>) outs(%out : memref<512xf32>)
  return
}

// -----

// A buffer whose address is passed to a call lives until that call: a
// pointer derived from it counts as a use.
// CHECK: memref.global "private" @__dtrain_arena_pointer : memref<128xi8>
// CHECK-LABEL: func.func @pointer
// CHECK: memref.view {{.*}}[%c0{{.*}}][] : memref<128xi8> to memref<16xf32>
// CHECK: memref.view {{.*}}[%c64{{.*}}][] : memref<128xi8> to memref<16xf32>
func.func private @consume(!llvm.ptr)
func.func @pointer() {
  %a = memref.alloc() : memref<16xf32>
  %address = memref.extract_aligned_pointer_as_index %a : memref<16xf32> -> index
  %i = arith.index_cast %address : index to i64
  %p = llvm.inttoptr %i : i64 to !llvm.ptr
  %b = memref.alloc() : memref<16xf32>
  %cst = arith.constant 0.0 : f32
  linalg.fill ins(%cst : f32) outs(%b : memref<16xf32>)
  func.call @consume(%p) : (!llvm.ptr) -> ()
  return
}

// -----

// Returned, deallocated and dynamically shaped buffers keep their alloc.
// CHECK-NOT: memref.global
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: memref.alloc
func.func @kept(%n: index) -> memref<8xf32> {
  %returned = memref.alloc() : memref<8xf32>
  %freed = memref.alloc() : memref<8xf32>
  memref.dealloc %freed : memref<8xf32>
  %dynamic = memref.alloc(%n) : memref<?xf32>
  return %returned : memref<8xf32>
}
