// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false softmax-dropout=false recompute-moves=false" | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false softmax-dropout=false recompute-moves=false casts=false scales=false" | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false softmax-dropout=false recompute-moves=false scales=false" | FileCheck %s --check-prefix=NOSCALE
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false softmax-dropout=false recompute-moves=false remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false softmax-dropout=false recompute-moves=false report=-" -o /dev/null | FileCheck %s --check-prefix=REPORT

// The f32 island precision assignment puts around an attention's softmax
// at O2 (unfused attention): the scores widened, the probabilities dropped
// and narrowed for the second product; backward, the dropped gradient
// widened for the softmax's gradient and that narrowed again. Every cast
// folds: the softmax reads bf16, the dropout writes bf16, the gradient
// reads bf16 and writes bf16; the f32 probabilities the backward reads
// stay f32.
// CHECK-LABEL: func @attention_island
// CHECK-NOT: mpc.cast
// CHECK: %[[P:.*]] = mpc.softmax %arg0 : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
// CHECK-NEXT: %[[D:.*]], %[[M:.*]] = mpc.dropout %[[P]] {p = 1.000000e-01 : f64, seed = 3 : i64} : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xbf16>
// CHECK-NEXT: %[[G:.*]] = mpc.dropout_backward %arg1, %[[M]]
// CHECK-NEXT: %[[DS:.*]] = mpc.softmax_backward %[[G]], %[[P]] : tensor<2x4x8x8xbf16>, tensor<2x4x8x8xf32>{{$}}
// CHECK-NEXT: return %[[D]], %[[DS]]
// OFF-LABEL: func @attention_island
// OFF-COUNT-4: mpc.cast
// REMARK: remark: fused: mpc.cast + mpc.softmax -> mpc.softmax (reads bf16)
// REMARK: remark: fused: mpc.cast + mpc.softmax_backward -> mpc.softmax_backward (reads bf16)
// REMARK: remark: fused: mpc.dropout + mpc.cast -> mpc.dropout (writes bf16)
// REMARK: remark: fused: mpc.cast + mpc.softmax_backward + mpc.cast -> mpc.softmax_backward (writes bf16)
// REPORT: "op": "mpc.softmax",
// REPORT: "from": [
// REPORT-NEXT: "mpc.cast",
// REPORT-NEXT: "mpc.softmax"
// REPORT: "op": "mpc.dropout",
// REPORT: "from": [
// REPORT-NEXT: "mpc.dropout",
// REPORT-NEXT: "mpc.cast"
// REPORT: "op": "mpc.softmax_backward",
// REPORT: "from": [
// REPORT-NEXT: "mpc.cast",
// REPORT-NEXT: "mpc.softmax_backward",
// REPORT-NEXT: "mpc.cast"
func.func @attention_island(%s: tensor<2x4x8x8xbf16>, %dpd: tensor<2x4x8x8xbf16>) -> (tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>) {
  %0 = mpc.cast %s : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
  %p = mpc.softmax %0 : tensor<2x4x8x8xf32>
  %d, %m = mpc.dropout %p {p = 0.1 : f64, seed = 3 : i64} : tensor<2x4x8x8xf32>
  %1 = mpc.cast %d : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xbf16>
  %g = mpc.dropout_backward %dpd, %m {p = 0.1 : f64} : tensor<2x4x8x8xbf16>, tensor<2x4x8x8xi1>
  %2 = mpc.cast %g : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
  %ds = mpc.softmax_backward %2, %p : tensor<2x4x8x8xf32>
  %3 = mpc.cast %ds : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xbf16>
  return %1, %3 : tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>
}

// -----

