// RUN: dtrain-opt %s -split-input-file -verify-diagnostics

func.func @matmul_contraction(%a: tensor<4x8xf32>, %b: tensor<9x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'nn.matmul' op contraction sizes differ: 8 (lhs) vs 9 (rhs)}}
  %0 = nn.matmul %a, %b : tensor<4x8xf32>, tensor<9x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @matmul_transposed_contraction(%a: tensor<4x8xf32>, %b: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // With transpose_lhs the contraction runs over the 4 rows of %a.
  // expected-error @+1 {{'nn.matmul' op expected result of type 'tensor<8x3xf32>' but got 'tensor<4x3xf32>'}}
  %0 = nn.matmul %a, %b {transpose_lhs} : tensor<4x8xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @matmul_rank(%a: tensor<2x4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'nn.matmul' op expects rank-2 operands}}
  %0 = nn.matmul %a, %b : tensor<2x4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @matmul_element_types(%a: tensor<4x8xf32>, %b: tensor<8x3xf16>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'nn.matmul' op requires the same element type for all operands and results}}
  %0 = nn.matmul %a, %b : tensor<4x8xf32>, tensor<8x3xf16> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @matmul_integer(%a: tensor<4x8xi32>, %b: tensor<8x3xi32>) -> tensor<4x3xi32> {
  // expected-error @+1 {{'nn.matmul' op operand #0 must be ranked tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = nn.matmul %a, %b : tensor<4x8xi32>, tensor<8x3xi32> -> tensor<4x3xi32>
  return %0 : tensor<4x3xi32>
}

// -----

func.func @add_not_broadcastable(%a: tensor<4x8xf32>, %b: tensor<3xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.add' op operands don't have broadcast-compatible shapes}}
  %0 = nn.add %a, %b : tensor<4x8xf32>, tensor<3xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @add_wrong_result(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'nn.add' op result type '8' not broadcast compatible with broadcasted operands's shapes '4x8'}}
  %0 = nn.add %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @relu_grad_types(%dy: tensor<4x8xf32>, %x: tensor<4x9xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.relu_grad' op requires the same type for all operands and results}}
  %0 = "nn.relu_grad"(%dy, %x) : (tensor<4x8xf32>, tensor<4x9xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @reduce_sum_out_of_range(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.reduce_sum' op dimension 2 is out of range for a rank-2 input}}
  %0 = nn.reduce_sum %x dims = [2] : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reduce_sum_unsorted(%x: tensor<4x8x2xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'nn.reduce_sum' op dims must be strictly increasing}}
  %0 = nn.reduce_sum %x dims = [2, 0] : tensor<4x8x2xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @reduce_sum_result(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.reduce_sum' op expected result of type 'tensor<8xf32>' but got 'tensor<4xf32>'}}
  %0 = nn.reduce_sum %x dims = [0] : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @cross_entropy_batch(%logits: tensor<32x10xf32>, %labels: tensor<16xi64>) -> tensor<f32> {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op expected labels of type 'tensor<32xi64>' but got 'tensor<16xi64>'}}
  %0 = nn.softmax_cross_entropy %logits, %labels : tensor<32x10xf32>, tensor<16xi64> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_logits_rank(%logits: tensor<10xf32>, %labels: tensor<1xi64>) -> tensor<f32> {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op expects logits of shape N x C}}
  %0 = nn.softmax_cross_entropy %logits, %labels : tensor<10xf32>, tensor<1xi64> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_float_labels(%logits: tensor<32x10xf32>, %labels: tensor<32xf32>) -> tensor<f32> {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = nn.softmax_cross_entropy %logits, %labels : tensor<32x10xf32>, tensor<32xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_grad_result(%g: tensor<f32>, %logits: tensor<32x10xf32>, %labels: tensor<32xi64>) -> tensor<32x10xf16> {
  // expected-error @+1 {{'nn.softmax_cross_entropy_grad' op result type 'tensor<32x10xf16>' differs from the logits type 'tensor<32x10xf32>'}}
  %0 = nn.softmax_cross_entropy_grad %g, %logits, %labels : tensor<f32>, tensor<32x10xf32>, tensor<32xi64> -> tensor<32x10xf16>
  return %0 : tensor<32x10xf16>
}

// -----

func.func @unknown_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{custom op 'nn.gelu' is unknown}}
  %0 = nn.gelu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
