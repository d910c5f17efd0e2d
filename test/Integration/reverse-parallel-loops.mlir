// --dtrain-reverse-parallel-loops runs a parallel loop's iterations from
// the last to the first, lowered for the CPU: a loop in which every
// iteration writes its index to one element (a race between threads on a
// GPU) leaves 9 there in order and 0 reversed; a loop without a race
// (each iteration writing 2 i to its own element) computes the same
// both ways. Hand-computed.
// REQUIRES: mpi
// RUN: dtrain-opt %s --pass-pipeline="builtin.module(convert-scf-to-cf,finalize-memref-to-llvm,convert-to-llvm,reconcile-unrealized-casts)" \
// RUN:   | mlir-translate --mlir-to-llvmir -o %t.ll
// RUN: %clang -O1 %t.ll -o %t.exe -L%llvm_lib_dir -lmlir_c_runner_utils -Wl,-rpath,%llvm_lib_dir
// RUN: %t.exe | FileCheck %s --check-prefix=FORWARD
// RUN: dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-reverse-parallel-loops),convert-scf-to-cf,finalize-memref-to-llvm,convert-to-llvm,reconcile-unrealized-casts)" \
// RUN:   | mlir-translate --mlir-to-llvmir -o %t.reversed.ll
// RUN: %clang -O1 %t.reversed.ll -o %t.reversed.exe -L%llvm_lib_dir -lmlir_c_runner_utils -Wl,-rpath,%llvm_lib_dir
// RUN: %t.reversed.exe | FileCheck %s --check-prefix=REVERSED

// FORWARD: race 9
// REVERSED: race 0
// FORWARD-NEXT: own 0 2 4 6 8 10 12 14 16 18
// REVERSED-NEXT: own 0 2 4 6 8 10 12 14 16 18

func.func private @printI64(i64)
func.func private @printNewline()
func.func private @printString(!llvm.ptr)

llvm.mlir.global internal constant @race("race \00")
llvm.mlir.global internal constant @own("own \00")
llvm.mlir.global internal constant @space(" \00")

func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %shared = memref.alloca() : memref<1xi64>
  %own = memref.alloca() : memref<10xi64>
  scf.parallel (%i) = (%c0) to (%c10) step (%c1) {
    %n = arith.index_cast %i : index to i64
    memref.store %n, %shared[%c0] : memref<1xi64>
    %twice = arith.addi %n, %n : i64
    memref.store %twice, %own[%i] : memref<10xi64>
    scf.reduce
  }
  %race = llvm.mlir.addressof @race : !llvm.ptr
  func.call @printString(%race) : (!llvm.ptr) -> ()
  %last = memref.load %shared[%c0] : memref<1xi64>
  func.call @printI64(%last) : (i64) -> ()
  func.call @printNewline() : () -> ()
  %label = llvm.mlir.addressof @own : !llvm.ptr
  func.call @printString(%label) : (!llvm.ptr) -> ()
  %space = llvm.mlir.addressof @space : !llvm.ptr
  scf.for %i = %c0 to %c10 step %c1 {
    %v = memref.load %own[%i] : memref<10xi64>
    func.call @printI64(%v) : (i64) -> ()
    func.call @printString(%space) : (!llvm.ptr) -> ()
  }
  func.call @printNewline() : () -> ()
  %ok = arith.constant 0 : i32
  return %ok : i32
}
