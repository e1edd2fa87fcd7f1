// The linear-algebra family: matmul (transposes, batch strides, broadcast
// of a rank-2 operand over the batch) and the convolutions, whose shapes go
// to the runtime as one mpcrt_conv2d_shape
// {n, h, w, c, o, kh, kw, ho, wo, stride, padding, dilation, groups}.
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory --mpc-lower-to-runtime | FileCheck %s

// CHECK-LABEL: func.func @matmul(
// Batch 8 of [16 x 32] x [32 x 24] against one B (a linear layer): one
// product of 128 rows, no batch strides; m = 128, n = 24, k = 32, B
// transposed.
// CHECK: call @mpcrt_matmul_f16(%{{.*}}, %c0_i64{{(_[0-9]+)?}}, %{{.*}}, %c0_i64{{(_[0-9]+)?}}, %arg0, %c1_i64{{(_[0-9]+)?}}, %c128_i64{{(_[0-9]+)?}}, %c24_i64{{(_[0-9]+)?}}, %c32_i64{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}})
func.func @matmul(%a: tensor<8x16x32xf16>, %b: tensor<24x32xf16>) -> tensor<8x16x24xf16> {
  %0 = mpc.matmul %a, %b {transpose_b} : tensor<8x16x32xf16>, tensor<24x32xf16>
  return %0 : tensor<8x16x24xf16>
}

// -----

// CHECK-LABEL: func.func @matmul_batched(
// Both batched: A strides 512 elements per batch, B 768; batch 8, m = 16,
// n = 24, k = 32. A transposed against one B: the batches stay (their rows
// are not contiguous), B's stride 0.
// CHECK: call @mpcrt_matmul_f16(%{{.*}}, %c512_i64{{(_[0-9]+)?}}, %{{.*}}, %c768_i64{{(_[0-9]+)?}}, %{{.*}}, %c8_i64{{(_[0-9]+)?}}, %c16_i64{{(_[0-9]+)?}}, %c24_i64{{(_[0-9]+)?}}, %c32_i64{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}})
// CHECK: call @mpcrt_matmul_f16(%{{.*}}, %c512_i64{{(_[0-9]+)?}}, %{{.*}}, %c0_i64{{(_[0-9]+)?}}, %{{.*}}, %c8_i64{{(_[0-9]+)?}}, %c16_i64{{(_[0-9]+)?}}, %c24_i64{{(_[0-9]+)?}}, %c32_i64{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}})
func.func @matmul_batched(%a: tensor<8x16x32xf16>, %b: tensor<8x32x24xf16>, %at: tensor<8x32x16xf16>, %w: tensor<32x24xf16>) -> (tensor<8x16x24xf16>, tensor<8x16x24xf16>) {
  %0 = mpc.matmul %a, %b : tensor<8x16x32xf16>, tensor<8x32x24xf16>
  %1 = mpc.matmul %at, %w {transpose_a} : tensor<8x32x16xf16>, tensor<32x24xf16>
  return %0, %1 : tensor<8x16x24xf16>, tensor<8x16x24xf16>
}

// -----

// CHECK-DAG: llvm.mlir.global internal constant @[[SHAPE:.*]](dense<[2, 9, 9, 4, 8, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1, 2]> : tensor<16xi64>)
// CHECK-LABEL: func.func @conv(
// CHECK: %[[S:.*]] = llvm.mlir.addressof @[[SHAPE]]
// CHECK: call @mpcrt_conv2d_f32(%[[X:.*]], %[[W:.*]], %[[Y:.*]], %[[S]])
// The gradients describe the same forward convolution:
// CHECK: %[[S1:.*]] = llvm.mlir.addressof @[[SHAPE]]
// CHECK: call @mpcrt_conv2d_backward_data_f32(%[[Y]], %[[W]], %{{.*}}, %[[S1]])
// CHECK: %[[S2:.*]] = llvm.mlir.addressof @[[SHAPE]]
// CHECK: call @mpcrt_conv2d_backward_filter_f32(%[[Y]], %[[X]], %{{.*}}, %[[S2]])
func.func @conv(%x: tensor<2x9x9x4xf32>, %w: tensor<8x3x3x2xf32>) -> (tensor<2x9x9x4xf32>, tensor<8x3x3x2xf32>) {
  %y = mpc.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 2} : tensor<2x9x9x4xf32>, tensor<8x3x3x2xf32>
  %dx = mpc.conv2d_backward_data %y, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 2} : tensor<2x5x5x8xf32>, tensor<8x3x3x2xf32> -> tensor<2x9x9x4xf32>
  %dw = mpc.conv2d_backward_filter %y, %x {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 2} : tensor<2x5x5x8xf32>, tensor<2x9x9x4xf32> -> tensor<8x3x3x2xf32>
  return %dx, %dw : tensor<2x9x9x4xf32>, tensor<8x3x3x2xf32>
}

