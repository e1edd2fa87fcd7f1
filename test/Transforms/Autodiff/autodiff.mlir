// --mpc-autodiff: the training step returns the loss and the gradient of
// every trainable global, built from each op's VJP.
// RUN: mpc-opt %s -split-input-file --mpc-autodiff | FileCheck %s

ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<16x8xf32>
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<8xf32>

// Matmul gradients are matmuls with transposes; the bias gradient undoes
// the broadcast with a sum over the batch; the input gets none (dead code
// removed); the labels get none.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<f32> {mpc.name = "loss"}, tensor<16x8xf32> {mpc.grad_of = @w}, tensor<8xf32> {mpc.grad_of = @b})
// CHECK: %[[LOGITS:.*]] = mpc.add
// CHECK: %[[LOSS:.*]] = mpc.cross_entropy %[[LOGITS]], %arg1
// CHECK: %[[ONE:.*]] = mpc.constant {mpc.loss_seed} dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DL:.*]] = mpc.cross_entropy_backward %[[ONE]], %[[LOGITS]], %arg1
// CHECK: %[[DB:.*]] = mpc.reduce_sum %[[DL]] {dims = array<i64: 0>} : tensor<4x8xf32>
// CHECK-NOT: transpose_b
// CHECK: %[[DW:.*]] = mpc.matmul %arg0, %[[DL]] {transpose_a} : tensor<4x16xf32>, tensor<4x8xf32>
// CHECK: return %[[LOSS]], %[[DW]], %[[DB]]
// The loss function is unchanged.
// CHECK-LABEL: func.func @loss(
// CHECK: return %{{.*}} : tensor<f32>
func.func @loss(%x: tensor<4x16xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<16x8xf32>
  %b = ml_program.global_load @b : tensor<8xf32>
  %0 = mpc.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32>
  %1 = mpc.add %0, %b : tensor<4x8xf32>, tensor<8xf32>
  %l = mpc.cross_entropy %1, %y : tensor<4x8xf32>, tensor<4xi32>
  return %l : tensor<f32>
}

// -----

// A value used twice gets the sum of both gradients; mean divides by the
// count; mul uses the other operand.
ml_program.global private mutable @v(#mpc.init<ones>) : tensor<8xf32>

// CHECK-LABEL: func.func @train_step(
// CHECK: %[[V:.*]] = ml_program.global_load @v
// CHECK: %[[SQ:.*]] = mpc.mul %[[V]], %[[V]]
// CHECK: %[[M:.*]] = mpc.reduce_mean %[[SQ]] {dims = array<i64: 0>}
// CHECK: %[[ONE:.*]] = mpc.constant {mpc.loss_seed} dense<1.000000e+00> : tensor<f32>
// CHECK: %[[EIGHTH:.*]] = mpc.constant dense<1.250000e-01> : tensor<f32>
// CHECK: %[[G:.*]] = mpc.mul %[[ONE]], %[[EIGHTH]]
// CHECK: %[[R:.*]] = mpc.reshape %[[G]] : tensor<f32> -> tensor<1xf32>
// CHECK: %[[B:.*]] = mpc.broadcast_to %[[R]] : tensor<1xf32> -> tensor<8xf32>
// CHECK: %[[A1:.*]] = mpc.mul %[[B]], %[[V]]
// CHECK: %[[A2:.*]] = mpc.mul %[[B]], %[[V]]
// CHECK: %[[SUM:.*]] = mpc.add %[[A1]], %[[A2]]
// CHECK: return %[[M]], %[[SUM]]
func.func @loss() -> tensor<f32> {
  %v = ml_program.global_load @v : tensor<8xf32>
  %0 = mpc.mul %v, %v : tensor<8xf32>, tensor<8xf32>
  %1 = mpc.reduce_mean %0 {dims = array<i64: 0>} : tensor<8xf32>
  return %1 : tensor<f32>
}

// -----

// Not trainable: globals the loss writes (running statistics), frozen
// globals, immutable globals.
ml_program.global private mutable @g(#mpc.init<ones>) : tensor<4xf32>
ml_program.global private mutable @beta(#mpc.init<zeros>) : tensor<4xf32> {mpc.frozen}
ml_program.global private mutable @rm(#mpc.init<zeros>) : tensor<4xf32>
ml_program.global private mutable @rv(#mpc.init<ones>) : tensor<4xf32>
ml_program.global private @t(dense<0.5> : tensor<2x4xf32>) : tensor<2x4xf32>

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<f32> {mpc.name = "loss"}, tensor<4xf32> {mpc.grad_of = @g})
// CHECK: %{{.*}}, %[[DG:.*]], %{{.*}} = mpc.batch_norm_backward
// CHECK: return %{{.*}}, %[[DG]]
func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
  %g = ml_program.global_load @g : tensor<4xf32>
  %beta = ml_program.global_load @beta : tensor<4xf32>
  %rm = ml_program.global_load @rm : tensor<4xf32>
  %rv = ml_program.global_load @rv : tensor<4xf32>
  %y, %nm, %nv, %sm, %si = mpc.batch_norm %x, %g, %beta, %rm, %rv : tensor<2x4xf32>, tensor<4xf32>
  ml_program.global_store @rm = %nm : tensor<4xf32>
  ml_program.global_store @rv = %nv : tensor<4xf32>
  %t = ml_program.global_load @t : tensor<2x4xf32>
  %l = mpc.mse %y, %t : tensor<2x4xf32>, tensor<2x4xf32>
  return %l : tensor<f32>
}

// -----

// Layout ops: the transpose gradient uses the inverse permutation, slices
// scatter back, concat splits.
ml_program.global private mutable @p(#mpc.init<ones>) : tensor<2x3x4xf32>

// CHECK-LABEL: func.func @train_step(
// CHECK-DAG: mpc.transpose %{{.*}} {permutation = array<i64: 2, 0, 1>} : tensor<3x4x2xf32>
// CHECK-DAG: mpc.slice %{{.*}} {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 3, 4, 2>} : tensor<3x4x4xf32>
// CHECK-DAG: mpc.slice %{{.*}} {offsets = array<i64: 0, 0, 2>, sizes = array<i64: 3, 4, 2>} : tensor<3x4x4xf32>
func.func @loss(%t: tensor<3x4x4xf32>) -> tensor<f32> {
  %p = ml_program.global_load @p : tensor<2x3x4xf32>
  %0 = mpc.transpose %p {permutation = array<i64: 1, 2, 0>} : tensor<2x3x4xf32>
  %1 = mpc.concat %0, %0 {axis = 2} : tensor<3x4x2xf32>, tensor<3x4x2xf32>
  %l = mpc.mse %1, %t : tensor<3x4x4xf32>, tensor<3x4x4xf32>
  return %l : tensor<f32>
}
