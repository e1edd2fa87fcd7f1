// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false recompute-moves=false" | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false recompute-moves=false row-transposes=false" | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention=false recompute-moves=false remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// nn.MultiheadAttention with batch_first=True, as ONNX exports it: the
// [B, S, E] input transposed to [S, B, E] before the packed projection,
// its thirds viewed as [S, B H, D] and transposed to [B H, S, D]. The
// first transpose moves down through the product, the bias add and the
// slices (each works on rows) and composes with each head transpose: the
// projection reads the input as it is, and each third is one transpose of
// [B, S, H, D] to [B, H, S, D] between reshapes.
// CHECK-LABEL: func @batch_first_heads
// CHECK-NEXT: %[[P:.*]] = mpc.matmul %arg0, %arg1 {transpose_b} : tensor<2x6x8xf32>, tensor<24x8xf32>
// CHECK-NEXT: %[[PB:.*]] = mpc.add %arg2, %[[P]] : tensor<24xf32>, tensor<2x6x24xf32>
// CHECK-NEXT: %[[Q:.*]] = mpc.slice %[[PB]] {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 6, 8>} : tensor<2x6x24xf32>
// CHECK-NEXT: %[[V:.*]] = mpc.slice %[[PB]] {offsets = array<i64: 0, 0, 16>, sizes = array<i64: 2, 6, 8>} : tensor<2x6x24xf32>
// CHECK-NEXT: %[[QS:.*]] = mpc.reshape %[[Q]] : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
// CHECK-NEXT: %[[QT:.*]] = mpc.transpose %[[QS]] {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
// CHECK-NEXT: %[[QH:.*]] = mpc.reshape %[[QT]] : tensor<2x2x6x4xf32> -> tensor<4x6x4xf32>
// CHECK-NEXT: %[[VS:.*]] = mpc.reshape %[[V]] : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
// CHECK-NEXT: %[[VT:.*]] = mpc.transpose %[[VS]] {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
// CHECK-NEXT: %[[VH:.*]] = mpc.reshape %[[VT]] : tensor<2x2x6x4xf32> -> tensor<4x6x4xf32>
// CHECK-NEXT: return %[[QH]], %[[VH]]
// OFF-LABEL: func @batch_first_heads
// OFF-NEXT: mpc.transpose %arg0 {permutation = array<i64: 1, 0, 2>}
// OFF-COUNT-2: mpc.transpose %{{.*}} {permutation = array<i64: 1, 0, 2>} : tensor<6x4x4xf32>
// REMARK: remark: moved: mpc.transpose below the row-wise ops that read it
// REMARK-COUNT-2: remark: composed: mpc.transpose of mpc.reshape of mpc.transpose into one mpc.transpose
func.func @batch_first_heads(%x: tensor<2x6x8xf32>, %w: tensor<24x8xf32>, %b: tensor<24xf32>) -> (tensor<4x6x4xf32>, tensor<4x6x4xf32>) {
  %t = mpc.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x6x8xf32>
  %p = mpc.matmul %t, %w {transpose_b} : tensor<6x2x8xf32>, tensor<24x8xf32>
  %pb = mpc.add %b, %p : tensor<24xf32>, tensor<6x2x24xf32>
  %q = mpc.slice %pb {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 6, 2, 8>} : tensor<6x2x24xf32>
  %v = mpc.slice %pb {offsets = array<i64: 0, 0, 16>, sizes = array<i64: 6, 2, 8>} : tensor<6x2x24xf32>
  %qr = mpc.reshape %q : tensor<6x2x8xf32> -> tensor<6x4x4xf32>
  %qh = mpc.transpose %qr {permutation = array<i64: 1, 0, 2>} : tensor<6x4x4xf32>
  %vr = mpc.reshape %v : tensor<6x2x8xf32> -> tensor<6x4x4xf32>
  %vh = mpc.transpose %vr {permutation = array<i64: 1, 0, 2>} : tensor<6x4x4xf32>
  return %qh, %vh : tensor<4x6x4xf32>, tensor<4x6x4xf32>
}