// -----

// A transposed convolution is the data gradient of the convolution from its
// output back to its input: n = 1, h = w = 8, c = 3 (our output channels),
// o = 6 (our input channels), 4x4 kernel, ho = wo = 4, stride 2, padding 1.
// CHECK-DAG: llvm.mlir.global internal constant @[[SHAPE:.*]](dense<[1, 8, 8, 3, 6, 4, 4, 4, 4, 2, 2, 1, 1, 1, 1, 1]> : tensor<16xi64>)
// CHECK-LABEL: func.func @conv_transpose(
// CHECK: %[[S:.*]] = llvm.mlir.addressof @[[SHAPE]]
// CHECK: call @mpcrt_conv2d_backward_data_bf16(%{{.*}}, %{{.*}}, %arg0, %[[S]])
func.func @conv_transpose(%x: tensor<1x4x4x6xbf16>, %w: tensor<6x4x4x3xbf16>) -> tensor<1x8x8x3xbf16> {
  %0 = mpc.conv_transpose2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<1x4x4x6xbf16>, tensor<6x4x4x3xbf16>
  return %0 : tensor<1x8x8x3xbf16>
}

// -----

// A convolution with an addend (a concatenation's second part adding to
// the first's): mpcrt_conv2d_add with the addend before the output. The
// first part's sum dies there, so the plan computes the second in its
// buffer; where the addend lives on (returned too) the output is another
// buffer.
// CHECK-LABEL: func.func @conv_add(
// CHECK: call @mpcrt_conv2d_f16(%{{.*}}, %{{.*}}, %[[Y0:.*]], %{{.*}})
// CHECK: call @mpcrt_conv2d_add_f16(%{{.*}}, %{{.*}}, %[[Y0]], %[[Y0]], %{{.*}})
// CHECK: call @mpcrt_conv2d_add_f16(%{{.*}}, %{{.*}}, %[[Y0]], %[[Y2:.*]], %{{.*}})
// CHECK-NOT: %[[Y0]], %[[Y2]]
func.func @conv_add(%a: tensor<2x8x8x8xf16>, %b: tensor<2x8x8x8xf16>, %w: tensor<8x3x3x8xf16>) -> (tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>) {
  %y0 = mpc.conv2d %a, %w {padding = array<i64: 1, 1>} : tensor<2x8x8x8xf16>, tensor<8x3x3x8xf16>
  %y1 = mpc.conv2d %b, %w addend(%y0 : tensor<2x8x8x8xf16>) {padding = array<i64: 1, 1>} : tensor<2x8x8x8xf16>, tensor<8x3x3x8xf16>
  %y2 = mpc.conv2d %a, %w addend(%y1 : tensor<2x8x8x8xf16>) {padding = array<i64: 1, 1>} : tensor<2x8x8x8xf16>, tensor<8x3x3x8xf16>
  return %y1, %y2 : tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>
}

// -----

