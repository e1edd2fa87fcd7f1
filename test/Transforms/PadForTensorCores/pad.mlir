// --mpc-pad-for-tensor-cores: f16/bf16 matmuls padded with zeros to
// multiples of 8 and sliced back, where the extra work is small enough.
// RUN: mpc-opt %s -split-input-file --mpc-pad-for-tensor-cores 2>%t.remarks | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
// RUN: mpc-opt %s -split-input-file --mpc-pad-for-tensor-cores=max-extra-work=2 2>/dev/null | FileCheck %s --check-prefix=LAX
// RUN: not mpc-opt %s -split-input-file --mpc-pad-for-tensor-cores=max-extra-work=-1 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: mpc-pad-for-tensor-cores: option max-extra-work must be a finite number >= 0, got -1

// M = 12 and N = 14 padded to 16; K = 16 is aligned.
// CHECK-LABEL: func.func @m_and_n
// CHECK: %[[ZA:.*]] = mpc.constant dense<0.000000e+00> : tensor<4x16xf16>
// CHECK: %[[A:.*]] = mpc.concat %arg0, %[[ZA]] {axis = 0 : i64} : tensor<12x16xf16>, tensor<4x16xf16>
// CHECK: %[[ZB:.*]] = mpc.constant dense<0.000000e+00> : tensor<16x2xf16>
// CHECK: %[[B:.*]] = mpc.concat %arg1, %[[ZB]] {axis = 1 : i64} : tensor<16x14xf16>, tensor<16x2xf16>
// CHECK: %[[P:.*]] = mpc.matmul %[[A]], %[[B]] : tensor<16x16xf16>, tensor<16x16xf16>
// CHECK: %[[S:.*]] = mpc.slice %[[P]] {offsets = array<i64: 0, 0>, sizes = array<i64: 12, 14>} : tensor<16x16xf16>
// CHECK: return %[[S]]
// REMARK: remark: 'mpc.matmul': padded for Tensor Cores: M 12 to 16, N 14 to 16 (52% more work)
func.func @m_and_n(%a: tensor<12x16xf16>, %b: tensor<16x14xf16>) -> tensor<12x14xf16> {
  %0 = mpc.matmul %a, %b : tensor<12x16xf16>, tensor<16x14xf16>
  return %0 : tensor<12x14xf16>
}

// -----

// K = 12 (the contracted dimension of a transposed b) padded in both
// operands; the result needs no slice.
// CHECK-LABEL: func.func @k_transposed
// CHECK: mpc.concat %arg0, %{{.*}} {axis = 2 : i64} : tensor<2x8x12xbf16>, tensor<2x8x4xbf16>
// CHECK: mpc.concat %arg1, %{{.*}} {axis = 2 : i64} : tensor<2x16x12xbf16>, tensor<2x16x4xbf16>
// CHECK: %[[P:.*]] = mpc.matmul %{{.*}}, %{{.*}} {transpose_b} : tensor<2x8x16xbf16>, tensor<2x16x16xbf16>
// CHECK-NOT: mpc.slice
// CHECK: return %[[P]]
// REMARK: remark: 'mpc.matmul': padded for Tensor Cores: K 12 to 16 (33% more work)
func.func @k_transposed(%a: tensor<2x8x12xbf16>, %b: tensor<2x16x12xbf16>) -> tensor<2x8x16xbf16> {
  %0 = mpc.matmul %a, %b {transpose_b} : tensor<2x8x12xbf16>, tensor<2x16x12xbf16>
  return %0 : tensor<2x8x16xbf16>
}

// -----

