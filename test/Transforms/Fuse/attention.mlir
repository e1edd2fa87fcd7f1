// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false" | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse="attention=false" | FileCheck %s --check-prefix=OFF

// BERT's attention: scores, scale, softmax, dropout, weighted values; the
// scale's constant goes with them.
// CHECK-LABEL: func @bert
// CHECK-NEXT: %[[O:.*]], %{{.*}} = mpc.attention %arg0, %arg1, %arg2 {dropout_p = 1.000000e-01 : f64, scale = 1.250000e-01 : f64, seed = 102 : i64} : tensor<8x4x128x64xf32>, tensor<8x4x128x64xf32>, tensor<8x4x128x64xf32>
// CHECK-NEXT: return %[[O]]
// REMARK: remark: fused: mpc.matmul + mpc.mul + mpc.softmax + mpc.dropout + mpc.matmul -> mpc.attention
// OFF-LABEL: func @bert
// OFF-NOT: mpc.attention
func.func @bert(%q: tensor<8x4x128x64xf32>, %k: tensor<8x4x128x64xf32>, %v: tensor<8x4x128x64xf32>) -> tensor<8x4x128x64xf32> {
  %c = mpc.constant dense<0.125> : tensor<f32>
  %s = mpc.matmul %q, %k {transpose_b} : tensor<8x4x128x64xf32>, tensor<8x4x128x64xf32>
  %t = mpc.mul %s, %c : tensor<8x4x128x128xf32>, tensor<f32>
  %p = mpc.softmax %t : tensor<8x4x128x128xf32>
  %pd, %mask = mpc.dropout %p {p = 0.1, seed = 102} : tensor<8x4x128x128xf32>
  %o = mpc.matmul %pd, %v : tensor<8x4x128x128xf32>, tensor<8x4x128x64xf32>
  return %o : tensor<8x4x128x64xf32>
}

// -----

// No scale, no dropout; sq != sk, d != dv, f16.
// CHECK-LABEL: func @plain
// CHECK-NEXT: %[[O:.*]], %{{.*}} = mpc.attention %arg0, %arg1, %arg2 {scale = 1.000000e+00 : f64} : tensor<2x16x8xf16>, tensor<2x24x8xf16>, tensor<2x24x4xf16>
// CHECK-NEXT: return %[[O]]
// REMARK: remark: fused: mpc.matmul + mpc.softmax + mpc.matmul -> mpc.attention
func.func @plain(%q: tensor<2x16x8xf16>, %k: tensor<2x24x8xf16>, %v: tensor<2x24x4xf16>) -> tensor<2x16x4xf16> {
  %s = mpc.matmul %q, %k {transpose_b} : tensor<2x16x8xf16>, tensor<2x24x8xf16>
  %p = mpc.softmax %s {axis = 2} : tensor<2x16x24xf16>
  %o = mpc.matmul %p, %v : tensor<2x16x24xf16>, tensor<2x24x4xf16>
  return %o : tensor<2x16x4xf16>
}

// -----

// A division by a constant on the left-hand side is a scale of 1/c.
// CHECK-LABEL: func @divided
// CHECK-NEXT: mpc.attention %arg0, %arg1, %arg2 {scale = 2.500000e-01 : f64}
// REMARK: remark: fused: mpc.matmul + mpc.div + mpc.softmax + mpc.matmul -> mpc.attention
func.func @divided(%q: tensor<2x16x8xf32>, %k: tensor<2x24x8xf32>, %v: tensor<2x24x4xf32>) -> tensor<2x16x4xf32> {
  %c = mpc.constant dense<4.0> : tensor<f32>
  %s = mpc.matmul %q, %k {transpose_b} : tensor<2x16x8xf32>, tensor<2x24x8xf32>
  %t = mpc.div %s, %c : tensor<2x16x24xf32>, tensor<f32>
  %p = mpc.softmax %t : tensor<2x16x24xf32>
  %o = mpc.matmul %p, %v : tensor<2x16x24xf32>, tensor<2x24x4xf32>
  return %o : tensor<2x16x4xf32>
}

