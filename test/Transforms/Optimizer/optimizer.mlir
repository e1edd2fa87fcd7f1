// --mpc-optimizer: one update per gradient result, state globals named
// after the parameter, the gradients dropped from the results.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=momentum lr=0.05 momentum=0.8 nesterov=true weight-decay=0.001" | FileCheck %s
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer | FileCheck %s --check-prefix=SGD

// CHECK: ml_program.global private @train_step_lr(dense<5.000000e-02> : tensor<f32>) : tensor<f32>
// CHECK: ml_program.global private mutable @w(
// CHECK-NEXT: ml_program.global private mutable @w_momentum(#mpc.init<zeros>) : tensor<16x8xf32>
// The update takes the forward's own load of the parameter (no second
// load for CSE to merge).
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<f32> {mpc.name = "loss"})
// CHECK: %[[W:.*]] = ml_program.global_load @w : tensor<16x8xf32>
// CHECK: %[[DW:.*]] = mpc.matmul %arg0, %{{.*}} {transpose_a}
// CHECK: %[[LR:.*]] = ml_program.global_load @train_step_lr : tensor<f32>
// CHECK-NOT: ml_program.global_load @w :
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
// AdamW: moments named after the parameter, one step counter incremented
// and stored before the updates, which read the new count (t = 1 first).
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=adamw lr=0.001 beta2=0.99 eps=1e-6 weight-decay=0.01 bias-correction=false" | FileCheck %s --check-prefix=ADAM
// Every option given, the other kinds' and schedules' at their defaults
// (as a printed pipeline gives them): the same step.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=adamw lr=0.001 beta2=0.99 eps=1e-6 weight-decay=0.01 bias-correction=false momentum=0.9 nesterov=false adam-w-mode=true schedule=constant warmup-steps=0 total-steps=0 min-lr=0 gamma=0.1 step-size=0 pct-start=0.3 div-factor=25 final-div-factor=1e4 three-phase=false" | FileCheck %s --check-prefix=ADAM
// ADAM: ml_program.global private mutable @train_step_step(dense<0> : tensor<i32>) : tensor<i32>
// ADAM: ml_program.global private mutable @w(
// ADAM-NEXT: ml_program.global private mutable @w_exp_avg_sq(#mpc.init<zeros>) : tensor<16x8xf32>
// ADAM-NEXT: ml_program.global private mutable @w_exp_avg(#mpc.init<zeros>) : tensor<16x8xf32>
// ADAM-LABEL: func.func @train_step(
// ADAM: %[[OLD:.*]] = ml_program.global_load @train_step_step : tensor<i32>
// ADAM: %[[T:.*]] = mpc.increment %[[OLD]] : tensor<i32>
// ADAM: ml_program.global_store @train_step_step = %[[T]] : tensor<i32>
// ADAM: %[[P:.*]], %[[M:.*]], %[[V:.*]] = mpc.adam_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lr(%{{.*}}) step(%[[T]]) {beta2 = 0.98999999999999999 : f64, bias_correction = false, decoupled, eps = 9.9999999999999995E-7 : f64, weight_decay = 1.000000e-02 : f64}
// ADAM: ml_program.global_store @w = %[[P]]
// ADAM: ml_program.global_store @w_exp_avg = %[[M]]
// ADAM: ml_program.global_store @w_exp_avg_sq = %[[V]]
// A schedule: the rate comes from mpc.lr_schedule at the new step count
// (no learning-rate global).
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=sgd lr=0.5 schedule=cosine warmup-steps=10 total-steps=100 min-lr=0.001" | FileCheck %s --check-prefix=SCHED
// SCHED-NOT: @train_step_lr(
// SCHED-NOT: @train_step_step
// SCHED: ml_program.global private mutable @train_step_lr_step(dense<0> : tensor<i32>)
// SCHED: %[[T:.*]] = mpc.increment %{{.*}} {mpc.advances_on_skip}
// SCHED: %[[LR:.*]] = mpc.lr_schedule %[[T]] {base = 5.000000e-01 : f64, kind = "cosine", min_lr = 1.000000e-03 : f64, total = 100 : i64, warmup = 10 : i64}
// SCHED: mpc.sgd_update %{{.*}}, %{{.*}} lr(%[[LR]])
// Apex's FusedLAMB: Adam's update op with the trust ratio, decoupled decay by default
// (Apex's adam_w_mode), L2 with adam-w-mode=false.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=lamb lr=0.01 weight-decay=0.01" | FileCheck %s --check-prefix=LAMBW
// LAMBW: mpc.adam_update {{.*}} {decoupled, lamb, weight_decay = 1.000000e-02 : f64}
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=lamb adam-w-mode=false" | FileCheck %s --check-prefix=LAMBL2
// LAMBL2: mpc.adam_update {{.*}} {lamb}
// PyTorch's schedulers. With Adam, two counters: Adam's and the schedule's.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=adam lr=0.01 schedule=one-cycle total-steps=100 pct-start=0.25 div-factor=10 final-div-factor=100 three-phase=true" | FileCheck %s --check-prefix=CYCLE
// CYCLE-DAG: @train_step_step(dense<0> : tensor<i32>)
// CYCLE-DAG: @train_step_lr_step(dense<0> : tensor<i32>)
// CYCLE: %[[T:.*]] = mpc.increment %train_step_step : tensor<i32>
// CYCLE: %[[S:.*]] = mpc.increment %train_step_lr_step {mpc.advances_on_skip}
// CYCLE: %[[LR:.*]] = mpc.lr_schedule %[[S]] {base = 1.000000e-02 : f64, div_factor = 1.000000e+01 : f64, final_div_factor = 1.000000e+02 : f64, kind = "one_cycle", pct_start = 2.500000e-01 : f64, three_phase = true, total = 100 : i64}
// CYCLE: mpc.adam_update {{.*}} lr(%[[LR]]) step(%[[T]])
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=sgd lr=0.1 schedule=step step-size=30 gamma=0.5" | FileCheck %s --check-prefix=STEPLR
// STEPLR: mpc.lr_schedule %{{.*}} {base = 1.000000e-01 : f64, gamma = 5.000000e-01 : f64, kind = "step", step_size = 30 : i64}
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=sgd lr=0.1 schedule=exponential gamma=0.75 schedule-on-skip=hold" | FileCheck %s --check-prefix=EXPLR
// EXPLR: %[[S:.*]] = mpc.increment %train_step_lr_step : tensor<i32>
// EXPLR: mpc.lr_schedule %[[S]] {base = 1.000000e-01 : f64, gamma = 7.500000e-01 : f64, kind = "exponential"}
ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<16x8xf32>

func.func @loss(%x: tensor<4x16xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<16x8xf32>
  %0 = mpc.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32>
  %l = mpc.cross_entropy %0, %y : tensor<4x8xf32>, tensor<4xi32>
  return %l : tensor<f32>
}
