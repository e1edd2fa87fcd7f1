// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false recompute-in-backward=false" | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false recompute=false" | FileCheck %s --check-prefix=KEEP
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false softmax-dropout=false recompute=false" | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false recompute-in-backward=false report=-" -o /dev/null | FileCheck %s --check-prefix=REPORT

// The O2 step of an unfused attention, its casts folded: the softmax reads
// bf16 scores and writes f32 probabilities, the dropout writes bf16 for
// both products (the output's and the value gradient's), its gradient goes
// through the mask into the softmax's. One softmax_dropout, one backward
// reading the scores; the value gradient's product reads a copy computed
// again (recompute), so neither the probabilities, the mask nor the
// dropped probabilities live past the forward's product (with
// recompute-in-backward, the default, the backward writes them instead:
// recompute-in-backward.mlir).
// CHECK-LABEL: func @attention_step
// CHECK-NEXT: %[[P:.*]] = mpc.softmax_dropout %arg0 {p = 1.000000e-01 : f64, scale = 1.250000e-01 : f64, seed = 3 : i64} : tensor<2x4x8x8xbf16>{{$}}
// CHECK-NEXT: %[[O:.*]] = mpc.matmul %[[P]], %arg1
// CHECK-NEXT: %[[Q:.*]] = mpc.softmax_dropout %arg0 {p = 1.000000e-01 : f64, recompute, scale = 1.250000e-01 : f64, seed = 3 : i64} : tensor<2x4x8x8xbf16>{{$}}
// CHECK-NEXT: %[[DV:.*]] = mpc.matmul %[[Q]], %arg2 {transpose_a}
// CHECK-NEXT: %[[DS:.*]] = mpc.softmax_dropout_backward %arg2, %arg0 {p = 1.000000e-01 : f64, scale = 1.250000e-01 : f64, seed = 3 : i64} : tensor<2x4x8x8xbf16>{{$}}
// CHECK-NEXT: return %[[O]], %[[DV]], %[[DS]]
// KEEP-LABEL: func @attention_step
// KEEP-NEXT: %[[P:.*]] = mpc.softmax_dropout %arg0
// KEEP-NEXT: mpc.matmul %[[P]], %arg1
// KEEP-NEXT: mpc.matmul %[[P]], %arg2 {transpose_a}
// KEEP-NEXT: mpc.softmax_dropout_backward %arg2, %arg0
// KEEP-NOT: recompute
// OFF-LABEL: func @attention_step
// OFF-NOT: softmax_dropout
// OFF: mpc.softmax %arg0
// OFF: mpc.dropout
// OFF: mpc.dropout_backward
// OFF: mpc.softmax_backward
// REMARK: remark: fused: mpc.softmax + mpc.dropout -> mpc.softmax_dropout
// REMARK: remark: fused: mpc.dropout_backward + mpc.softmax_backward -> mpc.softmax_dropout_backward
// REMARK: remark: recomputed: mpc.softmax_dropout before mpc.matmul (its result is not kept from mpc.matmul)
// REPORT: "op": "mpc.softmax_dropout",
// REPORT-NEXT: "dropout_p": 0.10000000000000001,
// REPORT-NEXT: "recompute": false,
// REPORT-NEXT: "location": "{{.*}}softmax-dropout.mlir:[[#@LINE+9]]:8",
// REPORT-NEXT: "from": [
// REPORT-NEXT: "mpc.softmax",
// REPORT-NEXT: "mpc.dropout"
// REPORT: "op": "mpc.softmax_dropout",
// REPORT-NEXT: "dropout_p": 0.10000000000000001,
// REPORT-NEXT: "recompute": true,
// REPORT: "op": "mpc.softmax_dropout_backward",
func.func @attention_step(%s: tensor<2x4x8x8xbf16>, %v: tensor<2x4x8x8xbf16>, %g: tensor<2x4x8x8xbf16>) -> (tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>) {
  %p = mpc.softmax %s {scale = 0.125 : f64} : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
  %d, %m = mpc.dropout %p {p = 0.1 : f64, seed = 3 : i64} : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xbf16>
  %o = mpc.matmul %d, %v : tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>
  %dv = mpc.matmul %d, %g {transpose_a} : tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>
  %gd = mpc.dropout_backward %g, %m {p = 0.1 : f64} : tensor<2x4x8x8xbf16>, tensor<2x4x8x8xi1>
  %ds = mpc.softmax_backward %gd, %p {scale = 0.125 : f64} : tensor<2x4x8x8xbf16>, tensor<2x4x8x8xf32>
  return %o, %dv, %ds : tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>
}