// -----

// As ONNX exports it: k^T made by a transpose (the head split's, composed
// with the swap), the scale a division by pow(8, 0.5). The transpose that
// makes k replaces it.
// CHECK-LABEL: func @onnx
// CHECK-NEXT: %[[K:.*]] = mpc.transpose %arg1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<4x8x2x8xf32>
// CHECK-NEXT: %[[O:.*]], %{{.*}} = mpc.attention %arg0, %[[K]], %arg2 {scale = 0.35355339059327373 : f64} : tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>
// CHECK-NEXT: return %[[O]]
// REMARK: remark: fused: mpc.matmul + mpc.div + mpc.softmax + mpc.matmul -> mpc.attention
func.func @onnx(%q: tensor<4x2x8x8xf32>, %k: tensor<4x8x2x8xf32>, %v: tensor<4x2x8x8xf32>) -> tensor<4x2x8x8xf32> {
  %kt = mpc.transpose %k {permutation = array<i64: 0, 2, 3, 1>} : tensor<4x8x2x8xf32>
  %s = mpc.matmul %q, %kt : tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>
  %c8 = mpc.constant dense<8.0> : tensor<f32>
  %half = mpc.constant dense<0.5> : tensor<f32>
  %d = mpc.pow %c8, %half : tensor<f32>, tensor<f32>
  %t = mpc.div %s, %d : tensor<4x2x8x8xf32>, tensor<f32>
  %p = mpc.softmax %t : tensor<4x2x8x8xf32>
  %o = mpc.matmul %p, %v : tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>
  return %o : tensor<4x2x8x8xf32>
}

// -----

// Masks: masked_fill (fill where the condition holds), a padding mask of
// lower rank (leading 1s added), and where(keep, scores, fill), whose
// condition is negated.
// CHECK-LABEL: func @masked
// CHECK: %[[M:.*]] = mpc.reshape %arg3 : tensor<2x1x8xi1> -> tensor<1x2x1x8xi1>
// CHECK: %[[O:.*]], %{{.*}} = mpc.attention %arg0, %arg1, %arg2 mask(%[[M]] : tensor<1x2x1x8xi1>) {mask_value = -1.000000e+04 : f64, scale = 1.250000e-01 : f64}
// CHECK: %[[F:.*]] = mpc.constant dense<false> : tensor<i1>
// CHECK: %[[N:.*]] = mpc.compare "eq", %arg4, %[[F]] : tensor<3x2x8x8xi1>, tensor<i1>
// CHECK: mpc.attention %arg0, %arg1, %arg2 mask(%[[N]] : tensor<3x2x8x8xi1>) {mask_value = 0xFFF0000000000000 : f64, scale = 1.000000e+00 : f64}
// REMARK: remark: fused: mpc.matmul + mpc.mul + mpc.where + mpc.softmax + mpc.matmul -> mpc.attention
// REMARK: remark: fused: mpc.matmul + mpc.where + mpc.softmax + mpc.matmul -> mpc.attention
func.func @masked(%q: tensor<3x2x8x4xf32>, %k: tensor<3x2x8x4xf32>, %v: tensor<3x2x8x4xf32>, %pad: tensor<2x1x8xi1>, %keep: tensor<3x2x8x8xi1>) -> (tensor<3x2x8x4xf32>, tensor<3x2x8x4xf32>) {
  %c = mpc.constant dense<0.125> : tensor<f32>
  %fill = mpc.constant dense<-1.0e4> : tensor<f32>
  %s = mpc.matmul %q, %k {transpose_b} : tensor<3x2x8x4xf32>, tensor<3x2x8x4xf32>
  %t = mpc.mul %s, %c : tensor<3x2x8x8xf32>, tensor<f32>
  %m = mpc.where %pad, %fill, %t : tensor<2x1x8xi1>, tensor<f32>, tensor<3x2x8x8xf32>
  %p = mpc.softmax %m : tensor<3x2x8x8xf32>
  %o = mpc.matmul %p, %v : tensor<3x2x8x8xf32>, tensor<3x2x8x4xf32>
  %ninf = mpc.constant dense<0xFF800000> : tensor<f32>
  %s2 = mpc.matmul %q, %k {transpose_b} : tensor<3x2x8x4xf32>, tensor<3x2x8x4xf32>
  %m2 = mpc.where %keep, %s2, %ninf : tensor<3x2x8x8xi1>, tensor<3x2x8x8xf32>, tensor<f32>
  %p2 = mpc.softmax %m2 : tensor<3x2x8x8xf32>
  %o2 = mpc.matmul %p2, %v : tensor<3x2x8x8xf32>, tensor<3x2x8x4xf32>
  return %o, %o2 : tensor<3x2x8x4xf32>, tensor<3x2x8x4xf32>
}

