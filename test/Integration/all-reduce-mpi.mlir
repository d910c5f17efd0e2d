// End to end: comm ops lowered by dtrain, compiled to a native program,
// linked against libdtrain_runtime and run by mpirun on 3 ranks (not a power
// of two), with the all-reduce algorithm chosen at run time (MPI, then
// DTRAIN_ALLREDUCE=ring) and at compile time (algorithm=ring).
// REQUIRES: mpi
//
// DEFINE: %{algorithm} = default
// DEFINE: %{compile} = dtrain-opt %s --dtrain-lower-comm-to-runtime=algorithm=%{algorithm} \
// DEFINE:   --convert-vector-to-scf --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm \
// DEFINE:   --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// DEFINE:   | mlir-translate --mlir-to-llvmir -o %t.ll \
// DEFINE:   && %clang -O1 %t.ll -o %t.exe -L%dtrain_libs -ldtrain_runtime -Wl,-rpath,%dtrain_libs \
// DEFINE:      -L%llvm_lib_dir -lmlir_c_runner_utils -lmlir_float16_utils -Wl,-rpath,%llvm_lib_dir
// RUN: %{compile}
// RUN: %mpirun -np 3 %t.exe < /dev/null | FileCheck %s
// RUN: env DTRAIN_ALLREDUCE=ring %mpirun -np 3 %t.exe < /dev/null | FileCheck %s
// REDEFINE: %{algorithm} = ring
// RUN: %{compile}
// RUN: %mpirun -np 3 %t.exe < /dev/null | FileCheck %s

// Rank r contributes 10*r + i to element i of the sum (30 + 3*i over ranks
// 0..2), r + 1 to the mean (2) and r to the max (2).
// CHECK:      size 3
// CHECK-NEXT: sum ( 30, 33, 36, 39, 42 )
// CHECK-NEXT: mean ( 2, 2, 2, 2 )
// CHECK-NEXT: max ( 2, 2 )
// CHECK-NOT:  {{.}}

func.func @main() -> i32 {
  %world = comm.world : !comm.communicator
  %rank = comm.rank %world
  %size = comm.size %world
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %rank_i64 = arith.index_cast %rank : index to i64
  %rank_f32 = arith.sitofp %rank_i64 : i64 to f32
  %rank_i32 = arith.index_cast %rank : index to i32

  // f32 sum, blocking.
  %sum = memref.alloc() : memref<5xf32>
  %c5 = arith.constant 5 : index
  scf.for %i = %c0 to %c5 step %c1 {
    %v = arith.muli %rank, %c10 : index
    %w = arith.addi %v, %i : index
    %f = arith.index_cast %w : index to i32
    %x = arith.sitofp %f : i32 to f32
    memref.store %x, %sum[%i] : memref<5xf32>
  }
  comm.all_reduce <sum> %sum on %world : memref<5xf32>

  // f64 mean of rank + 1, started asynchronously and completed later.
  %mean = memref.alloc() : memref<4xf64>
  %c4 = arith.constant 4 : index
  %one = arith.constant 1 : i32
  %r1 = arith.addi %rank_i32, %one : i32
  %r1_f64 = arith.sitofp %r1 : i32 to f64
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %r1_f64, %mean[%i] : memref<4xf64>
  }
  %req = comm.all_reduce_start <mean> %mean on %world : memref<4xf64>

  // bf16 max of the rank, while the mean is in flight.
  %max = memref.alloc() : memref<2xbf16>
  %c2 = arith.constant 2 : index
  %rank_bf16 = arith.truncf %rank_f32 : f32 to bf16
  scf.for %i = %c0 to %c2 step %c1 {
    memref.store %rank_bf16, %max[%i] : memref<2xbf16>
  }
  comm.all_reduce <max> %max on %world : memref<2xbf16>
  comm.wait %req, %mean : memref<4xf64>

  %is_root = arith.cmpi eq, %rank, %c0 : index
  scf.if %is_root {
    %size_i64 = arith.index_cast %size : index to i64
    vector.print str "size "
    vector.print %size_i64 : i64
    %sv = vector.transfer_read %sum[%c0], %rank_f32 : memref<5xf32>, vector<5xf32>
    vector.print str "sum "
    vector.print %sv : vector<5xf32>
    %zero64 = arith.constant 0.0 : f64
    %mv = vector.transfer_read %mean[%c0], %zero64 : memref<4xf64>, vector<4xf64>
    vector.print str "mean "
    vector.print %mv : vector<4xf64>
    %zero16 = arith.constant 0.0 : bf16
    %xv = vector.transfer_read %max[%c0], %zero16 : memref<2xbf16>, vector<2xbf16>
    %xv32 = arith.extf %xv : vector<2xbf16> to vector<2xf32>
    vector.print str "max "
    vector.print %xv32 : vector<2xf32>
  }
  memref.dealloc %sum : memref<5xf32>
  memref.dealloc %mean : memref<4xf64>
  memref.dealloc %max : memref<2xbf16>
  %ok = arith.constant 0 : i32
  return %ok : i32
}
