// At O0 nothing runs in low precision: plain BCE is fine.
// RUN: mpc-opt %s --mpc-assign-precision="level=O0" | FileCheck %s
// CHECK: mpc.binary_cross_entropy
func.func @bce(%p: tensor<8xf32>, %t: tensor<8xf32>) -> tensor<f32> {
  %0 = mpc.binary_cross_entropy %p, %t : tensor<8xf32>, tensor<8xf32>
  return %0 : tensor<f32>
}
