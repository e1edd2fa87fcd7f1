// --mpc-loss-scaling on a step built by --mpc-autodiff and --mpc-optimizer,
// in every mode.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=momentum" --mpc-loss-scaling=mode=dynamic | FileCheck %s
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=adam" --mpc-loss-scaling="mode=dynamic init-scale=1024 growth-factor=4 backoff-factor=0.25 growth-interval=100 hysteresis=3 min-scale=1 max-scale=16777216" | FileCheck %s --check-prefix=OPTS
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-loss-scaling="mode=static init-scale=128" | FileCheck %s --check-prefix=STATIC
// The scale starts within min-scale and max-scale (as Apex's loss scaler):
// max-scale=1024 alone starts it at 1024, not at the default 65536 (the
// first steps ran above the cap before); an init-scale below min-scale
// starts at min-scale.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-loss-scaling="mode=dynamic max-scale=1024" | FileCheck %s --check-prefix=CAPPED
// CAPPED: @loss_scale(dense<1.024000e+03> : tensor<f32>)
// CAPPED: mpc.update_loss_scale {{.*}}max_scale = 1.024000e+03
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-loss-scaling="mode=dynamic init-scale=2 min-scale=64" | FileCheck %s --check-prefix=FLOORED
// FLOORED: @loss_scale(dense<6.400000e+01> : tensor<f32>)
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-loss-scaling=mode=none | FileCheck %s --check-prefix=NONE
// Clipping: mpc.clip_grad_norm in the check's place, its factor into the
// updates, its norm into @grad_norm; with mode=none (here bf16-free f32)
// the check stays, over a scale of 1, with no scale state.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=adam" --mpc-loss-scaling="mode=dynamic clip-grad-norm=1.5" | FileCheck %s --check-prefix=CLIP
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-loss-scaling="mode=none clip-grad-norm=1" | FileCheck %s --check-prefix=CLIPNONE
// RUN: not mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-loss-scaling="clip-grad-norm=nan" 2>&1 | FileCheck %s --check-prefix=CLIPNAN
// CLIP-DAG: ml_program.global private mutable @grad_norm(dense<0.000000e+00> : tensor<f32>)
// CLIP-NOT: unscale_and_check
// CLIP: %[[INV:.*]], %[[NORM:.*]], %[[INF:.*]] = mpc.clip_grad_norm %loss_scale, %{{.*}} {max_norm = 1.500000e+00 : f64}
// CLIP: ml_program.global_store @grad_norm = %[[NORM]]
// CLIP: mpc.adam_update {{.*}} found_inf(%[[INF]]) inv_scale(%[[INV]])
// CLIP: mpc.update_loss_scale %{{.*}}, %{{.*}}, %{{.*}}, %[[INF]]
// CLIPNONE-NOT: @loss_scale(
// CLIPNONE: %[[ONE:.*]] = mpc.constant dense<1.000000e+00> : tensor<f32>
// CLIPNONE: %[[INV:.*]], %{{.*}}, %[[INF:.*]] = mpc.clip_grad_norm %[[ONE]]
// CLIPNONE: mpc.sgd_update {{.*}} found_inf(%[[INF]]) inv_scale(%[[INV]])
// CLIPNONE: ml_program.global_store @loss_scale_skipped = %[[INF]]
// CLIPNONE-NOT: update_loss_scale
// CLIPNAN: mpc-loss-scaling: option clip-grad-norm must be a finite number >= 0, got nan
// A schedule's counter advances on a skipped step (as a PyTorch scheduler)
// unless schedule-on-skip=hold; Adam's never does.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=adam schedule=exponential gamma=0.9" --mpc-loss-scaling=mode=dynamic | FileCheck %s --check-prefix=ADVANCE
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=adam schedule=exponential gamma=0.9 schedule-on-skip=hold" --mpc-loss-scaling=mode=dynamic | FileCheck %s --check-prefix=HOLD
// f32 and bf16 steps get no scaling by default, f16 steps dynamic scaling.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-loss-scaling | FileCheck %s --check-prefix=NONE
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-assign-precision="level=O2 dtype=bf16 alignment-remarks=false" --mpc-loss-scaling | FileCheck %s --check-prefix=NONE
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-assign-precision="level=O2 dtype=f16 alignment-remarks=false" --mpc-loss-scaling | FileCheck %s --check-prefix=O2