// A classifier's log-softmax between f16 logits and an f16 result, and a
// dropout of f16 activations widened for an f32 consumer's sake: both
// sides fold, and a widened input read by two such ops folds into both.
// CHECK-LABEL: func @both_sides
// CHECK-NOT: mpc.cast
// CHECK: mpc.log_softmax %arg0 : tensor<4x10xf16>{{$}}
// CHECK: mpc.dropout %arg0 {p = 5.000000e-01 : f64, seed = 1 : i64} : tensor<4x10xf16> -> tensor<4x10xf32>
// CHECK: mpc.softmax %arg0 : tensor<4x10xf16> -> tensor<4x10xf32>
// OFF-LABEL: func @both_sides
// OFF-COUNT-2: mpc.cast
// REMARK: remark: fused: mpc.cast + mpc.log_softmax -> mpc.log_softmax (reads f16)
// REMARK: remark: fused: mpc.cast + mpc.dropout -> mpc.dropout (reads f16)
// REMARK: remark: fused: mpc.cast + mpc.softmax -> mpc.softmax (reads f16)
// REMARK: remark: fused: mpc.cast + mpc.log_softmax + mpc.cast -> mpc.log_softmax (writes f16)
func.func @both_sides(%x: tensor<4x10xf16>) -> (tensor<4x10xf16>, tensor<4x10xf32>, tensor<4x10xf32>) {
  %0 = mpc.cast %x : tensor<4x10xf16> -> tensor<4x10xf32>
  %1 = mpc.log_softmax %0 : tensor<4x10xf32>
  %2 = mpc.cast %1 : tensor<4x10xf32> -> tensor<4x10xf16>
  %d, %m = mpc.dropout %0 {p = 0.5 : f64, seed = 1 : i64} : tensor<4x10xf32>
  %3 = mpc.softmax %0 : tensor<4x10xf32>
  return %2, %d, %3 : tensor<4x10xf16>, tensor<4x10xf32>, tensor<4x10xf32>
}

// -----

