// --mpc-check-numerics on a training step: every read floating-point
// result numbered in program order and checked right after its op; begin
// and end around the step; the table of checked ops on the module.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-check-numerics | FileCheck %s
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-check-numerics=phases=forward | FileCheck %s --check-prefix=FORWARD
// RUN: mpc-opt %s --mpc-autodiff --mpc-accumulate-gradients=steps=2 --mpc-optimizer --mpc-check-numerics | FileCheck %s --check-prefix=MICRO
// Without the pass nothing of it appears.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer | FileCheck %s --check-prefix=OFF
// OFF-NOT: numerics

// CHECK: module attributes {mpc.numerics_ops = [{dtype = "f32", function = "train_step", inputs = [], loc = "{{[^"]*}}check-numerics.mlir:[[#@LINE+49]]:8", op = "ml_program.global_load", phase = "state", result = 0 : i64},
// CHECK-SAME: {dtype = "f32", function = "train_step", inputs = [-1, 0], loc = "{{[^"]*}}check-numerics.mlir:[[#@LINE+49]]:8", op = "mpc.matmul", phase = "forward", result = 0 : i64}
// CHECK-SAME: op = "mpc.exp", phase = "forward"
// CHECK-SAME: op = "mpc.cross_entropy", phase = "forward"
// CHECK-SAME: op = "mpc.cross_entropy_backward", phase = "backward"
// CHECK-SAME: op = "mpc.sgd_update", phase = "optimizer"
// CHECK-DAG: ml_program.global private mutable @mpc_numerics_first(dense<0> : tensor<i32>) : tensor<i32>
// CHECK-DAG: ml_program.global private mutable @mpc_numerics_amax(dense<0.000000e+00> : tensor<[[N:[0-9]+]]x2xf32>)
// CHECK-DAG: ml_program.global private mutable @mpc_numerics_counts(dense<0> : tensor<[[N]]x4xi64>)
// CHECK-DAG: ml_program.global private mutable @mpc_numerics_events(dense<0> : tensor<34xi64>)
// CHECK-DAG: ml_program.global private mutable @mpc_numerics_event_amax(dense<0.000000e+00> : tensor<[[N]]xf32>)
// The loss function is not instrumented.
// CHECK-LABEL: func.func @loss(
// CHECK-NOT: check_numerics
// CHECK: return
// CHECK-LABEL: func.func @train_step(
// CHECK-NEXT: mpc.numerics_begin {count = [[N]] : i64}
// CHECK: %[[W:.*]] = ml_program.global_load @w
// CHECK-NEXT: mpc.check_numerics %[[W]] {index = 0 : i64} : tensor<16x8xf32>
// CHECK-NEXT: %[[MM:.*]] = mpc.matmul
// CHECK-NEXT: mpc.check_numerics %[[MM]] {index = 1 : i64} : tensor<4x8xf32>
// CHECK-NEXT: %[[E:.*]] = mpc.exp %[[MM]]
// CHECK-NEXT: mpc.check_numerics %[[E]] {index = 2 : i64}
// CHECK: mpc.sgd_update
// CHECK-NEXT: mpc.check_numerics
// CHECK: mpc.numerics_end {count = [[N]] : i64}
// CHECK-NEXT: return

// FORWARD-NOT: phase = "backward"
// FORWARD-NOT: phase = "optimizer"
// FORWARD-NOT: phase = "state"
// FORWARD-LABEL: func.func @train_step(
// FORWARD: mpc.cross_entropy_backward
// FORWARD-NOT: check_numerics
// FORWARD: mpc.numerics_end

// The micro-step of accumulation is checked too, its ops numbered after
// the step's.
// MICRO: function = "train_step_accumulate"
// MICRO-LABEL: func.func @train_step(
// MICRO: mpc.numerics_begin {count = [[M:[0-9]+]] : i64}
// MICRO-LABEL: func.func @train_step_accumulate(
// MICRO: mpc.numerics_begin {count = [[M]] : i64}
// MICRO: mpc.check_numerics
// MICRO: mpc.numerics_end {count = [[M]] : i64}

ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<16x8xf32>

func.func @loss(%x: tensor<4x16xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<16x8xf32>
  %0 = mpc.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32>
  %1 = mpc.exp %0 : tensor<4x8xf32>
  %l = mpc.cross_entropy %1, %y : tensor<4x8xf32>, tensor<4xi32>
  return %l : tensor<f32>
}