// -----

// Its output: the heads' result [B H, S, D] transposed to [S, B H, D],
// viewed as [S B, E] rows for the output projection, viewed as [S, B, E]
// and transposed back to [B, S, E]. The last transpose (with the view of
// the rows before it) moves up through the bias add and the product and
// composes with the heads' transpose: [B, H, S, D] to [B, S, H, D].
// CHECK-LABEL: func @output_projection
// CHECK-NEXT: %[[C:.*]] = mpc.reshape %arg0 : tensor<4x6x4xf32> -> tensor<2x2x6x4xf32>
// CHECK-NEXT: %[[T:.*]] = mpc.transpose %[[C]] {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x2x6x4xf32>
// CHECK-NEXT: %[[R:.*]] = mpc.reshape %[[T]] : tensor<2x6x2x4xf32> -> tensor<2x6x8xf32>
// CHECK-NEXT: %[[M:.*]] = mpc.matmul %[[R]], %arg1 {transpose_b} : tensor<2x6x8xf32>, tensor<8x8xf32>
// CHECK-NEXT: %[[A:.*]] = mpc.add %[[M]], %arg2 : tensor<2x6x8xf32>, tensor<8xf32>
// CHECK-NEXT: return %[[A]]
// REMARK: remark: moved: mpc.transpose above the row-wise ops that make its input
// REMARK: remark: composed: mpc.transpose of mpc.reshape of mpc.transpose into one mpc.transpose
func.func @output_projection(%c: tensor<4x6x4xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<2x6x8xf32> {
  %t = mpc.transpose %c {permutation = array<i64: 1, 0, 2>} : tensor<4x6x4xf32>
  %r = mpc.reshape %t : tensor<6x4x4xf32> -> tensor<12x8xf32>
  %m = mpc.matmul %r, %w {transpose_b} : tensor<12x8xf32>, tensor<8x8xf32>
  %a = mpc.add %m, %b : tensor<12x8xf32>, tensor<8xf32>
  %s = mpc.reshape %a : tensor<12x8xf32> -> tensor<6x2x8xf32>
  %y = mpc.transpose %s {permutation = array<i64: 1, 0, 2>} : tensor<6x2x8xf32>
  return %y : tensor<2x6x8xf32>
}

// -----

// A transpose of a reshape of a transpose, nothing between: one transpose
// between reshapes. Where the composition is the identity, reshapes only.
// CHECK-LABEL: func @compose
// CHECK-NEXT: %[[S:.*]] = mpc.reshape %arg0 : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
// CHECK-NEXT: %[[T:.*]] = mpc.transpose %[[S]] {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
// CHECK-NEXT: %[[H:.*]] = mpc.reshape %[[T]] : tensor<2x2x6x4xf32> -> tensor<4x6x4xf32>
// CHECK-NEXT: %[[I:.*]] = mpc.reshape %arg1 : tensor<6x4x4xf32> -> tensor<6x2x2x4xf32>
// CHECK-NEXT: return %[[H]], %[[I]]
// OFF-LABEL: func @compose
// OFF-COUNT-4: mpc.transpose
func.func @compose(%x: tensor<2x6x8xf32>, %y: tensor<6x4x4xf32>) -> (tensor<4x6x4xf32>, tensor<6x2x2x4xf32>) {
  %a = mpc.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x6x8xf32>
  %r = mpc.reshape %a : tensor<6x2x8xf32> -> tensor<6x4x4xf32>
  %h = mpc.transpose %r {permutation = array<i64: 1, 0, 2>} : tensor<6x4x4xf32>
  %b = mpc.transpose %y {permutation = array<i64: 1, 0, 2>} : tensor<6x4x4xf32>
  %s = mpc.reshape %b : tensor<4x6x4xf32> -> tensor<2x2x6x4xf32>
  %i = mpc.transpose %s {permutation = array<i64: 2, 0, 1, 3>} : tensor<2x2x6x4xf32>
  return %h, %i : tensor<4x6x4xf32>, tensor<6x2x2x4xf32>
}

// -----

// What stays: a transpose that meets no other one below (the product's
// result is returned); one read by something that is not row-wise too;
// one whose add varies along a leading dimension; one that moves the
// innermost dimension; one above a product whose result has another
// reader.
// CHECK-LABEL: func @kept
// CHECK-NEXT: %[[T0:.*]] = mpc.transpose %arg0 {permutation = array<i64: 1, 0, 2>}
// CHECK-NEXT: mpc.matmul %[[T0]], %arg1
// CHECK-NEXT: %[[T1:.*]] = mpc.transpose %arg0 {permutation = array<i64: 1, 0, 2>}
// CHECK-NEXT: %[[M1:.*]] = mpc.matmul %[[T1]], %arg1
// CHECK-NEXT: mpc.reshape %[[M1]]
// CHECK-NEXT: mpc.transpose %{{.*}} {permutation = array<i64: 1, 0, 2>}
// CHECK-NEXT: %[[T2:.*]] = mpc.transpose %arg0 {permutation = array<i64: 1, 0, 2>}
// CHECK-NEXT: %[[A2:.*]] = mpc.add %[[T2]], %arg2
// CHECK-NEXT: mpc.reshape %[[A2]]
// CHECK-NEXT: mpc.transpose %{{.*}} {permutation = array<i64: 1, 0, 2>}
// CHECK-NEXT: %[[T3:.*]] = mpc.transpose %arg3 {permutation = array<i64: 1, 0, 2>}
// CHECK-NEXT: %[[M3:.*]] = mpc.matmul %[[T3]], %arg1
// CHECK-NEXT: %[[T4:.*]] = mpc.transpose %[[M3]] {permutation = array<i64: 1, 0, 2>}
// CHECK-NEXT: return %{{.*}}, %[[T1]], %{{.*}}, %{{.*}}, %[[T4]], %[[M3]]
func.func @kept(%x: tensor<2x6x8xf32>, %w: tensor<8x8xf32>, %rowwise: tensor<6x1x8xf32>, %z: tensor<2x6x8xf32>) -> (tensor<6x2x8xf32>, tensor<6x2x8xf32>, tensor<4x6x4xf32>, tensor<4x6x4xf32>, tensor<2x6x8xf32>, tensor<6x2x8xf32>) {
  %t0 = mpc.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x6x8xf32>
  %m0 = mpc.matmul %t0, %w : tensor<6x2x8xf32>, tensor<8x8xf32>
  %t1 = mpc.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x6x8xf32>
  %m1 = mpc.matmul %t1, %w : tensor<6x2x8xf32>, tensor<8x8xf32>
  %r1 = mpc.reshape %m1 : tensor<6x2x8xf32> -> tensor<6x4x4xf32>
  %h1 = mpc.transpose %r1 {permutation = array<i64: 1, 0, 2>} : tensor<6x4x4xf32>
  %t2 = mpc.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x6x8xf32>
  %a2 = mpc.add %t2, %rowwise : tensor<6x2x8xf32>, tensor<6x1x8xf32>
  %r2 = mpc.reshape %a2 : tensor<6x2x8xf32> -> tensor<6x4x4xf32>
  %h2 = mpc.transpose %r2 {permutation = array<i64: 1, 0, 2>} : tensor<6x4x4xf32>
  %t3 = mpc.transpose %z {permutation = array<i64: 1, 0, 2>} : tensor<2x6x8xf32>
  %m3 = mpc.matmul %t3, %w : tensor<6x2x8xf32>, tensor<8x8xf32>
  %t4 = mpc.transpose %m3 {permutation = array<i64: 1, 0, 2>} : tensor<6x2x8xf32>
  return %m0, %t1, %h1, %h2, %t4, %m3 : tensor<6x2x8xf32>, tensor<6x2x8xf32>, tensor<4x6x4xf32>, tensor<4x6x4xf32>, tensor<2x6x8xf32>, tensor<6x2x8xf32>
}
