// --mpc-check-numerics on a training step: every read floating-point
// result numbered in program order and checked while it lives, with the
// others made since the last check, before the first op that reads one of
// them for the last time or writes memory; begin and end around the step;
// the table of checked ops on the module. group=false checks each result
// right after its op.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-check-numerics | FileCheck %s
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-check-numerics=group=false | FileCheck %s --check-prefix=EACH
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-check-numerics=phases=forward | FileCheck %s --check-prefix=FORWARD
// RUN: mpc-opt %s --mpc-autodiff --mpc-accumulate-gradients=steps=2 --mpc-optimizer --mpc-check-numerics | FileCheck %s --check-prefix=MICRO
// Without the pass nothing of it appears.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer | FileCheck %s --check-prefix=OFF
// OFF-NOT: numerics

// CHECK: module attributes {mpc.numerics_ops = [{dtype = "f32", function = "train_step", inputs = [], loc = "{{[^"]*}}check-numerics.mlir:[[#@LINE+80]]:8", op = "ml_program.global_load", phase = "state", result = 0 : i64},
// CHECK-SAME: {dtype = "f32", function = "train_step", inputs = [-1, 0], loc = "{{[^"]*}}check-numerics.mlir:[[#@LINE+80]]:8", op = "mpc.matmul", phase = "forward", result = 0 : i64}
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
// CHECK-NEXT: %[[W:.*]] = ml_program.global_load @w
// CHECK-NEXT: %[[MM:.*]] = mpc.matmul
// The exp reads the product for the last time: the two are checked before
// it (the weight lives on to the update).
// CHECK-NEXT: mpc.check_numerics %[[W]], %[[MM]] {indices = array<i64: 0, 1>} : tensor<16x8xf32>, tensor<4x8xf32>
// CHECK-NEXT: %[[E:.*]] = mpc.exp %[[MM]]
// CHECK-NEXT: %[[L:.*]] = mpc.cross_entropy %[[E]]
// CHECK-NEXT: mpc.constant
// CHECK-NEXT: %[[DE:.*]] = mpc.cross_entropy_backward
// CHECK-NEXT: mpc.check_numerics %[[E]], %[[L]], %[[DE]] {indices = array<i64: 2, 3, 4>} : tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>
// CHECK-NEXT: %[[DM:.*]] = mpc.mul %[[DE]], %[[E]]
// CHECK-NEXT: mpc.check_numerics %[[DM]] {indices = array<i64: 5>}
// CHECK-NEXT: %[[DW:.*]] = mpc.matmul %{{.*}}, %[[DM]]
// CHECK-NEXT: %[[LR:.*]] = ml_program.global_load @train_step_lr
// The update writes the weight's global: everything is checked before it.
// CHECK-NEXT: mpc.check_numerics %[[DW]], %[[LR]] {indices = array<i64: 6, 7>}
// CHECK-NEXT: %[[NEW:.*]] = mpc.sgd_update
// CHECK-NEXT: mpc.check_numerics %[[NEW]] {indices = array<i64: 8>}
// CHECK-NEXT: ml_program.global_store @w = %[[NEW]]
// CHECK-NEXT: mpc.numerics_end {count = [[N]] : i64}
// CHECK-NEXT: return

// EACH-LABEL: func.func @train_step(
// EACH-NEXT: mpc.numerics_begin
// EACH-NEXT: %[[W:.*]] = ml_program.global_load @w
// EACH-NEXT: mpc.check_numerics %[[W]] {indices = array<i64: 0>} : tensor<16x8xf32>
// EACH-NEXT: %[[MM:.*]] = mpc.matmul
// EACH-NEXT: mpc.check_numerics %[[MM]] {indices = array<i64: 1>} : tensor<4x8xf32>
// EACH-NEXT: %[[E:.*]] = mpc.exp %[[MM]]
// EACH-NEXT: mpc.check_numerics %[[E]] {indices = array<i64: 2>}
// EACH: mpc.sgd_update
// EACH-NEXT: mpc.check_numerics {{.*}} {indices = array<i64: 8>}
// EACH-NEXT: ml_program.global_store
// EACH-NEXT: mpc.numerics_end
// EACH-NEXT: return

// FORWARD-NOT: phase = "backward"
// FORWARD-NOT: phase = "optimizer"
// FORWARD-NOT: phase = "state"
// Only the forward results are checked; those the backward pass still
// reads are checked after its first op, before the first that reads them
// for the last time.
// FORWARD-LABEL: func.func @train_step(
// FORWARD: mpc.check_numerics %{{.*}} {indices = array<i64: 0>}
// FORWARD: mpc.cross_entropy_backward
// FORWARD-NEXT: mpc.check_numerics %{{.*}}, %{{.*}} {indices = array<i64: 1, 2>}
// FORWARD-NEXT: mpc.mul
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
