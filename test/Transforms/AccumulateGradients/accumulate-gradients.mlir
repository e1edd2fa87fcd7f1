// --mpc-accumulate-gradients between --mpc-autodiff and --mpc-optimizer.
// RUN: mpc-opt %s --mpc-autodiff --mpc-accumulate-gradients=steps=4 | FileCheck %s
// RUN: mpc-opt %s --mpc-autodiff --mpc-accumulate-gradients=steps=4 --mpc-optimizer --mpc-loss-scaling=mode=dynamic | FileCheck %s --check-prefix=SCALED
// RUN: mpc-opt %s --mpc-autodiff --mpc-accumulate-gradients=steps=4 --mpc-optimizer --mpc-assign-precision="level=O2 alignment-remarks=false" | FileCheck %s --check-prefix=O2
// RUN: mpc-opt %s --mpc-autodiff --mpc-accumulate-gradients=steps=4 --mpc-optimizer --mpc-assign-precision="level=O3 alignment-remarks=false" 2>/dev/null | FileCheck %s --check-prefix=O3
// RUN: mpc-opt %s --mpc-autodiff --mpc-accumulate-gradients=steps=4 | FileCheck %s --check-prefix=ORDER
// steps=1 (the default) changes nothing.
// RUN: mpc-opt %s --mpc-autodiff --mpc-accumulate-gradients | FileCheck %s --check-prefix=ONE
// The named pipeline forwards accumulate=K.
// RUN: mpc-opt %s --mpc-amp-pipeline="level=O2 accumulate=2" | FileCheck %s --check-prefix=PIPE

// f32 accumulators beside their parameters, zero at the start; the loss's.
// CHECK-DAG: ml_program.global private mutable @train_step_loss_accum(dense<0.000000e+00> : tensor<f32>) : tensor<f32>
// CHECK-DAG: ml_program.global private mutable @w_grad_accum(#mpc.init<zeros>) : tensor<16x8xf32> {mpc.grad_accumulator = @w}
// CHECK-DAG: ml_program.global private mutable @b_grad_accum(#mpc.init<zeros>) : tensor<8xf32> {mpc.grad_accumulator = @b}
// Declared together after the other globals (the step's resets are then
// one run of the state), in the order of the gradients, then the loss's.
// ORDER: ml_program.global private mutable @w(
// ORDER-NEXT: ml_program.global private mutable @b(
// ORDER-NEXT: ml_program.global private mutable @w_grad_accum(
// ORDER-NEXT: ml_program.global private mutable @b_grad_accum(
// ORDER-NEXT: ml_program.global private mutable @train_step_loss_accum(
// The step: backward from 1/K; its gradients plus the accumulators' go to
// the results; the accumulators are zeroed; the result is the mean loss.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: attributes {mpc.accumulate_steps = 4 : i64}
// CHECK: %[[SEED:.*]] = mpc.constant {mpc.loss_seed} dense<2.500000e-01> : tensor<f32>
// CHECK: mpc.cross_entropy_backward %[[SEED]]
// CHECK: %[[WACC:.*]] = ml_program.global_load @w_grad_accum : tensor<16x8xf32>
// CHECK: %[[WSUM:.*]] = mpc.add %[[WACC]], %{{.*}} {mpc.precision = "fp32"}
// CHECK: %[[BACC:.*]] = ml_program.global_load @b_grad_accum : tensor<8xf32>
// CHECK: %[[BSUM:.*]] = mpc.add %[[BACC]], %{{.*}} {mpc.precision = "fp32"}
// CHECK: %[[LACC:.*]] = ml_program.global_load @train_step_loss_accum : tensor<f32>
// CHECK: %[[TOTAL:.*]] = mpc.add %[[LACC]], %{{.*}} {mpc.precision = "fp32"}
// CHECK: %[[QUARTER:.*]] = mpc.constant dense<2.500000e-01> : tensor<f32>
// CHECK: %[[MEAN:.*]] = mpc.mul %[[TOTAL]], %[[QUARTER]] {mpc.precision = "fp32"}
// CHECK: %[[Z1:.*]] = mpc.constant dense<0.000000e+00> : tensor<16x8xf32>
// CHECK: ml_program.global_store @w_grad_accum = %[[Z1]]
// CHECK: ml_program.global_store @b_grad_accum =
// CHECK: ml_program.global_store @train_step_loss_accum =
// CHECK: return %[[MEAN]], %[[WSUM]], %[[BSUM]] : tensor<f32>, tensor<16x8xf32>, tensor<8xf32>
// The micro-step: the same backward from 1/K, each gradient added to its
// accumulator, the micro-batch's loss added to the loss's and returned.
// CHECK-LABEL: func.func @train_step_accumulate(
// CHECK-SAME: -> (tensor<f32> {mpc.name = "loss"}) attributes {mpc.accumulates = @train_step}
// CHECK: %[[LOSS:.*]] = mpc.cross_entropy %
// CHECK: %[[MSEED:.*]] = mpc.constant {mpc.loss_seed} dense<2.500000e-01> : tensor<f32>
// CHECK: mpc.cross_entropy_backward %[[MSEED]]
// CHECK: %[[A:.*]] = ml_program.global_load @w_grad_accum
// CHECK: %[[S:.*]] = mpc.add %[[A]], %{{.*}} {mpc.precision = "fp32"}
// CHECK: ml_program.global_store @w_grad_accum = %[[S]]
// CHECK: ml_program.global_store @b_grad_accum =
// CHECK: %[[L:.*]] = ml_program.global_load @train_step_loss_accum
// CHECK: %[[LS:.*]] = mpc.add %[[L]], %[[LOSS]] {mpc.precision = "fp32"}
// CHECK: ml_program.global_store @train_step_loss_accum = %[[LS]]
// CHECK: return %[[LOSS]] : tensor<f32>