// -----

// No dropout: the f32 probabilities narrowed for the products and read by
// the gradient. mpc.softmax_dropout with p = 0 writes the narrowed ones,
// the gradient reads the scores; the copy again for the value gradient.
// CHECK-LABEL: func @undropped
// CHECK-NEXT: %[[P:.*]] = mpc.softmax_dropout %arg0 {p = 0.000000e+00 : f64, scale = 1.250000e-01 : f64, seed = 0 : i64} : tensor<2x4x8x8xbf16>{{$}}
// CHECK-NEXT: mpc.matmul %[[P]], %arg1
// CHECK-NEXT: %[[Q:.*]] = mpc.softmax_dropout %arg0 {p = 0.000000e+00 : f64, recompute, scale = 1.250000e-01 : f64, seed = 0 : i64}
// CHECK-NEXT: mpc.matmul %[[Q]], %arg2 {transpose_a}
// CHECK-NEXT: mpc.softmax_dropout_backward %arg3, %arg0 {p = 0.000000e+00 : f64, scale = 1.250000e-01 : f64, seed = 0 : i64} : tensor<2x4x8x8xbf16>{{$}}
// OFF-LABEL: func @undropped
// OFF: mpc.softmax %arg0
// OFF-NEXT: mpc.cast
// REMARK: remark: fused: mpc.softmax + mpc.cast -> mpc.softmax_dropout
// REMARK: remark: fused: mpc.softmax_backward -> mpc.softmax_dropout_backward
func.func @undropped(%s: tensor<2x4x8x8xbf16>, %v: tensor<2x4x8x8xbf16>, %g: tensor<2x4x8x8xbf16>, %gy: tensor<2x4x8x8xbf16>) -> (tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>) {
  %p = mpc.softmax %s {scale = 0.125 : f64} : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
  %p16 = mpc.cast %p : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xbf16>
  %o = mpc.matmul %p16, %v : tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>
  %dv = mpc.matmul %p16, %g {transpose_a} : tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>
  %ds = mpc.softmax_backward %gy, %p {scale = 0.125 : f64} : tensor<2x4x8x8xbf16>, tensor<2x4x8x8xf32>
  return %o, %dv, %ds : tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>
}

// -----

// A forward graph (before autodiff, all f32): the mask is unread, the
// probabilities read only by the dropout. f64 fuses too (its softmax's
// result is not rounded either).
// CHECK-LABEL: func @forward
// CHECK-NEXT: %[[P:.*]] = mpc.softmax_dropout %arg0 {p = 2.000000e-01 : f64, seed = 5 : i64} : tensor<4x16xf32>{{$}}
// CHECK-NEXT: %[[Q:.*]] = mpc.softmax_dropout %arg1 {p = 5.000000e-01 : f64, seed = 6 : i64} : tensor<3x5xf64>{{$}}
// CHECK-NEXT: return %[[P]], %[[Q]]
func.func @forward(%x: tensor<4x16xf32>, %y: tensor<3x5xf64>) -> (tensor<4x16xf32>, tensor<3x5xf64>) {
  %p = mpc.softmax %x {axis = 1 : i64} : tensor<4x16xf32>
  %d, %m = mpc.dropout %p {p = 0.2 : f64, seed = 5 : i64} : tensor<4x16xf32>
  %q = mpc.softmax %y : tensor<3x5xf64>
  %e, %n = mpc.dropout %q {p = 0.5 : f64, seed = 6 : i64} : tensor<3x5xf64>
  return %d, %e : tensor<4x16xf32>, tensor<3x5xf64>
}