// -----

// What must not fuse: a mask whose fill is not a constant, a softmax over
// another axis, scores read elsewhere (a training graph's backward
// reads them), a dropout mask in use, a scale that is not a constant,
// constant / scores, key not transposed in the product.
// CHECK-LABEL: func @no_fusion
// CHECK-NOT: mpc.attention
// REMARK-NOT: remark
func.func @no_fusion(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>, %keep: tensor<2x16x16xi1>, %x: tensor<f32>, %kt: tensor<2x8x16xf32>) -> (tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x16xf32>, tensor<2x16x8xf32>, tensor<2x16x16xi1>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>) {
  %c = mpc.constant dense<0.5> : tensor<f32>
  %s0 = mpc.matmul %q, %k {transpose_b} : tensor<2x16x8xf32>, tensor<2x16x8xf32>
  %m0 = mpc.where %keep, %s0, %x : tensor<2x16x16xi1>, tensor<2x16x16xf32>, tensor<f32>
  %p0 = mpc.softmax %m0 : tensor<2x16x16xf32>
  %o0 = mpc.matmul %p0, %v : tensor<2x16x16xf32>, tensor<2x16x8xf32>
  %s1 = mpc.matmul %q, %k {transpose_b} : tensor<2x16x8xf32>, tensor<2x16x8xf32>
  %p1 = mpc.softmax %s1 {axis = 1} : tensor<2x16x16xf32>
  %o1 = mpc.matmul %p1, %v : tensor<2x16x16xf32>, tensor<2x16x8xf32>
  %s2 = mpc.matmul %q, %k {transpose_b} : tensor<2x16x8xf32>, tensor<2x16x8xf32>
  %p2 = mpc.softmax %s2 : tensor<2x16x16xf32>
  %o2 = mpc.matmul %p2, %v : tensor<2x16x16xf32>, tensor<2x16x8xf32>
  %s3 = mpc.matmul %q, %k {transpose_b} : tensor<2x16x8xf32>, tensor<2x16x8xf32>
  %p3 = mpc.softmax %s3 : tensor<2x16x16xf32>
  %d3, %mask3 = mpc.dropout %p3 {p = 0.1, seed = 1} : tensor<2x16x16xf32>
  %o3 = mpc.matmul %d3, %v : tensor<2x16x16xf32>, tensor<2x16x8xf32>
  %s4 = mpc.matmul %q, %k {transpose_b} : tensor<2x16x8xf32>, tensor<2x16x8xf32>
  %t4 = mpc.mul %s4, %x : tensor<2x16x16xf32>, tensor<f32>
  %p4 = mpc.softmax %t4 : tensor<2x16x16xf32>
  %o4 = mpc.matmul %p4, %v : tensor<2x16x16xf32>, tensor<2x16x8xf32>
  %s5 = mpc.matmul %q, %k {transpose_b} : tensor<2x16x8xf32>, tensor<2x16x8xf32>
  %t5 = mpc.div %c, %s5 : tensor<f32>, tensor<2x16x16xf32>
  %p5 = mpc.softmax %t5 : tensor<2x16x16xf32>
  %o5 = mpc.matmul %p5, %v : tensor<2x16x16xf32>, tensor<2x16x8xf32>
  %s6 = mpc.matmul %q, %kt : tensor<2x16x8xf32>, tensor<2x8x16xf32>
  %p6 = mpc.softmax %s6 : tensor<2x16x16xf32>
  %o6 = mpc.matmul %p6, %v : tensor<2x16x16xf32>, tensor<2x16x8xf32>
  return %o0, %o1, %o2, %s2, %o3, %mask3, %o4, %o5, %o6 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x16xf32>, tensor<2x16x8xf32>, tensor<2x16x16xi1>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
}

