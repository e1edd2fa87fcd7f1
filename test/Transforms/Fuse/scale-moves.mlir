// RUN: mpc-opt %s -split-input-file --mpc-fuse="attention=false head-products=false" | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="attention=false head-products=false scale-moves=false" | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse="attention=false head-products=false remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// nn.MultiheadAttention's queries, split into heads, transposed, viewed
// with the batch and the heads merged and then divided by sqrt(D): the
// division moves before the reshapes and the transpose (the same values),
// which then meet the product. Its constant, defined after the chain's
// first op, is made again before it. A product by a constant on the left
// moves too.
// CHECK-LABEL: func @queries
// CHECK: %[[C:.*]] = mpc.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[D:.*]] = mpc.div %arg0, %[[C]] : tensor<2x6x12xf32>, tensor<f32>
// CHECK: %[[R:.*]] = mpc.reshape %[[D]] : tensor<2x6x12xf32> -> tensor<2x6x3x4xf32>
// CHECK: %[[T:.*]] = mpc.transpose %[[R]] {permutation = array<i64: 0, 2, 1, 3>}
// CHECK: %[[M:.*]] = mpc.reshape %[[T]] : tensor<2x3x6x4xf32> -> tensor<6x6x4xf32>
// CHECK-NOT: mpc.div
// CHECK: mpc.matmul %[[M]], %arg1 {transpose_b}
// CHECK: %[[S:.*]] = mpc.mul %{{.*}}, %arg2 : tensor<f32>, tensor<6x4xf32>
// CHECK: %[[ST:.*]] = mpc.transpose %[[S]] {permutation = array<i64: 1, 0>}
// CHECK: return
// OFF-LABEL: func @queries
// OFF: mpc.transpose
// OFF: mpc.reshape
// OFF: mpc.div
// REMARK: remark: moved: mpc.div by a constant before the reshapes and transposes it read
// REMARK: remark: moved: mpc.mul by a constant before the reshapes and transposes it read
func.func @queries(%q: tensor<2x6x12xf32>, %k: tensor<6x6x4xf32>, %x: tensor<6x4xf32>) -> (tensor<6x6x6xf32>, tensor<4x6xf32>) {
  %r = mpc.reshape %q : tensor<2x6x12xf32> -> tensor<2x6x3x4xf32>
  %t = mpc.transpose %r {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x3x4xf32>
  %m = mpc.reshape %t : tensor<2x3x6x4xf32> -> tensor<6x6x4xf32>
  %c = mpc.constant dense<2.0> : tensor<f32>
  %d = mpc.div %m, %c : tensor<6x6x4xf32>, tensor<f32>
  %s = mpc.matmul %d, %k {transpose_b} : tensor<6x6x4xf32>, tensor<6x6x4xf32>
  %xt = mpc.transpose %x {permutation = array<i64: 1, 0>} : tensor<6x4xf32>
  %h = mpc.constant dense<0.5> : tensor<f32>
  %xs = mpc.mul %h, %xt : tensor<f32>, tensor<4x6xf32>
  return %s, %xs : tensor<6x6x6xf32>, tensor<4x6xf32>
}

// -----

// Left where they are: a scaling of a transpose read by something else
// too, by a constant of several elements, by a value that is not a
// constant, a constant divided by the transpose, and a scaling that reads
// no reshape or transpose.
// CHECK-LABEL: func @kept
// CHECK: %[[T:.*]] = mpc.transpose %arg0
// CHECK: mpc.div %[[T]], %{{.*}} : tensor<4x6xf32>, tensor<f32>
// CHECK: mpc.relu %[[T]]
// CHECK: %[[U:.*]] = mpc.transpose %arg0
// CHECK: mpc.mul %[[U]], %{{.*}} : tensor<4x6xf32>, tensor<1x6xf32>
// CHECK: %[[V:.*]] = mpc.transpose %arg0
// CHECK: mpc.mul %[[V]], %arg1 : tensor<4x6xf32>, tensor<f32>
// CHECK: %[[W:.*]] = mpc.transpose %arg0
// CHECK: mpc.div %{{.*}}, %[[W]] : tensor<f32>, tensor<4x6xf32>
// CHECK: mpc.mul %arg2, %{{.*}} : tensor<4x6xf32>, tensor<f32>
func.func @kept(%x: tensor<6x4xf32>, %y: tensor<f32>, %z: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %c = mpc.constant dense<2.0> : tensor<f32>
  %t = mpc.transpose %x {permutation = array<i64: 1, 0>} : tensor<6x4xf32>
  %a = mpc.div %t, %c : tensor<4x6xf32>, tensor<f32>
  %b = mpc.relu %t : tensor<4x6xf32>
  %row = mpc.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]> : tensor<1x6xf32>
  %u = mpc.transpose %x {permutation = array<i64: 1, 0>} : tensor<6x4xf32>
  %e = mpc.mul %u, %row : tensor<4x6xf32>, tensor<1x6xf32>
  %v = mpc.transpose %x {permutation = array<i64: 1, 0>} : tensor<6x4xf32>
  %f = mpc.mul %v, %y : tensor<4x6xf32>, tensor<f32>
  %w = mpc.transpose %x {permutation = array<i64: 1, 0>} : tensor<6x4xf32>
  %g = mpc.div %c, %w : tensor<f32>, tensor<4x6xf32>
  %h = mpc.mul %z, %c : tensor<4x6xf32>, tensor<f32>
  return %a, %b, %e, %f, %g, %h : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}

// -----

// Scores read only by a softmax: the queries' scale is the softmax's
// (--mpc-fuse's scales, first), not moved.
// CHECK-LABEL: func @softmax_scale
// CHECK-NOT: mpc.div
// CHECK: mpc.softmax %{{.*}} {axis = 2 : i64, scale = 5.000000e-01 : f64}
// OFF-LABEL: func @softmax_scale
// OFF-NOT: mpc.div
func.func @softmax_scale(%q: tensor<2x6x12xf32>, %k: tensor<6x6x4xf32>) -> tensor<6x6x6xf32> {
  %r = mpc.reshape %q : tensor<2x6x12xf32> -> tensor<2x6x3x4xf32>
  %t = mpc.transpose %r {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x3x4xf32>
  %m = mpc.reshape %t : tensor<2x3x6x4xf32> -> tensor<6x6x4xf32>
  %c = mpc.constant dense<2.0> : tensor<f32>
  %d = mpc.div %m, %c : tensor<6x6x4xf32>, tensor<f32>
  %s = mpc.matmul %d, %k {transpose_b} : tensor<6x6x4xf32>, tensor<6x6x4xf32>
  %p = mpc.softmax %s {axis = 2 : i64} : tensor<6x6x6xf32>
  return %p : tensor<6x6x6xf32>
}
