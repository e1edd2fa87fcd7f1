// What --mpc-optimizer refuses.
// RUN: mpc-opt %s -split-input-file --mpc-optimizer -verify-diagnostics
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer=kind=lion 2>&1 | FileCheck %s --check-prefix=KIND
// KIND: mpc-optimizer: unknown kind 'lion' (expected sgd, momentum, adam, adamw or lamb)
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer=schedule=poly 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// SCHEDULE: mpc-optimizer: unknown schedule 'poly' (expected constant, linear-warmup, cosine, one-cycle, step or exponential)
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="schedule=step gamma=0.5" 2>&1 | FileCheck %s --check-prefix=STEPSIZE
// STEPSIZE: error: 'mpc.lr_schedule' op expects step_size >= 1 for a step schedule, got 0
// STEPSIZE: error: mpc-optimizer: invalid schedule options
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="schedule=exponential gamma=0" 2>&1 | FileCheck %s --check-prefix=GAMMA
// GAMMA: mpc-optimizer: option gamma must be a finite number > 0, got 0
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="schedule=one-cycle total-steps=100 pct-start=1" 2>&1 | FileCheck %s --check-prefix=PCT
// PCT: mpc-optimizer: option pct-start must be a finite number > 0 and < 1, got 1
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="schedule=one-cycle total-steps=3 pct-start=0.3" 2>&1 | FileCheck %s --check-prefix=SHORT
// SHORT: error: 'mpc.lr_schedule' op expects phases of positive length: total 3 with pct_start 0.3 leaves a phase empty
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="schedule=one-cycle total-steps=10 pct-start=0.6 three-phase=true" 2>&1 | FileCheck %s --check-prefix=THREE
// THREE: error: 'mpc.lr_schedule' op expects phases of positive length: total 10 with pct_start 0.6 (three phases) leaves a phase empty
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="schedule=step step-size=2 warmup-steps=3" 2>&1 | FileCheck %s --check-prefix=WARM
// WARM: mpc-optimizer: option warmup-steps applies only with schedule=linear-warmup or cosine (here kind=sgd, schedule=step)
// An option of another kind or schedule, away from its default, is
// refused (it did nothing); at its default (as a printed pipeline gives
// every option) it is accepted.
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="kind=adam momentum=0.5" 2>&1 | FileCheck %s --check-prefix=NOTADAM
// NOTADAM: mpc-optimizer: option momentum applies only with kind=momentum (here kind=adam, schedule=constant)
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="kind=sgd nesterov=true" 2>&1 | FileCheck %s --check-prefix=NESTEROV
// NESTEROV: mpc-optimizer: option nesterov applies only with kind=momentum (here kind=sgd, schedule=constant)
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="kind=momentum beta1=0.5" 2>&1 | FileCheck %s --check-prefix=BETA1
// BETA1: mpc-optimizer: option beta1 applies only with kind=adam, adamw or lamb (here kind=momentum, schedule=constant)
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="kind=adamw adam-w-mode=false" 2>&1 | FileCheck %s --check-prefix=WMODE
// WMODE: mpc-optimizer: option adam-w-mode applies only with kind=lamb (here kind=adamw, schedule=constant)
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="gamma=0.5" 2>&1 | FileCheck %s --check-prefix=NOSCHED
// NOSCHED: mpc-optimizer: option gamma applies only with schedule=step or exponential (here kind=sgd, schedule=constant)
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="schedule=exponential step-size=3" 2>&1 | FileCheck %s --check-prefix=STEPONLY
// STEPONLY: mpc-optimizer: option step-size applies only with schedule=step (here kind=sgd, schedule=exponential)
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="schedule=cosine total-steps=10 div-factor=5" 2>&1 | FileCheck %s --check-prefix=CYCLE
// CYCLE: mpc-optimizer: option div-factor applies only with schedule=one-cycle (here kind=sgd, schedule=cosine)
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="schedule=one-cycle total-steps=100 min-lr=0.1" 2>&1 | FileCheck %s --check-prefix=COSONLY
// COSONLY: mpc-optimizer: option min-lr applies only with schedule=cosine (here kind=sgd, schedule=one-cycle)
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="schedule=linear-warmup warmup-steps=5 total-steps=50" 2>&1 | FileCheck %s --check-prefix=TOTAL
// TOTAL: mpc-optimizer: option total-steps applies only with schedule=cosine or one-cycle (here kind=sgd, schedule=linear-warmup)
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="schedule=cosine total-steps=10 schedule-on-skip=never" 2>&1 | FileCheck %s --check-prefix=ONSKIP
// ONSKIP: mpc-optimizer: schedule-on-skip must be advance or hold, got 'never'
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="schedule=one-cycle total-steps=100 div-factor=0" 2>&1 | FileCheck %s --check-prefix=DIV
// DIV: mpc-optimizer: option div-factor must be a finite number > 0, got 0
// RUN: not mpc-opt %s --mpc-optimizer="schedule=cosine warmup-steps=5 total-steps=5" 2>&1 | FileCheck %s --check-prefix=BADCOS
// BADCOS: error: 'mpc.lr_schedule' op expects total > warmup for a cosine schedule, got total 5 and warmup 5
// Nonsense numbers are refused, naming the option and what it may be.
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="lr=-0.1" 2>&1 | FileCheck %s --check-prefix=LRNEG
// LRNEG: mpc-optimizer: option lr must be a finite number >= 0, got -0.1
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="lr=nan" 2>&1 | FileCheck %s --check-prefix=LRNAN
// LRNAN: mpc-optimizer: option lr must be a finite number >= 0, got nan
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="lr=inf" 2>&1 | FileCheck %s --check-prefix=LRINF
// LRINF: mpc-optimizer: option lr must be a finite number >= 0, got inf
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="weight-decay=nan" 2>&1 | FileCheck %s --check-prefix=WD
// WD: mpc-optimizer: option weight-decay must be a finite number >= 0, got nan
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="schedule=cosine warmup-steps=1 total-steps=10 min-lr=nan" 2>&1 | FileCheck %s --check-prefix=MINLR
// MINLR: mpc-optimizer: option min-lr must be a finite number >= 0, got nan
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="kind=adam beta2=1" 2>&1 | FileCheck %s --check-prefix=BETA2
// BETA2: mpc-optimizer: option beta2 must be a finite number >= 0 and < 1, got 1
// RUN: not mpc-opt %s -split-input-file --mpc-optimizer="kind=adam eps=0" 2>&1 | FileCheck %s --check-prefix=EPS
// EPS: mpc-optimizer: option eps must be a finite number > 0, got 0

// expected-error @+1 {{'func.func' op mpc-optimizer: no result is marked mpc.grad_of; run --mpc-autodiff first}}
func.func @train_step(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{mpc-optimizer: no training step @train_step}}
module {
}

// -----

// expected-error @+1 {{mpc-optimizer: a symbol @train_step_lr already exists}}
module {
  ml_program.global private @train_step_lr(dense<0.1> : tensor<f32>) : tensor<f32>
  ml_program.global private mutable @w(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
  func.func @train_step(%g: tensor<4xf32>) -> (tensor<4xf32> {mpc.grad_of = @w}) {
    return %g : tensor<4xf32>
  }
}

// -----

// A gradient result names a global the module does not have.
module {
  ml_program.global private mutable @w(#mpc.init<ones>) : tensor<4xf32>
  // expected-error @+1 {{'func.func' op result #1 is the gradient of @nothing, which is not a tensor global}}
  func.func @train_step(%x: tensor<4xf32>) -> (tensor<f32> {mpc.name = "loss"}, tensor<4xf32> {mpc.grad_of = @nothing}) {
    %l = mpc.reduce_sum %x {dims = array<i64: 0>} : tensor<4xf32>
    return %l, %x : tensor<f32>, tensor<4xf32>
  }
}
