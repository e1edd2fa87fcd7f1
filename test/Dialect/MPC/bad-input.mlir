// Bad input is an error with a source location and exit code 1, never a
// crash. `not` fails the RUN line on any other exit code, including a crash.
// RUN: not mpc-opt %s -split-input-file 2>&1 | FileCheck %s

// CHECK: bad-input.mlir:[[# @LINE + 2]]:8: error: custom op 'mpc.frobnicate' is unknown
func.func @unknown_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = mpc.frobnicate %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: bad-input.mlir:[[# @LINE + 2]]:8: error: 'mpc.matmul' op expects equal contracting dimensions, got K = 3 for a and 4 for b
func.func @wrong_shapes(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  %0 = mpc.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32>
  return
}

// -----

// CHECK: bad-input.mlir:[[# @LINE + 2]]:8: error: 'mpc.add' op expects lhs and rhs of the same element type, got 'f32' and 'bf16'
func.func @mismatched_types(%a: tensor<4xf32>, %b: tensor<4xbf16>) {
  %0 = mpc.add %a, %b : tensor<4xf32>, tensor<4xbf16>
  return
}

// -----

// CHECK: bad-input.mlir:[[# @LINE + 2]]:8: error: 'mpc.relu' op operand #0 must be statically shaped tensor
func.func @dynamic_shape(%x: tensor<?x8xf32>) {
  %0 = mpc.relu %x : tensor<?x8xf32>
  return
}

// -----

// CHECK: bad-input.mlir:[[# @LINE + 2]]:8: error: 'ml_program.global_load' op undefined global: @missing
func.func @missing_global() -> tensor<4xf32> {
  %0 = ml_program.global_load @missing : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: bad-input.mlir:[[# @LINE + 1]]:1: error: expected operation name in quotes
}
