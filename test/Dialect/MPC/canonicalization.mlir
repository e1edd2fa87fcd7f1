// RUN: mpc-opt %s -split-input-file -canonicalize | FileCheck %s

// CHECK-LABEL: func @identity_cast
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NOT: mpc.cast
// CHECK: return %[[X]]
func.func @identity_cast(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = mpc.cast %x : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A narrowing cast rounds: it stays.
// CHECK-LABEL: func @narrowing_cast
// CHECK: mpc.cast %{{.*}} : tensor<4xf32> -> tensor<4xf16>
func.func @narrowing_cast(%x: tensor<4xf32>) -> tensor<4xf16> {
  %0 = mpc.cast %x : tensor<4xf32> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// CHECK-LABEL: func @identity_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>)
// CHECK-NOT: mpc.reshape
// CHECK: return %[[X]]
func.func @identity_reshape(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = mpc.reshape %x : tensor<2x4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func @reshape
// CHECK: mpc.reshape %{{.*}} : tensor<2x4xf32> -> tensor<8xf32>
func.func @reshape(%x: tensor<2x4xf32>) -> tensor<8xf32> {
  %0 = mpc.reshape %x : tensor<2x4xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Constants are uniqued like any ConstantLike op.
// CHECK-LABEL: func @constants
// CHECK-COUNT-1: mpc.constant
// CHECK-NOT: mpc.constant
func.func @constants() -> (tensor<f32>, tensor<f32>) {
  %0 = mpc.constant dense<2.0> : tensor<f32>
  %1 = mpc.constant dense<2.0> : tensor<f32>
  return %0, %1 : tensor<f32>, tensor<f32>
}
