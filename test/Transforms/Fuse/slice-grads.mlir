// RUN: mpc-opt %s -split-input-file --mpc-fuse | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse=slice-grads=false | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse="report=-" -o /dev/null | FileCheck %s --check-prefix=REPORT

// A packed projection's three pieces (a split's or chunk's gradients, in
// any order of the sums): one concatenation in the pieces' order along
// the axis, no zeros, no adds.
// CHECK-LABEL: func @qkv
// CHECK-NEXT: %[[C:.*]] = mpc.concat %arg1, %arg2, %arg0 {axis = 2 : i64} : tensor<4x8x16xf16>, tensor<4x8x16xf16>, tensor<4x8x16xf16>
// CHECK-NEXT: return %[[C]]
// OFF-LABEL: func @qkv
// OFF-COUNT-3: mpc.slice_backward
// OFF-COUNT-2: mpc.add
// OFF-NOT: mpc.concat
// REMARK: remark: fused: mpc.slice_backward + mpc.slice_backward + mpc.add + mpc.slice_backward + mpc.add -> mpc.concat
// REPORT: "function": "qkv",
// REPORT-NEXT: "op": "mpc.concat",
// REPORT-NEXT: "location": "{{.*}}slice-grads.mlir:{{[0-9]+}}:8",
// REPORT-NEXT: "from": [
// REPORT-NEXT: "mpc.slice_backward",
// REPORT-NEXT: "mpc.slice_backward",
// REPORT-NEXT: "mpc.add",
// REPORT-NEXT: "mpc.slice_backward",
// REPORT-NEXT: "mpc.add"
func.func @qkv(%dv: tensor<4x8x16xf16>, %dq: tensor<4x8x16xf16>, %dk: tensor<4x8x16xf16>) -> tensor<4x8x48xf16> {
  %v = mpc.slice_backward %dv {offsets = array<i64: 0, 0, 32>} : tensor<4x8x16xf16> -> tensor<4x8x48xf16>
  %k = mpc.slice_backward %dk {offsets = array<i64: 0, 0, 16>} : tensor<4x8x16xf16> -> tensor<4x8x48xf16>
  %0 = mpc.add %v, %k : tensor<4x8x48xf16>, tensor<4x8x48xf16>
  %q = mpc.slice_backward %dq {offsets = array<i64: 0, 0, 0>} : tensor<4x8x16xf16> -> tensor<4x8x48xf16>
  %1 = mpc.add %0, %q : tensor<4x8x48xf16>, tensor<4x8x48xf16>
  return %1 : tensor<4x8x48xf16>
}

// -----

// Halves of unequal sizes along the leading axis, with the gradient of
// another reader of the input among the terms: it is added to the
// concatenation.
// CHECK-LABEL: func @with_other_term
// CHECK-NEXT: %[[C:.*]] = mpc.concat %arg0, %arg1 {axis = 0 : i64} : tensor<3x5xf32>, tensor<5x5xf32>
// CHECK-NEXT: %[[S:.*]] = mpc.add %[[C]], %arg2 : tensor<8x5xf32>, tensor<8x5xf32>
// CHECK-NEXT: return %[[S]]
// REMARK: remark: fused: mpc.slice_backward + mpc.add + mpc.slice_backward + mpc.add -> mpc.concat
func.func @with_other_term(%top: tensor<3x5xf32>, %bottom: tensor<5x5xf32>, %direct: tensor<8x5xf32>) -> tensor<8x5xf32> {
  %a = mpc.slice_backward %top {offsets = array<i64: 0, 0>} : tensor<3x5xf32> -> tensor<8x5xf32>
  %0 = mpc.add %a, %direct : tensor<8x5xf32>, tensor<8x5xf32>
  %b = mpc.slice_backward %bottom {offsets = array<i64: 3, 0>} : tensor<5x5xf32> -> tensor<8x5xf32>
  %1 = mpc.add %b, %0 : tensor<8x5xf32>, tensor<8x5xf32>
  return %1 : tensor<8x5xf32>
}

// -----

