// --mpc-optimizer: one update per gradient result, state globals named
// after the parameter, the gradients dropped from the results.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=momentum lr=0.05 momentum=0.8 nesterov=true weight-decay=0.001" | FileCheck %s
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer | FileCheck %s --check-prefix=SGD

// CHECK: ml_program.global private @train_step_lr(dense<5.000000e-02> : tensor<f32>) : tensor<f32>
// CHECK: ml_program.global private mutable @w(
// CHECK-NEXT: ml_program.global private mutable @w_momentum(#mpc.init<zeros>) : tensor<16x8xf32>
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<f32> {mpc.name = "loss"})
// CHECK: %[[DW:.*]] = mpc.matmul %arg0, %{{.*}} {transpose_a}
// CHECK: %[[LR:.*]] = ml_program.global_load @train_step_lr : tensor<f32>
// CHECK: %[[W:.*]] = ml_program.global_load @w : tensor<16x8xf32>
// CHECK: %[[M:.*]] = ml_program.global_load @w_momentum : tensor<16x8xf32>
// CHECK: %[[P:.*]], %[[NM:.*]] = mpc.sgd_update %[[W]], %[[DW]] lr(%[[LR]]) momentum_buffer(%[[M]]) {momentum = 8.000000e-01 : f64, nesterov, weight_decay = 1.000000e-03 : f64}
// CHECK: ml_program.global_store @w = %[[P]]
// CHECK: ml_program.global_store @w_momentum = %[[NM]]
// CHECK: return %{{.*}} : tensor<f32>

// Plain stochastic gradient descent (no buffer), learning rate 0.01 by
// default.
// SGD: ml_program.global private @train_step_lr(dense<0.00999999977> : tensor<f32>) : tensor<f32>
// SGD-NOT: _momentum
// SGD: %[[P:.*]] = mpc.sgd_update %{{.*}}, %{{.*}} lr(%{{.*}}) : tensor<16x8xf32>, tensor<16x8xf32>
// SGD: ml_program.global_store @w = %[[P]]
ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<16x8xf32>

func.func @loss(%x: tensor<4x16xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<16x8xf32>
  %0 = mpc.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32>
  %l = mpc.cross_entropy %0, %y : tensor<4x8xf32>, tensor<4xi32>
  return %l : tensor<f32>
}
