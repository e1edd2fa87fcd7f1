// --mpc-eval-step with a loss summed over two heads: the op marked
// mpc.eval_loss (the main head's, mpc-import-onnx --loss-output's first)
// is what evaluation reports, with its accuracy; the auxiliary head is
// not computed. The training loss function is unchanged.
// RUN: mpc-opt %s --mpc-eval-step | FileCheck %s

ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<6x5xf32>
ml_program.global private mutable @v(#mpc.init<xavier_uniform>) : tensor<6x5xf32>

func.func @loss(%x: tensor<4x6xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<6x5xf32>
  %v = ml_program.global_load @v : tensor<6x5xf32>
  %main = mpc.matmul %x, %w : tensor<4x6xf32>, tensor<6x5xf32>
  %aux = mpc.matmul %x, %v : tensor<4x6xf32>, tensor<6x5xf32>
  %a = mpc.cross_entropy %main, %y {mpc.eval_loss} : tensor<4x5xf32>, tensor<4xi32>
  %b = mpc.cross_entropy %aux, %y : tensor<4x5xf32>, tensor<4xi32>
  %k = mpc.constant dense<3.000000e-01> : tensor<f32>
  %c = mpc.mul %b, %k : tensor<f32>, tensor<f32>
  %l = mpc.add %a, %c : tensor<f32>, tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @loss(
// CHECK: mpc.cross_entropy
// CHECK: mpc.cross_entropy
// CHECK: %[[SUM:.*]] = mpc.add
// CHECK: return %[[SUM]]
// CHECK-LABEL: func.func @eval_step(
// CHECK-SAME: -> (tensor<f32> {mpc.name = "loss"}, tensor<f32> {mpc.name = "accuracy"})
// CHECK-NEXT: %[[W:.*]] = ml_program.global_load @w
// CHECK-NEXT: ml_program.global_load @v
// CHECK-NEXT: %[[M:.*]] = mpc.matmul %{{.*}}, %[[W]]
// CHECK-NEXT: %[[L:.*]] = mpc.cross_entropy %[[M]], %{{.*}} {mpc.eval_loss}
// CHECK-NEXT: %[[A:.*]] = mpc.accuracy %[[M]], %{{.*}} : tensor<4x5xf32>, tensor<4xi32>
// CHECK-NEXT: return %[[L]], %[[A]]
