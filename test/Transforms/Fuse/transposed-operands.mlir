// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false head-products=false" | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false head-products=false transposed-operands=false" | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false head-products=false remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

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

// A batched operand's last two dimensions swapped alone folds; one read
// by something else too stays for that reader (moved down to it by
// recompute-moves).
// CHECK-LABEL: func @batched
// CHECK-NEXT: %[[S:.*]] = mpc.matmul %arg0, %arg1 {transpose_b} : tensor<2x4x8x16xf16>, tensor<2x4x8x16xf16>
// CHECK-NEXT: %[[U:.*]] = mpc.matmul %arg0, %arg1 {transpose_b}
// CHECK-NEXT: %[[VT:.*]] = mpc.transpose %arg1 {permutation = array<i64: 0, 1, 3, 2>}
// CHECK-NEXT: return %[[S]], %[[U]], %[[VT]]
func.func @batched(%q: tensor<2x4x8x16xf16>, %k: tensor<2x4x8x16xf16>) -> (tensor<2x4x8x8xf16>, tensor<2x4x8x8xf16>, tensor<2x4x16x8xf16>) {
  %kt = mpc.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<2x4x8x16xf16>
  %s = mpc.matmul %q, %kt : tensor<2x4x8x16xf16>, tensor<2x4x16x8xf16>
  %vt = mpc.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<2x4x8x16xf16>
  %u = mpc.matmul %q, %vt : tensor<2x4x8x16xf16>, tensor<2x4x16x8xf16>
  return %s, %u, %vt : tensor<2x4x8x8xf16>, tensor<2x4x8x8xf16>, tensor<2x4x16x8xf16>
}

// -----