// -----

// What does not fuse: probabilities read by another op (kept anyway); a
// mask read elsewhere; a softmax over another axis than the last; a
// rounded (f16) softmax result, which the fused op would not round; a
// gradient of another scale; a dropped gradient read twice; without
// dropout, probabilities read unnarrowed (fp32: the scores kept instead
// would save nothing) or narrowed with no gradient (the cast folds into
// the softmax instead).
// CHECK-LABEL: func @no_fusion
// CHECK-NOT: softmax_dropout
// CHECK: return
func.func @no_fusion(%x: tensor<4x16xf32>, %h: tensor<4x16xf16>, %g: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xi1>, tensor<4x16xf32>, tensor<4x16xf16>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x4xf32>, tensor<4x16xf32>, tensor<4x16xf16>) {
  %p0 = mpc.softmax %x : tensor<4x16xf32>
  %d0, %m0 = mpc.dropout %p0 {p = 0.1 : f64, seed = 1 : i64} : tensor<4x16xf32>
  %p1 = mpc.softmax %x {scale = 2.0 : f64} : tensor<4x16xf32>
  %d1, %m1 = mpc.dropout %p1 {p = 0.1 : f64, seed = 2 : i64} : tensor<4x16xf32>
  %p2 = mpc.softmax %x {axis = 0 : i64} : tensor<4x16xf32>
  %d2, %m2 = mpc.dropout %p2 {p = 0.1 : f64, seed = 3 : i64} : tensor<4x16xf32>
  %p3 = mpc.softmax %h : tensor<4x16xf16>
  %d3, %m3 = mpc.dropout %p3 {p = 0.1 : f64, seed = 4 : i64} : tensor<4x16xf16>
  %p4 = mpc.softmax %x {scale = 3.0 : f64} : tensor<4x16xf32>
  %d4, %m4 = mpc.dropout %p4 {p = 0.1 : f64, seed = 5 : i64} : tensor<4x16xf32>
  %g4 = mpc.dropout_backward %g, %m4 {p = 0.1 : f64} : tensor<4x16xf32>, tensor<4x16xi1>
  %s4 = mpc.softmax_backward %g4, %p4 : tensor<4x16xf32>
  %p5 = mpc.softmax %x {scale = 5.0 : f64} : tensor<4x16xf32>
  %d5, %m5 = mpc.dropout %p5 {p = 0.1 : f64, seed = 6 : i64} : tensor<4x16xf32>
  %g5 = mpc.dropout_backward %g, %m5 {p = 0.1 : f64} : tensor<4x16xf32>, tensor<4x16xi1>
  %s5 = mpc.softmax_backward %g5, %p5 {scale = 5.0 : f64} : tensor<4x16xf32>
  %t5 = mpc.add %s5, %g5 : tensor<4x16xf32>, tensor<4x16xf32>
  %p6 = mpc.softmax %x {scale = 6.0 : f64} : tensor<4x16xf32>
  %o6 = mpc.matmul %p6, %g {transpose_b} : tensor<4x16xf32>, tensor<4x16xf32>
  %s6 = mpc.softmax_backward %g, %p6 {scale = 6.0 : f64} : tensor<4x16xf32>
  %p7 = mpc.softmax %x {scale = 7.0 : f64} : tensor<4x16xf32>
  %n7 = mpc.cast %p7 : tensor<4x16xf32> -> tensor<4x16xf16>
  return %d0, %p0, %d1, %m1, %d2, %d3, %d4, %s4, %d5, %t5, %o6, %s6, %n7 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xi1>, tensor<4x16xf32>, tensor<4x16xf16>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x4xf32>, tensor<4x16xf32>, tensor<4x16xf16>
}
