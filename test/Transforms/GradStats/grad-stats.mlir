// --mpc-grad-stats: one mpc.grad_stats over every gradient the optimizer
// updates read, before the first update, stored to @grad_stats.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=momentum" --mpc-loss-scaling=mode=dynamic --mpc-grad-stats | FileCheck %s
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-grad-stats | FileCheck %s --check-prefix=NOSCALE
// RUN: mpc-opt %s --mpc-autodiff="name=step" --mpc-optimizer="func=step kind=adam" --mpc-assign-precision="level=O2 dtype=f16 alignment-remarks=false" --mpc-loss-scaling="func=step" --mpc-grad-stats="func=step" | FileCheck %s --check-prefix=O2
// RUN: mpc-opt %s --mpc-amp-pipeline="level=O2 dtype=f16 grad-stats=true" | FileCheck %s --check-prefix=PIPE
// RUN: mpc-opt %s --mpc-amp-pipeline="level=O2 dtype=f16" | FileCheck %s --check-prefix=NOPIPE

// With loss scaling, the scale is the one the gradients are divided by:
// the scale loaded at the start of the step, not the updated one.
// CHECK: ml_program.global private mutable @grad_stats(dense<0> : tensor<4xi64>) : tensor<4xi64>
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[S:.*]] = ml_program.global_load @loss_scale : tensor<f32>
// CHECK: %[[DB:.*]] = mpc.reduce_sum
// CHECK: %[[DW:.*]] = mpc.matmul %arg0
// CHECK: %[[ST:.*]] = mpc.grad_stats %[[S]], %[[DW]], %[[DB]] : tensor<16x8xf32>, tensor<8xf32>
// CHECK-NEXT: ml_program.global_store @grad_stats = %[[ST]] : tensor<4xi64>
// CHECK-NEXT: mpc.unscale_and_check %[[S]], %[[DW]], %[[DB]]
// CHECK: mpc.sgd_update
// CHECK: mpc.update_loss_scale

// Without loss scaling the scale is 1.
// NOSCALE-LABEL: func.func @train_step(
// NOSCALE: %[[ONE:.*]] = mpc.constant dense<1.000000e+00> : tensor<f32>
// NOSCALE-NEXT: %[[ST:.*]] = mpc.grad_stats %[[ONE]], %{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<8xf32>
// NOSCALE-NEXT: ml_program.global_store @grad_stats = %[[ST]]
// NOSCALE-NEXT: mpc.sgd_update

// At O2 the statistics read the gradients as computed (the weight gradient
// in f16, the bias gradient from an f32 reduction), as the updates do.
// O2-LABEL: func.func @step(
// O2: %[[S:.*]] = ml_program.global_load @loss_scale
// O2: mpc.grad_stats %[[S]], %{{.*}}, %{{.*}} : tensor<16x8xf16>, tensor<8xf32>
// O2: mpc.adam_update

// PIPE: mpc.grad_stats
// PIPE: ml_program.global_store @grad_stats
// NOPIPE-NOT: grad_stats
ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<16x8xf32>
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<8xf32>

func.func @loss(%x: tensor<4x16xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<16x8xf32>
  %b = ml_program.global_load @b : tensor<8xf32>
  %0 = mpc.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32>
  %1 = mpc.add %0, %b : tensor<4x8xf32>, tensor<8xf32>
  %l = mpc.cross_entropy %1, %y : tensor<4x8xf32>, tensor<4xi32>
  return %l : tensor<f32>
}
