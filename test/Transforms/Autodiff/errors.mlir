// What --mpc-autodiff refuses.
// RUN: mpc-opt %s -split-input-file --mpc-autodiff -verify-diagnostics

ml_program.global private mutable @w(#mpc.init<ones>) : tensor<4x8xf32>

func.func @loss() -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<4x8xf32>
  // Backward ops have no VJP (no second derivatives).
  // expected-error @+1 {{'mpc.relu_grad' op has no vector-Jacobian product; mpc-autodiff needs one for every op between the trainable globals and the loss}}
  %0 = mpc.relu_grad %w, %w : tensor<4x8xf32>
  %1 = mpc.reduce_sum %0 {dims = array<i64: 0, 1>} : tensor<4x8xf32>
  return %1 : tensor<f32>
}

// -----

// expected-error @+1 {{mpc-autodiff: no loss function @loss}}
module {
  func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{'func.func' op mpc-autodiff: the first result must be the scalar float loss}}
func.func @loss(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{mpc-autodiff: a symbol @train_step already exists; choose another name=}}
module {
  func.func @loss(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
  func.func @train_step(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

// -----

// A loss that reads no trainable parameter: an input, a frozen global
// (PyTorch's buffers) and a global the function stores are not trained.
ml_program.global private mutable @stats(#mpc.init<zeros>) : tensor<4xf32> {mpc.frozen}
ml_program.global private mutable @count(#mpc.init<zeros>) : tensor<4xf32>

// expected-error @+1 {{'func.func' op mpc-autodiff: @loss reads no trainable parameter (a mutable float ml_program.global, not mpc.frozen, that the function does not store): there is nothing to train}}
func.func @loss(%x: tensor<4xf32>) -> tensor<f32> {
  %s = ml_program.global_load @stats : tensor<4xf32>
  %c = ml_program.global_load @count : tensor<4xf32>
  %c1 = mpc.add %c, %x : tensor<4xf32>, tensor<4xf32>
  ml_program.global_store @count = %c1 : tensor<4xf32>
  %0 = mpc.mul %x, %s : tensor<4xf32>, tensor<4xf32>
  %1 = mpc.add %0, %c : tensor<4xf32>, tensor<4xf32>
  %2 = mpc.reduce_sum %1 {dims = array<i64: 0>} : tensor<4xf32>
  return %2 : tensor<f32>
}

// -----

// Attention's additive bias gets no gradient: a bias computed from model
// state (a learned relative-position bias) is refused, not left untrained.
ml_program.global private mutable @q(#mpc.init<ones>) : tensor<2x4x8xf32>
ml_program.global private mutable @rel(#mpc.init<zeros>) : tensor<1x4x4xf32>

func.func @loss() -> tensor<f32> {
  %q = ml_program.global_load @q : tensor<2x4x8xf32>
  %rel = ml_program.global_load @rel : tensor<1x4x4xf32>
  // expected-error @+1 {{'mpc.attention' op has no gradient through its bias, which is computed from model state (a learned bias): write the scores out unfused}}
  %o, %l = mpc.attention %q, %q, %q bias(%rel : tensor<1x4x4xf32>) {scale = 1.0 : f64} : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %s = mpc.reduce_sum %o {dims = array<i64: 0, 1, 2>} : tensor<2x4x8xf32>
  return %s : tensor<f32>
}

// -----

// The statistics of a fused residual + layer norm are outputs for its
// backward, not differentiable values.
ml_program.global private mutable @g(#mpc.init<ones>) : tensor<8xf32>
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<8xf32>

func.func @loss(%x: tensor<2x4x8xf32>, %r: tensor<2x4x8xf32>) -> tensor<f32> {
  %g = ml_program.global_load @g : tensor<8xf32>
  %b = ml_program.global_load @b : tensor<8xf32>
  // expected-error @+1 {{'mpc.add_layer_norm' op has no gradient through its statistics}}
  %y, %s, %m, %v = mpc.add_layer_norm %x, %r, %g, %b : tensor<2x4x8xf32>, tensor<8xf32>
  %0 = mpc.reduce_sum %m {dims = array<i64: 0, 1>} : tensor<2x4xf32>
  return %0 : tensor<f32>
}

// -----

// Nor is attention's log-sum-exp (what its backward recomputes from).
ml_program.global private mutable @q(#mpc.init<ones>) : tensor<1x2x4x8xf32>

func.func @loss(%k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<f32> {
  %q = ml_program.global_load @q : tensor<1x2x4x8xf32>
  // expected-error @+1 {{'mpc.attention' op has no gradient through its logsumexp}}
  %o, %lse = mpc.attention %q, %k, %v {scale = 0.35 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  %0 = mpc.reduce_sum %lse {dims = array<i64: 0, 1, 2>} : tensor<1x2x4xf32>
  return %0 : tensor<f32>
}

// -----

// Any other op's results past the first (here layer norm's mean): an error
// naming the result, never a gradient silently dropped.
ml_program.global private mutable @g(#mpc.init<ones>) : tensor<8xf32>
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<8xf32>

func.func @loss(%x: tensor<2x4x8xf32>) -> tensor<f32> {
  %g = ml_program.global_load @g : tensor<8xf32>
  %b = ml_program.global_load @b : tensor<8xf32>
  %xg = mpc.mul %x, %g : tensor<2x4x8xf32>, tensor<8xf32>
  // expected-error @+1 {{'mpc.layer_norm' op has no gradient through its result #1; only result #0 is differentiable}}
  %y, %m, %r = mpc.layer_norm %xg, %g, %b : tensor<2x4x8xf32>, tensor<8xf32>
  %0 = mpc.reduce_sum %m {dims = array<i64: 0, 1>} : tensor<2x4xf32>
  return %0 : tensor<f32>
}

// -----

// A loss that reads trainable parameters but depends on none of them (only
// through a comparison): every gradient would be zero, and loss scaling
// would have no seed to scale.
ml_program.global private mutable @x(#mpc.init<ones>) : tensor<4xf32>
ml_program.global private mutable @y(#mpc.init<zeros>) : tensor<4xf32>

// expected-error @+1 {{'func.func' op mpc-autodiff: the loss of @loss depends on none of the trainable parameters it reads (@x, @y): no gradient reaches them (only comparisons, masks or indices lie between them and the loss), there is nothing to train}}
func.func @loss() -> tensor<f32> {
  %x = ml_program.global_load @x : tensor<4xf32>
  %y = ml_program.global_load @y : tensor<4xf32>
  %gt = mpc.compare "gt", %x, %y : tensor<4xf32>, tensor<4xf32>
  %one = mpc.constant dense<1.0> : tensor<f32>
  %zero = mpc.constant dense<0.0> : tensor<f32>
  %w = mpc.where %gt, %one, %zero : tensor<4xi1>, tensor<f32>, tensor<f32>
  %s = mpc.reduce_sum %w {dims = array<i64: 0>} : tensor<4xf32>
  return %s : tensor<f32>
}
