// RUN: dtrain-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'func.func' op argument #0 attribute 'train.param' must be a non-empty string naming the tensor}}
func.func @param_not_a_string(%w: tensor<4xf32> {train.param = 1 : i32}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0 attribute 'train.weight' is not a train dialect argument attribute (expected train.param, train.buffer, train.optimizer_state, train.rank_state, train.input or train.label)}}
func.func @unknown_role(%w: tensor<4xf32> {train.weight = "w"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0 attribute 'train.input' conflicts with 'train.param': an argument has a single role}}
func.func @two_roles(%w: tensor<4xf32> {train.param = "w", train.input = "x"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #1 attribute 'train.param' reuses the name "w" of argument #0}}
func.func @duplicate_name(%a: tensor<4xf32> {train.param = "w"}, %b: tensor<4xf32> {train.param = "w"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0 attribute 'train.param' needs a ranked tensor or memref argument, got 'f32'}}
func.func @scalar_param(%w: f32 {train.param = "w"}) {
  return
}

// -----

func.func @negative_lr(%w: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.sgd_update' op learning rate must be positive, got -1}}
  %0 = train.sgd_update %w, %g {lr = -1.0 : f64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @negative_weight_decay(%w: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.sgd_update' op weight_decay must be non-negative, got -0.5}}
  %0 = train.sgd_update %w, %g {lr = 0.1 : f64, weight_decay = -0.5 : f64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @missing_lr(%w: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.sgd_update' op requires attribute 'lr'}}
  %0 = train.sgd_update %w, %g : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @grad_type(%w: tensor<4xf32>, %g: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.sgd_update' op failed to verify that all of {param, grad, result} have same type}}
  %0 = "train.sgd_update"(%w, %g) {lr = 0.1 : f64} : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op result #0 attribute 'train.updated' names "w", which is not a train.param, train.buffer or train.optimizer_state argument}}
func.func @updated_unknown(%x: tensor<4xf32> {train.input = "x"}) -> (tensor<4xf32> {train.updated = "w"}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op result #0 attribute 'train.updated' updates argument #0 of type 'tensor<4xf32>' with a result of type 'tensor<8xf32>'}}
func.func @updated_type(%w: tensor<4xf32> {train.param = "w"}, %y: tensor<8xf32>) -> (tensor<8xf32> {train.updated = "w"}) {
  return %y : tensor<8xf32>
}

// -----

func.func @momentum_negative(%w: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.momentum_update' op momentum must be non-negative, got -0.5}}
  %0, %1 = train.momentum_update %w, %w, %w {lr = 0.1 : f64, momentum = -0.5 : f64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @adam_beta(%w: tensor<4xf32>, %t: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.adam_update' op beta2 must be in [0, 1), got 1}}
  %0:3 = train.adam_update %w, %w, %w, %w, %t {lr = 0.1 : f64, beta2 = 1.0 : f64} : tensor<4xf32>, tensor<i64>
  return %0#0 : tensor<4xf32>
}

// -----

func.func @lars_trust(%w: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.lars_update' op trust_coefficient must be positive, got 0}}
  %0, %1 = train.lars_update %w, %w, %w {lr = 0.1 : f64, momentum = 0.9 : f64, trust_coefficient = 0.0 : f64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @skip_update_types(%skip: tensor<i1>, %w: tensor<4xf32>, %v: tensor<4xf64>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.skip_update' op failed to verify that all of {old, updated, result} have same type}}
  %0 = "train.skip_update"(%skip, %w, %v) : (tensor<i1>, tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
