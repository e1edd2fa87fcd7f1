// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false" | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false recompute-in-backward=false" | FileCheck %s --check-prefix=COPY
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false report=-" -o /dev/null | FileCheck %s --check-prefix=REPORT

// An unfused attention's backward at O2: the values' gradient reads the
// dropped probabilities (after the forward's product: recomputed), the
// scores' gradient reads the scores. The backward writes the dropped
// probabilities; the values' product, and the op reading it, move just
// after it. No copy of the forward is left.
// CHECK-LABEL: func @attention_backward
// CHECK-NEXT: %[[P:.*]] = mpc.softmax_dropout %arg0 {p = 1.000000e-01 : f64, scale = 1.250000e-01 : f64, seed = 3 : i64} : tensor<2x4x8x8xf16>{{$}}
// CHECK-NEXT: %[[O:.*]] = mpc.matmul %[[P]], %arg1
// CHECK-NEXT: %[[DS:.*]], %[[PD:.*]] = mpc.softmax_dropout_backward %arg2, %arg0 {p = 1.000000e-01 : f64, scale = 1.250000e-01 : f64, seed = 3 : i64} : tensor<2x4x8x8xf16> dropped tensor<2x4x8x8xf16>{{$}}
// CHECK-NEXT: %[[DV:.*]] = mpc.matmul %[[PD]], %arg3 {transpose_a}
// CHECK-NEXT: %[[E:.*]] = mpc.exp %[[DV]]
// CHECK-NEXT: return %[[O]], %[[E]], %[[DS]]
// COPY-LABEL: func @attention_backward
// COPY: %[[Q:.*]] = mpc.softmax_dropout %arg0 {p = 1.000000e-01 : f64, recompute, scale = 1.250000e-01 : f64, seed = 3 : i64}
// COPY-NEXT: %[[DV:.*]] = mpc.matmul %[[Q]], %arg3 {transpose_a}
// COPY-NEXT: mpc.exp %[[DV]]
// COPY-NEXT: mpc.softmax_dropout_backward %arg2, %arg0 {{.*}} : tensor<2x4x8x8xf16>{{$}}
// REMARK: remark: recomputed: mpc.softmax_dropout before mpc.matmul
// REMARK: remark: recomputed in the backward: mpc.softmax_dropout_backward writes the dropped probabilities of mpc.softmax_dropout (2 ops moved after it)
// REPORT: "op": "mpc.softmax_dropout_backward",
// REPORT-NEXT: "dropout_p": 0.10000000000000001,
// REPORT-NEXT: "dropped": true,
func.func @attention_backward(%s: tensor<2x4x8x8xf16>, %v: tensor<2x4x8x8xf16>, %dpd: tensor<2x4x8x8xf16>, %do: tensor<2x4x8x8xf16>) -> (tensor<2x4x8x8xf16>, tensor<2x4x8x8xf16>, tensor<2x4x8x8xf16>) {
  %p = mpc.softmax_dropout %s {p = 0.1 : f64, scale = 0.125 : f64, seed = 3 : i64} : tensor<2x4x8x8xf16>
  %o = mpc.matmul %p, %v : tensor<2x4x8x8xf16>, tensor<2x4x8x8xf16>
  %dv = mpc.matmul %p, %do {transpose_a} : tensor<2x4x8x8xf16>, tensor<2x4x8x8xf16>
  %e = mpc.exp %dv : tensor<2x4x8x8xf16>
  %ds = mpc.softmax_dropout_backward %dpd, %s {p = 0.1 : f64, scale = 0.125 : f64, seed = 3 : i64} : tensor<2x4x8x8xf16>
  return %o, %e, %ds : tensor<2x4x8x8xf16>, tensor<2x4x8x8xf16>, tensor<2x4x8x8xf16>
}

// -----

