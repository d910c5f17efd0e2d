// RUN: dtrain-opt %s --split-input-file --dtrain-build-training="lr=0.1" | FileCheck %s
// RUN: dtrain-opt %s --split-input-file --dtrain-build-training="loss=mse lr=0.5 weight-decay=0.01" | FileCheck %s --check-prefix=MSE
// RUN: dtrain-opt %s --split-input-file --dtrain-build-training="optimizer=nesterov lr=0.1 momentum=0.8 weight-decay=0.1" | FileCheck %s --check-prefix=NESTEROV
// RUN: dtrain-opt %s --split-input-file --dtrain-build-training="optimizer=adamw lr=0.01 weight-decay=0.1 decay-1d" | FileCheck %s --check-prefix=ADAMW

// Optimizer state: a momentum buffer per parameter after the parameters;
// weight decay only on the matrix.
// NESTEROV-LABEL: func.func @train_step(
// NESTEROV-SAME: %[[W:[^:]+]]: tensor<3x4xf32> {train.param = "w"}, %[[B:[^:]+]]: tensor<3xf32> {train.param = "b"}, %[[VW:[^:]+]]: tensor<3x4xf32> {train.optimizer_state = "w.momentum_buffer"}, %[[VB:[^:]+]]: tensor<3xf32> {train.optimizer_state = "b.momentum_buffer"}, %{{[^:]+}}: tensor<2x4xf32> {train.input = "x"}
// NESTEROV-SAME: -> (tensor<3x4xf32> {train.updated = "w"}, tensor<3xf32> {train.updated = "b"}, tensor<3x4xf32> {train.updated = "w.momentum_buffer"}, tensor<3xf32> {train.updated = "b.momentum_buffer"}, tensor<f32> {train.output = "loss"}, tensor<i64> {train.output = "correct"})
// NESTEROV: %[[W2:.*]], %[[VW2:.*]] = train.momentum_update %[[W]], %{{.*}}, %[[VW]] {lr = 1.000000e-01 : f64, momentum = 8.000000e-01 : f64, nesterov, weight_decay = 1.000000e-01 : f64}
// NESTEROV: %[[B2:.*]], %[[VB2:.*]] = train.momentum_update %[[B]], %{{.*}}, %[[VB]] {lr = 1.000000e-01 : f64, momentum = 8.000000e-01 : f64, nesterov}
// NESTEROV: return %[[W2]], %[[B2]], %[[VW2]], %[[VB2]], %{{.*}}

// Adam: two moments per parameter and one step count, incremented once;
// decay-1d decays the bias too.
// ADAMW-LABEL: func.func @train_step(
// ADAMW-SAME: %[[STEP:[^:]+]]: tensor<i64> {train.optimizer_state = "optimizer.step"}
// ADAMW: %[[ONE:.*]] = arith.constant dense<1> : tensor<i64>
// ADAMW: %[[NEXT:.*]] = arith.addi %[[STEP]], %[[ONE]]
// ADAMW: train.adam_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NEXT]] {decoupled, lr = 1.000000e-02 : f64, weight_decay = 1.000000e-01 : f64} : tensor<3x4xf32>, tensor<i64>
// ADAMW: train.adam_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NEXT]] {decoupled, lr = 1.000000e-02 : f64, weight_decay = 1.000000e-01 : f64} : tensor<3xf32>, tensor<i64>
// RUN: dtrain-opt %s --split-input-file --dtrain-build-training="optimizer=lars lr=2.0 trust-coefficient=0.02" | FileCheck %s --check-prefix=LARS

// LARS scales the matrix's step by its trust ratio; the bias gets momentum
// SGD.
// LARS-LABEL: func.func @train_step(
// LARS: train.lars_update %{{.*}}, %{{.*}}, %{{.*}} {lr = 2.000000e+00 : f64, momentum = 9.000000e-01 : f64, trust_coefficient = 2.000000e-02 : f64} : tensor<3x4xf32>
// LARS: train.momentum_update %{{.*}}, %{{.*}}, %{{.*}} {lr = 2.000000e+00 : f64, momentum = 9.000000e-01 : f64} : tensor<3xf32>
// RUN: dtrain-opt %s --split-input-file --dtrain-build-training="schedule=cosine total-steps=100 warmup-steps=10" | FileCheck %s --check-prefix=SCHEDULE

