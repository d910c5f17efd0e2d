// --dtrain-scalar-code-to-linalg keeps what the scalar code computes: the
// dynamic loss scale's update (halve on an inf/NaN gradient sum, double
// after 2000 clean steps, else keep; count the clean steps) run as the
// pass makes it, bufferized and lowered for the CPU, on three states:
// hand-computed below.
// REQUIRES: mpi
// RUN: dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-scalar-code-to-linalg))" \
// RUN:   | FileCheck %s --check-prefix=GENERICS
// RUN: dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-scalar-code-to-linalg),one-shot-bufferize{bufferize-function-boundaries},convert-linalg-to-loops,convert-scf-to-cf,expand-strided-metadata,finalize-memref-to-llvm,convert-to-llvm,reconcile-unrealized-casts)" \
// RUN:   | mlir-translate --mlir-to-llvmir -o %t.ll
// RUN: %clang -O1 %t.ll -o %t.exe -L%llvm_lib_dir -lmlir_c_runner_utils \
// RUN:   -Wl,-rpath,%llvm_lib_dir
// RUN: %t.exe | FileCheck %s

// GENERICS-LABEL: func.func @update
// GENERICS-NOT:   tensor.from_elements
// GENERICS-COUNT-2: linalg.generic
// GENERICS-NOT:   tensor.from_elements
// GENERICS:       return
// GENERICS-LABEL: func.func @run

func.func @update(%scale: tensor<f32>, %sum: tensor<f32>, %clean: tensor<i64>) -> (tensor<f32>, tensor<i64>) {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c2000 = arith.constant 2000 : i64
  %two = arith.constant 2.0 : f32
  %half = arith.constant 0.5 : f32
  %s = tensor.extract %sum[] : tensor<f32>
  %bad = arith.cmpf uno, %s, %s : f32
  %c = tensor.extract %clean[] : tensor<i64>
  %grown = arith.addi %c, %c1 : i64
  %due = arith.cmpi sge, %grown, %c2000 : i64
  %old = tensor.extract %scale[] : tensor<f32>
  %doubled = arith.mulf %old, %two : f32
  %kept = arith.select %due, %doubled, %old : f32
  %halved = arith.mulf %old, %half : f32
  %new = arith.select %bad, %halved, %kept : f32
  %reset = arith.ori %bad, %due : i1
  %count = arith.select %reset, %c0, %grown : i64
  %0 = tensor.from_elements %new : tensor<f32>
  %1 = tensor.from_elements %count : tensor<i64>
  return %0, %1 : tensor<f32>, tensor<i64>
}

func.func private @printF32(f32)
func.func private @printI64(i64)
func.func private @printComma()
func.func private @printNewline()

func.func @run(%scale: f32, %sum: f32, %clean: i64) {
  %s = tensor.from_elements %scale : tensor<f32>
  %g = tensor.from_elements %sum : tensor<f32>
  %c = tensor.from_elements %clean : tensor<i64>
  %new:2 = func.call @update(%s, %g, %c) : (tensor<f32>, tensor<f32>, tensor<i64>) -> (tensor<f32>, tensor<i64>)
  %v = tensor.extract %new#0[] : tensor<f32>
  %n = tensor.extract %new#1[] : tensor<i64>
  func.call @printF32(%v) : (f32) -> ()
  func.call @printComma() : () -> ()
  func.call @printI64(%n) : (i64) -> ()
  func.call @printNewline() : () -> ()
  return
}

// CHECK: 8, 0
// CHECK-NEXT: 2, 0
// CHECK-NEXT: 4, 6
func.func @main() -> i32 {
  %four = arith.constant 4.0 : f32
  %one = arith.constant 1.0 : f32
  %three = arith.constant 3.0 : f32
  %nan = arith.constant 0x7FC00000 : f32
  %c1999 = arith.constant 1999 : i64
  %c5 = arith.constant 5 : i64
  func.call @run(%four, %one, %c1999) : (f32, f32, i64) -> ()
  func.call @run(%four, %nan, %c5) : (f32, f32, i64) -> ()
  func.call @run(%four, %three, %c5) : (f32, f32, i64) -> ()
  %ok = arith.constant 0 : i32
  return %ok : i32
}
