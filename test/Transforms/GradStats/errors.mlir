// What --mpc-grad-stats refuses.
// RUN: mpc-opt %s -split-input-file --mpc-grad-stats -verify-diagnostics

// expected-error @+1 {{mpc-grad-stats: no training step @train_step}}
module {
}

// -----

// expected-error @+1 {{'func.func' op mpc-grad-stats: no optimizer update whose gradient to inspect; run --mpc-optimizer first}}
func.func @train_step(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{mpc-grad-stats: a symbol @grad_stats already exists}}
module {
  ml_program.global private @grad_stats(dense<0> : tensor<4xi64>) : tensor<4xi64>
  func.func @train_step(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

// -----

ml_program.global private mutable @w(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
ml_program.global private mutable @v(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
func.func @train_step(%g: tensor<4xf32>, %lr: tensor<f32>) {
  %w = ml_program.global_load @w : tensor<4xf32>
  %0 = mpc.sgd_update %w, %g lr(%lr) : tensor<4xf32>, tensor<4xf32>
  ml_program.global_store @w = %0 : tensor<4xf32>
  %v = ml_program.global_load @v : tensor<4xf32>
  %g2 = mpc.mul %g, %0 : tensor<4xf32>, tensor<4xf32>
  // expected-error @+1 {{'mpc.sgd_update' op mpc-grad-stats: its gradient is computed after the first optimizer update; all gradients must come first}}
  %1 = mpc.sgd_update %v, %g2 lr(%lr) : tensor<4xf32>, tensor<4xf32>
  ml_program.global_store @v = %1 : tensor<4xf32>
  return
}
