// REQUIRES: cuda
// RUN: dtrain-opt %s --dtrain-lower-to-nvvm --mlir-print-ir-after=convert-gpu-to-nvvm -o /dev/null 2>&1 | FileCheck %s

// A bf16 model, ReLU of a sum of 32 x 64: the CUDA pipeline's
// --dtrain-vectorize-parallel-loops has each thread of the fused kernel
// take 8 elements, which reach the NVVM dialect as 16-byte vector loads
// and stores (PTX's ld.global.v4 / st.global.v4) behind the alignment
// check, and the elements one by one otherwise.
// CHECK-LABEL: IR Dump After ConvertGpuOpsToNVVMOps
// CHECK:       llvm.func @dtrain_model_run_kernel(
// CHECK-COUNT-2: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<8xbf16>
// CHECK:         llvm.intr.maximum(%{{.*}}, %{{.*}}) : (vector<8xbf16>, vector<8xbf16>) -> vector<8xbf16>
// CHECK:         llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr
// CHECK:         llvm.load %{{.*}} : !llvm.ptr -> bf16
func.func @forward(%a: tensor<32x64xbf16> {train.input = "a"}, %b: tensor<32x64xbf16> {train.input = "b"}) -> (tensor<32x64xbf16> {train.output = "y"}) {
  %0 = nn.add %a, %b : tensor<32x64xbf16>, tensor<32x64xbf16> -> tensor<32x64xbf16>
  %1 = nn.relu %0 : tensor<32x64xbf16>
  return %1 : tensor<32x64xbf16>
}