// Loss scaling starts both backward passes from scale * 1/K; the step's one
// check reads the accumulated gradients.
// SCALED-LABEL: func.func @train_step(
// SCALED: %[[SCALE:.*]] = ml_program.global_load @loss_scale
// SCALED: %[[K:.*]] = mpc.constant dense<2.500000e-01> : tensor<f32>
// SCALED: %[[SEED:.*]] = mpc.mul %[[SCALE]], %[[K]]
// SCALED: mpc.cross_entropy_backward %[[SEED]]
// SCALED: %[[WSUM:.*]] = mpc.add %{{.*}}, %{{.*}} {mpc.precision = "fp32"}
// SCALED: %[[BSUM:.*]] = mpc.add %{{.*}}, %{{.*}} {mpc.precision = "fp32"}
// SCALED: mpc.unscale_and_check %[[SCALE]], %[[WSUM]], %[[BSUM]]
// SCALED: mpc.update_loss_scale
// SCALED-LABEL: func.func @train_step_accumulate(
// SCALED: %[[MSCALE:.*]] = ml_program.global_load @loss_scale
// SCALED: %[[MK:.*]] = mpc.constant dense<2.500000e-01> : tensor<f32>
// SCALED: %[[MSEED:.*]] = mpc.mul %[[MSCALE]], %[[MK]]
// SCALED: mpc.cross_entropy_backward %[[MSEED]]
// SCALED-NOT: unscale_and_check
// SCALED-NOT: update_loss_scale
// SCALED-NOT: _update
// SCALED: return

// At O2 the accumulators get no low-precision copies and the sums stay
// f32; the update reads the f32 sum.
// O2-NOT: @w_grad_accum_f16
// O2-LABEL: func.func @train_step(
// O2: %[[WSUM:.*]] = mpc.add %{{.*}}, %{{.*}} {mpc.precision = "fp32"} : tensor<16x8xf32>, tensor<16x8xf32>
// O2: mpc.sgd_update %{{.*}}, %[[WSUM]] {{.*}} copy(f16) : tensor<16x8xf32>, tensor<16x8xf32>
// O2-LABEL: func.func @train_step_accumulate(
// O2: %[[G:.*]] = mpc.cast %{{.*}} : tensor<16x8xf16> -> tensor<16x8xf32>
// O2: mpc.add %{{.*}}, %[[G]] {mpc.precision = "fp32"} : tensor<16x8xf32>, tensor<16x8xf32>

// At O3 the parameters are f16, the accumulators f32.
// O3-DAG: ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<16x8xf16>
// O3-DAG: ml_program.global private mutable @w_grad_accum(#mpc.init<zeros>) : tensor<16x8xf32>
// O3: mpc.sgd_update {{.*}} : tensor<16x8xf16>, tensor<16x8xf32>

// ONE-NOT: _accum
// ONE-NOT: train_step_accumulate

// PIPE: func.func @train_step(%{{.*}}) -> (tensor<f32> {mpc.name = "loss"}) attributes {mpc.accumulate_steps = 2 : i64}
// PIPE: func.func @train_step_accumulate(

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
