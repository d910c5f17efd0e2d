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
  // expected-error @+1 {{'nn.matmul' op expects rank-2 or rank-3 operands of one rank}}
  %0 = nn.matmul %a, %b : tensor<2x4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x5xf32>) -> tensor<2x4x5xf32> {
  // expected-error @+1 {{'nn.matmul' op batch sizes differ: 2 (lhs) vs 3 (rhs)}}
  %0 = nn.matmul %a, %b : tensor<2x4x8xf32>, tensor<3x8x5xf32> -> tensor<2x4x5xf32>
  return %0 : tensor<2x4x5xf32>
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
  // expected-error @+1 {{'nn.add' op expected result of type 'tensor<4x8xf32>' but got 'tensor<8xf32>'}}
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
  // expected-error @+1 {{'nn.softmax_cross_entropy' op expects logits of shape N... x C}}
  %0 = nn.softmax_cross_entropy %logits, %labels : tensor<10xf32>, tensor<1xi64> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_positions(%logits: tensor<4x8x10xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op expected labels of type 'tensor<4x8xi64>' but got 'tensor<4xi64>'}}
  %0 = nn.softmax_cross_entropy %logits, %labels : tensor<4x8x10xf32>, tensor<4xi64> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @embedding_table_rank(%table: tensor<f32>, %ids: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.embedding' op expects a table of rank 1 or more}}
  %0 = nn.embedding %table, %ids : tensor<f32>, tensor<4xi64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @embedding_result(%table: tensor<10x3xf32>, %ids: tensor<4xi64>) -> tensor<4x10xf32> {
  // expected-error @+1 {{'nn.embedding' op expected result of type 'tensor<4x3xf32>' but got 'tensor<4x10xf32>'}}
  %0 = nn.embedding %table, %ids : tensor<10x3xf32>, tensor<4xi64> -> tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

func.func @embedding_grad_rows(%grad: tensor<4x3xf32>, %ids: tensor<4xi64>) -> tensor<0x3xf32> {
  // expected-error @+1 {{'nn.embedding_grad' op expects at least one row, got rows = 0}}
  %0 = nn.embedding_grad %grad, %ids {rows = 0 : i64} : tensor<4x3xf32>, tensor<4xi64> -> tensor<0x3xf32>
  return %0 : tensor<0x3xf32>
}

// -----

func.func @embedding_grad_shape(%grad: tensor<4x3xf32>, %ids: tensor<2x2xi64>) -> tensor<10x3xf32> {
  // expected-error @+1 {{'nn.embedding_grad' op grad 'tensor<4x3xf32>' does not begin with the shape of the indices 'tensor<2x2xi64>'}}
  %0 = nn.embedding_grad %grad, %ids {rows = 10 : i64} : tensor<4x3xf32>, tensor<2x2xi64> -> tensor<10x3xf32>
  return %0 : tensor<10x3xf32>
}

// -----

func.func @cross_entropy_float_labels(%logits: tensor<32x10xf32>, %labels: tensor<32xf32>) -> tensor<f32> {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = nn.softmax_cross_entropy %logits, %labels : tensor<32x10xf32>, tensor<32xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_grad_result(%g: tensor<f32>, %logits: tensor<32x10xf32>, %labels: tensor<32xi64>) -> tensor<32x10xf16> {
  // expected-error @+1 {{'nn.softmax_cross_entropy_grad' op expected result of type 'tensor<32x10xf32>' but got 'tensor<32x10xf16>'}}
  %0 = nn.softmax_cross_entropy_grad %g, %logits, %labels : tensor<f32>, tensor<32x10xf32>, tensor<32xi64> -> tensor<32x10xf16>
  return %0 : tensor<32x10xf16>
}

// -----

func.func @unknown_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{custom op 'nn.gelu' is unknown}}
  %0 = nn.gelu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @cross_entropy_loss_type(%logits: tensor<32x10xf32>, %labels: tensor<32xi64>) -> tensor<f16> {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op expected result of type 'tensor<f32>' but got 'tensor<f16>'}}
  %0 = nn.softmax_cross_entropy %logits, %labels : tensor<32x10xf32>, tensor<32xi64> -> tensor<f16>
  return %0 : tensor<f16>
}

// -----