// -----

// Hugging Face's padding bias, (1 - mask) * -10000 from an integer mask
// input [B, 1, 1, Sk], added to the scaled scores: the bias joins the
// fused op; a lower-rank bias is reshaped to the scores' rank.
// CHECK-LABEL: func @additive_bias
// CHECK: %[[B:.*]] = mpc.mul
// CHECK: mpc.attention %arg0, %arg1, %arg2 bias(%[[B]] : tensor<2x1x1x8xf32>) {scale = 2.500000e-01 : f64} : tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>
// CHECK: %[[R:.*]] = mpc.reshape %arg4 : tensor<8x8xf32> -> tensor<1x1x8x8xf32>
// CHECK: mpc.attention %arg0, %arg1, %arg2 bias(%[[R]] : tensor<1x1x8x8xf32>) {scale = 1.000000e+00 : f64}
// CHECK-NOT: mpc.softmax
// REMARK: remark: fused: mpc.matmul + mpc.div + mpc.add + mpc.softmax + mpc.matmul -> mpc.attention
// REMARK: remark: fused: mpc.matmul + mpc.add + mpc.softmax + mpc.matmul -> mpc.attention
func.func @additive_bias(%q: tensor<2x3x8x16xf32>, %k: tensor<2x3x8x16xf32>, %v: tensor<2x3x8x16xf32>, %m: tensor<2x1x1x8xi32>, %alibi: tensor<8x8xf32>) -> (tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>) {
  %c = mpc.constant dense<4.0> : tensor<f32>
  %one = mpc.constant dense<1.0> : tensor<f32>
  %big = mpc.constant dense<-10000.0> : tensor<f32>
  %mf = mpc.cast %m : tensor<2x1x1x8xi32> -> tensor<2x1x1x8xf32>
  %inv = mpc.sub %one, %mf : tensor<f32>, tensor<2x1x1x8xf32>
  %bias = mpc.mul %inv, %big : tensor<2x1x1x8xf32>, tensor<f32>
  %s = mpc.matmul %q, %k {transpose_b} : tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>
  %t = mpc.div %s, %c : tensor<2x3x8x8xf32>, tensor<f32>
  %u = mpc.add %t, %bias : tensor<2x3x8x8xf32>, tensor<2x1x1x8xf32>
  %p = mpc.softmax %u : tensor<2x3x8x8xf32>
  %o = mpc.matmul %p, %v : tensor<2x3x8x8xf32>, tensor<2x3x8x16xf32>
  %s2 = mpc.matmul %q, %k {transpose_b} : tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>
  %u2 = mpc.add %alibi, %s2 : tensor<8x8xf32>, tensor<2x3x8x8xf32>
  %p2 = mpc.softmax %u2 : tensor<2x3x8x8xf32>
  %o2 = mpc.matmul %p2, %v : tensor<2x3x8x8xf32>, tensor<2x3x8x16xf32>
  return %o, %o2 : tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>
}

// -----

