// --mpc-eval-step on a batch norm that took its ReLU (--mpc-fuse): the
// evaluation step normalises with the running statistics and applies the
// ReLU in one op; the training loss function keeps the fused op.
// RUN: mpc-opt %s --mpc-eval-step | FileCheck %s

ml_program.global private mutable @g(#mpc.init<ones>) : tensor<5xf32>
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<5xf32>
ml_program.global private mutable @rm(#mpc.init<zeros>) : tensor<5xf32>
ml_program.global private mutable @rv(#mpc.init<ones>) : tensor<5xf32>

func.func @loss(%x: tensor<4x5xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %g = ml_program.global_load @g : tensor<5xf32>
  %b = ml_program.global_load @b : tensor<5xf32>
  %rm = ml_program.global_load @rm : tensor<5xf32>
  %rv = ml_program.global_load @rv : tensor<5xf32>
  %1:5 = mpc.batch_norm %x, %g, %b, %rm, %rv {activation = "relu"} : tensor<4x5xf32>, tensor<5xf32>
  ml_program.global_store @rm = %1#1 : tensor<5xf32>
  ml_program.global_store @rv = %1#2 : tensor<5xf32>
  %l = mpc.cross_entropy %1#0, %y : tensor<4x5xf32>, tensor<4xi32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @loss(
// CHECK: mpc.batch_norm {{.*}} {activation = "relu"}
// CHECK-LABEL: func.func @eval_step(
// CHECK: %[[Y:.*]] = mpc.batch_norm_inference %arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {activation = "relu"} : tensor<4x5xf32>, tensor<5xf32>
// CHECK: mpc.cross_entropy %[[Y]], %{{.*}}
// CHECK-NOT: mpc.batch_norm %
// CHECK: return
