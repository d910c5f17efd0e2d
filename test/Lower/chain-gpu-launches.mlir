// RUN: dtrain-opt %s --split-input-file --dtrain-chain-gpu-launches | FileCheck %s

// Launches are chained on tokens; a call of a step-stream function (a CUDA
// heavy op) joins the chain, and allocation, deallocation and a
// stream-independent call (a collective's wait) leave it open. The host's
// load ends it, and a step-stream call with no chain open starts one,
// which the other call ends.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%buf: memref<16xf32>) kernel {
      gpu.return
    }
  }
  func.func private @heavy(memref<16xf32>) attributes {dtrain.step_stream}
  func.func private @host(memref<16xf32>)
  func.func private @wait(!llvm.ptr) attributes {dtrain.stream_independent}

  // CHECK-LABEL: func.func @chain(
  // CHECK-SAME:    %[[A:.*]]: memref<16xf32>, %[[B:.*]]: memref<16xf32>, %[[H:.*]]: !llvm.ptr)
  // CHECK:         %[[T0:.*]] = gpu.wait async
  // CHECK-NEXT:    %[[T1:.*]] = gpu.launch_func async [%[[T0]]] @kernels::@scale {{.*}} args(%[[A]] : memref<16xf32>)
  // CHECK-NEXT:    call @wait(%[[H]])
  // CHECK-NEXT:    %[[TMP:.*]] = memref.alloc()
  // CHECK-NEXT:    call @heavy(%[[TMP]])
  // CHECK-NEXT:    %[[T2:.*]] = gpu.launch_func async [%[[T1]]] @kernels::@scale {{.*}} args(%[[TMP]] : memref<16xf32>)
  // CHECK-NEXT:    memref.dealloc %[[TMP]]
  // CHECK-NEXT:    gpu.wait [%[[T2]]]
  // CHECK-NEXT:    %[[V:.*]] = memref.load %[[A]]
  // CHECK-NEXT:    %[[T3:.*]] = gpu.wait async
  // CHECK-NEXT:    call @heavy(%[[B]])
  // CHECK-NEXT:    gpu.wait [%[[T3]]]
  // CHECK-NEXT:    call @host(%[[B]])
  // CHECK-NEXT:    return %[[V]]
  func.func @chain(%a: memref<16xf32>, %b: memref<16xf32>, %handle: !llvm.ptr) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<16xf32>)
    call @wait(%handle) : (!llvm.ptr) -> ()
    %tmp = memref.alloc() : memref<16xf32>
    call @heavy(%tmp) : (memref<16xf32>) -> ()
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%tmp : memref<16xf32>)
    memref.dealloc %tmp : memref<16xf32>
    %v = memref.load %a[%c0] : memref<16xf32>
    call @heavy(%b) : (memref<16xf32>) -> ()
    call @host(%b) : (memref<16xf32>) -> ()
    return %v : f32
  }
}

// -----

// A chain ends before every terminator (return, branch) and before an op
// with regions, whose blocks chain their own launches. A host copy ends
// it too.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%buf: memref<16xf32>) kernel {
      gpu.return
    }
  }

  // CHECK-LABEL: func.func @blocks(
  // CHECK:         %[[T0:.*]] = gpu.wait async
  // CHECK-NEXT:    %[[T1:.*]] = gpu.launch_func async [%[[T0]]]
  // CHECK-NEXT:    gpu.wait [%[[T1]]]
  // CHECK-NEXT:    scf.for
  // CHECK-NEXT:      %[[L0:.*]] = gpu.wait async
  // CHECK-NEXT:      %[[L1:.*]] = gpu.launch_func async [%[[L0]]]
  // CHECK-NEXT:      %[[L2:.*]] = gpu.launch_func async [%[[L1]]]
  // CHECK-NEXT:      gpu.wait [%[[L2]]]
  // CHECK-NEXT:    }
  // CHECK-NEXT:    %[[T2:.*]] = gpu.wait async
  // CHECK-NEXT:    %[[T3:.*]] = gpu.launch_func async [%[[T2]]]
  // CHECK-NEXT:    gpu.wait [%[[T3]]]
  // CHECK-NEXT:    memref.copy
  // CHECK-NEXT:    %[[T4:.*]] = gpu.wait async
  // CHECK-NEXT:    %[[T5:.*]] = gpu.launch_func async [%[[T4]]]
  // CHECK-NEXT:    gpu.wait [%[[T5]]]
  // CHECK-NEXT:    cf.br ^bb1
  // CHECK-NEXT:  ^bb1:
  // CHECK-NEXT:    %[[T6:.*]] = gpu.wait async
  // CHECK-NEXT:    %[[T7:.*]] = gpu.launch_func async [%[[T6]]]
  // CHECK-NEXT:    gpu.wait [%[[T7]]]
  // CHECK-NEXT:    return
  func.func @blocks(%a: memref<16xf32>, %b: memref<16xf32>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<16xf32>)
    scf.for %i = %c0 to %n step %c1 {
      gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<16xf32>)
      gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<16xf32>)
    }
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<16xf32>)
    memref.copy %a, %b : memref<16xf32> to memref<16xf32>
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%b : memref<16xf32>)
    cf.br ^bb1
  ^bb1:
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%b : memref<16xf32>)
    return
  }
}

// -----

// A launch that is asynchronous already is left as it is, after the open
// chain ends.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%buf: memref<16xf32>) kernel {
      gpu.return
    }
  }

  // CHECK-LABEL: func.func @async(
  // CHECK:         %[[T0:.*]] = gpu.wait async
  // CHECK-NEXT:    %[[T1:.*]] = gpu.launch_func async [%[[T0]]]
  // CHECK-NEXT:    gpu.wait [%[[T1]]]
  // CHECK-NEXT:    %[[MINE:.*]] = gpu.launch_func async [%[[DEP:.*]]]
  // CHECK-NEXT:    gpu.wait [%[[MINE]]]
  // CHECK-NEXT:    return
  func.func @async(%a: memref<16xf32>, %dep: !gpu.async.token) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<16xf32>)
    %t = gpu.launch_func async [%dep] @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<16xf32>)
    gpu.wait [%t]
    return
  }
}
