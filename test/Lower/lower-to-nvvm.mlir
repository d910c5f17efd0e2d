// REQUIRES: cuda
// RUN: dtrain-opt %s --dtrain-lower-to-nvvm --mlir-print-ir-after=gpu-kernel-outlining -o /dev/null 2>&1 | FileCheck %s --check-prefix=OUTLINED
// RUN: dtrain-opt %s --dtrain-lower-to-nvvm --mlir-print-ir-after=convert-gpu-to-nvvm -o /dev/null 2>&1 | FileCheck %s --check-prefix=NVVM
// RUN: dtrain-opt %s --dtrain-lower-to-nvvm | FileCheck %s
// RUN: dtrain-opt %s --dtrain-lower-to-nvvm="chip=sm_80 features=+ptx70" | FileCheck %s --check-prefix=SM80
// Past sm_90a, the PTX version defaults to the least the chip needs (8.6
// for sm_100), where +ptx81 would stop LLVM's NVPTX target.
// RUN: dtrain-opt %s --dtrain-lower-to-nvvm="chip=sm_100" | FileCheck %s --check-prefix=SM100
// RUN: not dtrain-opt %s --dtrain-lower-to-nvvm="chip=sm_xx" 2>&1 | FileCheck %s --check-prefix=BAD-CHIP
// RUN: not dtrain-opt %s --dtrain-lower-to-nvvm="features=+ptx80,+fast" 2>&1 | FileCheck %s --check-prefix=BAD-FEATURE
// RUN: not dtrain-opt %s --dtrain-lower-to-nvvm="toolkit=%t/no-toolkit" 2>&1 | FileCheck %s --check-prefix=BAD-TOOLKIT
// A merged loop's kernel may take 256 bytes less than ptxas allows its
// parameters: 32764 bytes from PTX 8.1 (the default up to sm_90a, and
// every newer chip's least version), 4352 before.
// RUN: dtrain-opt %s --dtrain-lower-to-nvvm --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: dtrain-opt %s --dtrain-lower-to-nvvm="chip=sm_100" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: dtrain-opt %s --dtrain-lower-to-nvvm="features=+ptx80" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=BUDGET80
// BUDGET: dtrain-fuse-sibling-parallel-loops{align=256 max-parameter-bytes=32508}
// BUDGET80: dtrain-fuse-sibling-parallel-loops{align=256 max-parameter-bytes=4096}

// The model of lower-to-llvm.mlir with a sigmoid: the matmul is a call of
// the CUDA runtime's cuBLAS kernel (same arguments as the CPU's), and the
// fused bias-add,
// relu and sigmoid (2 x 3, the bias broadcast) become one kernel launched
// from the host: the innermost dimension in tiles of 256 threads
// (--dtrain-tile-parallel-loops-for-gpu), the other across blocks, each
// thread one element (guarded by the bounds). The launch's sizes are
// constants, and so is every index the kernel computes from: they are
// sunk into it (gpu-launch-sink-index-computations), so that the kernel
// takes its buffers alone as parameters, and its sizes are known to it.
// OUTLINED-LABEL: IR Dump After GpuKernelOutliningPass
// OUTLINED:     func.func @dtrain_model_run(
// OUTLINED:       %[[BUF:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x3xf32>
// OUTLINED:       call @dtrain_rt_cuda_matmul_f32(
// OUTLINED:       gpu.launch_func @dtrain_model_run_kernel::@dtrain_model_run_kernel blocks in (%c1{{.*}}, %c1{{.*}}, %c1{{.*}}) threads in (%c256{{.*}}, %c1{{.*}}, %c1{{.*}}) args(%[[BUF]] : memref<2x3xf32>, %{{.*}} : memref<3xf32>, %{{.*}} : memref<2x3xf32>)
// OUTLINED:       memref.dealloc %[[BUF]]
// OUTLINED:     gpu.module @dtrain_model_run_kernel
// OUTLINED:       gpu.func @dtrain_model_run_kernel(%{{.*}}: memref<2x3xf32>, %{{.*}}: memref<3xf32>, %{{.*}}: memref<2x3xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 1, 1, 1>}
// OUTLINED:         gpu.block_id x
// OUTLINED:         gpu.thread_id x
// OUTLINED:         arith.cmpi ult
// OUTLINED:         scf.if
// OUTLINED:           memref.load
// OUTLINED:           arith.maximumf
// OUTLINED:           math.exp
// OUTLINED:           memref.store
// OUTLINED:         gpu.return