// mpc.heads_matmul: each operand's strides (its [B, H] matrices, its rows)
// from its stored shape. [2, 6, 3, 4] stored heads-second is [B = 2, R =
// 6, H = 3, C = 4]: matrices R H C = 72 and C = 4 apart, rows H C = 12
// apart; [2, 3, 6, 6] in order: 108, 36 and 6. The scores q k^T (both
// heads-second, B transposed): outer 2, inner 3, m = n = 6, k = 4; the
// context p v written heads-second: m = 6, n = 4, k = 6.
// CHECK-DAG: llvm.mlir.global internal constant @[[HEADS:__mpc_i64_[0-9]+]](dense<[72, 4, 12]> : tensor<3xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @[[ROWS:__mpc_i64_[0-9]+]](dense<[108, 36, 6]> : tensor<3xi64>)
// CHECK-LABEL: func.func @heads_matmul(
// CHECK: %[[A1:.*]] = llvm.mlir.addressof @[[HEADS]]
// CHECK: %[[B1:.*]] = llvm.mlir.addressof @[[HEADS]]
// CHECK: %[[C1:.*]] = llvm.mlir.addressof @[[ROWS]]
// CHECK: call @mpcrt_strided_matmul(%c0_i32{{(_[0-9]+)?}}, %{{.*}}, %[[A1]], %{{.*}}, %[[B1]], %{{.*}}, %[[C1]], %c2_i64{{(_[0-9]+)?}}, %c3_i64{{(_[0-9]+)?}}, %c6_i64{{(_[0-9]+)?}}, %c6_i64{{(_[0-9]+)?}}, %c4_i64{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}})
// CHECK: %[[A2:.*]] = llvm.mlir.addressof @[[ROWS]]
// CHECK: %[[B2:.*]] = llvm.mlir.addressof @[[HEADS]]
// CHECK: %[[C2:.*]] = llvm.mlir.addressof @[[HEADS]]
// CHECK: call @mpcrt_strided_matmul(%c0_i32{{(_[0-9]+)?}}, %{{.*}}, %[[A2]], %{{.*}}, %[[B2]], %{{.*}}, %[[C2]], %c2_i64{{(_[0-9]+)?}}, %c3_i64{{(_[0-9]+)?}}, %c6_i64{{(_[0-9]+)?}}, %c4_i64{{(_[0-9]+)?}}, %c6_i64{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}})
func.func @heads_matmul(%q: tensor<2x6x3x4xf16>, %k: tensor<2x6x3x4xf16>, %p: tensor<2x3x6x6xf16>) -> (tensor<2x3x6x6xf16>, tensor<2x6x3x4xf16>) {
  %s = mpc.heads_matmul %q, %k {a_bshd, b_bshd, transpose_b} : tensor<2x6x3x4xf16>, tensor<2x6x3x4xf16> -> tensor<2x3x6x6xf16>
  %o = mpc.heads_matmul %p, %k {b_bshd, result_bshd} : tensor<2x3x6x6xf16>, tensor<2x6x3x4xf16> -> tensor<2x6x3x4xf16>
  return %s, %o : tensor<2x3x6x6xf16>, tensor<2x6x3x4xf16>
}

// -----

// mpc.heads_matmul reading a packed projection's thirds where they lie
// (views, --mpc-plan-memory): each operand's strides are the view's, [2,
// 6, 3, 4] inside [2, 6, 24] heads-second: matrices 144 and 4 apart, rows
// 24 apart; the keys 12 elements (24 bytes) into the projection.
// CHECK-DAG: llvm.mlir.global internal constant @[[PACKED:__mpc_i64_[0-9]+]](dense<[144, 4, 24]> : tensor<3xi64>)
// CHECK-LABEL: func.func @heads_matmul_views(
// CHECK: call @mpcrt_matmul_f16(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[P:[^,]*]],
// CHECK: %[[K:.*]] = llvm.getelementptr %[[P]][%c24_i64{{(_[0-9]+)?}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: %[[KS:.*]] = llvm.mlir.addressof @[[PACKED]]
// CHECK: call @mpcrt_strided_matmul(%c0_i32{{(_[0-9]+)?}}, %[[P]], %{{.*}}, %[[K]], %[[KS]],
// CHECK-NOT: mpcrt_strided_copy
func.func @heads_matmul_views(%x: tensor<2x6x8xf16>, %w: tensor<8x24xf16>) -> tensor<2x3x6x6xf16> {
  %p = mpc.matmul %x, %w : tensor<2x6x8xf16>, tensor<8x24xf16>
  %q0 = mpc.slice %p {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 6, 12>} : tensor<2x6x24xf16>
  %k0 = mpc.slice %p {offsets = array<i64: 0, 0, 12>, sizes = array<i64: 2, 6, 12>} : tensor<2x6x24xf16>
  %q = mpc.reshape %q0 : tensor<2x6x12xf16> -> tensor<2x6x3x4xf16>
  %k = mpc.reshape %k0 : tensor<2x6x12xf16> -> tensor<2x6x3x4xf16>
  %s = mpc.heads_matmul %q, %k {a_bshd, b_bshd, transpose_b} : tensor<2x6x3x4xf16>, tensor<2x6x3x4xf16> -> tensor<2x3x6x6xf16>
  return %s : tensor<2x3x6x6xf16>
}

// -----

