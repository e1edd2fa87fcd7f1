// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false norms=false" | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false norms=false decomposed-norms=false" | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false norms=false remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false" | FileCheck %s --check-prefix=RESIDUAL
// RUN: mpc-opt %s --split-input-file --mpc-fuse="epilogues=false attention=false norms=false report=-" -o /dev/null | FileCheck %s --check-prefix=REPORT

// nn.LayerNorm as ONNX exports it before opset 17: the mean, the centred
// values, their squares' mean, + eps, sqrt, the division, gamma and beta:
// one mpc.layer_norm with the chain's epsilon, at the chain's last op.
// CHECK-LABEL: func @exported
// CHECK-NEXT: %[[N:.*]], %{{.*}}, %{{.*}} = mpc.layer_norm %arg0, %arg1, %arg2 {epsilon = 9.9999997473787516E-6 : f64} : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK-NEXT: return %[[N]]
// OFF-LABEL: func @exported
// OFF: mpc.reduce_mean
// OFF-NOT: mpc.layer_norm
// REMARK: remark: fused: mpc.reduce_mean + mpc.sub + mpc.pow + mpc.reduce_mean + mpc.add + mpc.sqrt + mpc.div + mpc.mul + mpc.add -> mpc.layer_norm (epsilon 0.000010)
// The report lists the norm with its steps.
// REPORT: "function": "exported",
// REPORT-NEXT: "op": "mpc.layer_norm",
// REPORT: "from": [
// REPORT-NEXT: "mpc.reduce_mean",
// REPORT-NEXT: "mpc.sub",
// REPORT-NEXT: "mpc.pow",
func.func @exported(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %0 = mpc.reduce_mean %x {dims = array<i64: 2>, keep_dims} : tensor<2x4x8xf32>
  %1 = mpc.sub %x, %0 : tensor<2x4x8xf32>, tensor<2x4x1xf32>
  %2 = mpc.constant dense<2.000000e+00> : tensor<f32>
  %3 = mpc.pow %1, %2 : tensor<2x4x8xf32>, tensor<f32>
  %4 = mpc.reduce_mean %3 {dims = array<i64: 2>, keep_dims} : tensor<2x4x8xf32>
  %5 = mpc.constant dense<9.99999974E-6> : tensor<f32>
  %6 = mpc.add %4, %5 : tensor<2x4x1xf32>, tensor<f32>
  %7 = mpc.sqrt %6 : tensor<2x4x1xf32>
  %8 = mpc.div %1, %7 : tensor<2x4x8xf32>, tensor<2x4x1xf32>
  %9 = mpc.mul %8, %g : tensor<2x4x8xf32>, tensor<8xf32>
  %10 = mpc.add %9, %b : tensor<2x4x8xf32>, tensor<8xf32>
  return %10 : tensor<2x4x8xf32>
}

// -----

