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

// -----

func.func @sparse_f16(%w: !comm.communicator, %g: tensor<4xf16>, %k: index) {
  // expected-error @+1 {{'comm.sparse_all_reduce_start' op sparsifies f32 buffers only, got 'tensor<4xf16>' and 'tensor<4xf16>'}}
  %req, %a, %b = comm.sparse_all_reduce_start <mean> %g, %g k %k on %w select <exact> aggregate <allgather> : tensor<4xf16>
  return
}

// -----

func.func @sparse_residual_shape(%w: !comm.communicator, %g: tensor<4xf32>, %r: tensor<5xf32>, %k: index) {
  // expected-error @+1 {{'comm.sparse_all_reduce_start' op needs a residual of the buffer's shape and kind, got 'tensor<4xf32>' and 'tensor<5xf32>'}}
  %req, %a, %b = comm.sparse_all_reduce_start <mean> %g, %r k %k on %w select <exact> aggregate <allgather> : tensor<4xf32>, tensor<5xf32>
  return
}

// -----

func.func @sparse_max(%w: !comm.communicator, %g: tensor<4xf32>, %k: index) {
  // expected-error @+1 {{'comm.sparse_all_reduce_start' op reduces with sum or mean, not max}}
  %req, %a, %b = comm.sparse_all_reduce_start <max> %g, %g k %k on %w select <exact> aggregate <gtopk> : tensor<4xf32>
  return
}

// -----

func.func @sparse_auto_without_choice(%w: !comm.communicator, %g: tensor<4xf32>, %k: index) {
  // expected-error @+1 {{'comm.sparse_all_reduce_start' op takes a chosen aggregate operand with aggregate <auto>, and only then}}
  %req, %a, %b = comm.sparse_all_reduce_start <mean> %g, %g k %k on %w select <exact> aggregate <auto> : tensor<4xf32>
  return
}

// -----

func.func @sparse_choice_without_auto(%w: !comm.communicator, %g: tensor<4xf32>, %k: index) {
  // expected-error @+1 {{'comm.sparse_all_reduce_start' op takes a chosen aggregate operand with aggregate <auto>, and only then}}
  %req, %a, %b = comm.sparse_all_reduce_start <mean> %g, %g k %k on %w select <exact> aggregate <gtopk> %k : tensor<4xf32>
  return
}

// -----

func.func @sparse_segments_sum(%w: !comm.communicator, %g: tensor<2x4xf32>, %k: index) {
  // expected-error @+1 {{'comm.sparse_all_reduce_start' op segments add up to 7 elements, not the buffer's 8}}
  %req, %a, %b = comm.sparse_all_reduce_start <mean> %g, %g k %k on %w select <exact> aggregate <gtopk> segments [3, 4] : tensor<2x4xf32>
  return
}

// -----

func.func @sparse_segments_empty(%w: !comm.communicator, %g: tensor<4xf32>, %k: index) {
  // expected-error @+1 {{'comm.sparse_all_reduce_start' op segments must be positive element counts}}
  %req, %a, %b = comm.sparse_all_reduce_start <mean> %g, %g k %k on %w select <exact> aggregate <gtopk> segments [4, 0] : tensor<4xf32>
  return
}

// -----

func.func @sparse_segments_dynamic(%w: !comm.communicator, %g: memref<?xf32>, %k: index) {
  // expected-error @+1 {{'comm.sparse_all_reduce_start' op segments need a buffer of static shape}}
  %req = comm.sparse_all_reduce_start <mean> %g, %g k %k on %w select <exact> aggregate <gtopk> segments [4] : memref<?xf32>
  return
}

// -----

func.func @sparse_unknown_select(%w: !comm.communicator, %g: tensor<4xf32>, %k: index) {
  // expected-error @+2 {{expected ::mlir::dtrain::comm::SelectMethod to be one of: exact, gaussian, dgc, random}}
  // expected-error @+1 {{failed to parse Comm_SelectMethodAttr parameter}}
  %req, %a, %b = comm.sparse_all_reduce_start <mean> %g, %g k %k on %w select <sorted> aggregate <gtopk> : tensor<4xf32>
  return
}

// -----

func.func @sparse_wait_other_buffers(%w: !comm.communicator, %g: tensor<4xf32>, %r: tensor<4xf32>, %k: index) {
  %req, %a, %b = comm.sparse_all_reduce_start <mean> %g, %r k %k on %w select <exact> aggregate <gtopk> : tensor<4xf32>
  // expected-error @+1 {{'comm.sparse_wait' op buffers are not the in-flight tensors of the request's start op}}
  %x, %y = comm.sparse_wait %req, %a, %r : tensor<4xf32>
  return
}