func.func @cross_entropy_grad_type(%g: tensor<f16>, %logits: tensor<32x10xf32>, %labels: tensor<32xi64>) -> tensor<32x10xf32> {
  // expected-error @+1 {{'nn.softmax_cross_entropy_grad' op grad and logits element types differ}}
  %0 = nn.softmax_cross_entropy_grad %g, %logits, %labels : tensor<f16>, tensor<32x10xf32>, tensor<32xi64> -> tensor<32x10xf32>
  return %0 : tensor<32x10xf32>
}

// -----

func.func @sub_not_broadcastable(%a: tensor<4x8xf32>, %b: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.sub' op operands don't have broadcast-compatible shapes: 'tensor<4x8xf32>' and 'tensor<4xf32>'}}
  %0 = nn.sub %a, %b : tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @div_element_types(%a: tensor<4xf32>, %b: tensor<4xf64>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.div' op requires the same element type for all operands and results}}
  %0 = nn.div %a, %b : tensor<4xf32>, tensor<4xf64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @sigmoid_types(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'nn.sigmoid' op requires the same type for all operands and results}}
  %0 = "nn.sigmoid"(%x) : (tensor<4xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @clip_bounds(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.clip' op min 2.000000e+00 exceeds max 1.000000e+00}}
  %0 = nn.clip %x {min = 2.0 : f64, max = 1.0 : f64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @dropout_ratio(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.dropout' op ratio must be in [0, 1), got 1.000000e+00}}
  %0 = nn.dropout %x {ratio = 1.0 : f64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @dropout_mask_ratio(%seed: tensor<i64>, %step: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.dropout_mask' op ratio must be in [0, 1), got -1.000000e-01}}
  %0 = nn.dropout_mask %seed, %step {ratio = -0.1 : f64, stream = 0 : i64} : tensor<i64>, tensor<i64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @dropout_mask_stream(%seed: tensor<i64>, %step: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.dropout_mask' op stream must be non-negative, got -1}}
  %0 = nn.dropout_mask %seed, %step {ratio = 0.5 : f64, stream = -1 : i64} : tensor<i64>, tensor<i64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @dropout_mask_dynamic(%seed: tensor<i64>, %step: tensor<i64>) -> tensor<?xf32> {
  // expected-error @+1 {{'nn.dropout_mask' op needs a static result shape, got 'tensor<?xf32>'}}
  %0 = nn.dropout_mask %seed, %step {ratio = 0.5 : f64, stream = 0 : i64} : tensor<i64>, tensor<i64> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @softmax_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.log_softmax' op axis -1 is out of range for a rank-2 input}}
  %0 = nn.log_softmax %x {axis = -1 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @to_float_of_float(%x: tensor<2x3xf32>) -> tensor<2x3xf16> {
  // expected-error @+1 {{'nn.to_float' op operand #0 must be ranked tensor of 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values}}
  %0 = nn.to_float %x : tensor<2x3xf32> to tensor<2x3xf16>
  return %0 : tensor<2x3xf16>
}

// -----

func.func @to_float_shape(%x: tensor<2x3xi64>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'nn.to_float' op requires the same shape for all operands and results}}
  %0 = nn.to_float %x : tensor<2x3xi64> to tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @equal_types(%x: tensor<3xi64>, %y: tensor<3xi32>) -> tensor<3xi1> {
  // expected-error @+1 {{'nn.compare' op operand element types differ: 'tensor<3xi64>' and 'tensor<3xi32>'}}
  %0 = nn.compare eq %x, %y : tensor<3xi64>, tensor<3xi32> -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

func.func @equal_shapes(%x: tensor<3xi64>, %y: tensor<4xi64>) -> tensor<3xi1> {
  // expected-error @+1 {{'nn.compare' op operands don't have broadcast-compatible shapes: 'tensor<3xi64>' and 'tensor<4xi64>'}}
  %0 = nn.compare eq %x, %y : tensor<3xi64>, tensor<4xi64> -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{'nn.reshape' op input has 6 elements but the result type 'tensor<5xf32>' has 5}}
  %0 = nn.reshape %x : tensor<2x3xf32> -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @reshape_element_type(%x: tensor<2x3xf32>) -> tensor<6xf16> {
  // expected-error @+1 {{'nn.reshape' op requires the same element type for all operands and results}}
  %0 = nn.reshape %x : tensor<2x3xf32> -> tensor<6xf16>
  return %0 : tensor<6xf16>
}

// -----

func.func @transpose_permutation(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{'nn.transpose' op permutation [0, 1, 1] is not a permutation of [0, 3)}}
  %0 = nn.transpose %x {permutation = array<i64: 0, 1, 1>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

func.func @transpose_result(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{'nn.transpose' op expected result of type 'tensor<2x4x3xf32>' but got 'tensor<2x3x4xf32>'}}
  %0 = nn.transpose %x {permutation = array<i64: 0, 2, 1>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

func.func @concat_empty() -> tensor<4xf32> {
  // expected-error @+1 {{'nn.concat' op expected 1 or more operands, but found 0}}
  %0 = "nn.concat"() {axis = 0 : i64} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'nn.concat' op axis 2 is out of range for a rank-2 input}}
  %0 = nn.concat %a {axis = 2 : i64} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'nn.concat' op input #1 has rank 1, expected 2}}
  %0 = nn.concat %a, %b {axis = 1 : i64} : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @concat_sizes(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'nn.concat' op input #1 has size 4 in dimension 0, expected 2}}
  %0 = nn.concat %a, %b {axis = 1 : i64} : tensor<2x3xf32>, tensor<4x3xf32> -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @pad_count(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'nn.pad' op expects 4 values in 'pads', got 2}}
  %0 = nn.pad %x {pads = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @pad_negative(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'nn.pad' op expects 'pads' values >= 0}}
  %0 = nn.pad %x {pads = array<i64: 0, 0, 0, -1>} : tensor<2x3xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @conv_input_rank(%x: tensor<3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<4x7x7xf32> {
  // expected-error @+1 {{'nn.conv2d' op expects an N x C x H x W input, got 'tensor<3x9x9xf32>'}}
  %0 = nn.conv2d %x, %w : tensor<3x9x9xf32>, tensor<4x3x3x3xf32> -> tensor<4x7x7xf32>
  return %0 : tensor<4x7x7xf32>
}

// -----

func.func @conv_weight_rank(%x: tensor<1x3x9x9xf32>, %w: tensor<4x3x3xf32>) -> tensor<1x4x7x7xf32> {
  // expected-error @+1 {{'nn.conv2d' op expects an O x C/groups x Kh x Kw weight, got 'tensor<4x3x3xf32>'}}
  %0 = nn.conv2d %x, %w : tensor<1x3x9x9xf32>, tensor<4x3x3xf32> -> tensor<1x4x7x7xf32>
  return %0 : tensor<1x4x7x7xf32>
}

// -----

func.func @conv_groups(%x: tensor<1x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x7x7xf32> {
  // expected-error @+1 {{'nn.conv2d' op expects groups >= 1, got 0}}
  %0 = nn.conv2d %x, %w {groups = 0 : i64} : tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x7x7xf32>
  return %0 : tensor<1x4x7x7xf32>
}

// -----

func.func @conv_channels(%x: tensor<1x4x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x7x7xf32> {
  // expected-error @+1 {{'nn.conv2d' op input has 4 channels but the weight expects 3 x 1 (groups)}}
  %0 = nn.conv2d %x, %w : tensor<1x4x9x9xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x7x7xf32>
  return %0 : tensor<1x4x7x7xf32>
}

// -----

func.func @conv_filters(%x: tensor<1x4x9x9xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x7x7xf32> {
  // expected-error @+1 {{'nn.conv2d' op weight has 3 filters, not divisible by the 2 groups}}
  %0 = nn.conv2d %x, %w {groups = 2 : i64} : tensor<1x4x9x9xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x7x7xf32>
  return %0 : tensor<1x3x7x7xf32>
}

// -----

func.func @conv_channels_last_weight(%x: tensor<1x9x9x3xf32>, %w: tensor<4x3x3xf32>) -> tensor<1x7x7x4xf32> {
  // expected-error @+1 {{'nn.conv2d' op expects an O x Kh x Kw x C/groups weight, got 'tensor<4x3x3xf32>'}}
  %0 = nn.conv2d %x, %w {channels_last} : tensor<1x9x9x3xf32>, tensor<4x3x3xf32> -> tensor<1x7x7x4xf32>
  return %0 : tensor<1x7x7x4xf32>
}

// -----

// An NCHW weight (4 x 3 x 3 x 3) read as OHWI has 3 input channels per
// filter, not the input's 9.
func.func @conv_channels_last_channels(%x: tensor<1x9x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x7x7x4xf32> {
  // expected-error @+1 {{'nn.conv2d' op input has 9 channels but the weight expects 3 x 1 (groups)}}
  %0 = nn.conv2d %x, %w {channels_last} : tensor<1x9x9x9xf32>, tensor<4x3x3x3xf32> -> tensor<1x7x7x4xf32>
  return %0 : tensor<1x7x7x4xf32>
}

// -----

func.func @batch_norm_channels_last(%x: tensor<8x3x3x4xf32>, %s: tensor<3xf32>) -> tensor<8x3x3x4xf32> {
  // expected-error @+1 {{'nn.batch_norm_train' op expected scale of type 'tensor<4xf32>' but got 'tensor<3xf32>'}}
  %0:3 = nn.batch_norm_train %x, %s, %s {channels_last} : tensor<8x3x3x4xf32>, tensor<3xf32>, tensor<3xf32> -> (tensor<8x3x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return %0#0 : tensor<8x3x3x4xf32>
}

// -----

// An NCHW result where channels_last pools dimensions 1 and 2.
func.func @max_pool_channels_last_result(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{'nn.max_pool2d' op expected result of type 'tensor<1x1x4x8xf32>' but got 'tensor<1x3x4x4xf32>'}}
  %0 = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, channels_last} : tensor<1x3x8x8xf32> -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @avg_pool_grad_channels_last(%dy: tensor<1x4x4x3xf32>) -> tensor<1x3x8x8xf32> {
  // expected-error @+1 {{'nn.avg_pool2d_grad' op has a gradient of type 'tensor<1x4x4x3xf32>', but the forward op's result has type 'tensor<1x1x4x8xf32>'}}
  %0 = nn.avg_pool2d_grad %dy {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, channels_last} : tensor<1x4x4x3xf32> -> tensor<1x3x8x8xf32>
  return %0 : tensor<1x3x8x8xf32>
}

// -----

func.func @max_pool_channels_last_rank(%x: tensor<3x8x8xf32>) -> tensor<3x4x4xf32> {
  // expected-error @+1 {{'nn.max_pool2d' op expects an N x H x W x C input, got 'tensor<3x8x8xf32>'}}
  %0 = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, channels_last} : tensor<3x8x8xf32> -> tensor<3x4x4xf32>
  return %0 : tensor<3x4x4xf32>
}

// -----

func.func @conv_bias(%x: tensor<1x3x9x9xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x4x7x7xf32> {
  // expected-error @+1 {{'nn.conv2d' op expected bias of type 'tensor<4xf32>' but got 'tensor<3xf32>'}}
  %0 = nn.conv2d %x, %w, %b : tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32>, tensor<3xf32> -> tensor<1x4x7x7xf32>
  return %0 : tensor<1x4x7x7xf32>
}

// -----

func.func @conv_strides_count(%x: tensor<1x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x7x7xf32> {
  // expected-error @+1 {{'nn.conv2d' op expects 2 values in 'strides', got 1}}
  %0 = nn.conv2d %x, %w {strides = array<i64: 1>} : tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x7x7xf32>
  return %0 : tensor<1x4x7x7xf32>
}

// -----

func.func @conv_strides_positive(%x: tensor<1x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x7x7xf32> {
  // expected-error @+1 {{'nn.conv2d' op expects 'strides' values >= 1}}
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 0>} : tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x7x7xf32>
  return %0 : tensor<1x4x7x7xf32>
}

// -----

func.func @conv_dilations_positive(%x: tensor<1x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x7x7xf32> {
  // expected-error @+1 {{'nn.conv2d' op expects 'dilations' values >= 1}}
  %0 = nn.conv2d %x, %w {dilations = array<i64: 0, 1>} : tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x7x7xf32>
  return %0 : tensor<1x4x7x7xf32>
}

// -----

func.func @conv_padding_negative(%x: tensor<1x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x7x7xf32> {
  // expected-error @+1 {{'nn.conv2d' op expects 'padding' values >= 0}}
  %0 = nn.conv2d %x, %w {padding = array<i64: 0, 0, -1, 0>} : tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x7x7xf32>
  return %0 : tensor<1x4x7x7xf32>
}

// -----

func.func @conv_window(%x: tensor<1x3x4x4xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32> {
  // expected-error @+1 {{'nn.conv2d' op window height 5 (dilated kernel) exceeds the padded input height 4}}
  %0 = nn.conv2d %x, %w {dilations = array<i64: 2, 2>} : tensor<1x3x4x4xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x1x1xf32>
  return %0 : tensor<1x4x1x1xf32>
}

// -----

func.func @conv_result(%x: tensor<1x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x9x9xf32> {
  // expected-error @+1 {{'nn.conv2d' op expected result of type 'tensor<1x4x7x7xf32>' but got 'tensor<1x4x9x9xf32>'}}
  %0 = nn.conv2d %x, %w : tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x9x9xf32>
  return %0 : tensor<1x4x9x9xf32>
}

// -----

func.func @max_pool_kernel(%x: tensor<1x3x9x9xf32>) -> tensor<1x3x9x9xf32> {
  // expected-error @+1 {{'nn.max_pool2d' op expects 2 values in 'kernel', got 3}}
  %0 = nn.max_pool2d %x {kernel = array<i64: 1, 1, 1>} : tensor<1x3x9x9xf32> -> tensor<1x3x9x9xf32>
  return %0 : tensor<1x3x9x9xf32>
}

// -----

func.func @max_pool_kernel_positive(%x: tensor<1x3x9x9xf32>) -> tensor<1x3x9x9xf32> {
  // expected-error @+1 {{'nn.max_pool2d' op expects 'kernel' values >= 1}}
  %0 = nn.max_pool2d %x {kernel = array<i64: 0, 1>} : tensor<1x3x9x9xf32> -> tensor<1x3x9x9xf32>
  return %0 : tensor<1x3x9x9xf32>
}

// -----

func.func @max_pool_ceil_result(%x: tensor<1x3x9x9xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{'nn.max_pool2d' op expected result of type 'tensor<1x3x5x5xf32>' but got 'tensor<1x3x4x4xf32>'}}
  %0 = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode} : tensor<1x3x9x9xf32> -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @avg_pool_dilations(%x: tensor<1x3x9x9xf32>) -> tensor<1x3x7x7xf32> {
  // expected-error @+1 {{'nn.avg_pool2d' op expects dilations of 1}}
  %0 = nn.avg_pool2d %x {kernel = array<i64: 2, 2>, dilations = array<i64: 2, 2>} : tensor<1x3x9x9xf32> -> tensor<1x3x7x7xf32>
  return %0 : tensor<1x3x7x7xf32>
}

// -----

func.func @global_avg_pool_rank(%x: tensor<3x9x9xf32>) -> tensor<3x1x1xf32> {
  // expected-error @+1 {{'nn.global_avg_pool2d' op expects an N x C x H x W input, got 'tensor<3x9x9xf32>'}}
  %0 = nn.global_avg_pool2d %x : tensor<3x9x9xf32> -> tensor<3x1x1xf32>
  return %0 : tensor<3x1x1xf32>
}

// -----

func.func @batch_norm_rank(%x: tensor<8xf32>, %c: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'nn.batch_norm' op expects an N x C x ... input of rank >= 2, got 'tensor<8xf32>'}}
  %0 = nn.batch_norm %x, %c, %c, %c, %c : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @batch_norm_channels(%x: tensor<2x8xf32>, %c: tensor<8xf32>, %v: tensor<4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'nn.batch_norm' op expected var of type 'tensor<8xf32>' but got 'tensor<4xf32>'}}
  %0 = nn.batch_norm %x, %c, %c, %c, %v : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @batch_norm_train_stats(%x: tensor<2x8xf32>, %c: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.batch_norm_train' op expected result #1 of type 'tensor<8xf32>' but got 'tensor<4xf32>'}}
  %0:3 = nn.batch_norm_train %x, %c, %c : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> (tensor<2x8xf32>, tensor<4xf32>, tensor<8xf32>)
  return %0#1 : tensor<4xf32>
}

// -----

func.func @reduce_mean_result(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.reduce_mean' op expected result of type 'tensor<4x1xf32>' but got 'tensor<4x8xf32>'}}
  %0 = nn.reduce_mean %x dims = [1] {keep_dims} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @broadcast_shrinks(%x: tensor<4x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'nn.broadcast' op cannot broadcast 'tensor<4x3xf32>' to 'tensor<3xf32>'}}
  %0 = nn.broadcast %x : tensor<4x3xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @broadcast_mismatch(%x: tensor<4x3xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'nn.broadcast' op cannot broadcast 'tensor<4x3xf32>' to 'tensor<4x5xf32>'}}
  %0 = nn.broadcast %x : tensor<4x3xf32> -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

func.func @conv_backward_data_grad(%dy: tensor<2x6x5x5xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{'nn.conv2d_backward_data' op has a gradient of type 'tensor<2x6x5x5xf32>', but the forward op's result has type 'tensor<2x6x6x6xf32>'}}
  %0 = nn.conv2d_backward_data %dy, %w : tensor<2x6x5x5xf32>, tensor<6x4x3x3xf32> -> tensor<2x4x8x8xf32>
  return %0 : tensor<2x4x8x8xf32>
}

// -----

func.func @conv_backward_weights_channels(%x: tensor<2x3x8x8xf32>, %dy: tensor<2x6x6x6xf32>) -> tensor<6x4x3x3xf32> {
  // expected-error @+1 {{'nn.conv2d_backward_weights' op input has 3 channels but the weight expects 4 x 1 (groups)}}
  %0 = nn.conv2d_backward_weights %x, %dy : tensor<2x3x8x8xf32>, tensor<2x6x6x6xf32> -> tensor<6x4x3x3xf32>
  return %0 : tensor<6x4x3x3xf32>
}

// -----

func.func @max_pool_grad_result(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x8x8xf32>) -> tensor<2x4x9x9xf32> {
  // expected-error @+1 {{'nn.max_pool2d_grad' op has result type 'tensor<2x4x9x9xf32>', not the input's 'tensor<2x4x8x8xf32>'}}
  %0 = nn.max_pool2d_grad %dy, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<2x4x4x4xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x9x9xf32>
  return %0 : tensor<2x4x9x9xf32>
}

// -----

func.func @avg_pool_grad_shape(%dy: tensor<2x4x3x3xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{'nn.avg_pool2d_grad' op has a gradient of type 'tensor<2x4x3x3xf32>', but the forward op's result has type 'tensor<2x4x4x4xf32>'}}
  %0 = nn.avg_pool2d_grad %dy {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<2x4x3x3xf32> -> tensor<2x4x8x8xf32>
  return %0 : tensor<2x4x8x8xf32>
}

// -----

func.func @batch_norm_grad_stats(%x: tensor<2x4x8x8xf32>, %s: tensor<4xf32>, %m: tensor<5xf32>) {
  // expected-error @+1 {{'nn.batch_norm_train_grad' op expected batch_mean of type 'tensor<4xf32>' but got 'tensor<5xf32>'}}
  %0:3 = nn.batch_norm_train_grad %x, %x, %s, %m, %s : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<5xf32>, tensor<4xf32> -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @slice_out_of_bounds(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'nn.slice' op dimension 1: 4 elements from 2 in steps of 2 do not fit in 8}}
  %0 = nn.slice %x {sizes = array<i64: 2, 4>, starts = array<i64: 0, 2>, steps = array<i64: 1, 2>} : tensor<2x8xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @slice_step(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'nn.slice' op expects 'steps' values >= 1}}
  %0 = nn.slice %x {sizes = array<i64: 2, 4>, starts = array<i64: 0, 0>, steps = array<i64: 1, 0>} : tensor<2x8xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @select_shapes(%mask: tensor<3xi1>, %a: tensor<f32>, %b: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'nn.select' op operands don't have broadcast-compatible shapes: 'tensor<3xi1>', 'tensor<f32>' and 'tensor<2x4xf32>'}}
  %0 = nn.select %mask, %a, %b : tensor<3xi1>, tensor<f32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @select_types(%mask: tensor<4xi1>, %a: tensor<f32>, %b: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{'nn.select' op lhs and rhs element types differ: 'tensor<f32>' and 'tensor<4xf16>'}}
  %0 = nn.select %mask, %a, %b : tensor<4xi1>, tensor<f32>, tensor<4xf16> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}