// The late reader after the backward already (nothing moves); f32
// throughout (an fp32 step); two backwards of the input: the earlier
// writes the dropped probabilities.
// CHECK-LABEL: func @reader_after
// CHECK-NEXT: %[[P:.*]] = mpc.softmax_dropout %arg0 {p = 2.000000e-01 : f64, seed = 9 : i64} : tensor<4x8xf32>{{$}}
// CHECK-NEXT: %[[O:.*]] = mpc.exp %[[P]]
// CHECK-NEXT: %[[DS:.*]], %[[PD:.*]] = mpc.softmax_dropout_backward %arg1, %arg0 {p = 2.000000e-01 : f64, seed = 9 : i64} : tensor<4x8xf32> dropped tensor<4x8xf32>{{$}}
// CHECK-NEXT: %[[C:.*]] = mpc.softmax_dropout_backward %arg2, %arg0 {p = 2.000000e-01 : f64, seed = 9 : i64} : tensor<4x8xf32>{{$}}
// CHECK-NEXT: %[[L:.*]] = mpc.log %[[PD]]
// CHECK-NEXT: return %[[O]], %[[L]], %[[DS]], %[[C]]
// REMARK: remark: recomputed in the backward: mpc.softmax_dropout_backward writes the dropped probabilities of mpc.softmax_dropout{{$}}
func.func @reader_after(%s: tensor<4x8xf32>, %g: tensor<4x8xf32>, %h: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %p = mpc.softmax_dropout %s {p = 0.2 : f64, seed = 9 : i64} : tensor<4x8xf32>
  %o = mpc.exp %p : tensor<4x8xf32>
  %ds = mpc.softmax_dropout_backward %g, %s {p = 0.2 : f64, seed = 9 : i64} : tensor<4x8xf32>
  %dt = mpc.softmax_dropout_backward %h, %s {p = 0.2 : f64, seed = 9 : i64} : tensor<4x8xf32>
  %l = mpc.log %p : tensor<4x8xf32>
  return %o, %l, %ds, %dt : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// What keeps the copy: a backward whose gradient the late reader makes
// (the backward depends on it); a backward of another seed, of another p,
// of another scale; a backward of mixed types (f32 scores' gradient), and
// one whose gradient is of another type than the probabilities; no
// backward at all (a forward graph read twice).
// CHECK-LABEL: func @copies_stay
// CHECK-COUNT-7: recompute
// CHECK-NOT: dropped
// CHECK: return
// COPY-LABEL: func @copies_stay
// COPY-COUNT-7: recompute
func.func @copies_stay(%s: tensor<4x8xf16>, %g: tensor<4x8xf16>, %w: tensor<8x8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf32>, tensor<4x8xf16>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf16>, tensor<4x8xf16>) {
  // The backward's gradient read from the late reader.
  %p0 = mpc.softmax_dropout %s {p = 0.1 : f64, seed = 1 : i64} : tensor<4x8xf16>
  %o0 = mpc.exp %p0 : tensor<4x8xf16>
  %r0 = mpc.log %p0 : tensor<4x8xf16>
  %g0 = mpc.add %g, %r0 : tensor<4x8xf16>, tensor<4x8xf16>
  %d0 = mpc.softmax_dropout_backward %g0, %s {p = 0.1 : f64, seed = 1 : i64} : tensor<4x8xf16>
  // Another seed, p, scale.
  %p1 = mpc.softmax_dropout %s {p = 0.1 : f64, seed = 2 : i64} : tensor<4x8xf16>
  %o1 = mpc.exp %p1 : tensor<4x8xf16>
  %r1 = mpc.log %p1 : tensor<4x8xf16>
  %d1 = mpc.softmax_dropout_backward %g, %s {p = 0.1 : f64, seed = 22 : i64} : tensor<4x8xf16>
  %p2 = mpc.softmax_dropout %s {p = 0.1 : f64, seed = 3 : i64} : tensor<4x8xf16>
  %o2 = mpc.exp %p2 : tensor<4x8xf16>
  %r2 = mpc.log %p2 : tensor<4x8xf16>
  %d2 = mpc.softmax_dropout_backward %g, %s {p = 0.2 : f64, seed = 3 : i64} : tensor<4x8xf16>
  %p3 = mpc.softmax_dropout %s {p = 0.1 : f64, scale = 0.5 : f64, seed = 4 : i64} : tensor<4x8xf16>
  %o3 = mpc.exp %p3 : tensor<4x8xf16>
  %r3 = mpc.log %p3 : tensor<4x8xf16>
  %d3 = mpc.softmax_dropout_backward %g, %s {p = 0.1 : f64, seed = 4 : i64} : tensor<4x8xf16>
  // Mixed types.
  %p4 = mpc.softmax_dropout %s {p = 0.1 : f64, seed = 5 : i64} : tensor<4x8xf16>
  %o4 = mpc.exp %p4 : tensor<4x8xf16>
  %r4 = mpc.log %p4 : tensor<4x8xf16>
  %d4 = mpc.softmax_dropout_backward %g, %s {p = 0.1 : f64, seed = 5 : i64} : tensor<4x8xf16> -> tensor<4x8xf32>
  %p5 = mpc.softmax_dropout %s {p = 0.1 : f64, seed = 6 : i64} : tensor<4x8xf16> -> tensor<4x8xf32>
  %o5 = mpc.exp %p5 : tensor<4x8xf32>
  %r5 = mpc.log %p5 : tensor<4x8xf32>
  %d5 = mpc.softmax_dropout_backward %g, %s {p = 0.1 : f64, seed = 6 : i64} : tensor<4x8xf16>
  // No backward.
  %p6 = mpc.softmax_dropout %s {p = 0.1 : f64, seed = 7 : i64} : tensor<4x8xf16>
  %o6 = mpc.exp %p6 : tensor<4x8xf16>
  %r6 = mpc.log %p6 : tensor<4x8xf16>
  return %o0, %d0, %o1, %r1, %d1, %o2, %r2, %d2, %o3, %r3, %d3, %o4, %d4, %r4, %o5, %r5, %d5, %r6 : tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf32>, tensor<4x8xf16>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf16>, tensor<4x8xf16>
}

// -----

// A late reader with memory effects (a global's store) does not move: the
// copy stays.
// CHECK-LABEL: func @store_reader
// CHECK: mpc.softmax_dropout %arg0 {p = 1.000000e-01 : f64, recompute, seed = 8 : i64}
// CHECK-NEXT: ml_program.global_store @kept
// CHECK-NEXT: mpc.softmax_dropout_backward %arg1, %arg0 {p = 1.000000e-01 : f64, seed = 8 : i64} : tensor<4x8xf16>{{$}}
ml_program.global private mutable @kept(dense<0.0> : tensor<4x8xf16>) : tensor<4x8xf16>
func.func @store_reader(%s: tensor<4x8xf16>, %g: tensor<4x8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>) {
  %p = mpc.softmax_dropout %s {p = 0.1 : f64, seed = 8 : i64} : tensor<4x8xf16>
  %o = mpc.exp %p : tensor<4x8xf16>
  ml_program.global_store @kept = %p : tensor<4x8xf16>
  %d = mpc.softmax_dropout_backward %g, %s {p = 0.1 : f64, seed = 8 : i64} : tensor<4x8xf16>
  return %o, %d : tensor<4x8xf16>, tensor<4x8xf16>
}
