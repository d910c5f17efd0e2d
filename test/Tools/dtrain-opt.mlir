// The command line of dtrain-opt: help, bad files, bad IR, bad options.
// RUN: split-file %s %t

// --help lists dtrain's passes with their options.
// RUN: dtrain-opt --help | FileCheck %s --check-prefix=HELP
// HELP: --dtrain-async-collectives {{.*}}Split blocking collectives into start/wait pairs
// HELP: --dtrain-lower-comm-to-runtime {{.*}}Lower comm ops on memrefs to calls of the dtrain runtime
// HELP-NEXT: --algorithm=<value> {{.*}}Algorithm of all-reduces
// HELP-NEXT: =default {{.*}}chosen at run time by DTRAIN_ALLREDUCE
// HELP-NEXT: =mpi {{.*}}MPI_Allreduce
// HELP-NEXT: =ring {{.*}}ring all-reduce

// RUN: not dtrain-opt %t/does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: cannot open input file '{{.*}}does-not-exist.mlir': No such file or directory

// RUN: not dtrain-opt %t/malformed.mlir 2>&1 | FileCheck %s --check-prefix=MALFORMED
// MALFORMED: malformed.mlir:2:18: error: expected ':'

// RUN: not dtrain-opt %t/valid.mlir --dtrain-async-collectives=bogus=1 2>&1 | FileCheck %s --check-prefix=OPTION
// OPTION: no such option bogus

// RUN: not dtrain-opt %t/valid.mlir --dtrain-no-such-pass 2>&1 | FileCheck %s --check-prefix=PASS
// PASS: Unknown command line argument '--dtrain-no-such-pass'

//--- malformed.mlir
func.func @f(%g: tensor<8xf32>) -> tensor<8xf32> {
  %0 = nn.relu %g tensor<8xf32> tensor<8xf32>
  return %0 : tensor<8xf32>
}
//--- valid.mlir
func.func @f(%g: tensor<8xf32>) -> tensor<8xf32> {
  %0 = nn.relu %g : tensor<8xf32>
  return %0 : tensor<8xf32>
}