// Keys split into heads and transposed for q @ k^T at once ([0, 2, 3, 1]:
// the input's innermost dimension becomes the second innermost), read by
// two products (the scores, and a product reading it as its left
// operand): the last two dimensions' swap goes into both products'
// flags, and one transpose that keeps the innermost dimension innermost
// ([0, 2, 1, 3]) stays for both. Read by anything but products, or moving
// the innermost dimension elsewhere ([0, 3, 1, 2]), the transpose stays.
// CHECK-LABEL: func @heads
// CHECK-NEXT: %[[K:.*]] = mpc.transpose %arg1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf16>
// CHECK-NEXT: %[[S:.*]] = mpc.matmul %arg0, %[[K]] {transpose_b} : tensor<2x4x8x16xf16>, tensor<2x4x8x16xf16>
// CHECK-NEXT: %[[P:.*]] = mpc.matmul %[[K]], %arg2 {transpose_a} : tensor<2x4x8x16xf16>, tensor<2x4x8x8xf16>
// CHECK-NEXT: %[[KT2:.*]] = mpc.transpose %arg1 {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: %[[T:.*]] = mpc.matmul %arg0, %[[KT2]] : tensor<2x4x8x16xf16>, tensor<2x4x16x8xf16>
// CHECK-NEXT: %[[E:.*]] = mpc.exp %[[KT2]]
// CHECK-NEXT: %[[KT3:.*]] = mpc.transpose %arg3 {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: %[[V:.*]] = mpc.matmul %arg0, %[[KT3]] : tensor<2x4x8x16xf16>, tensor<2x4x16x8xf16>
// CHECK-NEXT: return %[[S]], %[[P]], %[[T]], %[[E]], %[[V]]
// OFF-LABEL: func @heads
// OFF-NEXT: mpc.transpose %arg1 {permutation = array<i64: 0, 2, 3, 1>}
// REMARK: remark: folded: the last two dimensions of mpc.transpose into its products (the transpose keeps the innermost dimension)
// REMARK-NOT: remark: folded
func.func @heads(%q: tensor<2x4x8x16xf16>, %kbs: tensor<2x8x4x16xf16>, %m: tensor<2x4x8x8xf16>, %x: tensor<2x16x8x4xf16>) -> (tensor<2x4x8x8xf16>, tensor<2x4x16x8xf16>, tensor<2x4x8x8xf16>, tensor<2x4x16x8xf16>, tensor<2x4x8x8xf16>) {
  %kt = mpc.transpose %kbs {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x8x4x16xf16>
  %s = mpc.matmul %q, %kt : tensor<2x4x8x16xf16>, tensor<2x4x16x8xf16>
  %p = mpc.matmul %kt, %m : tensor<2x4x16x8xf16>, tensor<2x4x8x8xf16>
  %kt2 = mpc.transpose %kbs {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x8x4x16xf16>
  %t = mpc.matmul %q, %kt2 : tensor<2x4x8x16xf16>, tensor<2x4x16x8xf16>
  %e = mpc.exp %kt2 : tensor<2x4x16x8xf16>
  %kt3 = mpc.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x16x8x4xf16>
  %v = mpc.matmul %q, %kt3 : tensor<2x4x8x16xf16>, tensor<2x4x16x8xf16>
  return %s, %p, %t, %e, %v : tensor<2x4x8x8xf16>, tensor<2x4x16x8xf16>, tensor<2x4x8x8xf16>, tensor<2x4x16x8xf16>, tensor<2x4x8x8xf16>
}

// -----

// The keys of nn.MultiheadAttention's batch-first export, [S, B H, D]
// transposed to [B H, D, S] for q @ k^T, after the batch transpose
// composed with it (row-transposes.mlir): [B, S, H D] to [B, H D, S],
// viewed as [B H, D, S]. The product reads its operand with
// the last two dimensions swapped instead, [B, S, H, D] to [B, H, S, D]
// (rows of D elements moved, not single elements), its flag flipped.
// Where the swapped operand would still move the innermost dimension
// (the second product), the transpose stays.
// CHECK-LABEL: func @keys
// CHECK-NEXT: %[[KS:.*]] = mpc.reshape %arg1 : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
// CHECK-NEXT: %[[KT:.*]] = mpc.transpose %[[KS]] {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
// CHECK-NEXT: %[[KH:.*]] = mpc.reshape %[[KT]] : tensor<2x2x6x4xf32> -> tensor<4x6x4xf32>
// CHECK-NEXT: %[[S:.*]] = mpc.matmul %arg0, %[[KH]] {transpose_b} : tensor<4x6x4xf32>, tensor<4x6x4xf32>
// CHECK-NEXT: %[[XT:.*]] = mpc.transpose %arg2 {permutation = array<i64: 2, 0, 1>}
// CHECK-NEXT: %[[XR:.*]] = mpc.reshape %[[XT]] : tensor<8x2x6xf32> -> tensor<4x4x6xf32>
// CHECK-NEXT: %[[U:.*]] = mpc.matmul %arg3, %[[XR]] : tensor<4x6x4xf32>, tensor<4x4x6xf32>
// CHECK-NEXT: return %[[S]], %[[U]]
// OFF-LABEL: func @keys
// OFF-NEXT: mpc.transpose %arg1 {permutation = array<i64: 0, 2, 1>}
// REMARK: remark: folded: the last two dimensions of mpc.transpose into its products (the transpose keeps the innermost dimension)
// REMARK-NOT: remark: folded
func.func @keys(%q: tensor<4x6x4xf32>, %k: tensor<2x6x8xf32>, %x: tensor<2x6x8xf32>, %p: tensor<4x6x4xf32>) -> (tensor<4x6x6xf32>, tensor<4x6x6xf32>) {
  %kt = mpc.transpose %k {permutation = array<i64: 0, 2, 1>} : tensor<2x6x8xf32>
  %kr = mpc.reshape %kt : tensor<2x8x6xf32> -> tensor<4x4x6xf32>
  %s = mpc.matmul %q, %kr : tensor<4x6x4xf32>, tensor<4x4x6xf32>
  %xt = mpc.transpose %x {permutation = array<i64: 2, 0, 1>} : tensor<2x6x8xf32>
  %xr = mpc.reshape %xt : tensor<8x2x6xf32> -> tensor<4x4x6xf32>
  %u = mpc.matmul %p, %xr : tensor<4x6x4xf32>, tensor<4x4x6xf32>
  return %s, %u : tensor<4x6x6xf32>, tensor<4x6x6xf32>
}

