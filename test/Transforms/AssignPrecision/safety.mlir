// RUN: mpc-opt %s -split-input-file -verify-diagnostics --mpc-assign-precision="level=O1 alignment-remarks=false"

// Plain BCE on probabilities is refused under AMP, as PyTorch's autocast does.
func.func @bce(%p: tensor<8xf32>, %t: tensor<8xf32>) -> tensor<f32> {
  // expected-error @+1 {{'mpc.binary_cross_entropy' is unsafe to run under mixed precision: probabilities saturate in low precision; compute logits and use mpc.bce_with_logits, which combines the sigmoid with the loss}}
  %0 = mpc.binary_cross_entropy %p, %t : tensor<8xf32>, tensor<8xf32>
  return %0 : tensor<f32>
}

// -----

func.func @bce_backward(%g: tensor<f32>, %p: tensor<8xf32>, %t: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'mpc.binary_cross_entropy_backward' is unsafe to run under mixed precision}}
  %0 = mpc.binary_cross_entropy_backward %g, %p, %t : tensor<f32>, tensor<8xf32>, tensor<8xf32>
  return %0 : tensor<8xf32>
}
