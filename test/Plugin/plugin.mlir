// Debian's stock mlir-opt loads dtrain as a plugin, parses dtrain IR and runs
// dtrain passes through --pass-pipeline.
// RUN: %mlir_opt %s --load-dialect-plugin=%dtrain_libs/DTrainPlugin%shlibext \
// RUN:   --load-pass-plugin=%dtrain_libs/DTrainPlugin%shlibext \
// RUN:   --pass-pipeline="builtin.module(func.func(dtrain-async-collectives),one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},dtrain-lower-comm-to-runtime{algorithm=ring},canonicalize)" \
// RUN:   | FileCheck %s
// Without the dialect plugin the stock tool does not know the dialects.
// RUN: not %mlir_opt %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN
// NOPLUGIN: error: Dialect `comm' not found for custom op 'comm.world'

// CHECK-LABEL: func.func @average
// CHECK-SAME: (%[[G:.*]]: memref<64xf32>) -> memref<64xf32>
// CHECK:      %[[W:.*]] = call @dtrain_rt_comm_world()
// CHECK:      %[[REQ:.*]] = call @dtrain_rt_all_reduce_start_with(%[[W]], %{{.*}}, %c64_i64, %c0_i32, %c1_i32, %c2_i32)
// CHECK:      call @dtrain_rt_wait(%[[REQ]])
// CHECK:      return %[[G]]
func.func @average(%g: tensor<64xf32>) -> tensor<64xf32> {
  %world = comm.world : !comm.communicator
  %avg = comm.all_reduce <mean> %g on %world : tensor<64xf32>
  return %avg : tensor<64xf32>
}
