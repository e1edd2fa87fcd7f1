// --mpc-amp-pipeline: autodiff, optimizer, precision, loss scaling, in
// that order, from a loss function.
// RUN: mpc-opt %s --mpc-amp-pipeline="level=O2 dtype=f16 optimizer={kind=adam lr=0.001} loss-scale={mode=dynamic init-scale=4096}" 2>/dev/null | FileCheck %s
// RUN: mpc-opt %s --mpc-amp-pipeline="level=O2 dtype=bf16 name=step" 2>/dev/null | FileCheck %s --check-prefix=BF16
// An option the forwarded pass does not know is an error, not an abort.
// RUN: not mpc-opt %s --mpc-amp-pipeline="optimizer={kindx=adam}" 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: error: mpc-amp-pipeline: bad options: --mpc-optimizer{func=train_step kindx=adam}: no such option kindx

// CHECK-DAG: ml_program.global private mutable @loss_scale(dense<4.096000e+03> : tensor<f32>)
// CHECK-DAG: ml_program.global private mutable @w_f16 : tensor<16x8xf16> {mpc.master = @w}
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[S:.*]] = ml_program.global_load @loss_scale
// CHECK: mpc.matmul %{{.*}}, %{{.*}} : tensor<4x16xf16>, tensor<16x8xf16>
// CHECK: mpc.cross_entropy_backward %[[S]]
// The f16 gradient is checked, then read by the master-weight update, which
// unscales it, updates the f32 master and moments and writes the f16 copy.
// CHECK: %{{.*}}, %[[INF:.*]] = mpc.unscale_and_check %[[S]], %[[G:.*]] : tensor<16x8xf16>
// CHECK: mpc.increment %{{.*}} unless(%[[INF]])
// CHECK: %[[INV:.*]] = mpc.div %{{.*}}, %[[S]]
// CHECK: mpc.adam_update %{{.*}}, %[[G]], {{.*}} found_inf(%[[INF]]) inv_scale(%[[INV]]) copy(f16) : tensor<16x8xf32>, tensor<16x8xf16>
// CHECK: mpc.update_loss_scale

// bf16: no loss scaling by default; the step takes the given name.
// BF16-LABEL: func.func @step(
// BF16: mpc.matmul %{{.*}}, %{{.*}} : tensor<4x16xbf16>, tensor<16x8xbf16>
// BF16-NOT: unscale_and_check
// BF16: mpc.sgd_update
ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<16x8xf32>

func.func @loss(%x: tensor<4x16xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<16x8xf32>
  %0 = mpc.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32>
  %l = mpc.cross_entropy %0, %y : tensor<4x8xf32>, tensor<4xi32>
  return %l : tensor<f32>
}