// mpc.heads_matmul writing its result into its concatenation's window
// (--mpc-plan-memory: a packed projection's gradient): the concatenation's
// buffer 12 elements (24 bytes) in, the result's strides the window's
// ([2, 6, 3, 4] heads-second inside [2, 6, 24]: 144, 4 and rows 24
// apart). The concatenation scatters only its other operand.
// CHECK-DAG: llvm.mlir.global internal constant @[[WINDOW:__mpc_i64_[0-9]+]](dense<[144, 4, 24]> : tensor<3xi64>)
// CHECK-LABEL: func.func @heads_matmul_window(
// CHECK: %[[W:.*]] = llvm.getelementptr %arg0[%c24_i64{{(_[0-9]+)?}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: %[[WS:.*]] = llvm.mlir.addressof @[[WINDOW]]
// CHECK: call @mpcrt_strided_matmul(%c0_i32{{(_[0-9]+)?}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[W]], %[[WS]],
// CHECK-COUNT-1: call @mpcrt_strided_scatter(
// CHECK-NOT: call @mpcrt_strided_scatter(
// CHECK: return
func.func @heads_matmul_window(%p: tensor<2x3x6x6xf16>, %v: tensor<2x6x3x4xf16>, %dk: tensor<2x6x12xf16>) -> tensor<2x6x24xf16> {
  %dq = mpc.heads_matmul %p, %v {b_bshd, result_bshd} : tensor<2x3x6x6xf16>, tensor<2x6x3x4xf16> -> tensor<2x6x3x4xf16>
  %dqr = mpc.reshape %dq : tensor<2x6x3x4xf16> -> tensor<2x6x12xf16>
  %c = mpc.concat %dk, %dqr {axis = 2 : i64} : tensor<2x6x12xf16>, tensor<2x6x12xf16>
  return %c : tensor<2x6x24xf16>
}

// -----

// A transposed operand stored heads-second: k is its second dimension
// ([B, K, H, M]), here 5.
// CHECK-LABEL: func.func @heads_matmul_transposed(
// CHECK: call @mpcrt_strided_matmul(%c2_i32{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c2_i64{{(_[0-9]+)?}}, %c3_i64{{(_[0-9]+)?}}, %c4_i64{{(_[0-9]+)?}}, %c7_i64{{(_[0-9]+)?}}, %c5_i64{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}})
func.func @heads_matmul_transposed(%a: tensor<2x5x3x4xf32>, %b: tensor<2x3x5x7xf32>) -> tensor<2x3x4x7xf32> {
  %0 = mpc.heads_matmul %a, %b {a_bshd, transpose_a} : tensor<2x5x3x4xf32>, tensor<2x3x5x7xf32> -> tensor<2x3x4x7xf32>
  return %0 : tensor<2x3x4x7xf32>
}

// -----

// Column sums of sibling layers' gradients: one call, the matrices' and
// the sums' addresses in two arrays (count 3, rows 64, columns 32, f16 in,
// f32 out).
// CHECK-LABEL: func.func @column_sums(
// No addends: a null array.
// CHECK: %[[IN:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// CHECK: %[[NONE:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[OUT:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// CHECK: call @mpcrt_column_sums(%c0_i32{{(_[0-9]+)?}}, %c2_i32{{(_[0-9]+)?}}, %c3_i64{{(_[0-9]+)?}}, %[[IN]], %[[NONE]], %[[OUT]], %c64_i64{{(_[0-9]+)?}}, %c32_i64{{(_[0-9]+)?}})
// CHECK-NOT: call @mpcrt_column_sums
func.func @column_sums(%dq: tensor<64x32xf16>, %dk: tensor<64x32xf16>, %dv: tensor<64x32xf16>) -> (tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) {
  %0:3 = mpc.column_sums %dq, %dk, %dv : tensor<64x32xf16>, tensor<64x32xf16>, tensor<64x32xf16>
  return %0#0, %0#1, %0#2 : tensor<32xf32>, tensor<32xf32>, tensor<32xf32>
}

// -----

// With addends (accumulators): their addresses in a third array.
// CHECK-LABEL: func.func @column_sums_addends(
// CHECK: %[[IN:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// CHECK: %[[ADD:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// CHECK: %[[OUT:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// CHECK: call @mpcrt_column_sums(%c1_i32{{(_[0-9]+)?}}, %c2_i32{{(_[0-9]+)?}}, %c2_i64{{(_[0-9]+)?}}, %[[IN]], %[[ADD]], %[[OUT]], %c64_i64{{(_[0-9]+)?}}, %c32_i64{{(_[0-9]+)?}})
func.func @column_sums_addends(%dq: tensor<64x32xbf16>, %dk: tensor<64x32xbf16>, %aq: tensor<32xf32>, %ak: tensor<32xf32>) -> (tensor<32xf32>, tensor<32xf32>) {
  %0:2 = mpc.column_sums %dq, %dk addends(%aq, %ak) : tensor<64x32xbf16>, tensor<64x32xbf16> addends(tensor<32xf32>, tensor<32xf32>)
  return %0#0, %0#1 : tensor<32xf32>, tensor<32xf32>
}
