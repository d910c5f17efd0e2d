// The GPU operations whose lowering calls the host functions of
// libdtrain_runtime_cuda (lib/cuda/GpuHostFunctions.h): a kernel launched
// plainly and in clusters, device memory, copies and fills of 32 and 16
// bits, host registration, a device choice, and async tokens joined and
// waited on. check_mgpu_symbols.sh lowers it with LLVM's
//   mlir-opt --gpu-async-region --gpu-lower-to-nvvm-pipeline=...
//   mlir-translate --mlir-to-llvmir
// once with PTX (cubin-format=isa: mgpuModuleLoadJIT) and once with a
// fatbin (mgpuModuleLoad), and compares the mgpu* functions that the LLVM
// IR declares with lib/cuda/mgpu-functions.txt.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @add_one(%buf: memref<?xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %buf[%i] : memref<?xf32>
      %one = arith.constant 1.0 : f32
      %w = arith.addf %v, %one : f32
      memref.store %w, %buf[%i] : memref<?xf32>
      gpu.return
    }
  }

  // Synchronous operations, made async on one stream by --gpu-async-region.
  func.func @sync(%host: memref<?xf32>, %n: index, %device: i32) {
    %c1 = arith.constant 1 : index
    gpu.set_default_device %device
    %d = gpu.alloc (%n) : memref<?xf32>
    gpu.memcpy %d, %host : memref<?xf32>, memref<?xf32>
    %zero = arith.constant 0.0 : f32
    gpu.memset %d, %zero : memref<?xf32>, f32
    gpu.launch_func @kernels::@add_one blocks in (%c1, %c1, %c1)
        threads in (%n, %c1, %c1) args(%d : memref<?xf32>)
    gpu.launch_func @kernels::@add_one clusters in (%c1, %c1, %c1)
        blocks in (%c1, %c1, %c1) threads in (%n, %c1, %c1)
        args(%d : memref<?xf32>)
    gpu.memcpy %host, %d : memref<?xf32>, memref<?xf32>
    gpu.dealloc %d : memref<?xf32>
    %unranked = memref.cast %host : memref<?xf32> to memref<*xf32>
    gpu.host_register %unranked : memref<*xf32>
    gpu.host_unregister %unranked : memref<*xf32>
    return
  }

  // Two streams joined by a wait (events), and a token returned.
  func.func @async(%n: index) -> !gpu.async.token {
    %t0 = gpu.wait async
    %d, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf16>
    %zero = arith.constant 0.0 : f16
    %t2 = gpu.memset async [%t1] %d, %zero : memref<?xf16>, f16
    %t3 = gpu.dealloc async [%t2] %d : memref<?xf16>
    %other = gpu.wait async
    %joined = gpu.wait async [%t3, %other]
    return %joined : !gpu.async.token
  }

  // A token that is not a stream of this function: waited on as an event.
  func.func @wait_token(%token: !gpu.async.token) {
    gpu.wait [%token]
    return
  }
}
