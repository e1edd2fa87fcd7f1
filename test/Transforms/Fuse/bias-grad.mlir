// RUN: mpc-opt %s -split-input-file --mpc-fuse=recompute-moves=false | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="remarks=true recompute-moves=false" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse=epilogues=false | FileCheck %s --check-prefix=OFF

// The O1/O2 form of a linear layer's backward: the bias gradient sums the
// f16 output gradient widened to f32 over every row, and the weight
// gradient reads the same gradient reshaped to [rows, N]. One op, at the
// product's place; the widening cast goes.
// CHECK-LABEL: func @o2_linear
// CHECK-NEXT: %[[G:.*]] = mpc.reshape %arg1 : tensor<8x128x64xf16> -> tensor<1024x64xf16>
// CHECK-NEXT: %[[DW:.*]], %[[DB:.*]] = mpc.matmul_bias_grad %arg0, %[[G]] {transpose_a} : tensor<1024x256xf16>, tensor<1024x64xf16>
// CHECK-NEXT: return %[[DW]], %[[DB]] : tensor<256x64xf16>, tensor<64xf32>
// REMARK: remark: fused: mpc.cast + mpc.reduce_sum + mpc.matmul -> mpc.matmul_bias_grad
// OFF-LABEL: func @o2_linear
// OFF: mpc.reduce_sum
// OFF: mpc.matmul
// OFF-NOT: mpc.matmul_bias_grad
func.func @o2_linear(%x: tensor<1024x256xf16>, %dy: tensor<8x128x64xf16>) -> (tensor<256x64xf16>, tensor<64xf32>) {
  %0 = mpc.cast %dy : tensor<8x128x64xf16> -> tensor<8x128x64xf32>
  %1 = mpc.reduce_sum %0 {dims = array<i64: 0, 1>} : tensor<8x128x64xf32>
  %2 = mpc.reshape %dy : tensor<8x128x64xf16> -> tensor<1024x64xf16>
  %3 = mpc.matmul %x, %2 {transpose_a} : tensor<1024x256xf16>, tensor<1024x64xf16>
  return %3, %1 : tensor<256x64xf16>, tensor<64xf32>
}

// -----

// The gradient of a weight stored [N, K] (x @ W^T, an imported Gemm's):
// g^T x, g the product's A; its bias gradient sums A (`bias_of_a`).
// CHECK-LABEL: func @weight_out_in
// CHECK-NEXT: %[[G:.*]] = mpc.reshape %arg1 : tensor<8x128x64xf16> -> tensor<1024x64xf16>
// CHECK-NEXT: %[[DW:.*]], %[[DB:.*]] = mpc.matmul_bias_grad %[[G]], %arg0 {bias_of_a, transpose_a} : tensor<1024x64xf16>, tensor<1024x256xf16>
// CHECK-NEXT: return %[[DW]], %[[DB]] : tensor<64x256xf16>, tensor<64xf32>
// REMARK: remark: fused: mpc.cast + mpc.reduce_sum + mpc.matmul -> mpc.matmul_bias_grad
// OFF-LABEL: func @weight_out_in
// OFF-NOT: mpc.matmul_bias_grad
func.func @weight_out_in(%x: tensor<1024x256xf16>, %dy: tensor<8x128x64xf16>) -> (tensor<64x256xf16>, tensor<64xf32>) {
  %0 = mpc.cast %dy : tensor<8x128x64xf16> -> tensor<8x128x64xf32>
  %1 = mpc.reduce_sum %0 {dims = array<i64: 0, 1>} : tensor<8x128x64xf32>
  %2 = mpc.reshape %dy : tensor<8x128x64xf16> -> tensor<1024x64xf16>
  %3 = mpc.matmul %2, %x {transpose_a} : tensor<1024x64xf16>, tensor<1024x256xf16>
  return %3, %1 : tensor<64x256xf16>, tensor<64xf32>
}

// -----

