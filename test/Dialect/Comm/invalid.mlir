// RUN: dtrain-opt %s -split-input-file -verify-diagnostics

func.func @integer_buffer(%w: !comm.communicator, %g: tensor<4xi32>) {
  // expected-error @+1 {{'comm.all_reduce' op operand #0 must be ranked tensor or memref of f16, bf16, f32 or f64}}
  %0 = comm.all_reduce <sum> %g on %w : tensor<4xi32>
  return
}

// -----

func.func @unknown_reduction(%w: !comm.communicator, %g: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::dtrain::comm::ReductionKind to be one of: sum, mean, max}}
  // expected-error @+1 {{failed to parse Comm_ReductionKindAttr parameter}}
  %0 = comm.all_reduce <prod> %g on %w : tensor<4xf32>
  return
}

// -----

func.func @tensor_without_result(%w: !comm.communicator, %g: tensor<4xf32>) {
  // expected-error @+1 {{'comm.all_reduce' op on a tensor must return a tensor of type 'tensor<4xf32>'}}
  "comm.all_reduce"(%g, %w) {reduction = #comm.reduction<sum>} : (tensor<4xf32>, !comm.communicator) -> ()
  return
}

// -----

func.func @memref_with_result(%w: !comm.communicator, %g: memref<4xf32>) {
  // expected-error @+1 {{'comm.all_reduce' op on a memref works in place and has no result}}
  %0 = "comm.all_reduce"(%g, %w) {reduction = #comm.reduction<sum>} : (memref<4xf32>, !comm.communicator) -> tensor<4xf32>
  return
}

// -----

func.func @wait_wrong_tensor(%w: !comm.communicator, %g: tensor<4xf32>) -> tensor<4xf32> {
  %req, %inflight = comm.all_reduce_start <sum> %g on %w : tensor<4xf32>
  // expected-error @+1 {{'comm.wait' op buffer is not the in-flight tensor of the request's start op}}
  %0 = comm.wait %req, %g : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-note @+1 {{prior use here}}
func.func @not_a_communicator(%g: tensor<4xf32>, %x: index) {
  // expected-error @+1 {{use of value '%x' expects different type than prior uses: '!comm.communicator' vs 'index'}}
  %0 = comm.all_reduce <sum> %g on %x : tensor<4xf32>
  return
}
