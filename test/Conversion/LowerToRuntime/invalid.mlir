// What the lowering refuses, each with the op's location.
// RUN: mpc-opt %s -split-input-file --mpc-lower-to-runtime -verify-diagnostics

// expected-error @+1 {{'func.func' op has no memory plan; run --mpc-plan-memory before --mpc-lower-to-runtime}}
func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = mpc.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
