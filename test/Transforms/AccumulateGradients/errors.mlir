// What --mpc-accumulate-gradients refuses.
// RUN: mpc-opt %s -split-input-file --mpc-accumulate-gradients=steps=2 -verify-diagnostics
// RUN: not mpc-opt %s -split-input-file --mpc-accumulate-gradients=steps=0 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: mpc-accumulate-gradients: option steps must be a finite number >= 1 and <= 65536, got 0
// RUN: not mpc-opt %s -split-input-file --mpc-accumulate-gradients=steps=100000 2>&1 | FileCheck %s --check-prefix=HUGE
// HUGE: mpc-accumulate-gradients: option steps must be a finite number >= 1 and <= 65536, got 100000
// RUN: not mpc-opt %s -split-input-file --mpc-accumulate-gradients="steps=2 func=nope" 2>&1 | FileCheck %s --check-prefix=NOSTEP
// NOSTEP: mpc-accumulate-gradients: no training step @nope
// The lowering refuses a step marked for accumulation without its
// micro-step.
// RUN: not mpc-opt %s -split-input-file --mpc-plan-memory --mpc-lower-to-runtime 2>&1 | FileCheck %s --check-prefix=LOWER
// LOWER: 'func.func' op accumulates gradients over 4 micro-batches but has no micro-step with its arguments (a function marked mpc.accumulates = @train_step)

// expected-error @+1 {{'func.func' op mpc-accumulate-gradients: no loss gradient seed (the constant --mpc-autodiff marks mpc.loss_seed); run it after --mpc-autodiff, before --mpc-optimizer and canonicalization}}
func.func @train_step(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op mpc-accumulate-gradients: no result is marked mpc.grad_of; run --mpc-autodiff first, and --mpc-optimizer after this pass}}
func.func @train_step(%x: tensor<f32>) -> tensor<f32> {
  %seed = mpc.constant {mpc.loss_seed} dense<1.0> : tensor<f32>
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{mpc-accumulate-gradients: a symbol @train_step_accumulate already exists}}
module {
  ml_program.global private mutable @w(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
  func.func @train_step(%x: tensor<f32>) -> (tensor<f32>, tensor<4xf32> {mpc.grad_of = @w}) {
    %seed = mpc.constant {mpc.loss_seed} dense<1.0> : tensor<f32>
    %g = mpc.constant dense<1.0> : tensor<4xf32>
    return %x, %g : tensor<f32>, tensor<4xf32>
  }
  func.func @train_step_accumulate() {
    return
  }
}

// -----

// expected-error @+1 {{mpc-accumulate-gradients: a symbol @w_grad_accum already exists}}
module {
  ml_program.global private mutable @w(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
  ml_program.global private mutable @w_grad_accum(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
  func.func @train_step(%x: tensor<f32>) -> (tensor<f32>, tensor<4xf32> {mpc.grad_of = @w}) {
    %seed = mpc.constant {mpc.loss_seed} dense<1.0> : tensor<f32>
    %g = mpc.constant dense<1.0> : tensor<4xf32>
    return %x, %g : tensor<f32>, tensor<4xf32>
  }
}

// -----

module {
  ml_program.global private mutable @w(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
  // expected-error @+1 {{'func.func' op mpc-accumulate-gradients: the first result must be the scalar loss}}
  func.func @train_step(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32> {mpc.grad_of = @w}) {
    %seed = mpc.constant {mpc.loss_seed} dense<1.0> : tensor<f32>
    %g = mpc.constant dense<1.0> : tensor<4xf32>
    return %x, %g : tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// (Here for the lowering's error, LOWER above.)
// expected-error @+1 {{no loss gradient seed}}
func.func @train_step(%x: tensor<f32>) -> tensor<f32> attributes {mpc.accumulate_steps = 4 : i64} {
  return %x : tensor<f32>
}