// Not padded: f32, aligned shapes, and M = 3 (to 8: 167% more work, over
// the default 100%; max-extra-work=2 pads it).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: mpc.concat
// CHECK: return
// LAX-LABEL: func.func @left_alone
// LAX: mpc.concat %arg2, %{{.*}} {axis = 0 : i64} : tensor<3x8xf16>, tensor<5x8xf16>
// LAX-NOT: mpc.concat
// REMARK: remark: 'mpc.matmul': not padded for Tensor Cores: 167% more work than the product (max-extra-work 1)
func.func @left_alone(%a: tensor<12x16xf32>, %b: tensor<16x10xf32>, %c: tensor<3x8xf16>, %d: tensor<8x8xf16>) -> (tensor<12x10xf32>, tensor<8x8xf16>, tensor<3x8xf16>) {
  %0 = mpc.matmul %a, %b : tensor<12x16xf32>, tensor<16x10xf32>
  %1 = mpc.matmul %d, %d : tensor<8x8xf16>, tensor<8x8xf16>
  %2 = mpc.matmul %c, %d : tensor<3x8xf16>, tensor<8x8xf16>
  return %0, %1, %2 : tensor<12x10xf32>, tensor<8x8xf16>, tensor<3x8xf16>
}

// -----

// Convolutions: input channels C = 12 padded to 16 (zero channels of the
// input and of the filter), output channels O = 16 aligned; the backward
// ops likewise, their results sliced back.
// CHECK-LABEL: func.func @convolutions
// LAX-LABEL: func.func @convolutions
// CHECK: %[[X:.*]] = mpc.concat %arg0, %{{.*}} {axis = 3 : i64} : tensor<2x8x8x12xf16>, tensor<2x8x8x4xf16>
// CHECK: %[[F:.*]] = mpc.concat %arg1, %{{.*}} {axis = 3 : i64} : tensor<16x3x3x12xf16>, tensor<16x3x3x4xf16>
// CHECK: %[[Y:.*]] = mpc.conv2d %[[X]], %[[F]] {{.*}} : tensor<2x8x8x16xf16>, tensor<16x3x3x16xf16>
// CHECK: mpc.slice %[[Y]] {offsets = array<i64: 0, 0, 0, 0>, sizes = array<i64: 2, 8, 8, 16>}
// CHECK: %[[DX:.*]] = mpc.conv2d_backward_data {{.*}} -> tensor<2x8x8x16xf16>
// CHECK: mpc.slice %[[DX]] {offsets = array<i64: 0, 0, 0, 0>, sizes = array<i64: 2, 8, 8, 12>}
// CHECK: %[[DF:.*]] = mpc.conv2d_backward_filter {{.*}} -> tensor<16x3x3x16xf16>
// CHECK: mpc.slice %[[DF]] {offsets = array<i64: 0, 0, 0, 0>, sizes = array<i64: 16, 3, 3, 12>}
// REMARK: remark: 'mpc.conv2d': padded for Tensor Cores: input channels 12 to 16 (33% more work)
// REMARK: remark: 'mpc.conv2d_backward_data': padded for Tensor Cores: input channels 12 to 16 (33% more work)
// REMARK: remark: 'mpc.conv2d_backward_filter': padded for Tensor Cores: input channels 12 to 16 (33% more work)
func.func @convolutions(%x: tensor<2x8x8x12xf16>, %w: tensor<16x3x3x12xf16>, %dy: tensor<2x8x8x16xf16>) -> (tensor<2x8x8x16xf16>, tensor<2x8x8x12xf16>, tensor<16x3x3x12xf16>) {
  %y = mpc.conv2d %x, %w {padding = array<i64: 1, 1>} : tensor<2x8x8x12xf16>, tensor<16x3x3x12xf16>
  %dx = mpc.conv2d_backward_data %dy, %w {padding = array<i64: 1, 1>} : tensor<2x8x8x16xf16>, tensor<16x3x3x12xf16> -> tensor<2x8x8x12xf16>
  %dw = mpc.conv2d_backward_filter %dy, %x {padding = array<i64: 1, 1>} : tensor<2x8x8x16xf16>, tensor<2x8x8x12xf16> -> tensor<16x3x3x12xf16>
  return %y, %dx, %dw : tensor<2x8x8x16xf16>, tensor<2x8x8x12xf16>, tensor<16x3x3x12xf16>
}

// -----

