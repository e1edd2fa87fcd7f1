// What --mpc-loss-scaling refuses.
// RUN: mpc-opt %s -split-input-file --mpc-loss-scaling=mode=dynamic -verify-diagnostics
// RUN: not mpc-opt %s -split-input-file --mpc-loss-scaling=mode=sometimes 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: mpc-loss-scaling: unknown mode 'sometimes' (expected auto, dynamic, static or none)
// Nonsense numbers are refused, naming the option and what it may be.
// RUN: not mpc-opt %s -split-input-file --mpc-loss-scaling="init-scale=0" 2>&1 | FileCheck %s --check-prefix=INIT0
// INIT0: mpc-loss-scaling: option init-scale must be a finite number > 0, got 0
// RUN: not mpc-opt %s -split-input-file --mpc-loss-scaling="init-scale=-8" 2>&1 | FileCheck %s --check-prefix=INITNEG
// INITNEG: mpc-loss-scaling: option init-scale must be a finite number > 0, got -8
// RUN: not mpc-opt %s -split-input-file --mpc-loss-scaling="init-scale=nan" 2>&1 | FileCheck %s --check-prefix=INITNAN
// INITNAN: mpc-loss-scaling: option init-scale must be a finite number > 0, got nan
// RUN: not mpc-opt %s -split-input-file --mpc-loss-scaling="init-scale=inf" 2>&1 | FileCheck %s --check-prefix=INITINF
// INITINF: mpc-loss-scaling: option init-scale must be a finite number > 0, got inf
// RUN: not mpc-opt %s -split-input-file --mpc-loss-scaling="min-scale=nan" 2>&1 | FileCheck %s --check-prefix=MINNAN
// MINNAN: mpc-loss-scaling: option min-scale must be a finite number >= 0, got nan
// RUN: not mpc-opt %s -split-input-file --mpc-loss-scaling="max-scale=-1" 2>&1 | FileCheck %s --check-prefix=MAXNEG
// MAXNEG: mpc-loss-scaling: option max-scale must be a finite number >= 0, got -1
// RUN: not mpc-opt %s -split-input-file --mpc-loss-scaling="min-scale=8 max-scale=4" 2>&1 | FileCheck %s --check-prefix=MINMAX
// MINMAX: mpc-loss-scaling: min-scale 8 is above max-scale 4
// RUN: not mpc-opt %s -split-input-file --mpc-loss-scaling="growth-factor=0.5" 2>&1 | FileCheck %s --check-prefix=GROWTH
// GROWTH: mpc-loss-scaling: option growth-factor must be a finite number >= 1, got 0.5
// RUN: not mpc-opt %s -split-input-file --mpc-loss-scaling="backoff-factor=0" 2>&1 | FileCheck %s --check-prefix=BACKOFF
// BACKOFF: mpc-loss-scaling: option backoff-factor must be a finite number > 0 and <= 1, got 0
// RUN: not mpc-opt %s -split-input-file --mpc-loss-scaling="growth-interval=0" 2>&1 | FileCheck %s --check-prefix=INTERVAL
// INTERVAL: mpc-loss-scaling: option growth-interval must be a finite number >= 1, got 0
// A dynamic scale's options with a static scale, or any with none, set
// away from their defaults did nothing: refused. At their defaults they
// are accepted (a printed pipeline gives every option).
// RUN: not mpc-opt %s -split-input-file --mpc-loss-scaling="mode=static init-scale=128 growth-interval=100" 2>&1 | FileCheck %s --check-prefix=STATICGROW
// STATICGROW: mpc-loss-scaling: option growth-interval applies only with mode=dynamic or auto (here mode=static)
// RUN: not mpc-opt %s -split-input-file --mpc-loss-scaling="mode=static max-scale=1024" 2>&1 | FileCheck %s --check-prefix=STATICMAX
// STATICMAX: mpc-loss-scaling: option max-scale applies only with mode=dynamic or auto (here mode=static)
// RUN: not mpc-opt %s -split-input-file --mpc-loss-scaling="mode=none init-scale=8" 2>&1 | FileCheck %s --check-prefix=NONEINIT
// NONEINIT: mpc-loss-scaling: option init-scale applies only with mode=dynamic, static or auto (here mode=none)

// expected-error @+1 {{'func.func' op mpc-loss-scaling: no loss gradient seed (the constant --mpc-autodiff marks mpc.loss_seed); run it before canonicalization}}
func.func @train_step(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op mpc-loss-scaling: no optimizer update to guard; run --mpc-optimizer first}}
func.func @train_step(%x: tensor<f32>) -> tensor<f32> {
  %0 = mpc.constant {mpc.loss_seed} dense<1.0> : tensor<f32>
  %1 = mpc.mul %x, %0 : tensor<f32>, tensor<f32>
  return %1 : tensor<f32>
}

// -----

// expected-error @+1 {{mpc-loss-scaling: no training step @train_step}}
module {
}

// -----

// expected-error @+1 {{mpc-loss-scaling: a symbol @loss_scale already exists}}
module {
  ml_program.global private @loss_scale(dense<1.0> : tensor<f32>) : tensor<f32>
  ml_program.global private mutable @w(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
  func.func @train_step(%g: tensor<4xf32>, %lr: tensor<f32>) {
    %s = mpc.constant {mpc.loss_seed} dense<1.0> : tensor<f32>
    %w = ml_program.global_load @w : tensor<4xf32>
    %0 = mpc.sgd_update %w, %g lr(%lr) : tensor<4xf32>, tensor<4xf32>
    ml_program.global_store @w = %0 : tensor<4xf32>
    return
  }
}

// -----

// An accumulation micro-step whose loss gradient seed is gone.
module {
  ml_program.global private mutable @w(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
  func.func @train_step(%g: tensor<4xf32>, %lr: tensor<f32>) {
    %s = mpc.constant {mpc.loss_seed} dense<1.0> : tensor<f32>
    %w = ml_program.global_load @w : tensor<4xf32>
    %0 = mpc.sgd_update %w, %g lr(%lr) : tensor<4xf32>, tensor<4xf32>
    ml_program.global_store @w = %0 : tensor<4xf32>
    return
  }
  // expected-error @+1 {{'func.func' op mpc-loss-scaling: no loss gradient seed in the micro-step}}
  func.func @train_step_accumulate(%g: tensor<4xf32>) attributes {mpc.accumulates = @train_step} {
    return
  }
}
