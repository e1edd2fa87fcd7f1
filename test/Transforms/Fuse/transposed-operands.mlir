// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false" | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false transposed-operands=false" | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A linear layer written x @ transpose(W) with W stored [out, in] (an ONNX
// export of nn.Linear on 3-D inputs), the data gradient dy @ transpose(W)^T
// and a product of a transposed left operand: each reads the transpose's
// input, its flag flipped; the transpose goes.
// CHECK-LABEL: func @weights
// CHECK-NEXT: %[[Y:.*]] = mpc.matmul %arg0, %arg1 {transpose_b} : tensor<4x8x16xf16>, tensor<32x16xf16>
// CHECK-NEXT: %[[DX:.*]] = mpc.matmul %arg2, %arg1 : tensor<4x8x32xf16>, tensor<32x16xf16>
// CHECK-NEXT: %[[P:.*]] = mpc.matmul %arg3, %arg1 {transpose_a, transpose_b} : tensor<16x32xf16>, tensor<32x16xf16>
// CHECK-NEXT: return %[[Y]], %[[DX]], %[[P]]
// OFF-LABEL: func @weights
// OFF: mpc.transpose %arg1
// OFF: mpc.transpose %arg3
// REMARK-COUNT-3: remark: folded: mpc.transpose into mpc.matmul
func.func @weights(%x: tensor<4x8x16xf16>, %w: tensor<32x16xf16>, %dy: tensor<4x8x32xf16>, %m: tensor<16x32xf16>) -> (tensor<4x8x32xf16>, tensor<4x8x16xf16>, tensor<32x32xf16>) {
  %wt = mpc.transpose %w {permutation = array<i64: 1, 0>} : tensor<32x16xf16>
  %y = mpc.matmul %x, %wt : tensor<4x8x16xf16>, tensor<16x32xf16>
  %dx = mpc.matmul %dy, %wt {transpose_b} : tensor<4x8x32xf16>, tensor<16x32xf16>
  %mt = mpc.transpose %m {permutation = array<i64: 1, 0>} : tensor<16x32xf16>
  %p = mpc.matmul %mt, %wt : tensor<32x16xf16>, tensor<16x32xf16>
  return %y, %dx, %p : tensor<4x8x32xf16>, tensor<4x8x16xf16>, tensor<32x32xf16>
}

// -----

// A batched operand's last two dimensions swapped alone folds; a transpose
// that moves a leading dimension (the heads of an attention's keys) does
// not, and one read by something else too stays for that reader (moved
// down to it by recompute-moves).
// CHECK-LABEL: func @batched
// CHECK-NEXT: %[[S:.*]] = mpc.matmul %arg0, %arg1 {transpose_b} : tensor<2x4x8x16xf16>, tensor<2x4x8x16xf16>
// CHECK-NEXT: %[[KT:.*]] = mpc.transpose %arg2 {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: %[[T:.*]] = mpc.matmul %arg0, %[[KT]] : tensor<2x4x8x16xf16>, tensor<2x4x16x8xf16>
// CHECK-NEXT: %[[U:.*]] = mpc.matmul %arg0, %arg1 {transpose_b}
// CHECK-NEXT: %[[VT:.*]] = mpc.transpose %arg1 {permutation = array<i64: 0, 1, 3, 2>}
// CHECK-NEXT: return %[[S]], %[[T]], %[[U]], %[[VT]]
func.func @batched(%q: tensor<2x4x8x16xf16>, %k: tensor<2x4x8x16xf16>, %kbs: tensor<2x8x4x16xf16>) -> (tensor<2x4x8x8xf16>, tensor<2x4x8x8xf16>, tensor<2x4x8x8xf16>, tensor<2x4x16x8xf16>) {
  %kt = mpc.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<2x4x8x16xf16>
  %s = mpc.matmul %q, %kt : tensor<2x4x8x16xf16>, tensor<2x4x16x8xf16>
  %kt2 = mpc.transpose %kbs {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x8x4x16xf16>
  %t = mpc.matmul %q, %kt2 : tensor<2x4x8x16xf16>, tensor<2x4x16x8xf16>
  %vt = mpc.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<2x4x8x16xf16>
  %u = mpc.matmul %q, %vt : tensor<2x4x8x16xf16>, tensor<2x4x16x8xf16>
  return %s, %t, %u, %vt : tensor<2x4x8x8xf16>, tensor<2x4x8x8xf16>, tensor<2x4x8x8xf16>, tensor<2x4x16x8xf16>
}
