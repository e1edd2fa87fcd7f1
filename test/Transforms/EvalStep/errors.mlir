// What --mpc-eval-step refuses.
// RUN: mpc-opt %s -split-input-file --mpc-eval-step -verify-diagnostics
// RUN: not mpc-opt %s -split-input-file --mpc-eval-step=precision=f16 2>&1 | FileCheck %s --check-prefix=PREC
// PREC: mpc-eval-step: unknown precision 'f16' (expected f32 or amp)
// RUN: not mpc-opt %s -split-input-file --mpc-eval-step=loss=nope 2>&1 | FileCheck %s --check-prefix=NOLOSS
// NOLOSS: mpc-eval-step: no loss function @nope

// expected-error @+1 {{mpc-eval-step: a symbol @eval_step already exists; choose another name=}}
module {
  func.func @loss(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
  func.func @eval_step() {
    return
  }
}

// -----

// expected-error @+1 {{'func.func' op mpc-eval-step: the first result must be the scalar float loss}}
func.func @loss(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

func.func @loss(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xi1>) {
  // expected-error @+1 {{'mpc.dropout' op mpc-eval-step: the dropout's mask is used in the loss function; an evaluation step turns dropout off}}
  %y, %m = mpc.dropout %x {p = 0.5, seed = 1} : tensor<4xf32>
  %l = mpc.reduce_sum %y {dims = array<i64: 0>} : tensor<4xf32>
  return %l, %m : tensor<f32>, tensor<4xi1>
}

// -----

// expected-error @+1 {{'func.func' op mpc-eval-step: the loss function must have a single block}}
func.func @loss(%x: tensor<f32>) -> tensor<f32> {
  cf.br ^bb1
^bb1:
  return %x : tensor<f32>
}

// -----

func.func @loss(%x: tensor<4x5xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %a = mpc.cross_entropy %x, %y {mpc.eval_loss} : tensor<4x5xf32>, tensor<4xi32>
  // expected-error @+1 {{'mpc.cross_entropy' op mpc-eval-step: a second op marked mpc.eval_loss (one names the evaluation's loss)}}
  %b = mpc.cross_entropy %x, %y {mpc.eval_loss} : tensor<4x5xf32>, tensor<4xi32>
  %l = mpc.add %a, %b : tensor<f32>, tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @loss(%x: tensor<4x5xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  // expected-error @+1 {{'mpc.relu' op mpc-eval-step: mpc.eval_loss marks an op whose result is not a scalar loss of the returned loss's type}}
  %r = mpc.relu %x {mpc.eval_loss} : tensor<4x5xf32>
  %l = mpc.cross_entropy %r, %y : tensor<4x5xf32>, tensor<4xi32>
  return %l : tensor<f32>
}