// Written by hand: d * d, eps on the left, rsqrt and a product, gamma on
// the left, no beta (zeros); and with neither (ones and zeros).
// CHECK-LABEL: func @by_hand
// CHECK: %[[Z:.*]] = mpc.constant dense<0.000000e+00> : tensor<16xf32>
// CHECK: %[[A:.*]], %{{.*}}, %{{.*}} = mpc.layer_norm %arg0, %arg1, %[[Z]] {epsilon = 0.0010000000474974513 : f64} : tensor<4x16xf32>, tensor<16xf32>
// CHECK: %[[O:.*]] = mpc.constant dense<1.000000e+00> : tensor<16xf32>
// CHECK: %[[Z2:.*]] = mpc.constant dense<0.000000e+00> : tensor<16xf32>
// CHECK: %[[B:.*]], %{{.*}}, %{{.*}} = mpc.layer_norm %arg0, %[[O]], %[[Z2]] {epsilon = 0.0010000000474974513 : f64} : tensor<4x16xf32>, tensor<16xf32>
// CHECK: return %[[A]], %[[B]]
func.func @by_hand(%x: tensor<4x16xf32>, %g: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %eps = mpc.constant dense<1.0e-3> : tensor<f32>
  %0 = mpc.reduce_mean %x {dims = array<i64: 1>, keep_dims} : tensor<4x16xf32>
  %1 = mpc.sub %x, %0 : tensor<4x16xf32>, tensor<4x1xf32>
  %2 = mpc.mul %1, %1 : tensor<4x16xf32>, tensor<4x16xf32>
  %3 = mpc.reduce_mean %2 {dims = array<i64: 1>, keep_dims} : tensor<4x16xf32>
  %4 = mpc.add %eps, %3 : tensor<f32>, tensor<4x1xf32>
  %5 = mpc.rsqrt %4 : tensor<4x1xf32>
  %6 = mpc.mul %5, %1 : tensor<4x1xf32>, tensor<4x16xf32>
  %7 = mpc.mul %g, %6 : tensor<16xf32>, tensor<4x16xf32>
  %m = mpc.reduce_mean %x {dims = array<i64: 1>, keep_dims} : tensor<4x16xf32>
  %d = mpc.sub %x, %m : tensor<4x16xf32>, tensor<4x1xf32>
  %s = mpc.mul %d, %d : tensor<4x16xf32>, tensor<4x16xf32>
  %v = mpc.reduce_mean %s {dims = array<i64: 1>, keep_dims} : tensor<4x16xf32>
  %e = mpc.add %v, %eps : tensor<4x1xf32>, tensor<f32>
  %r = mpc.sqrt %e : tensor<4x1xf32>
  %n = mpc.div %d, %r : tensor<4x16xf32>, tensor<4x1xf32>
  return %7, %n : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Not fused: an intermediate read elsewhere (the centred values also
// returned), a mean over another axis, a cube instead of a square, an
// epsilon that is not a constant, a sum instead of the variance's mean.
// CHECK-LABEL: func @not_fused
// CHECK-NOT: mpc.layer_norm
// CHECK: return
func.func @not_fused(%x: tensor<4x16xf32>, %eps: tensor<f32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %c = mpc.constant dense<1.0e-5> : tensor<f32>
  %two = mpc.constant dense<2.0> : tensor<f32>
  %three = mpc.constant dense<3.0> : tensor<f32>
  // Read elsewhere.
  %0 = mpc.reduce_mean %x {dims = array<i64: 1>, keep_dims} : tensor<4x16xf32>
  %1 = mpc.sub %x, %0 : tensor<4x16xf32>, tensor<4x1xf32>
  %2 = mpc.mul %1, %1 : tensor<4x16xf32>, tensor<4x16xf32>
  %3 = mpc.reduce_mean %2 {dims = array<i64: 1>, keep_dims} : tensor<4x16xf32>
  %4 = mpc.add %3, %c : tensor<4x1xf32>, tensor<f32>
  %5 = mpc.sqrt %4 : tensor<4x1xf32>
  %6 = mpc.div %1, %5 : tensor<4x16xf32>, tensor<4x1xf32>
  // The first axis.
  %a0 = mpc.reduce_mean %x {dims = array<i64: 0>, keep_dims} : tensor<4x16xf32>
  %a1 = mpc.sub %x, %a0 : tensor<4x16xf32>, tensor<1x16xf32>
  %a2 = mpc.mul %a1, %a1 : tensor<4x16xf32>, tensor<4x16xf32>
  %a3 = mpc.reduce_mean %a2 {dims = array<i64: 0>, keep_dims} : tensor<4x16xf32>
  %a4 = mpc.add %a3, %c : tensor<1x16xf32>, tensor<f32>
  %a5 = mpc.sqrt %a4 : tensor<1x16xf32>
  %a6 = mpc.div %a1, %a5 : tensor<4x16xf32>, tensor<1x16xf32>
  // A cube.
  %b0 = mpc.reduce_mean %x {dims = array<i64: 1>, keep_dims} : tensor<4x16xf32>
  %b1 = mpc.sub %x, %b0 : tensor<4x16xf32>, tensor<4x1xf32>
  %b2 = mpc.pow %b1, %three : tensor<4x16xf32>, tensor<f32>
  %b3 = mpc.reduce_mean %b2 {dims = array<i64: 1>, keep_dims} : tensor<4x16xf32>
  %b4 = mpc.add %b3, %c : tensor<4x1xf32>, tensor<f32>
  %b5 = mpc.sqrt %b4 : tensor<4x1xf32>
  %b6 = mpc.div %b1, %b5 : tensor<4x16xf32>, tensor<4x1xf32>
  // An argument as epsilon.
  %c0 = mpc.reduce_mean %x {dims = array<i64: 1>, keep_dims} : tensor<4x16xf32>
  %c1 = mpc.sub %x, %c0 : tensor<4x16xf32>, tensor<4x1xf32>
  %c2 = mpc.pow %c1, %two : tensor<4x16xf32>, tensor<f32>
  %c3 = mpc.reduce_mean %c2 {dims = array<i64: 1>, keep_dims} : tensor<4x16xf32>
  %c4 = mpc.add %c3, %eps : tensor<4x1xf32>, tensor<f32>
  %c5 = mpc.sqrt %c4 : tensor<4x1xf32>
  %c6 = mpc.div %c1, %c5 : tensor<4x16xf32>, tensor<4x1xf32>
  // A sum of the squares.
  %d0 = mpc.reduce_mean %x {dims = array<i64: 1>, keep_dims} : tensor<4x16xf32>
  %d1 = mpc.sub %x, %d0 : tensor<4x16xf32>, tensor<4x1xf32>
  %d2 = mpc.pow %d1, %two : tensor<4x16xf32>, tensor<f32>
  %d3 = mpc.reduce_sum %d2 {dims = array<i64: 1>, keep_dims} : tensor<4x16xf32>
  %d4 = mpc.add %d3, %c : tensor<4x1xf32>, tensor<f32>
  %d5 = mpc.sqrt %d4 : tensor<4x1xf32>
  %d6 = mpc.div %d1, %d5 : tensor<4x16xf32>, tensor<4x1xf32>
  return %1, %6, %a6, %b6, %c6, %d6 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// With the norms: the residual add before the chain joins the norm it
// becomes (mpc.add_layer_norm).
// RESIDUAL-LABEL: func @residual
// RESIDUAL: mpc.add_layer_norm %arg0, %arg1, %arg2, %arg3
// RESIDUAL-NOT: mpc.reduce_mean
func.func @residual(%x: tensor<4x16xf32>, %h: tensor<4x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %x2 = mpc.add %x, %h : tensor<4x16xf32>, tensor<4x16xf32>
  %0 = mpc.reduce_mean %x2 {dims = array<i64: 1>, keep_dims} : tensor<4x16xf32>
  %1 = mpc.sub %x2, %0 : tensor<4x16xf32>, tensor<4x1xf32>
  %2 = mpc.mul %1, %1 : tensor<4x16xf32>, tensor<4x16xf32>
  %3 = mpc.reduce_mean %2 {dims = array<i64: 1>, keep_dims} : tensor<4x16xf32>
  %c = mpc.constant dense<1.0e-5> : tensor<f32>
  %4 = mpc.add %3, %c : tensor<4x1xf32>, tensor<f32>
  %5 = mpc.sqrt %4 : tensor<4x1xf32>
  %6 = mpc.div %1, %5 : tensor<4x16xf32>, tensor<4x1xf32>
  %7 = mpc.mul %6, %g : tensor<4x16xf32>, tensor<16xf32>
  %8 = mpc.add %7, %b : tensor<4x16xf32>, tensor<16xf32>
  return %8 : tensor<4x16xf32>
}