// f32, the gradient a matrix already, the product first: one op at the
// reduction's place.
// CHECK-LABEL: func @f32_matrix
// CHECK-NEXT: %[[DW:.*]], %[[DB:.*]] = mpc.matmul_bias_grad %arg0, %arg1 {transpose_a} : tensor<64x32xf32>, tensor<64x16xf32>
// CHECK-NEXT: return %[[DW]], %[[DB]] : tensor<32x16xf32>, tensor<16xf32>
// REMARK: remark: fused: mpc.matmul + mpc.reduce_sum -> mpc.matmul_bias_grad
func.func @f32_matrix(%x: tensor<64x32xf32>, %dy: tensor<64x16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>) {
  %0 = mpc.matmul %x, %dy {transpose_a} : tensor<64x32xf32>, tensor<64x16xf32>
  %1 = mpc.reduce_sum %dy {dims = array<i64: 0>} : tensor<64x16xf32>
  return %0, %1 : tensor<32x16xf32>, tensor<16xf32>
}

// -----

// A bf16 reduction (O3): the fused op's f32 sums rounded once to bf16, as
// the reduction rounds them.
// CHECK-LABEL: func @bf16_sums
// CHECK-NEXT: %[[DW:.*]], %[[DB:.*]] = mpc.matmul_bias_grad %arg0, %arg1 {transpose_a} : tensor<64x32xbf16>, tensor<64x16xbf16>
// CHECK-NEXT: %[[R:.*]] = mpc.cast %[[DB]] : tensor<16xf32> -> tensor<16xbf16>
// CHECK-NEXT: return %[[DW]], %[[R]]
// REMARK: remark: fused: mpc.matmul + mpc.reduce_sum -> mpc.matmul_bias_grad
func.func @bf16_sums(%x: tensor<64x32xbf16>, %dy: tensor<64x16xbf16>) -> (tensor<32x16xbf16>, tensor<16xbf16>) {
  %0 = mpc.matmul %x, %dy {transpose_a} : tensor<64x32xbf16>, tensor<64x16xbf16>
  %1 = mpc.reduce_sum %dy {dims = array<i64: 0>} : tensor<64x16xbf16>
  return %0, %1 : tensor<32x16xbf16>, tensor<16xbf16>
}

// -----

