// --dtrain-vectorize-parallel-loops keeps what the loops compute, on the
// vector path and on the scalar one: a bf16 ReLU of x[i] = i - 8 over 16
// elements, which also writes 2 relu(x) + 0.5 in f32, lowered for the CPU
// and run twice: on buffers allocated 16-byte aligned (vectors of 8), and
// on views one element into them (misaligned: element by element).
// Hand-computed, both times: relu 0 (8 times) 0 1 .. 7, then the f32
// results 0.5 (9 times) 2.5 4.5 .. 14.5.
// REQUIRES: mpi
// RUN: dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-vectorize-parallel-loops))" \
// RUN:   | FileCheck %s --check-prefix=VECTOR
// RUN: dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-vectorize-parallel-loops),convert-scf-to-cf,expand-strided-metadata,finalize-memref-to-llvm,convert-to-llvm,reconcile-unrealized-casts)" \
// RUN:   | mlir-translate --mlir-to-llvmir -o %t.ll
// RUN: %clang -O1 %t.ll -o %t.exe -L%llvm_lib_dir -lmlir_c_runner_utils -lmlir_float16_utils \
// RUN:   -Wl,-rpath,%llvm_lib_dir
// RUN: %t.exe | FileCheck %s

// VECTOR-LABEL: func.func @relu
// VECTOR:         vector.load %{{.*}} : memref<16xbf16, strided<[1], offset: ?>>, vector<8xbf16>
// VECTOR:         arith.maximumf %{{.*}} : vector<8xbf16>

func.func private @printF32(f32)
func.func private @printNewline()

func.func @relu(%in: memref<16xbf16, strided<[1], offset: ?>>,
                %out: memref<16xbf16, strided<[1], offset: ?>>,
                %wide: memref<16xf32, strided<[1], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : bf16
  %two = arith.constant 2.0 : f32
  %half = arith.constant 0.5 : f32
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %in[%i] : memref<16xbf16, strided<[1], offset: ?>>
    %y = arith.maximumf %x, %zero : bf16
    %w = arith.extf %y : bf16 to f32
    %d = arith.mulf %w, %two : f32
    %z = arith.addf %d, %half : f32
    memref.store %y, %out[%i] : memref<16xbf16, strided<[1], offset: ?>>
    memref.store %z, %wide[%i] : memref<16xf32, strided<[1], offset: ?>>
    scf.reduce
  }
  return
}

// Fills IN with i - 8, runs @relu and prints OUT (widened) and WIDE.
func.func @run(%in: memref<16xbf16, strided<[1], offset: ?>>,
               %out: memref<16xbf16, strided<[1], offset: ?>>,
               %wide: memref<16xf32, strided<[1], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %eight = arith.constant 8.0 : f32
  scf.for %i = %c0 to %c16 step %c1 {
    %n = arith.index_cast %i : index to i32
    %f = arith.sitofp %n : i32 to f32
    %x = arith.subf %f, %eight : f32
    %b = arith.truncf %x : f32 to bf16
    memref.store %b, %in[%i] : memref<16xbf16, strided<[1], offset: ?>>
  }
  func.call @relu(%in, %out, %wide) : (memref<16xbf16, strided<[1], offset: ?>>, memref<16xbf16, strided<[1], offset: ?>>, memref<16xf32, strided<[1], offset: ?>>) -> ()
  scf.for %i = %c0 to %c16 step %c1 {
    %y = memref.load %out[%i] : memref<16xbf16, strided<[1], offset: ?>>
    %f = arith.extf %y : bf16 to f32
    func.call @printF32(%f) : (f32) -> ()
    func.call @printNewline() : () -> ()
  }
  scf.for %i = %c0 to %c16 step %c1 {
    %z = memref.load %wide[%i] : memref<16xf32, strided<[1], offset: ?>>
    func.call @printF32(%z) : (f32) -> ()
    func.call @printNewline() : () -> ()
  }
  return
}