// Fused products are padded too: a bias gets zeros for the extra columns
// and both results of a GELU that keeps its pre-activation are sliced
// back; an addend (mpc.matmul_add) and an activation's saved value
// (mpc.matmul_activation_grad) get zeros for the extra rows and columns,
// where the padded product is zero.
// CHECK-LABEL: func.func @fused
// CHECK: mpc.concat %arg2, %{{.*}} {axis = 0 : i64} : tensor<10xf16>, tensor<6xf16>
// CHECK: %[[F:.*]], %[[PRE:.*]] = mpc.fused_matmul %{{.*}}, %{{.*}}, %{{.*}} {activation = "gelu_tanh"} : tensor<16x16xf16>, tensor<16x16xf16>, tensor<16xf16> -> tensor<16x16xf16>, tensor<16x16xf16>
// CHECK-DAG: mpc.slice %[[F]] {offsets = array<i64: 0, 0>, sizes = array<i64: 16, 10>} : tensor<16x16xf16>
// CHECK-DAG: mpc.slice %[[PRE]] {offsets = array<i64: 0, 0>, sizes = array<i64: 16, 10>} : tensor<16x16xf16>
// CHECK: mpc.concat %arg3, %{{.*}} {axis = 1 : i64} : tensor<16x10xf16>, tensor<16x6xf16>
// CHECK: %[[A:.*]] = mpc.matmul_add %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x16xf16>, tensor<16x16xf16>, tensor<16x16xf16> -> tensor<16x16xf16>
// CHECK: mpc.slice %[[A]] {offsets = array<i64: 0, 0>, sizes = array<i64: 16, 10>}
// CHECK: %[[G:.*]] = mpc.matmul_activation_grad %{{.*}}, %{{.*}}, %{{.*}} {activation = "relu"} : tensor<16x16xf16>, tensor<16x16xf16>, tensor<16x16xf16> -> tensor<16x16xf16>
// CHECK: mpc.slice %[[G]] {offsets = array<i64: 0, 0>, sizes = array<i64: 16, 10>}
// REMARK: remark: 'mpc.fused_matmul': padded for Tensor Cores: N 10 to 16 (60% more work)
// REMARK: remark: 'mpc.matmul_add': padded for Tensor Cores: N 10 to 16 (60% more work)
// REMARK: remark: 'mpc.matmul_activation_grad': padded for Tensor Cores: N 10 to 16 (60% more work)
func.func @fused(%a: tensor<16x16xf16>, %b: tensor<16x10xf16>, %bias: tensor<10xf16>, %c: tensor<16x10xf16>) -> (tensor<16x10xf16>, tensor<16x10xf16>, tensor<16x10xf16>, tensor<16x10xf16>) {
  %0, %1 = mpc.fused_matmul %a, %b, %bias {activation = "gelu_tanh"} : tensor<16x16xf16>, tensor<16x10xf16>, tensor<10xf16> -> tensor<16x10xf16>, tensor<16x10xf16>
  %2 = mpc.matmul_add %a, %b, %c : tensor<16x16xf16>, tensor<16x10xf16>, tensor<16x10xf16> -> tensor<16x10xf16>
  %3 = mpc.matmul_activation_grad %a, %b, %c {activation = "relu"} : tensor<16x16xf16>, tensor<16x10xf16>, tensor<16x10xf16> -> tensor<16x10xf16>
  return %0, %1, %2, %3 : tensor<16x10xf16>, tensor<16x10xf16>, tensor<16x10xf16>, tensor<16x10xf16>
}

// -----

// A convolution of 3 input channels (to 8: 167% more work, over the
// default 100%) is left alone.
// CHECK-LABEL: func.func @conv_left_alone
// CHECK-NEXT: mpc.conv2d %arg0, %arg1 {{.*}} : tensor<2x8x8x3xf16>, tensor<16x3x3x3xf16>
// REMARK: remark: 'mpc.conv2d': not padded for Tensor Cores: 167% more work than the convolution (max-extra-work 1)
func.func @conv_left_alone(%x: tensor<2x8x8x3xf16>, %w: tensor<16x3x3x3xf16>) -> tensor<2x8x8x16xf16> {
  %y = mpc.conv2d %x, %w {padding = array<i64: 1, 1>} : tensor<2x8x8x3xf16>, tensor<16x3x3x3xf16>
  return %y : tensor<2x8x8x16xf16>
}
