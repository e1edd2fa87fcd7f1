// What --mpc-loss-scaling refuses.
// RUN: mpc-opt %s -split-input-file --mpc-loss-scaling=mode=dynamic -verify-diagnostics
// RUN: not mpc-opt %s -split-input-file --mpc-loss-scaling=mode=sometimes 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: mpc-loss-scaling: unknown mode 'sometimes' (expected auto, dynamic, static or none)

// expected-error @+1 {{'func.func' op mpc-loss-scaling: no loss gradient seed (the constant --mpc-autodiff marks mpc.loss_seed); run it before canonicalization}}
func.func @train_step(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op mpc-loss-scaling: no optimizer update to guard; run --mpc-optimizer first}}
func.func @train_step(%x: tensor<f32>) -> tensor<f32> {
  %0 = mpc.constant {mpc.loss_seed} dense<1.0> : tensor<f32>
  %1 = mpc.mul %x, %0 : tensor<f32>, tensor<f32>
  return %1 : tensor<f32>
}

// -----

// expected-error @+1 {{mpc-loss-scaling: no training step @train_step}}
module {
}

// -----

// expected-error @+1 {{mpc-loss-scaling: a symbol @loss_scale already exists}}
module {
  ml_program.global private @loss_scale(dense<1.0> : tensor<f32>) : tensor<f32>
  ml_program.global private mutable @w(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
  func.func @train_step(%g: tensor<4xf32>, %lr: tensor<f32>) {
    %s = mpc.constant {mpc.loss_seed} dense<1.0> : tensor<f32>
    %w = ml_program.global_load @w : tensor<4xf32>
    %0 = mpc.sgd_update %w, %g lr(%lr) : tensor<4xf32>, tensor<4xf32>
    ml_program.global_store @w = %0 : tensor<4xf32>
    return
  }
}