// CHECK-DAG: ml_program.global private mutable @loss_scale(dense<6.553600e+04> : tensor<f32>) : tensor<f32>
// CHECK-DAG: ml_program.global private mutable @loss_scale_skipped(dense<false> : tensor<i1>) : tensor<i1>
// CHECK-DAG: ml_program.global private mutable @loss_scale_growth_tracker(dense<0> : tensor<i32>) : tensor<i32>
// CHECK-DAG: ml_program.global private mutable @loss_scale_hysteresis_tracker(dense<1> : tensor<i32>) : tensor<i32>
// CHECK-DAG: ml_program.global private mutable @loss_scale_clean_steps(dense<0> : tensor<i32>) : tensor<i32>
// CHECK-LABEL: func.func @train_step(
// The backward pass starts from the scale; the loss returned is unscaled.
// CHECK: %[[S:.*]] = ml_program.global_load @loss_scale : tensor<f32>
// CHECK: %[[LOSS:.*]] = mpc.cross_entropy
// CHECK-NOT: mpc.constant dense<1.000000e+00>
// CHECK: mpc.cross_entropy_backward %[[S]], %{{.*}}, %arg1
// CHECK: %[[DW:.*]] = mpc.matmul %arg0
// One check of every gradient before the updates (no unscaled copy is
// used); each update unscales its gradient (inv_scale) and skips on
// found_inf.
// CHECK: %{{.*}}, %[[INF:.*]] = mpc.unscale_and_check %[[S]], %[[DW]] : tensor<16x8xf32>
// CHECK: %[[ONE:.*]] = mpc.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[INV:.*]] = mpc.div %[[ONE]], %[[S]]
// CHECK: %[[P:.*]], %[[M:.*]] = mpc.sgd_update %{{.*}}, %[[DW]] lr(%{{.*}}) momentum_buffer(%{{.*}}) found_inf(%[[INF]]) inv_scale(%[[INV]])
// CHECK: ml_program.global_store @loss_scale_skipped = %[[INF]]
// The clean steps, counted for the runner's loss-scale health.
// CHECK: %[[C:.*]] = ml_program.global_load @loss_scale_clean_steps
// CHECK: %[[C1:.*]] = mpc.increment %[[C]] unless(%[[INF]])
// CHECK: ml_program.global_store @loss_scale_clean_steps = %[[C1]]
// CHECK: %[[G:.*]] = ml_program.global_load @loss_scale_growth_tracker
// CHECK: %[[H:.*]] = ml_program.global_load @loss_scale_hysteresis_tracker
// CHECK: %[[NS:.*]], %[[NG:.*]], %[[NH:.*]] = mpc.update_loss_scale %[[S]], %[[G]], %[[H]], %[[INF]]{{$}}
// CHECK: ml_program.global_store @loss_scale = %[[NS]]
// CHECK: ml_program.global_store @loss_scale_growth_tracker = %[[NG]]
// CHECK: ml_program.global_store @loss_scale_hysteresis_tracker = %[[NH]]
// CHECK: ml_program.global_store @w_momentum = %[[M]]
// CHECK: return %[[LOSS]]

// OPTS-DAG: @loss_scale(dense<1.024000e+03> : tensor<f32>)
// OPTS-DAG: @loss_scale_hysteresis_tracker(dense<3> : tensor<i32>)
// Adam's step count does not advance on a skipped step: the increment moves
// after the check and takes found_inf.
// OPTS: %{{.*}}, %[[INF:.*]] = mpc.unscale_and_check
// OPTS-NEXT: %[[T:.*]] = mpc.increment %{{.*}} unless(%[[INF]]) : tensor<i32>
// OPTS-NEXT: ml_program.global_store @train_step_step = %[[T]]
// OPTS: mpc.adam_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lr(%{{.*}}) step(%[[T]]) found_inf(%[[INF]])
// OPTS: mpc.update_loss_scale %{{.*}} {backoff_factor = 2.500000e-01 : f64, growth_factor = 4.000000e+00 : f64, growth_interval = 100 : i64, hysteresis = 3 : i64, max_scale = 0x4170000000000000 : f64, min_scale = 1.000000e+00 : f64}

// A static scale: constant, overflowing steps still skipped, no update.
// STATIC: ml_program.global private @loss_scale(dense<1.280000e+02> : tensor<f32>)
// STATIC-NOT: growth_tracker
// STATIC: mpc.unscale_and_check
// STATIC: mpc.sgd_update {{.*}} found_inf(
// STATIC-NOT: mpc.update_loss_scale

// ADVANCE: %[[S:.*]] = mpc.increment %{{.*}} {mpc.advances_on_skip} : tensor<i32>
// ADVANCE-NEXT: ml_program.global_store @train_step_lr_step = %[[S]]
// ADVANCE: %{{.*}}, %[[INF:.*]] = mpc.unscale_and_check
// ADVANCE-NEXT: %[[T:.*]] = mpc.increment %{{.*}} unless(%[[INF]]) : tensor<i32>
// ADVANCE-NEXT: ml_program.global_store @train_step_step = %[[T]]
// HOLD: %{{.*}}, %[[INF:.*]] = mpc.unscale_and_check
// HOLD-DAG: mpc.increment %train_step_step unless(%[[INF]])
// HOLD-DAG: mpc.increment %train_step_lr_step unless(%[[INF]])

// NONE-NOT: loss_scale
// NONE-NOT: unscale_and_check

// At O2 f16 the check and the master-weight update read the f16 gradient.
// O2: mpc.unscale_and_check %{{.*}}, %{{.*}} : tensor<16x8xf16>
// O2: mpc.sgd_update {{.*}} inv_scale({{.*}}) : tensor<16x8xf32>, tensor<16x8xf16>
// O2: mpc.update_loss_scale
ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<16x8xf32>

func.func @loss(%x: tensor<4x16xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<16x8xf32>
  %0 = mpc.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32>
  %l = mpc.cross_entropy %0, %y : tensor<4x8xf32>, tensor<4xi32>
  return %l : tensor<f32>
}
