// RUN: dtrain-opt %s --canonicalize --cse | FileCheck %s

// Collectives have effects on the network: canonicalization and CSE neither
// drop an unused one nor merge two identical ones. comm.world is pure.
// CHECK-LABEL: func.func @kept
// CHECK: comm.world
// CHECK-NOT: comm.world
// CHECK-COUNT-2: comm.all_reduce <sum>
func.func @kept(%g: tensor<16xf32>) {
  %w0 = comm.world : !comm.communicator
  %w1 = comm.world : !comm.communicator
  %a = comm.all_reduce <sum> %g on %w0 : tensor<16xf32>
  %b = comm.all_reduce <sum> %g on %w1 : tensor<16xf32>
  return
}