// What must not become a concatenation: pieces with a gap between them,
// overlapping pieces, a strided slice's gradient, a piece read by
// something else too, pieces along two axes, and a partial sum read by
// something else (the tree stops there; what is left has one piece).
// CHECK-LABEL: func @no_concat
// CHECK-NOT: mpc.concat
// REMARK-NOT: remark
func.func @no_concat(%a: tensor<4x16xf32>, %b: tensor<4x24xf32>, %c: tensor<4x8xf32>, %r: tensor<2x48xf32>) -> (tensor<4x48xf32>, tensor<4x48xf32>, tensor<4x48xf32>, tensor<4x48xf32>, tensor<4x48xf32>, tensor<4x48xf32>, tensor<4x48xf32>, tensor<4x48xf32>) {
  // A gap: [0, 16) and [32, 48).
  %g0 = mpc.slice_backward %a {offsets = array<i64: 0, 0>} : tensor<4x16xf32> -> tensor<4x48xf32>
  %g1 = mpc.slice_backward %a {offsets = array<i64: 0, 32>} : tensor<4x16xf32> -> tensor<4x48xf32>
  %gap = mpc.add %g0, %g1 : tensor<4x48xf32>, tensor<4x48xf32>
  // Overlapping: [0, 24) and [16, 40) and [40, 48).
  %o0 = mpc.slice_backward %b {offsets = array<i64: 0, 0>} : tensor<4x24xf32> -> tensor<4x48xf32>
  %o1 = mpc.slice_backward %b {offsets = array<i64: 0, 16>} : tensor<4x24xf32> -> tensor<4x48xf32>
  %o2 = mpc.slice_backward %c {offsets = array<i64: 0, 40>} : tensor<4x8xf32> -> tensor<4x48xf32>
  %o3 = mpc.add %o0, %o1 : tensor<4x48xf32>, tensor<4x48xf32>
  %overlap = mpc.add %o3, %o2 : tensor<4x48xf32>, tensor<4x48xf32>
  // Strided: every other column from 0 and from 1.
  %s0 = mpc.slice_backward %b {offsets = array<i64: 0, 0>, strides = array<i64: 1, 2>} : tensor<4x24xf32> -> tensor<4x48xf32>
  %s1 = mpc.slice_backward %b {offsets = array<i64: 0, 1>, strides = array<i64: 1, 2>} : tensor<4x24xf32> -> tensor<4x48xf32>
  %strided = mpc.add %s0, %s1 : tensor<4x48xf32>, tensor<4x48xf32>
  // A piece that is also returned.
  %p0 = mpc.slice_backward %b {offsets = array<i64: 0, 0>} : tensor<4x24xf32> -> tensor<4x48xf32>
  %p1 = mpc.slice_backward %b {offsets = array<i64: 0, 24>} : tensor<4x24xf32> -> tensor<4x48xf32>
  %shared = mpc.add %p0, %p1 : tensor<4x48xf32>, tensor<4x48xf32>
  // Two axes: rows [0, 2) whole, and columns [0, 24) of the other rows.
  %t0 = mpc.slice_backward %r {offsets = array<i64: 0, 0>} : tensor<2x48xf32> -> tensor<4x48xf32>
  %t1 = mpc.slice_backward %b {offsets = array<i64: 0, 24>} : tensor<4x24xf32> -> tensor<4x48xf32>
  %axes = mpc.add %t0, %t1 : tensor<4x48xf32>, tensor<4x48xf32>
  // A partial sum returned as well.
  %q0 = mpc.slice_backward %a {offsets = array<i64: 0, 0>} : tensor<4x16xf32> -> tensor<4x48xf32>
  %q1 = mpc.slice_backward %a {offsets = array<i64: 0, 16>} : tensor<4x16xf32> -> tensor<4x48xf32>
  %q2 = mpc.slice_backward %a {offsets = array<i64: 0, 32>} : tensor<4x16xf32> -> tensor<4x48xf32>
  %q3 = mpc.add %q0, %q1 : tensor<4x48xf32>, tensor<4x48xf32>
  %partial = mpc.add %q3, %q2 : tensor<4x48xf32>, tensor<4x48xf32>
  return %gap, %overlap, %strided, %shared, %p0, %axes, %partial, %q3 : tensor<4x48xf32>, tensor<4x48xf32>, tensor<4x48xf32>, tensor<4x48xf32>, tensor<4x48xf32>, tensor<4x48xf32>, tensor<4x48xf32>, tensor<4x48xf32>
}
