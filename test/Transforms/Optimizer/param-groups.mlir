// Parameter groups of --mpc-optimizer: no weight decay on the parameters a
// no-decay pattern matches, a learning-rate factor per lr-groups pattern
// (the first match wins), the default group for the rest.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=adamw lr=0.01 weight-decay=0.1 no-decay=*bias,*norm* lr-groups=embed*:0.5,*:2" | FileCheck %s
// CHECK-DAG: ml_program.global private @train_step_lr_group1(dense<5.000000e-03> : tensor<f32>)
// CHECK-DAG: ml_program.global private @train_step_lr_group2(dense<2.000000e-02> : tensor<f32>)
// CHECK-NOT: @train_step_lr(
// CHECK: %[[G2:.*]] = ml_program.global_load @train_step_lr_group2
// CHECK: mpc.adam_update %fc_weight{{.*}} lr(%[[G2]]) {{.*}}{decoupled, weight_decay = 1.000000e-01 : f64}
// CHECK: mpc.adam_update %fc_bias{{.*}} lr(%[[G2]]) {{.*}}{decoupled}
// CHECK: mpc.adam_update %ln_norm_gamma{{.*}} lr(%[[G2]]) {{.*}}{decoupled}
// CHECK: %[[G1:.*]] = ml_program.global_load @train_step_lr_group1
// CHECK: mpc.adam_update %embed_weight{{.*}} lr(%[[G1]]) {{.*}}{decoupled, weight_decay = 1.000000e-01 : f64}

// With a schedule each group's schedule is scaled (base and floor), as
// PyTorch's schedulers scale each group's initial rate.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer="kind=sgd lr=0.4 schedule=cosine warmup-steps=2 total-steps=10 min-lr=0.04 lr-groups=embed*:0.25" | FileCheck %s --check-prefix=SCHED
// SCHED: %[[S:.*]] = mpc.lr_schedule %{{.*}} {base = 4.000000e-01 : f64, kind = "cosine", min_lr = 4.000000e-02 : f64, total = 10 : i64, warmup = 2 : i64}
// SCHED: mpc.sgd_update %fc_weight{{.*}} lr(%[[S]])
// SCHED: %[[E:.*]] = mpc.lr_schedule %{{.*}} {base = 1.000000e-01 : f64, kind = "cosine", min_lr = 1.000000e-02 : f64, total = 10 : i64, warmup = 2 : i64}
// SCHED: mpc.sgd_update %embed_weight{{.*}} lr(%[[E]])

// What is refused: a pattern that matches nothing (a typo would silently
// decay everything), an entry without a factor, a bad factor or glob.
// RUN: not mpc-opt %s --mpc-autodiff --mpc-optimizer="no-decay=*bais" 2>&1 | FileCheck %s --check-prefix=NOMATCH
// NOMATCH: error: mpc-optimizer: no-decay pattern '*bais' matches no parameter (parameters: fc_weight, fc_bias, ln_norm_gamma, embed_weight)
// RUN: not mpc-opt %s --mpc-autodiff --mpc-optimizer="lr-groups=head*:2" 2>&1 | FileCheck %s --check-prefix=NOMATCH2
// NOMATCH2: error: mpc-optimizer: lr-groups pattern 'head*' matches no parameter
// RUN: not mpc-opt %s --mpc-autodiff --mpc-optimizer="lr-groups=embed*" 2>&1 | FileCheck %s --check-prefix=FORMAT
// FORMAT: error: mpc-optimizer: lr-groups entry 'embed*' is not PATTERN:FACTOR with a finite factor >= 0 (e.g. embed*:0.1)
// RUN: not mpc-opt %s --mpc-autodiff --mpc-optimizer="lr-groups=embed*:-1" 2>&1 | FileCheck %s --check-prefix=NEG
// NEG: error: mpc-optimizer: lr-groups entry 'embed*:-1' is not PATTERN:FACTOR
// RUN: not mpc-opt %s --mpc-autodiff --mpc-optimizer="lr-groups=embed*:x" 2>&1 | FileCheck %s --check-prefix=NAN
// NAN: error: mpc-optimizer: lr-groups entry 'embed*:x' is not PATTERN:FACTOR
// RUN: not mpc-opt %s --mpc-autodiff --mpc-optimizer="no-decay=[bias" 2>&1 | FileCheck %s --check-prefix=GLOB
// GLOB: error: mpc-optimizer: no-decay pattern '[bias' is not a glob pattern: invalid glob pattern, unmatched '['

ml_program.global private mutable @fc_weight(#mpc.init<xavier_uniform>) : tensor<16x8xf32>
ml_program.global private mutable @fc_bias(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @ln_norm_gamma(#mpc.init<ones>) : tensor<8xf32>
ml_program.global private mutable @embed_weight(#mpc.init<xavier_uniform>) : tensor<16x16xf32>

func.func @loss(%x: tensor<4x16xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %e = ml_program.global_load @embed_weight : tensor<16x16xf32>
  %w = ml_program.global_load @fc_weight : tensor<16x8xf32>
  %b = ml_program.global_load @fc_bias : tensor<8xf32>
  %g = ml_program.global_load @ln_norm_gamma : tensor<8xf32>
  %h = mpc.matmul %x, %e : tensor<4x16xf32>, tensor<16x16xf32>
  %0 = mpc.matmul %h, %w : tensor<4x16xf32>, tensor<16x8xf32>
  %1 = mpc.add %0, %b : tensor<4x8xf32>, tensor<8xf32>
  %2 = mpc.mul %1, %g : tensor<4x8xf32>, tensor<8xf32>
  %l = mpc.cross_entropy %2, %y : tensor<4x8xf32>, tensor<4xi32>
  return %l : tensor<f32>
}