// A widening cast with another reader stays; of two products reading the
// gradient, the first in program order takes the sum (at the sum's place).
// CHECK-LABEL: func @cast_kept
// CHECK-NEXT: %[[W:.*]] = mpc.cast %arg1 : tensor<64x16xf16> -> tensor<64x16xf32>
// CHECK-NEXT: %[[DW:.*]], %[[DB:.*]] = mpc.matmul_bias_grad %arg0, %arg1 {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
// CHECK-NEXT: %[[P:.*]] = mpc.matmul %arg0, %arg1 {transpose_a}
// CHECK-NEXT: return %[[DW]], %[[DB]], %[[W]], %[[P]]
// REMARK: remark: fused: mpc.matmul + mpc.reduce_sum -> mpc.matmul_bias_grad
func.func @cast_kept(%x: tensor<64x32xf16>, %dy: tensor<64x16xf16>) -> (tensor<32x16xf16>, tensor<16xf32>, tensor<64x16xf32>, tensor<32x16xf16>) {
  %0 = mpc.matmul %x, %dy {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  %1 = mpc.cast %dy : tensor<64x16xf16> -> tensor<64x16xf32>
  %2 = mpc.reduce_sum %1 {dims = array<i64: 0>} : tensor<64x16xf32>
  %3 = mpc.matmul %x, %dy {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  return %0, %2, %1, %3 : tensor<32x16xf16>, tensor<16xf32>, tensor<64x16xf32>, tensor<32x16xf16>
}

// -----

// What does not fuse: a sum over another dimension, kept dimensions, a
// product that does not transpose its left operand, or transposes its
// right one, a gradient reshaped to another matrix, a sum of another
// tensor, an f32 sum of values the product reads rounded to f16 (the fused
// op would sum the rounded ones), and a pair no one place can take (the
// sum is read before the product).
// CHECK-LABEL: func @other_dims
// CHECK-NOT: mpc.matmul_bias_grad
// CHECK-LABEL: func @kept_dims
// CHECK-NOT: mpc.matmul_bias_grad
// CHECK-LABEL: func @not_transposed
// CHECK-NOT: mpc.matmul_bias_grad
// CHECK-LABEL: func @transposed_b
// CHECK-NOT: mpc.matmul_bias_grad
// CHECK-LABEL: func @other_matrix
// CHECK-NOT: mpc.matmul_bias_grad
// CHECK-LABEL: func @other_tensor
// CHECK-NOT: mpc.matmul_bias_grad
// CHECK-LABEL: func @rounded_operand
// CHECK-NOT: mpc.matmul_bias_grad
// CHECK-LABEL: func @no_place
// CHECK-NOT: mpc.matmul_bias_grad
// CHECK: return
// REMARK-NOT: remark
func.func @other_dims(%x: tensor<64x32xf32>, %dy: tensor<64x16xf32>) -> (tensor<32x16xf32>, tensor<64xf32>) {
  %0 = mpc.matmul %x, %dy {transpose_a} : tensor<64x32xf32>, tensor<64x16xf32>
  %1 = mpc.reduce_sum %dy {dims = array<i64: 1>} : tensor<64x16xf32>
  return %0, %1 : tensor<32x16xf32>, tensor<64xf32>
}
func.func @kept_dims(%x: tensor<64x32xf32>, %dy: tensor<64x16xf32>) -> (tensor<32x16xf32>, tensor<1x16xf32>) {
  %0 = mpc.matmul %x, %dy {transpose_a} : tensor<64x32xf32>, tensor<64x16xf32>
  %1 = mpc.reduce_sum %dy {dims = array<i64: 0>, keep_dims} : tensor<64x16xf32>
  return %0, %1 : tensor<32x16xf32>, tensor<1x16xf32>
}
func.func @not_transposed(%xt: tensor<32x64xf32>, %dy: tensor<64x16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>) {
  %0 = mpc.matmul %xt, %dy : tensor<32x64xf32>, tensor<64x16xf32>
  %1 = mpc.reduce_sum %dy {dims = array<i64: 0>} : tensor<64x16xf32>
  return %0, %1 : tensor<32x16xf32>, tensor<16xf32>
}
func.func @transposed_b(%x: tensor<16x32xf32>, %dy: tensor<16x16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>) {
  %0 = mpc.matmul %x, %dy {transpose_a, transpose_b} : tensor<16x32xf32>, tensor<16x16xf32>
  %1 = mpc.reduce_sum %dy {dims = array<i64: 0>} : tensor<16x16xf32>
  return %0, %1 : tensor<32x16xf32>, tensor<16xf32>
}
func.func @other_matrix(%x: tensor<16x32xf32>, %g: tensor<4x16x16xf32>) -> (tensor<32x64xf32>, tensor<16xf32>) {
  %0 = mpc.reshape %g : tensor<4x16x16xf32> -> tensor<16x64xf32>
  %1 = mpc.matmul %x, %0 {transpose_a} : tensor<16x32xf32>, tensor<16x64xf32>
  %2 = mpc.reduce_sum %g {dims = array<i64: 0, 1>} : tensor<4x16x16xf32>
  return %1, %2 : tensor<32x64xf32>, tensor<16xf32>
}
func.func @other_tensor(%x: tensor<64x32xf32>, %dy: tensor<64x16xf32>, %other: tensor<64x16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>) {
  %0 = mpc.matmul %x, %dy {transpose_a} : tensor<64x32xf32>, tensor<64x16xf32>
  %1 = mpc.reduce_sum %other {dims = array<i64: 0>} : tensor<64x16xf32>
  return %0, %1 : tensor<32x16xf32>, tensor<16xf32>
}
func.func @rounded_operand(%x: tensor<64x32xf16>, %dy: tensor<64x16xf32>) -> (tensor<32x16xf16>, tensor<16xf32>) {
  %0 = mpc.cast %dy : tensor<64x16xf32> -> tensor<64x16xf16>
  %1 = mpc.matmul %x, %0 {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  %2 = mpc.reduce_sum %dy {dims = array<i64: 0>} : tensor<64x16xf32>
  return %1, %2 : tensor<32x16xf16>, tensor<16xf32>
}
func.func @no_place(%x: tensor<64x32xf32>, %dy: tensor<64x16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>) {
  %0 = mpc.reduce_sum %dy {dims = array<i64: 0>} : tensor<64x16xf32>
  %1 = mpc.add %0, %0 : tensor<16xf32>, tensor<16xf32>
  %2 = mpc.matmul %x, %dy {transpose_a} : tensor<64x32xf32>, tensor<64x16xf32>
  return %2, %1 : tensor<32x16xf32>, tensor<16xf32>
}
