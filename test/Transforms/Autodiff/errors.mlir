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
