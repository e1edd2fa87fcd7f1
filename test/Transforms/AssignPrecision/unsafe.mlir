// An override that puts a loss or a large reduction in low precision needs
// allow-unsafe.
// RUN: mpc-opt %s -split-input-file -verify-diagnostics --mpc-assign-precision="level=O1 lowp-ops=mpc.cross_entropy,mpc.reduce_sum,mpc.softmax alignment-remarks=false"
// RUN: mpc-opt %s -split-input-file --mpc-assign-precision="level=O1 lowp-ops=mpc.cross_entropy,mpc.reduce_sum,mpc.softmax allow-unsafe alignment-remarks=false" | FileCheck %s

// CHECK-LABEL: func @loss
// CHECK: mpc.cross_entropy {{.*}} : tensor<4x10xf16>, tensor<4xi32>
func.func @loss(%l: tensor<4x10xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  // expected-error @+1 {{'mpc.cross_entropy' would run in f16 because of option lowp-ops: a loss loses precision there; pass allow-unsafe to force it}}
  %0 = mpc.cross_entropy %l, %y : tensor<4x10xf32>, tensor<4xi32>
  return %0 : tensor<f32>
}

// -----

// CHECK-LABEL: func @large_sum
// CHECK: mpc.reduce_sum {{.*}} : tensor<4x2048xf16>
func.func @large_sum(%x: tensor<4x2048xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mpc.reduce_sum' would run in f16 because of option lowp-ops: a reduction over 2048 elements loses precision there; pass allow-unsafe to force it}}
  %0 = mpc.reduce_sum %x {dims = array<i64: 1>} : tensor<4x2048xf32>
  return %0 : tensor<4xf32>
}

// -----

// A small reduction is fine in low precision.
// CHECK-LABEL: func @small_softmax
// CHECK: mpc.softmax %{{.*}} : tensor<4x16xf16>
func.func @small_softmax(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = mpc.softmax %x : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
