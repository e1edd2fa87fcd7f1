// The phases of --mpc-check-numerics follow the data, not op names: the
// forward pass is what the loss and the stored state (here a running mean
// written out of generic ops) are computed from; the backward pass of a
// loss written out of generic ops (no *_backward op) is backward from the
// scaled seed on, though canonicalization moved that seed to the top.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-assign-precision="level=O2 alignment-remarks=false" --mpc-loss-scaling --canonicalize --cse --mpc-check-numerics | FileCheck %s
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-assign-precision="level=O2 alignment-remarks=false" --mpc-loss-scaling --canonicalize --cse --mpc-check-numerics=phases=backward | FileCheck %s --check-prefix=BACKWARD

// CHECK: loc = "{{[^"]*}}phases.mlir:[[#@LINE+49]]:8", op = "mpc.matmul", phase = "forward"
// CHECK-SAME: loc = "{{[^"]*}}phases.mlir:[[#@LINE+49]]:8", op = "mpc.sub", phase = "forward"
// CHECK-SAME: loc = "{{[^"]*}}phases.mlir:[[#@LINE+49]]:9", op = "mpc.mul", phase = "forward"
// CHECK-SAME: loc = "{{[^"]*}}phases.mlir:[[#@LINE+49]]:8", op = "mpc.reduce_mean", phase = "forward"
// CHECK-SAME: loc = "{{[^"]*}}phases.mlir:[[#@LINE+49]]:8", op = "mpc.reduce_mean", phase = "forward"
// CHECK-SAME: loc = "{{[^"]*}}phases.mlir:[[#@LINE+51]]:8", op = "mpc.mul", phase = "forward"
// CHECK-SAME: loc = "{{[^"]*}}phases.mlir:[[#@LINE+52]]:8", op = "mpc.mul", phase = "forward"
// CHECK-SAME: loc = "{{[^"]*}}phases.mlir:[[#@LINE+52]]:8", op = "mpc.add", phase = "forward"
// The gradient of the mean (its scale as [1, 1], broadcast by its reader),
// then of the square (d * g + d * g), then of the product: all backward.
// CHECK-SAME: loc = "{{[^"]*}}phases.mlir:[[#@LINE+42]]:8", op = "mpc.mul", phase = "backward"
// CHECK-SAME: loc = "{{[^"]*}}phases.mlir:[[#@LINE+41]]:8", op = "mpc.reshape", phase = "backward"
// CHECK-SAME: loc = "{{[^"]*}}phases.mlir:[[#@LINE+39]]:9", op = "mpc.mul", phase = "backward"
// CHECK-SAME: loc = "{{[^"]*}}phases.mlir:[[#@LINE+38]]:9", op = "mpc.add", phase = "backward"
// CHECK-SAME: loc = "{{[^"]*}}phases.mlir:[[#@LINE+35]]:8", op = "mpc.matmul", phase = "backward"
// CHECK-SAME: op = "mpc.sgd_update", phase = "optimizer"
// CHECK-NOT: phase = "forward"
// CHECK-SAME: ]

// BACKWARD-NOT: phase = "forward"
// BACKWARD: op = "mpc.reshape", phase = "backward"
// BACKWARD-NOT: phase = "forward"
// BACKWARD-SAME: ]

// The evaluation step (mpc.eval) is the eval phase, numbered after the
// training step; its begin and end go around it. Without eval among the
// phases it is left alone.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-eval-step --mpc-check-numerics | FileCheck %s --check-prefix=EVAL
// EVAL: function = "train_step"
// EVAL-NOT: function = "eval_step"
// EVAL: function = "eval_step", inputs = [], loc = "{{[^"]*}}phases.mlir:{{[0-9]+}}:8", op = "ml_program.global_load", phase = "eval"
// EVAL-SAME: op = "mpc.matmul", phase = "eval"
// EVAL-NOT: function = "train_step"
// EVAL-LABEL: func.func @eval_step(
// EVAL-NEXT: mpc.numerics_begin
// EVAL: mpc.check_numerics
// EVAL: mpc.numerics_end
// EVAL-NEXT: return
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-eval-step --mpc-check-numerics=phases=forward | FileCheck %s --check-prefix=NOEVAL
// NOEVAL-NOT: phase = "eval"
// NOEVAL-LABEL: func.func @eval_step(
// NOEVAL-NOT: numerics
// NOEVAL: return

ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<16x8xf32>
ml_program.global private mutable @rm(#mpc.init<zeros>) : tensor<8xf32>

func.func @loss(%x: tensor<4x16xf32>, %t: tensor<4x8xf32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<16x8xf32>
  %y = mpc.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32>
  %d = mpc.sub %y, %t : tensor<4x8xf32>, tensor<4x8xf32>
  %sq = mpc.mul %d, %d : tensor<4x8xf32>, tensor<4x8xf32>
  %l = mpc.reduce_mean %sq {dims = array<i64: 0, 1>} : tensor<4x8xf32>
  %m = mpc.reduce_mean %y {dims = array<i64: 0>} : tensor<4x8xf32>
  %rm = ml_program.global_load @rm : tensor<8xf32>
  %k = mpc.constant dense<9.0e-01> : tensor<f32>
  %a = mpc.mul %rm, %k : tensor<8xf32>, tensor<f32>
  %k2 = mpc.constant dense<1.0e-01> : tensor<f32>
  %b = mpc.mul %m, %k2 : tensor<8xf32>, tensor<f32>
  %n = mpc.add %a, %b : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @rm = %n : tensor<8xf32>
  return %l : tensor<f32>
}