// The kernel in the NVVM dialect takes its thread's index from the PTX
// special registers, known to lie in [0, 256) (its block size, which
// nvvm.maxntid tells ptxas; a grid of one block needs no block index), and
// exp from libdevice.
// NVVM-LABEL: IR Dump After ConvertGpuOpsToNVVMOps
// NVVM:       gpu.module @dtrain_model_run_kernel [#nvvm.target<chip = "sm_90", features = "+ptx81">]
// NVVM:         llvm.func @dtrain_model_run_kernel({{.*}}) attributes {gpu.kernel, {{.*}}nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>}
// NVVM:           nvvm.read.ptx.sreg.tid.x range <i32, 0, 256>
// NVVM:           llvm.call @__nv_expf

// The whole pipeline: the kernel compiled into a fatbin for sm_90 (the
// default), launched by the host; every host buffer comes from MLIR's
// generic allocation functions (libdtrain_runtime_cuda: managed memory),
// with no static arena; main first attaches the rank's GPU. The matmul and
// the kernel are queued on one stream (the runtime's step stream), which
// the host waits for once, before it returns
// (--dtrain-chain-gpu-launches); the buffer is freed before that wait (the
// pool reuses it once the stream is done).
// CHECK-DAG:  llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
// CHECK-DAG:  llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr)
// CHECK-DAG:  llvm.func @dtrain_rt_cuda_init_trainer()
// CHECK-NOT:  __dtrain_arena
// CHECK-LABEL: llvm.func @dtrain_model_run(
// CHECK:        %[[BUF:.*]] = llvm.call @_mlir_memref_to_llvm_alloc
// CHECK:        %[[STREAM:.*]] = llvm.call @mgpuStreamCreate()
// CHECK-NEXT:   llvm.call @dtrain_rt_cuda_matmul_f32(
// CHECK-NEXT:   gpu.launch_func <%[[STREAM]] : !llvm.ptr> @dtrain_model_run_kernel::@dtrain_model_run_kernel
// CHECK-NEXT:   llvm.call @_mlir_memref_to_llvm_free(%[[BUF]])
// CHECK-NEXT:   llvm.call @mgpuStreamSynchronize(%[[STREAM]])
// CHECK-NEXT:   llvm.call @mgpuStreamDestroy(%[[STREAM]])
// CHECK-NEXT:   llvm.return
// CHECK:      gpu.binary @dtrain_model_run_kernel [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx81">, properties = {{.*}}, "
// CHECK-LABEL: llvm.func @main(
// CHECK:        llvm.call @dtrain_rt_cuda_init_trainer()
// CHECK-NEXT:   llvm.call @dtrain_rt_model_main(
// CHECK-NOT:  gpu.module

// SM80: gpu.binary @dtrain_model_run_kernel [#gpu.object<#nvvm.target<chip = "sm_80", features = "+ptx70">
// SM100: gpu.binary @dtrain_model_run_kernel [#gpu.object<#nvvm.target<chip = "sm_100">
// A toolkit that is not there: one error before anything compiles, not
// one for each kernel when ptxas would run.
// BAD-TOOLKIT: error: --dtrain-lower-to-nvvm: the CUDA toolkit '{{.*}}no-toolkit' (toolkit=) is not a directory; give a CUDA toolkit's directory (such as /usr/local/cuda) in toolkit=
// BAD-TOOLKIT-NOT: error
// BAD-CHIP: error: --dtrain-lower-to-nvvm: chip 'sm_xx' is not a GPU architecture LLVM's NVPTX target knows (e.g. sm_80, sm_90, sm_100)
// BAD-FEATURE: error: --dtrain-lower-to-nvvm: feature '+fast' is not one LLVM's NVPTX target knows (e.g. +ptx80)
func.func @forward(%w: tensor<4x3xf32> {train.param = "w"}, %b: tensor<3xf32> {train.param = "b"}, %x: tensor<2x4xf32> {train.input = "x"}) -> (tensor<2x3xf32> {train.output = "y"}) {
  %0 = nn.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
  %1 = nn.add %0, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %2 = nn.relu %1 : tensor<2x3xf32>
  %3 = nn.sigmoid %2 : tensor<2x3xf32>
  return %3 : tensor<2x3xf32>
}
