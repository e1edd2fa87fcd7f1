// What --mpc-data-parallel refuses.
// RUN: mpc-opt %s -split-input-file --mpc-data-parallel -verify-diagnostics
// RUN: not mpc-opt %s -split-input-file --mpc-data-parallel=bucket-bytes=0 2>&1 | FileCheck %s --check-prefix=BUCKET
// BUCKET: mpc-data-parallel: option bucket-bytes must be a finite number >= 1 and <= 1.09951e+12, got 0
// RUN: not mpc-opt %s -split-input-file --mpc-data-parallel=bf16-reduce=f16 2>&1 | FileCheck %s --check-prefix=BF16
// BF16: mpc-data-parallel: option bf16-reduce must be f32 or bf16, got 'f16'
// RUN: not mpc-opt %s -split-input-file --mpc-data-parallel=func=nope 2>&1 | FileCheck %s --check-prefix=NOSTEP
// NOSTEP: mpc-data-parallel: no training step @nope
// Run twice, the pass says so.
// RUN: not mpc-opt %S/data-parallel.mlir --mpc-autodiff --mpc-optimizer --mpc-data-parallel --mpc-data-parallel 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: 'func.func' op mpc-data-parallel: the step already reduces its gradients (the pass ran twice)
// After loss scaling (the seed is gone), it says where it belongs.
// RUN: not mpc-opt %S/data-parallel.mlir --mpc-autodiff --mpc-optimizer --mpc-loss-scaling=mode=dynamic --mpc-data-parallel 2>&1 | FileCheck %s --check-prefix=ORDER
// ORDER: mpc-data-parallel: no loss gradient seed (the constant --mpc-autodiff marks mpc.loss_seed); run this pass before --mpc-loss-scaling and canonicalization

// expected-error @+1 {{'func.func' op mpc-data-parallel: no optimizer update reads a gradient; run --mpc-optimizer first}}
func.func @train_step(%x: tensor<f32>) -> tensor<f32> {
  %seed = mpc.constant {mpc.loss_seed} dense<1.0> : tensor<f32>
  return %x : tensor<f32>
}

// -----

ml_program.global private mutable @w(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
ml_program.global private @lr(dense<0.1> : tensor<f32>) : tensor<f32>
// expected-error @+1 {{'func.func' op mpc-data-parallel: no loss gradient seed}}
func.func @train_step(%g: tensor<4xf32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<4xf32>
  %lr = ml_program.global_load @lr : tensor<f32>
  %d = mpc.neg %g : tensor<4xf32>
  %new = mpc.sgd_update %w, %d lr(%lr) : tensor<4xf32>, tensor<4xf32>
  ml_program.global_store @w = %new : tensor<4xf32>
  %s = mpc.reduce_sum %g {dims = array<i64: 0>} : tensor<4xf32>
  return %s : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op mpc-data-parallel: the accumulation micro-step is missing}}
func.func @train_step(%x: tensor<f32>) -> tensor<f32> attributes {mpc.accumulate_steps = 2 : i64} {
  return %x : tensor<f32>
}

// -----

ml_program.global private mutable @w(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
ml_program.global private @lr(dense<0.1> : tensor<f32>) : tensor<f32>
func.func @train_step(%g: tensor<4xf32>) -> tensor<f32> attributes {mpc.accumulate_steps = 2 : i64} {
  %seed = mpc.constant {mpc.loss_seed} dense<0.5> : tensor<f32>
  %w = ml_program.global_load @w : tensor<4xf32>
  %lr = ml_program.global_load @lr : tensor<f32>
  %d = mpc.mul %g, %seed : tensor<4xf32>, tensor<f32>
  %new = mpc.sgd_update %w, %d lr(%lr) : tensor<4xf32>, tensor<4xf32>
  ml_program.global_store @w = %new : tensor<4xf32>
  return %seed : tensor<f32>
}
// expected-error @+1 {{'func.func' op mpc-data-parallel: no loss gradient seed in the micro-step}}
func.func @train_step_accumulate(%g: tensor<4xf32>) -> tensor<f32> attributes {mpc.accumulates = @train_step} {
  %s = mpc.reduce_sum %g {dims = array<i64: 0>} : tensor<4xf32>
  return %s : tensor<f32>
}

// -----

// A step of two blocks.
ml_program.global private mutable @w(#mpc.init<zeros>) : tensor<4xf32>
ml_program.global private @lr(dense<0.1> : tensor<f32>) : tensor<f32>

// expected-error @+1 {{'func.func' op mpc-data-parallel: the step must have a single block}}
func.func @train_step(%g: tensor<4xf32>) -> tensor<f32> {
  %seed = mpc.constant {mpc.loss_seed} dense<1.0> : tensor<f32>
  %w = ml_program.global_load @w : tensor<4xf32>
  %lr = ml_program.global_load @lr : tensor<f32>
  %0 = mpc.sgd_update %w, %g lr(%lr) : tensor<4xf32>, tensor<4xf32>
  ml_program.global_store @w = %0 : tensor<4xf32>
  cf.br ^bb1
^bb1:
  return %seed : tensor<f32>
}