// What must not fold, each cast kept: a widened value another op reads
// (an add); a result another op reads besides the cast; a cast widening a
// result (dropout would scale in f32 without the f16 rounding) or
// narrowing an operand (the softmax would read unrounded values); f16 to
// bf16; f64; a cast into an op that does not mix types (layer norm).
// CHECK-LABEL: func @kept
// CHECK: %[[W:.*]] = mpc.cast %arg0 : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT: mpc.softmax %[[W]] : tensor<4x8xf32>{{$}}
// CHECK: %[[S:.*]] = mpc.softmax %arg1 : tensor<4x8xf32>{{$}}
// CHECK-NEXT: mpc.cast %[[S]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[D:.*]], %{{.*}} = mpc.dropout %arg0 {{.*}} : tensor<4x8xbf16>{{$}}
// CHECK-NEXT: mpc.cast %[[D]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT: %[[N:.*]] = mpc.cast %arg1 : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[S2:.*]] = mpc.softmax %[[N]] : tensor<4x8xbf16>{{$}}
// CHECK-NEXT: mpc.cast %[[S2]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT: %[[B:.*]] = mpc.cast %arg2 : tensor<4x8xf16> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[S3:.*]] = mpc.softmax %[[B]] : tensor<4x8xbf16>{{$}}
// CHECK-NEXT: mpc.cast %[[S3]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT: %[[F:.*]] = mpc.cast %arg3 : tensor<4x8xf64> -> tensor<4x8xf32>
// CHECK-NEXT: mpc.softmax %[[F]] : tensor<4x8xf32>{{$}}
// CHECK-NEXT: mpc.layer_norm %[[W]]
// REMARK-NOT: remark
func.func @kept(%x: tensor<4x8xbf16>, %y: tensor<4x8xf32>, %h: tensor<4x8xf16>, %w: tensor<4x8xf64>, %g: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = mpc.cast %x : tensor<4x8xbf16> -> tensor<4x8xf32>
  %1 = mpc.softmax %0 : tensor<4x8xf32>
  %2 = mpc.add %0, %y : tensor<4x8xf32>, tensor<4x8xf32>
  %3 = mpc.softmax %y : tensor<4x8xf32>
  %4 = mpc.cast %3 : tensor<4x8xf32> -> tensor<4x8xbf16>
  %d, %m = mpc.dropout %x {p = 0.1 : f64, seed = 2 : i64} : tensor<4x8xbf16>
  %5 = mpc.cast %d : tensor<4x8xbf16> -> tensor<4x8xf32>
  %6 = mpc.cast %y : tensor<4x8xf32> -> tensor<4x8xbf16>
  %7 = mpc.softmax %6 : tensor<4x8xbf16>
  %8 = mpc.cast %7 : tensor<4x8xbf16> -> tensor<4x8xf32>
  %9 = mpc.cast %h : tensor<4x8xf16> -> tensor<4x8xbf16>
  %10 = mpc.softmax %9 : tensor<4x8xbf16>
  %11 = mpc.cast %10 : tensor<4x8xbf16> -> tensor<4x8xf32>
  %12 = mpc.cast %w : tensor<4x8xf64> -> tensor<4x8xf32>
  %13 = mpc.softmax %12 : tensor<4x8xf32>
  %n, %mean, %rstd = mpc.layer_norm %0, %g, %g : tensor<4x8xf32>, tensor<8xf32>
  return %1, %2, %4, %3, %5, %8, %11, %13, %n : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// An attention's scale, forward and backward, after the casts folded:
// the product read only by the softmax becomes its scale (a division by a
// constant a scale of 1/c, times any scale it had), the scaled gradient
// the gradient's; the constants go when nothing else reads them.
// CHECK-LABEL: func @scales
// CHECK-NOT: mpc.mul
// CHECK-NOT: mpc.constant
// CHECK: %[[P:.*]] = mpc.softmax %arg0 {scale = 1.250000e-01 : f64} : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
// CHECK: mpc.log_softmax %arg0 : tensor<2x4x8x8xbf16>{{$}}
// CHECK: %[[G:.*]] = mpc.softmax_backward %arg1, %[[P]] {scale = 1.250000e-01 : f64} : tensor<2x4x8x8xbf16>, tensor<2x4x8x8xf32>{{$}}
// CHECK: return %[[P]], %{{.*}}, %[[G]]
// NOSCALE-LABEL: func @scales
// NOSCALE: mpc.mul
// NOSCALE: mpc.div
// NOSCALE: mpc.mul
// REMARK: remark: fused: mpc.cast + mpc.softmax -> mpc.softmax (reads bf16)
// REMARK: remark: fused: mpc.cast + mpc.softmax_backward -> mpc.softmax_backward (reads bf16)
// REMARK: remark: fused: mpc.cast + mpc.softmax_backward + mpc.cast -> mpc.softmax_backward (writes bf16)
// REMARK: remark: fused: mpc.mul + mpc.cast + mpc.softmax -> mpc.softmax (scale 0.125)
// REMARK: remark: fused: mpc.div + mpc.log_softmax -> mpc.log_softmax (scale 0.5)
// REMARK: remark: fused: mpc.cast + mpc.softmax_backward + mpc.cast + mpc.mul -> mpc.softmax_backward (scale 0.125)
func.func @scales(%s: tensor<2x4x8x8xbf16>, %dp: tensor<2x4x8x8xbf16>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>) {
  %c = mpc.constant dense<0.125> : tensor<bf16>
  %two = mpc.constant dense<2.0> : tensor<bf16>
  %t = mpc.mul %s, %c : tensor<2x4x8x8xbf16>, tensor<bf16>
  %0 = mpc.cast %t : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
  %p = mpc.softmax %0 : tensor<2x4x8x8xf32>
  %h = mpc.div %s, %two : tensor<2x4x8x8xbf16>, tensor<bf16>
  %l = mpc.log_softmax %h {scale = 2.0 : f64} : tensor<2x4x8x8xbf16>
  %1 = mpc.cast %dp : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
  %g = mpc.softmax_backward %1, %p : tensor<2x4x8x8xf32>
  %2 = mpc.cast %g : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xbf16>
  %dx = mpc.mul %2, %c : tensor<2x4x8x8xbf16>, tensor<bf16>
  return %p, %l, %dx : tensor<2x4x8x8xf32>, tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>
}

// -----

// What keeps its mul: a product another op reads; a scale that is not a
// constant, or not one element; a gradient read elsewhere too; a product
// whose tensor is broadcast (its type is not the result's).
// CHECK-LABEL: func @scales_kept
// CHECK-COUNT-5: mpc.mul
// CHECK-NOT: scale =
func.func @scales_kept(%s: tensor<4x8xf32>, %x: tensor<f32>, %v: tensor<8xf32>, %g: tensor<4x8xf32>, %row: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %c = mpc.constant dense<0.5> : tensor<f32>
  %t0 = mpc.mul %s, %c : tensor<4x8xf32>, tensor<f32>
  %p0 = mpc.softmax %t0 : tensor<4x8xf32>
  %t1 = mpc.mul %s, %x : tensor<4x8xf32>, tensor<f32>
  %p1 = mpc.softmax %t1 : tensor<4x8xf32>
  %t2 = mpc.mul %s, %v : tensor<4x8xf32>, tensor<8xf32>
  %p2 = mpc.softmax %t2 : tensor<4x8xf32>
  %b = mpc.softmax_backward %g, %p0 : tensor<4x8xf32>
  %t3 = mpc.mul %b, %c : tensor<4x8xf32>, tensor<f32>
  %c11 = mpc.constant dense<0.5> : tensor<1x1xf32>
  %t4 = mpc.mul %row, %c11 : tensor<8xf32>, tensor<1x1xf32>
  %p4 = mpc.softmax %t4 : tensor<1x8xf32>
  %w = mpc.broadcast_to %p4 : tensor<1x8xf32> -> tensor<4x8xf32>
  return %t0, %p1, %p2, %b, %t3, %p0, %w, %p0 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// The queries scaled before the scores' product (nn.MultiheadAttention's
// q / sqrt(D)), the product read only by the softmax: a scale of the
// product, so the softmax's; either operand. Kept: a scaled operand
// another op reads too, and a product the softmax does not read alone.
// CHECK-LABEL: func @query_scales
// CHECK: %[[S:.*]] = mpc.matmul %arg0, %arg1 {transpose_b} : tensor<4x8x16xf16>, tensor<4x8x16xf16>
// CHECK: mpc.softmax %[[S]] {scale = 2.500000e-01 : f64}
// CHECK: %[[T:.*]] = mpc.matmul %arg0, %arg1 {transpose_b} : tensor<4x8x16xf16>, tensor<4x8x16xf16>
// CHECK: mpc.softmax %[[T]] {scale = 5.000000e-01 : f64}
// CHECK: %[[Q:.*]] = mpc.mul %arg0
// CHECK: mpc.matmul %[[Q]], %arg1
// CHECK: mpc.softmax %{{.*}} : tensor<4x8x8xf16>
// CHECK: %[[R:.*]] = mpc.div %arg0
// CHECK: %[[U:.*]] = mpc.matmul %[[R]], %arg1
// CHECK: mpc.softmax %[[U]] : tensor<4x8x8xf16>
// NOSCALE-LABEL: func @query_scales
// NOSCALE-COUNT-4: mpc.softmax %{{.*}} : tensor<4x8x8xf16>
// REMARK: remark: fused: mpc.div + mpc.softmax -> mpc.softmax (scale 0.25)
// REMARK: remark: fused: mpc.mul + mpc.softmax -> mpc.softmax (scale 0.5)
// REMARK-NOT: remark: fused
func.func @query_scales(%q: tensor<4x8x16xf16>, %k: tensor<4x8x16xf16>) -> (tensor<4x8x8xf16>, tensor<4x8x8xf16>, tensor<4x8x8xf16>, tensor<4x8x16xf16>, tensor<4x8x8xf16>, tensor<4x8x8xf16>) {
  %c = mpc.constant dense<4.0> : tensor<f16>
  %h = mpc.constant dense<0.5> : tensor<f16>
  %0 = mpc.div %q, %c : tensor<4x8x16xf16>, tensor<f16>
  %1 = mpc.matmul %0, %k {transpose_b} : tensor<4x8x16xf16>, tensor<4x8x16xf16>
  %2 = mpc.softmax %1 : tensor<4x8x8xf16>
  %3 = mpc.mul %k, %h : tensor<4x8x16xf16>, tensor<f16>
  %4 = mpc.matmul %q, %3 {transpose_b} : tensor<4x8x16xf16>, tensor<4x8x16xf16>
  %5 = mpc.softmax %4 : tensor<4x8x8xf16>
  %6 = mpc.mul %q, %h : tensor<4x8x16xf16>, tensor<f16>
  %7 = mpc.matmul %6, %k {transpose_b} : tensor<4x8x16xf16>, tensor<4x8x16xf16>
  %8 = mpc.softmax %7 : tensor<4x8x8xf16>
  %9 = mpc.div %q, %c : tensor<4x8x16xf16>, tensor<f16>
  %10 = mpc.matmul %9, %k {transpose_b} : tensor<4x8x16xf16>, tensor<4x8x16xf16>
  %11 = mpc.softmax %10 : tensor<4x8x8xf16>
  return %2, %5, %8, %6, %11, %10 : tensor<4x8x8xf16>, tensor<4x8x8xf16>, tensor<4x8x8xf16>, tensor<4x8x16xf16>, tensor<4x8x8xf16>, tensor<4x8x8xf16>
}