// A bias computed from model state (a learned relative-position bias)
// would get no gradient from the fused op: it stays unfused. So does an
// f64 bias (f32 would round it) and a bias that is not broadcastable.
// CHECK-LABEL: func @no_bias_fusion
// CHECK-NOT: mpc.attention
ml_program.global private mutable @rel(#mpc.init<zeros>) : tensor<3x8x8xf32>
func.func @no_bias_fusion(%q: tensor<2x3x8x16xf32>, %k: tensor<2x3x8x16xf32>, %v: tensor<2x3x8x16xf32>, %qd: tensor<2x3x8x16xf64>, %kd: tensor<2x3x8x16xf64>, %vd: tensor<2x3x8x16xf64>, %bd: tensor<2x1x1x8xf64>) -> (tensor<2x3x8x16xf32>, tensor<2x3x8x16xf64>) {
  %rel = ml_program.global_load @rel : tensor<3x8x8xf32>
  %s = mpc.matmul %q, %k {transpose_b} : tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>
  %u = mpc.add %s, %rel : tensor<2x3x8x8xf32>, tensor<3x8x8xf32>
  %p = mpc.softmax %u : tensor<2x3x8x8xf32>
  %o = mpc.matmul %p, %v : tensor<2x3x8x8xf32>, tensor<2x3x8x16xf32>
  %sd = mpc.matmul %qd, %kd {transpose_b} : tensor<2x3x8x16xf64>, tensor<2x3x8x16xf64>
  %ud = mpc.add %sd, %bd : tensor<2x3x8x8xf64>, tensor<2x1x1x8xf64>
  %pd = mpc.softmax %ud : tensor<2x3x8x8xf64>
  %od = mpc.matmul %pd, %vd : tensor<2x3x8x8xf64>, tensor<2x3x8x16xf64>
  return %o, %od : tensor<2x3x8x16xf32>, tensor<2x3x8x16xf64>
}

// -----

// A softmax with a scale of its own, or one whose types differ, and a
// dropout whose result type is not its input's (what --mpc-fuse's scales
// and casts build, or a hand-written op): not the pattern.
// CHECK-LABEL: func @no_fusion_folded
// CHECK-NOT: mpc.attention
func.func @no_fusion_folded(%q: tensor<2x16x8xf16>, %k: tensor<2x16x8xf16>, %v: tensor<2x16x8xf16>) -> (tensor<2x16x8xf16>, tensor<2x16x8xf16>, tensor<2x16x8xf16>) {
  %s0 = mpc.matmul %q, %k {transpose_b} : tensor<2x16x8xf16>, tensor<2x16x8xf16>
  %p0 = mpc.softmax %s0 {scale = 0.5 : f64} : tensor<2x16x16xf16>
  %o0 = mpc.matmul %p0, %v : tensor<2x16x16xf16>, tensor<2x16x8xf16>
  %s1 = mpc.matmul %q, %k {transpose_b} : tensor<2x16x8xf16>, tensor<2x16x8xf16>
  %p1 = mpc.softmax %s1 : tensor<2x16x16xf16> -> tensor<2x16x16xf32>
  %d1, %m1 = mpc.dropout %p1 {p = 0.1, seed = 1} : tensor<2x16x16xf32> -> tensor<2x16x16xf16>
  %o1 = mpc.matmul %d1, %v : tensor<2x16x16xf16>, tensor<2x16x8xf16>
  %s2 = mpc.matmul %q, %k {transpose_b} : tensor<2x16x8xf16>, tensor<2x16x8xf16>
  %p2 = mpc.softmax %s2 : tensor<2x16x16xf16>
  %d2, %m2 = mpc.dropout %p2 {p = 0.1, seed = 2} : tensor<2x16x16xf16> -> tensor<2x16x16xf32>
  %c2 = mpc.cast %d2 : tensor<2x16x16xf32> -> tensor<2x16x16xf16>
  %o2 = mpc.matmul %c2, %v : tensor<2x16x16xf16>, tensor<2x16x8xf16>
  return %o0, %o1, %o2 : tensor<2x16x8xf16>, tensor<2x16x8xf16>, tensor<2x16x8xf16>
}
