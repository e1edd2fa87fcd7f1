// A residual block, dropout + add + layer norm, whose sum is also the next
// residual (pre-norm style): fused in the forward graph, before autodiff,
// the training step gets mpc.add_layer_norm and its VJP
// mpc.add_layer_norm_backward, which takes the sum's own gradient
// (sum_grad). Under O2 both run in f16 while the parameters and statistics
// stay f32 (not cast with the other operands); the evaluation step turns
// the fused op's dropout off.
// RUN: mpc-opt %s --mpc-amp-pipeline="level=O2" | FileCheck %s
// RUN: mpc-opt %s --mpc-amp-pipeline="level=O1" | FileCheck %s --check-prefix=O1
// RUN: mpc-opt %s --mpc-amp-pipeline="level=O2 fuse=false" | FileCheck %s --check-prefix=NOFUSE
// RUN: mpc-opt %s --mpc-fuse=epilogues=false --mpc-autodiff --mpc-eval-step | FileCheck %s --check-prefix=EVAL

// CHECK-LABEL: func.func @train_step
// CHECK: %[[G:.*]] = ml_program.global_load @g : tensor<16xf32>
// CHECK: %[[B:.*]] = ml_program.global_load @b : tensor<16xf32>
// CHECK: %[[Y:.*]], %[[S:.*]], %[[M:.*]], %[[R:.*]] = mpc.add_layer_norm %{{.*}}, %{{.*}}, %[[G]], %[[B]] {dropout_p = 1.000000e-01 : f64, seed = 3 : i64} : tensor<2x8x16xf16>, tensor<16xf32>
// CHECK: mpc.add_layer_norm_backward %{{.*}}, %[[S]], %[[M]], %[[R]], %[[G]] sum_grad(%{{.*}} : tensor<2x8x16xf16>) {dropout_p = 1.000000e-01 : f64, seed = 3 : i64} : tensor<2x8x16xf16>, tensor<2x8xf32>, tensor<16xf32>
// O1-LABEL: func.func @train_step
// O1: mpc.add_layer_norm {{.*}} : tensor<2x8x16xf32>, tensor<16xf32>
// O1: mpc.add_layer_norm_backward {{.*}} : tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<16xf32>
// NOFUSE-NOT: mpc.add_layer_norm

// EVAL-LABEL: func.func @eval_step
// EVAL: mpc.add_layer_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} :
// EVAL-LABEL: func.func @train_step
// EVAL: mpc.add_layer_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {dropout_p = 1.000000e-01 : f64, seed = 3 : i64}
// EVAL: mpc.add_layer_norm_backward

ml_program.global private mutable @w(#mpc.init<xavier_uniform, seed = 1>) : tensor<16x16xf32>
ml_program.global private mutable @g(#mpc.init<ones>) : tensor<16xf32>
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<16xf32>
ml_program.global private mutable @wo(#mpc.init<xavier_uniform, seed = 2>) : tensor<16x4xf32>

func.func @loss(%x: tensor<2x8x16xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<16x16xf32>
  %h = mpc.matmul %x, %w : tensor<2x8x16xf32>, tensor<16x16xf32>
  %d, %mask = mpc.dropout %h {p = 0.1, seed = 3} : tensor<2x8x16xf32>
  %s = mpc.add %x, %d : tensor<2x8x16xf32>, tensor<2x8x16xf32>
  %g = ml_program.global_load @g : tensor<16xf32>
  %b = ml_program.global_load @b : tensor<16xf32>
  %y:3 = mpc.layer_norm %s, %g, %b : tensor<2x8x16xf32>, tensor<16xf32>
  %n = mpc.add %s, %y#0 : tensor<2x8x16xf32>, tensor<2x8x16xf32>
  %pooled = mpc.reduce_mean %n {dims = array<i64: 1>} : tensor<2x8x16xf32>
  %wo = ml_program.global_load @wo : tensor<16x4xf32>
  %logits = mpc.matmul %pooled, %wo : tensor<2x16xf32>, tensor<16x4xf32>
  %l = mpc.cross_entropy %logits, %labels : tensor<2x4xf32>, tensor<2xi32>
  return %l : tensor<f32>
}
