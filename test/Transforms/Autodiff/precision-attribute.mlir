// An op kept in a precision by its mpc.precision attribute keeps its
// gradient ops there: the weight gradient's matmul carries the attribute,
// the other ops' gradients do not.
// RUN: mpc-opt %s --mpc-autodiff | FileCheck %s
// RUN: mpc-opt %s --mpc-autodiff --mpc-assign-precision="level=O1 alignment-remarks=false" | FileCheck %s --check-prefix=O1
// CHECK-LABEL: func.func @train_step
// CHECK: mpc.relu_grad %{{.*}}, %{{.*}} : tensor<4x8xf32>
// CHECK: mpc.matmul %{{.*}}, %{{.*}} {mpc.precision = "fp32", transpose_a}
// At O1 the forward and the weight-gradient matmuls stay f32.
// O1-LABEL: func.func @train_step
// O1: mpc.matmul %{{.*}}, %{{.*}} {mpc.precision = "fp32"} : tensor<4x16xf32>, tensor<16x8xf32>
// O1: mpc.matmul %{{.*}}, %{{.*}} {mpc.precision = "fp32", transpose_a} : tensor<4x16xf32>, tensor<4x8xf32>
ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<16x8xf32>
func.func @loss(%x: tensor<4x16xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<16x8xf32>
  %0 = mpc.matmul %x, %w {mpc.precision = "fp32"} : tensor<4x16xf32>, tensor<16x8xf32>
  %1 = mpc.relu %0 : tensor<4x8xf32>
  %l = mpc.cross_entropy %1, %y : tensor<4x8xf32>, tensor<4xi32>
  return %l : tensor<f32>
}