// The aligned run, then the misaligned one.
// CHECK-COUNT-9: {{^}}0{{$}}
// CHECK-NEXT:    {{^}}1{{$}}
// CHECK-NEXT:    {{^}}2{{$}}
// CHECK-NEXT:    {{^}}3{{$}}
// CHECK-NEXT:    {{^}}4{{$}}
// CHECK-NEXT:    {{^}}5{{$}}
// CHECK-NEXT:    {{^}}6{{$}}
// CHECK-NEXT:    {{^}}7{{$}}
// CHECK-NEXT:    {{^}}0.5{{$}}
// CHECK-COUNT-8: {{^}}0.5{{$}}
// CHECK-NEXT:    {{^}}2.5{{$}}
// CHECK-NEXT:    {{^}}4.5{{$}}
// CHECK-NEXT:    {{^}}6.5{{$}}
// CHECK-NEXT:    {{^}}8.5{{$}}
// CHECK-NEXT:    {{^}}10.5{{$}}
// CHECK-NEXT:    {{^}}12.5{{$}}
// CHECK-NEXT:    {{^}}14.5{{$}}
// CHECK-NEXT:    {{^}}0{{$}}
// CHECK-COUNT-8: {{^}}0{{$}}
// CHECK-NEXT:    {{^}}1{{$}}
// CHECK-NEXT:    {{^}}2{{$}}
// CHECK-NEXT:    {{^}}3{{$}}
// CHECK-NEXT:    {{^}}4{{$}}
// CHECK-NEXT:    {{^}}5{{$}}
// CHECK-NEXT:    {{^}}6{{$}}
// CHECK-NEXT:    {{^}}7{{$}}
// CHECK-NEXT:    {{^}}0.5{{$}}
// CHECK-COUNT-8: {{^}}0.5{{$}}
// CHECK-NEXT:    {{^}}2.5{{$}}
// CHECK-NEXT:    {{^}}4.5{{$}}
// CHECK-NEXT:    {{^}}6.5{{$}}
// CHECK-NEXT:    {{^}}8.5{{$}}
// CHECK-NEXT:    {{^}}10.5{{$}}
// CHECK-NEXT:    {{^}}12.5{{$}}
// CHECK-NEXT:    {{^}}14.5{{$}}
// CHECK-NOT:     {{.}}
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %in = memref.alloc() {alignment = 16 : i64} : memref<24xbf16>
  %out = memref.alloc() {alignment = 16 : i64} : memref<24xbf16>
  %wide = memref.alloc() {alignment = 16 : i64} : memref<24xf32>
  %in0 = memref.subview %in[%c0] [16] [1] : memref<24xbf16> to memref<16xbf16, strided<[1], offset: ?>>
  %out0 = memref.subview %out[%c0] [16] [1] : memref<24xbf16> to memref<16xbf16, strided<[1], offset: ?>>
  %wide0 = memref.subview %wide[%c0] [16] [1] : memref<24xf32> to memref<16xf32, strided<[1], offset: ?>>
  func.call @run(%in0, %out0, %wide0) : (memref<16xbf16, strided<[1], offset: ?>>, memref<16xbf16, strided<[1], offset: ?>>, memref<16xf32, strided<[1], offset: ?>>) -> ()
  %in1 = memref.subview %in[%c1] [16] [1] : memref<24xbf16> to memref<16xbf16, strided<[1], offset: ?>>
  %out1 = memref.subview %out[%c1] [16] [1] : memref<24xbf16> to memref<16xbf16, strided<[1], offset: ?>>
  %wide1 = memref.subview %wide[%c1] [16] [1] : memref<24xf32> to memref<16xf32, strided<[1], offset: ?>>
  func.call @run(%in1, %out1, %wide1) : (memref<16xbf16, strided<[1], offset: ?>>, memref<16xbf16, strided<[1], offset: ?>>, memref<16xf32, strided<[1], offset: ?>>) -> ()
  %ok = arith.constant 0 : i32
  return %ok : i32
}