// A schedule: the step count is optimizer state, and the factor of lr is
// computed from it once and passed to every update.
// SCHEDULE-LABEL: func.func @train_step(
// SCHEDULE-SAME: %[[COUNT:[^:]+]]: tensor<i64> {train.optimizer_state = "optimizer.step"}
// SCHEDULE: %[[STEP:.*]] = arith.addi %[[COUNT]]
// SCHEDULE: %[[U:.*]] = arith.subf %{{.*}}, %{{.*}} : tensor<f32>
// SCHEDULE: math.cos
// SCHEDULE: %[[RAMP:.*]] = arith.minimumf
// SCHEDULE: %[[SCALE:.*]] = arith.mulf %{{.*}}, %[[RAMP]] : tensor<f32>
// SCHEDULE: train.sgd_update %{{.*}}, %{{.*}} lr_scale %[[SCALE]] : tensor<f32> {lr = 1.000000e-02 : f64} : tensor<3x4xf32>

// A linear layer with ReLU: the loss is appended, every parameter gets its
// gradient from the vector-Jacobian products in reverse order, the unused
// gradient of the input is not built, and the parameters are updated.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[^:]+]]: tensor<3x4xf32> {train.param = "w"}
// CHECK-SAME: %[[B:[^:]+]]: tensor<3xf32> {train.param = "b"}
// CHECK-SAME: %[[X:[^:]+]]: tensor<2x4xf32> {train.input = "x"}
// CHECK-SAME: %[[L:[^:]+]]: tensor<2xi64> {train.label = "labels"}
// CHECK-SAME: -> (tensor<3x4xf32> {train.updated = "w"}, tensor<3xf32> {train.updated = "b"}, tensor<f32> {train.output = "loss"}, tensor<i64> {train.output = "correct"})
// CHECK: %[[MM:.*]] = nn.matmul %[[X]], %[[W]] {transpose_rhs}
// CHECK: %[[H:.*]] = nn.add %[[MM]], %[[B]]
// CHECK: %[[Y:.*]] = nn.relu %[[H]]
// CHECK: %[[LOSS:.*]] = nn.softmax_cross_entropy %[[Y]], %[[L]]
// CHECK: %[[CORRECT:.*]] = nn.count_correct %[[Y]], %[[L]] : tensor<2x3xf32>, tensor<2xi64> -> tensor<i64>
// CHECK: %[[ONE:.*]] = train.loss_seed : tensor<f32>
// CHECK: %[[DY:.*]] = nn.softmax_cross_entropy_grad %[[ONE]], %[[Y]], %[[L]]
// CHECK: %[[DH:.*]] = nn.relu_grad %[[DY]], %[[Y]]
// CHECK: %[[DB:.*]] = nn.reduce_sum %[[DH]] dims = [0] : tensor<2x3xf32> -> tensor<3xf32>
// CHECK-NOT: nn.matmul %[[DH]], %[[W]]
// CHECK: %[[DW:.*]] = nn.matmul %[[DH]], %[[X]] {transpose_lhs} : tensor<2x3xf32>, tensor<2x4xf32> -> tensor<3x4xf32>
// CHECK: %[[W2:.*]] = train.sgd_update %[[W]], %[[DW]] {lr = 1.000000e-01 : f64}
// CHECK: %[[B2:.*]] = train.sgd_update %[[B]], %[[DB]] {lr = 1.000000e-01 : f64}
// CHECK: return %[[W2]], %[[B2]], %[[LOSS]], %[[CORRECT]]
func.func @forward(%w: tensor<3x4xf32> {train.param = "w"},
                   %b: tensor<3xf32> {train.param = "b"},
                   %x: tensor<2x4xf32> {train.input = "x"})
    -> (tensor<2x3xf32> {train.output = "y"}) {
  %0 = nn.matmul %x, %w {transpose_rhs} : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<2x3xf32>
  %1 = nn.add %0, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %2 = nn.relu %1 : tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// -----

// A value with two users gets the sum of both gradients; a parameter the
// loss does not depend on gets a zero gradient; the mean and the
// transpose send their gradients back through broadcast and the inverse
// permutation.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[P:[^:]+]]: tensor<2x3xf32> {train.param = "p"}
// CHECK-SAME: %[[Q:[^:]+]]: tensor<5xf32> {train.param = "unused"}
// CHECK: %[[T:.*]] = nn.transpose %[[P]]
// CHECK: %[[SQ:.*]] = nn.mul %[[T]], %[[T]]
// CHECK: %[[DT1:.*]] = nn.mul %{{.*}}, %[[T]]
// CHECK: %[[DT2:.*]] = nn.mul %{{.*}}, %[[T]]
// CHECK: %[[DT:.*]] = nn.add %[[DT1]], %[[DT2]]
// CHECK: %[[DP:.*]] = nn.transpose %[[DT]] {permutation = array<i64: 1, 0>} : tensor<3x2xf32> -> tensor<2x3xf32>
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<5xf32>
// CHECK: train.sgd_update %[[P]], %[[DP]]
// CHECK: train.sgd_update %[[Q]], %[[ZERO]]
// MSE: tensor<5xf32> {train.param = "unused"}, %{{[^:]+}}: tensor<3x2xf32> {train.label = "targets"}
// MSE: %[[DIFF:.*]] = nn.sub
// MSE: %[[SQUARE:.*]] = nn.mul %[[DIFF]], %[[DIFF]]
// MSE: nn.reduce_mean %[[SQUARE]] dims = [0, 1] : tensor<3x2xf32> -> tensor<f32>
// MSE: nn.broadcast %{{.*}} : tensor<1x1xf32> -> tensor<3x2xf32>
// MSE: train.sgd_update {{.*}} {lr = 5.000000e-01 : f64, weight_decay = 1.000000e-02 : f64}
func.func @forward(%p: tensor<2x3xf32> {train.param = "p"},
                   %q: tensor<5xf32> {train.param = "unused"})
    -> tensor<3x2xf32> {
  %t = nn.transpose %p {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %s = nn.mul %t, %t : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x2xf32>
  return %s : tensor<3x2xf32>
}

// -----

// A small CNN: every layer's vector-Jacobian product, from the loss back to
// the first convolution (whose input gradient is not needed).
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[CONV:.*]] = nn.conv2d %[[X:[^,]+]], %[[W:[^,]+]], %{{.*}} {padding
// CHECK: %[[BN:.*]], %[[MEAN:.*]], %[[VAR:.*]] = nn.batch_norm_train %[[CONV]]
// CHECK: %[[ACT:.*]] = nn.leaky_relu %[[BN]]
// CHECK: %[[MAX:.*]] = nn.max_pool2d %[[ACT]]
// CHECK: nn.avg_pool2d %[[MAX]]
// CHECK: %[[Y:.*]] = nn.matmul
// CHECK: %[[LOGP:.*]] = nn.log_softmax %[[Y]]
// CHECK: %[[DLOGP:.*]] = nn.softmax_cross_entropy_grad %{{.*}}, %[[LOGP]]
// CHECK: %[[P:.*]] = nn.softmax %[[Y]] {axis = 1 : i64}
// CHECK: %[[SUM:.*]] = nn.reduce_sum %[[DLOGP]] dims = [1] {keep_dims}
// CHECK: %[[PS:.*]] = nn.mul %[[P]], %[[SUM]]
// CHECK: %[[DY:.*]] = nn.sub %[[DLOGP]], %[[PS]]
// CHECK: %[[DFLAT:.*]] = nn.matmul %[[DY]], %{{.*}} : tensor<2x3xf32>, tensor<3x16xf32> -> tensor<2x16xf32>
// CHECK: %[[DAVG:.*]] = nn.reshape %[[DFLAT]] : tensor<2x16xf32> -> tensor<2x4x2x2xf32>
// CHECK: %[[DMAX:.*]] = nn.avg_pool2d_grad %[[DAVG]] {kernel = array<i64: 2, 2>} : tensor<2x4x2x2xf32> -> tensor<2x4x3x3xf32>
// CHECK: %[[DACT:.*]] = nn.max_pool2d_grad %[[DMAX]], %[[ACT]] {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>}
// CHECK: %[[POS:.*]] = nn.relu_grad %[[DACT]], %[[ACT]]
// CHECK: %[[DBN:.*]] = nn.add %[[POS]], %{{.*}}
// CHECK: %[[DCONV:.*]], %[[DSCALE:.*]], %[[DSHIFT:.*]] = nn.batch_norm_train_grad %[[DBN]], %[[CONV]], %{{.*}}, %[[MEAN]], %[[VAR]]
// CHECK-NOT: nn.conv2d_backward_data
// CHECK: %[[DW:.*]] = nn.conv2d_backward_weights %[[X]], %[[DCONV]] {padding = array<i64: 1, 1, 1, 1>} : tensor<2x2x6x6xf32>, tensor<2x4x6x6xf32> -> tensor<4x2x3x3xf32>
// CHECK: %[[DB:.*]] = nn.reduce_sum %[[DCONV]] dims = [0, 2, 3]
// CHECK: train.sgd_update %[[W]], %[[DW]]
// CHECK: train.sgd_update %{{.*}}, %[[DB]]
// CHECK: train.sgd_update %{{.*}}, %[[DSCALE]]
// CHECK: train.sgd_update %{{.*}}, %[[DSHIFT]]
func.func @forward(%w: tensor<4x2x3x3xf32> {train.param = "conv.weight"},
                   %b: tensor<4xf32> {train.param = "conv.bias"},
                   %s: tensor<4xf32> {train.param = "bn.weight"},
                   %t: tensor<4xf32> {train.param = "bn.bias"},
                   %fw: tensor<3x16xf32> {train.param = "fc.weight"},
                   %x: tensor<2x2x6x6xf32> {train.input = "x"}) -> tensor<2x3xf32> {
  %c = nn.conv2d %x, %w, %b {padding = array<i64: 1, 1, 1, 1>} : tensor<2x2x6x6xf32>, tensor<4x2x3x3xf32>, tensor<4xf32> -> tensor<2x4x6x6xf32>
  %n:3 = nn.batch_norm_train %c, %s, %t : tensor<2x4x6x6xf32>, tensor<4xf32>, tensor<4xf32> -> (tensor<2x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = nn.leaky_relu %n#0 {alpha = 0.1 : f64} : tensor<2x4x6x6xf32>
  %p = nn.max_pool2d %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<2x4x6x6xf32> -> tensor<2x4x3x3xf32>
  %a = nn.avg_pool2d %p {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>} : tensor<2x4x3x3xf32> -> tensor<2x4x2x2xf32>
  %f = nn.reshape %a : tensor<2x4x2x2xf32> -> tensor<2x16xf32>
  %y = nn.matmul %f, %fw {transpose_rhs} : tensor<2x16xf32>, tensor<3x16xf32> -> tensor<2x3xf32>
  %l = nn.log_softmax %y {axis = 1 : i64} : tensor<2x3xf32>
  return %l : tensor<2x3xf32>
}

// -----

// New buffer values (batch-norm running statistics) pass through, after
// the parameters.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<2x3xf32> {train.updated = "w"}, tensor<3xf32> {train.updated = "running"}, tensor<f32> {train.output = "loss"}, tensor<i64> {train.output = "correct"})
// CHECK: %[[NEW:.*]] = nn.mul %{{.*}}, %{{.*}} : tensor<3xf32>
// CHECK: %[[W2:.*]] = train.sgd_update
// CHECK: return %[[W2]], %[[NEW]], %{{.*}}
func.func @forward(%w: tensor<2x3xf32> {train.param = "w"},
                   %m: tensor<3xf32> {train.buffer = "running"})
    -> (tensor<2x3xf32> {train.output = "y"}, tensor<3xf32> {train.updated = "running"}) {
  %y = nn.relu %w : tensor<2x3xf32>
  %half = arith.constant dense<0.5> : tensor<f32>
  %n = nn.mul %m, %half : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  return %y, %n : tensor<2x3xf32>, tensor<3xf32>
}

// -----
// RUN: dtrain-opt %s --split-input-file --dtrain-build-training="loss=mse" | FileCheck %s --check-prefix=DROPOUT

// Dropout: input times a mask of the seed state and the step number, one
// stream per dropout; the gradient flows through the same mask (nn.mul's
// vector-Jacobian product), and a ratio of 0 is the identity.
// DROPOUT: func.func @train_step(%[[W:[^:]+]]: tensor<2x4xf32> {train.param = "w"},
// DROPOUT-SAME: %[[COUNT:[^:]+]]: tensor<i64> {train.optimizer_state = "optimizer.step"}, %[[SEED:[^:]+]]: tensor<i64> {train.optimizer_state = "rng.seed"}
// DROPOUT-SAME: -> (tensor<2x4xf32> {train.updated = "w"}, tensor<i64> {train.updated = "optimizer.step"}, tensor<f32> {train.output = "loss"})
// DROPOUT: %[[STEP:.*]] = arith.addi %[[COUNT]]
// DROPOUT: %[[MASK0:.*]] = nn.dropout_mask %[[SEED]], %[[STEP]] {ratio = 1.000000e-01 : f64, stream = 0 : i64} : tensor<i64>, tensor<i64> -> tensor<2x4xf32>
// DROPOUT: %[[Y0:.*]] = nn.mul %[[W]], %[[MASK0]]
// DROPOUT: %[[Y0B:.*]] = nn.dropout %[[Y0]] {ratio = 0.000000e+00 : f64}
// DROPOUT: %[[MASK1:.*]] = nn.dropout_mask %[[SEED]], %[[STEP]] {ratio = 5.000000e-01 : f64, stream = 1 : i64}
// DROPOUT: %[[Y1:.*]] = nn.mul %[[Y0B]], %[[MASK1]]
// DROPOUT: nn.mul %{{.*}}, %[[MASK1]]
// DROPOUT: nn.mul %{{.*}}, %[[MASK0]]
// DROPOUT: train.sgd_update
// DROPOUT: return %{{.*}}, %[[STEP]], %{{.*}}
func.func @forward(%w: tensor<2x4xf32> {train.param = "w"}) -> tensor<2x4xf32> {
  %0 = nn.dropout %w {ratio = 0.1 : f64} : tensor<2x4xf32>
  %1 = nn.dropout %0 {ratio = 0.0 : f64} : tensor<2x4xf32>
  %2 = nn.dropout %1 : tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}

// -----
// RUN: dtrain-opt %s --split-input-file --dtrain-build-training="loss=mse" | FileCheck %s --check-prefix=SLICE

// A slice's gradient goes back to the sliced elements, zeros elsewhere.
// SLICE: func.func @train_step(%[[W:[^:]+]]: tensor<3x8xf32> {train.param = "w"},
// SLICE: %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : tensor<3x8xf32>
// SLICE: %[[DW:.*]] = tensor.insert_slice %{{.*}} into %[[ZEROS]][1, 1] [2, 4] [1, 2] : tensor<2x4xf32> into tensor<3x8xf32>
// SLICE: train.sgd_update %[[W]], %[[DW]]
func.func @forward(%w: tensor<3x8xf32> {train.param = "w"}) -> tensor<2x4xf32> {
  %0 = nn.slice %w {sizes = array<i64: 2, 4>, starts = array<i64: 1, 1>, steps = array<i64: 1, 2>} : tensor<3x8xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----
// RUN: dtrain-opt %s --split-input-file --dtrain-build-training="loss=mse" | FileCheck %s --check-prefix=MASK

// ReLU6 (a clip) after a residual add: the clip's gradient masks with its
// output, so that nothing in the backward pass reads the sum.
// MASK: func.func @train_step(%[[W:[^:]+]]: tensor<2x4xf32> {train.param = "w"}
// MASK: %[[SUM:.*]] = nn.add %[[W]], %[[W]]
// MASK: %[[Y:.*]] = nn.clip %[[SUM]] {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64}
// MASK-NOT: %[[SUM]]
// MASK: nn.clip_grad %{{.*}}, %[[Y]] {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64}
// MASK-NOT: %[[SUM]]
// MASK: train.sgd_update %[[W]]
func.func @forward(%w: tensor<2x4xf32> {train.param = "w"}) -> tensor<2x4xf32> {
  %0 = nn.add %w, %w : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %1 = nn.clip %0 {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}

// -----
// RUN: dtrain-opt %s --split-input-file --dtrain-build-training="loss=mse" | FileCheck %s --check-prefix=NEGATIVE

// A leaky ReLU of negative slope is positive where its input is not: its
// gradient masks with the input.
// NEGATIVE: func.func @train_step(%[[W:[^:]+]]: tensor<2x4xf32> {train.param = "w"}
// NEGATIVE: %[[Y:.*]] = nn.leaky_relu %[[W]] {alpha = -5.000000e-01 : f64}
// NEGATIVE: nn.relu_grad %{{.*}}, %[[W]]
func.func @forward(%w: tensor<2x4xf32> {train.param = "w"}) -> tensor<2x4xf32> {
  %0 = nn.leaky_relu %w {alpha = -0.5 : f64} : tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----
// RUN: dtrain-opt %s --split-input-file --dtrain-build-training | FileCheck %s --check-prefix=TOKENS

// A language model: token ids pick rows of the embedding table, whose
// gradient is the scatter-add of the rows' gradients (none flows into the
// integer ids); B x T x V logits take B x T labels, one per position.
// TOKENS: func.func @train_step(%[[TABLE:[^:]+]]: tensor<16x8xf32> {train.param = "tok"}, %[[HEAD:[^:]+]]: tensor<8x16xf32> {train.param = "head"}, %[[IDS:[^:]+]]: tensor<2x4xi64> {train.input = "x"}, %[[LABELS:[^:]+]]: tensor<2x4xi64> {train.label = "labels"})
// TOKENS: %[[X:.*]] = nn.embedding %[[TABLE]], %[[IDS]] : tensor<16x8xf32>, tensor<2x4xi64> -> tensor<2x4x8xf32>
// TOKENS: nn.matmul
// TOKENS: %[[LOGITS:.*]] = nn.reshape
// TOKENS: nn.softmax_cross_entropy %[[LOGITS]], %[[LABELS]] : tensor<2x4x16xf32>, tensor<2x4xi64> -> tensor<f32>
// TOKENS: nn.softmax_cross_entropy_grad %{{.*}}, %[[LOGITS]], %[[LABELS]] : tensor<f32>, tensor<2x4x16xf32>, tensor<2x4xi64> -> tensor<2x4x16xf32>
// TOKENS: %[[DTABLE:.*]] = nn.embedding_grad %{{.*}}, %[[IDS]] {rows = 16 : i64} : tensor<2x4x8xf32>, tensor<2x4xi64> -> tensor<16x8xf32>
// TOKENS: train.sgd_update %[[TABLE]], %[[DTABLE]]
func.func @forward(%tok: tensor<16x8xf32> {train.param = "tok"}, %head: tensor<8x16xf32> {train.param = "head"}, %ids: tensor<2x4xi64> {train.input = "x"}) -> tensor<2x4x16xf32> {
  %0 = nn.embedding %tok, %ids : tensor<16x8xf32>, tensor<2x4xi64> -> tensor<2x4x8xf32>
  %1 = nn.reshape %0 : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %2 = nn.matmul %1, %head : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %3 = nn.reshape %2 : tensor<8x16xf32> -> tensor<2x4x16xf32>
  return %3 : tensor<2x4x16xf32>
}

// -----
// RUN: dtrain-opt %s --split-input-file --dtrain-build-training="loss=mse" | FileCheck %s --check-prefix=SELECT

// masked_fill: the gradient flows to the chosen operand only, zero where
// the mask chose the other (and none into the boolean mask).
// SELECT: func.func @train_step(%[[W:[^:]+]]: tensor<2x4xf32> {train.param = "w"}
// SELECT: %[[COND:.*]] = arith.constant dense<{{.*}}> : tensor<1x4xi1>
// SELECT: nn.select %[[COND]], %{{.*}}, %[[W]]
// SELECT: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// SELECT-NOT: nn.select
// SELECT: %[[DW:.*]] = nn.select %[[COND]], %[[ZERO]], %{{.*}} : tensor<1x4xi1>, tensor<f32>, tensor<2x4xf32> -> tensor<2x4xf32>
// SELECT: train.sgd_update %[[W]], %[[DW]]
func.func @forward(%w: tensor<2x4xf32> {train.param = "w"}) -> tensor<2x4xf32> {
  %mask = arith.constant dense<[[true, false, false, true]]> : tensor<1x4xi1>
  %fill = arith.constant dense<-1.0e9> : tensor<f32>
  %0 = nn.select %mask, %fill, %w : tensor<1x4xi1>, tensor<f32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----
// RUN: dtrain-opt %s --split-input-file --dtrain-build-training="loss=mse" | FileCheck %s --check-prefix=BOOLEAN

// Booleans and integers computed from activations carry no gradient, as in
// PyTorch: `h * (h == 0).float()`, and ids picked by a mask of h, stop the
// path at the comparison; only the product's own operand h gets one.
// BOOLEAN: func.func @train_step(%[[W:[^:]+]]: tensor<2x4xf32> {train.param = "w"}
// BOOLEAN: %[[EQ:.*]] = nn.compare eq %[[W]], %{{.*}} : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xi1>
// BOOLEAN: %[[FLAGS:.*]] = nn.to_float %[[EQ]] : tensor<2x4xi1> to tensor<2x4xf32>
// BOOLEAN: %[[IDS:.*]] = nn.select %[[EQ]], %{{.*}}, %{{.*}} : tensor<2x4xi1>, tensor<i64>, tensor<2x4xi64> -> tensor<2x4xi64>
// BOOLEAN: nn.to_float %[[IDS]]
// BOOLEAN: train.loss_seed
// BOOLEAN-NOT: nn.to_float
// BOOLEAN-NOT: nn.compare eq
// BOOLEAN: %[[DW:.*]] = nn.mul %{{.*}}, %[[FLAGS]]
// BOOLEAN: train.sgd_update %[[W]], %[[DW]]
func.func @forward(%w: tensor<2x4xf32> {train.param = "w"}, %ids: tensor<2x4xi64> {train.input = "ids"}) -> tensor<2x4xf32> {
  %zero = arith.constant dense<0.0> : tensor<f32>
  %pad = arith.constant dense<0> : tensor<i64>
  %eq = nn.compare eq %w, %zero : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xi1>
  %mask = nn.to_float %eq : tensor<2x4xi1> to tensor<2x4xf32>
  %picked = nn.select %eq, %pad, %ids : tensor<2x4xi1>, tensor<i64>, tensor<2x4xi64> -> tensor<2x4xi64>
  %offset = nn.to_float %picked : tensor<2x4xi64> to tensor<2x4xf32>
  %0 = nn.mul %w, %mask : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %1 = nn.add %0, %offset : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
