// RUN: mpc-opt %s | mpc-opt | FileCheck %s
// Every op prints, parses and prints again to the same text.

// CHECK-LABEL: func @constant_cast
func.func @constant_cast(%x: tensor<4x8xf32>) -> (tensor<f32>, tensor<4x8xf16>) {
  // CHECK: mpc.constant dense<5.000000e-01> : tensor<f32>
  %c = mpc.constant dense<0.5> : tensor<f32>
  // CHECK: mpc.cast %{{.*}} : tensor<4x8xf32> -> tensor<4x8xf16>
  %h = mpc.cast %x : tensor<4x8xf32> -> tensor<4x8xf16>
  return %c, %h : tensor<f32>, tensor<4x8xf16>
}

// CHECK-LABEL: func @unary
func.func @unary(%x: tensor<4x8xbf16>) {
  // CHECK: mpc.neg %{{.*}} : tensor<4x8xbf16>
  %0 = mpc.neg %x : tensor<4x8xbf16>
  // CHECK: mpc.exp
  %1 = mpc.exp %x : tensor<4x8xbf16>
  // CHECK: mpc.log
  %2 = mpc.log %x : tensor<4x8xbf16>
  // CHECK: mpc.sqrt
  %3 = mpc.sqrt %x : tensor<4x8xbf16>
  // CHECK: mpc.rsqrt
  %4 = mpc.rsqrt %x : tensor<4x8xbf16>
  // CHECK: mpc.tanh
  %5 = mpc.tanh %x : tensor<4x8xbf16>
  // CHECK: mpc.sigmoid
  %6 = mpc.sigmoid %x : tensor<4x8xbf16>
  // CHECK: mpc.relu
  %7 = mpc.relu %x : tensor<4x8xbf16>
  // CHECK: mpc.gelu %{{.*}} {approximate} : tensor<4x8xbf16>
  %8 = mpc.gelu %x {approximate} : tensor<4x8xbf16>
  // CHECK: mpc.sin %{{.*}} : tensor<4x8xbf16>
  %9 = mpc.sin %x : tensor<4x8xbf16>
  // CHECK: mpc.cos %{{.*}} : tensor<4x8xbf16>
  %10 = mpc.cos %x : tensor<4x8xbf16>
  return
}

// CHECK-LABEL: func @binary_broadcast
func.func @binary_broadcast(%x: tensor<2x4x8xf32>, %b: tensor<8xf32>, %c: tensor<2x1x1xf32>) -> tensor<2x4x8xf32> {
  // CHECK: %[[A:.*]] = mpc.add %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<8xf32>
  %0 = mpc.add %x, %b : tensor<2x4x8xf32>, tensor<8xf32>
  // CHECK: %[[C:.*]] = mpc.compare "gt", %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<8xf32>
  %cmp = mpc.compare "gt", %x, %b : tensor<2x4x8xf32>, tensor<8xf32>
  // CHECK: mpc.where %[[C]], %{{.*}}, %{{.*}} : tensor<2x4x8xi1>, tensor<2x4x8xf32>, tensor<8xf32>
  %sel = mpc.where %cmp, %x, %b : tensor<2x4x8xi1>, tensor<2x4x8xf32>, tensor<8xf32>
  // CHECK: mpc.sub %[[A]], %{{.*}} : tensor<2x4x8xf32>, tensor<2x1x1xf32>
  %1 = mpc.sub %0, %c : tensor<2x4x8xf32>, tensor<2x1x1xf32>
  // CHECK: mpc.mul {{.*}} : tensor<8xf32>, tensor<2x1x1xf32>
  %2 = mpc.mul %b, %c : tensor<8xf32>, tensor<2x1x1xf32>
  // CHECK: mpc.div
  %3 = mpc.div %1, %2 : tensor<2x4x8xf32>, tensor<2x1x8xf32>
  // CHECK: mpc.pow
  %4 = mpc.pow %3, %c : tensor<2x4x8xf32>, tensor<2x1x1xf32>
  return %4 : tensor<2x4x8xf32>
}

// CHECK-LABEL: func @activation_grads
func.func @activation_grads(%g: tensor<4x8xf16>, %x: tensor<4x8xf16>) {
  // CHECK: mpc.relu_grad %{{.*}}, %{{.*}} : tensor<4x8xf16>
  %0 = mpc.relu_grad %g, %x : tensor<4x8xf16>
  // CHECK: mpc.gelu_grad %{{.*}}, %{{.*}} {approximate} : tensor<4x8xf16>
  %1 = mpc.gelu_grad %g, %x {approximate} : tensor<4x8xf16>
  // CHECK: mpc.tanh_grad
  %2 = mpc.tanh_grad %g, %x : tensor<4x8xf16>
  // CHECK: mpc.sigmoid_grad
  %3 = mpc.sigmoid_grad %g, %x : tensor<4x8xf16>
  return
}

// CHECK-LABEL: func @matmul
func.func @matmul(%x: tensor<8x16x32xf16>, %w: tensor<32x64xf16>, %k: tensor<8x16x32xf16>) -> (tensor<8x16x64xf16>, tensor<8x16x16xf16>, tensor<8x32x32xf16>) {
  // CHECK: mpc.matmul %{{.*}}, %{{.*}} : tensor<8x16x32xf16>, tensor<32x64xf16>
  %0 = mpc.matmul %x, %w : tensor<8x16x32xf16>, tensor<32x64xf16>
  // CHECK: mpc.matmul %{{.*}}, %{{.*}} {transpose_b} : tensor<8x16x32xf16>, tensor<8x16x32xf16>
  %1 = mpc.matmul %x, %k {transpose_b} : tensor<8x16x32xf16>, tensor<8x16x32xf16>
  // CHECK: mpc.matmul %{{.*}}, %{{.*}} {transpose_a} : tensor<8x16x32xf16>, tensor<8x16x32xf16>
  %2 = mpc.matmul %x, %k {transpose_a} : tensor<8x16x32xf16>, tensor<8x16x32xf16>
  return %0, %1, %2 : tensor<8x16x64xf16>, tensor<8x16x16xf16>, tensor<8x32x32xf16>
}

// CHECK-LABEL: func @fused_matmul
func.func @fused_matmul(%x: tensor<8x16x32xf16>, %w: tensor<32x64xf16>, %wt: tensor<64x32xf16>, %b: tensor<64xf16>, %b32: tensor<64xf32>) -> (tensor<8x16x64xf16>, tensor<8x16x64xf16>, tensor<8x16x64xf32>) {
  // CHECK: mpc.fused_matmul %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x16x32xf16>, tensor<32x64xf16>, tensor<64xf16> -> tensor<8x16x64xf16>
  %0 = mpc.fused_matmul %x, %w, %b : tensor<8x16x32xf16>, tensor<32x64xf16>, tensor<64xf16> -> tensor<8x16x64xf16>
  // CHECK: mpc.fused_matmul %{{.*}}, %{{.*}}, %{{.*}} {activation = "relu", transpose_b} : tensor<8x16x32xf16>, tensor<64x32xf16>, tensor<64xf16> -> tensor<8x16x64xf16>
  %1 = mpc.fused_matmul %x, %wt, %b {activation = "relu", transpose_b} : tensor<8x16x32xf16>, tensor<64x32xf16>, tensor<64xf16> -> tensor<8x16x64xf16>
  // CHECK: mpc.fused_matmul %{{.*}}, %{{.*}}, %{{.*}} {activation = "gelu_tanh"} : tensor<8x16x32xf16>, tensor<32x64xf16>, tensor<64xf32> -> tensor<8x16x64xf32>
  %2 = mpc.fused_matmul %x, %w, %b32 {activation = "gelu_tanh"} : tensor<8x16x32xf16>, tensor<32x64xf16>, tensor<64xf32> -> tensor<8x16x64xf32>
  return %0, %1, %2 : tensor<8x16x64xf16>, tensor<8x16x64xf16>, tensor<8x16x64xf32>
}

// CHECK-LABEL: func @fused_matmul_pre_activation
func.func @fused_matmul_pre_activation(%x: tensor<16x32xbf16>, %w: tensor<32x64xbf16>, %b: tensor<64xbf16>) -> (tensor<16x64xbf16>, tensor<16x64xbf16>) {
  // CHECK: %{{.*}}, %{{.*}} = mpc.fused_matmul %{{.*}}, %{{.*}}, %{{.*}} {activation = "gelu_tanh"} : tensor<16x32xbf16>, tensor<32x64xbf16>, tensor<64xbf16> -> tensor<16x64xbf16>, tensor<16x64xbf16>
  %0, %1 = mpc.fused_matmul %x, %w, %b {activation = "gelu_tanh"} : tensor<16x32xbf16>, tensor<32x64xbf16>, tensor<64xbf16> -> tensor<16x64xbf16>, tensor<16x64xbf16>
  return %0, %1 : tensor<16x64xbf16>, tensor<16x64xbf16>
}

// CHECK-LABEL: func @dropout_add
func.func @dropout_add(%x: tensor<8x16x32xbf16>, %r: tensor<8x16x32xbf16>) -> (tensor<8x16x32xbf16>, tensor<8x16x32xbf16>) {
  // CHECK: mpc.dropout_add %{{.*}}, %{{.*}} {p = 1.000000e-01 : f64, seed = 7 : i64} : tensor<8x16x32xbf16>, tensor<8x16x32xbf16>
  %0 = mpc.dropout_add %x, %r {p = 0.1 : f64, seed = 7 : i64} : tensor<8x16x32xbf16>, tensor<8x16x32xbf16>
  // CHECK: mpc.dropout_add %{{.*}} {p = 1.000000e-01 : f64, seed = 7 : i64} : tensor<8x16x32xbf16>
  %1 = mpc.dropout_add %x {p = 0.1 : f64, seed = 7 : i64} : tensor<8x16x32xbf16>
  return %0, %1 : tensor<8x16x32xbf16>, tensor<8x16x32xbf16>
}

// CHECK-LABEL: func @softmax_dropout
func.func @softmax_dropout(%s: tensor<2x4x8x8xf16>, %g: tensor<2x4x8x8xf16>, %b: tensor<2x4x8x8xbf16>) {
  // CHECK: %[[P:.*]] = mpc.softmax_dropout %{{.*}} {p = 1.000000e-01 : f64, scale = 1.250000e-01 : f64, seed = 7 : i64} : tensor<2x4x8x8xf16>{{$}}
  %p = mpc.softmax_dropout %s {p = 0.1 : f64, scale = 0.125 : f64, seed = 7 : i64} : tensor<2x4x8x8xf16>
  // The recomputed copy; a scale of 1 is not printed.
  // CHECK: mpc.softmax_dropout %{{.*}} {p = 1.000000e-01 : f64, recompute, seed = 7 : i64} : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
  %q = mpc.softmax_dropout %b {p = 0.1 : f64, scale = 1.0 : f64, seed = 7 : i64, recompute} : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
  // CHECK: mpc.softmax_dropout_backward %{{.*}}, %{{.*}} {p = 1.000000e-01 : f64, scale = 1.250000e-01 : f64, seed = 7 : i64} : tensor<2x4x8x8xf16>{{$}}
  %d = mpc.softmax_dropout_backward %g, %s {p = 0.1 : f64, scale = 0.125 : f64, seed = 7 : i64} : tensor<2x4x8x8xf16>
  // CHECK: mpc.softmax_dropout_backward %{{.*}}, %{{.*}} {p = 0.000000e+00 : f64, seed = 7 : i64} : tensor<2x4x8x8xf16>, tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
  %e = mpc.softmax_dropout_backward %g, %b {p = 0.0 : f64, seed = 7 : i64} : tensor<2x4x8x8xf16>, tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
  // Writing the forward's result too (of the gradient's type).
  // CHECK: %{{.*}}, %{{.*}} = mpc.softmax_dropout_backward %{{.*}}, %{{.*}} {p = 1.000000e-01 : f64, scale = 1.250000e-01 : f64, seed = 7 : i64} : tensor<2x4x8x8xf16> dropped tensor<2x4x8x8xf16>{{$}}
  %f:2 = mpc.softmax_dropout_backward %g, %s {p = 0.1 : f64, scale = 0.125 : f64, seed = 7 : i64} : tensor<2x4x8x8xf16> dropped tensor<2x4x8x8xf16>
  // CHECK: %{{.*}}, %{{.*}} = mpc.softmax_dropout_backward %{{.*}}, %{{.*}} {p = 1.000000e-01 : f64, seed = 7 : i64} : tensor<2x4x8x8xf16>, tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32> dropped tensor<2x4x8x8xf16>{{$}}
  %h:2 = mpc.softmax_dropout_backward %g, %b {p = 0.1 : f64, seed = 7 : i64} : tensor<2x4x8x8xf16>, tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32> dropped tensor<2x4x8x8xf16>
  return
}

// CHECK-LABEL: func @matmul_add
func.func @matmul_add(%dy: tensor<8x16x64xf16>, %w: tensor<32x64xf16>, %g: tensor<8x16x32xf16>, %g32: tensor<8x16x32xf32>) -> (tensor<8x16x32xf16>, tensor<8x16x32xf32>) {
  // CHECK: mpc.matmul_add %{{.*}}, %{{.*}}, %{{.*}} {transpose_b} : tensor<8x16x64xf16>, tensor<32x64xf16>, tensor<8x16x32xf16> -> tensor<8x16x32xf16>
  %0 = mpc.matmul_add %dy, %w, %g {transpose_b} : tensor<8x16x64xf16>, tensor<32x64xf16>, tensor<8x16x32xf16> -> tensor<8x16x32xf16>
  // CHECK: mpc.matmul_add %{{.*}}, %{{.*}}, %{{.*}} {transpose_b} : tensor<8x16x64xf16>, tensor<32x64xf16>, tensor<8x16x32xf32> -> tensor<8x16x32xf32>
  %1 = mpc.matmul_add %dy, %w, %g32 {transpose_b} : tensor<8x16x64xf16>, tensor<32x64xf16>, tensor<8x16x32xf32> -> tensor<8x16x32xf32>
  return %0, %1 : tensor<8x16x32xf16>, tensor<8x16x32xf32>
}

// CHECK-LABEL: func @heads_matmul
func.func @heads_matmul(%q: tensor<2x6x3x4xf16>, %k: tensor<2x6x3x4xf16>, %p: tensor<2x3x6x6xf16>) -> (tensor<2x3x6x6xf16>, tensor<2x6x3x4xf16>, tensor<2x3x4x4xf16>) {
  // CHECK: mpc.heads_matmul %{{.*}}, %{{.*}} {a_bshd, b_bshd, transpose_b} : tensor<2x6x3x4xf16>, tensor<2x6x3x4xf16> -> tensor<2x3x6x6xf16>
  %s = mpc.heads_matmul %q, %k {a_bshd, b_bshd, transpose_b} : tensor<2x6x3x4xf16>, tensor<2x6x3x4xf16> -> tensor<2x3x6x6xf16>
  // CHECK: mpc.heads_matmul %{{.*}}, %{{.*}} {b_bshd, result_bshd} : tensor<2x3x6x6xf16>, tensor<2x6x3x4xf16> -> tensor<2x6x3x4xf16>
  %o = mpc.heads_matmul %p, %k {b_bshd, result_bshd} : tensor<2x3x6x6xf16>, tensor<2x6x3x4xf16> -> tensor<2x6x3x4xf16>
  // CHECK: mpc.heads_matmul %{{.*}}, %{{.*}} {a_bshd, b_bshd, transpose_a} : tensor<2x6x3x4xf16>, tensor<2x6x3x4xf16> -> tensor<2x3x4x4xf16>
  %g = mpc.heads_matmul %q, %k {a_bshd, b_bshd, transpose_a} : tensor<2x6x3x4xf16>, tensor<2x6x3x4xf16> -> tensor<2x3x4x4xf16>
  return %s, %o, %g : tensor<2x3x6x6xf16>, tensor<2x6x3x4xf16>, tensor<2x3x4x4xf16>
}

// CHECK-LABEL: func @matmul_activation_grad
func.func @matmul_activation_grad(%dy: tensor<8x16x64xf16>, %w: tensor<32x64xf16>, %h: tensor<8x16x32xf16>, %pre: tensor<8x16x32xf32>) -> (tensor<8x16x32xf16>, tensor<8x16x32xf32>) {
  // CHECK: mpc.matmul_activation_grad %{{.*}}, %{{.*}}, %{{.*}} {activation = "relu", transpose_b} : tensor<8x16x64xf16>, tensor<32x64xf16>, tensor<8x16x32xf16> -> tensor<8x16x32xf16>
  %0 = mpc.matmul_activation_grad %dy, %w, %h {activation = "relu", transpose_b} : tensor<8x16x64xf16>, tensor<32x64xf16>, tensor<8x16x32xf16> -> tensor<8x16x32xf16>
  // CHECK: mpc.matmul_activation_grad %{{.*}}, %{{.*}}, %{{.*}} {activation = "gelu_tanh", transpose_b} : tensor<8x16x64xf16>, tensor<32x64xf16>, tensor<8x16x32xf32> -> tensor<8x16x32xf32>
  %1 = mpc.matmul_activation_grad %dy, %w, %pre {activation = "gelu_tanh", transpose_b} : tensor<8x16x64xf16>, tensor<32x64xf16>, tensor<8x16x32xf32> -> tensor<8x16x32xf32>
  return %0, %1 : tensor<8x16x32xf16>, tensor<8x16x32xf32>
}

// CHECK-LABEL: func @matmul_bias_grad
func.func @matmul_bias_grad(%x: tensor<1024x256xf16>, %dy: tensor<1024x64xf16>, %xt: tensor<256x1024xf32>, %dy32: tensor<1024x64xf32>) -> (tensor<256x64xf16>, tensor<64xf32>, tensor<256x64xf32>, tensor<64xf32>) {
  // CHECK: %{{.*}}, %{{.*}} = mpc.matmul_bias_grad %{{.*}}, %{{.*}} {transpose_a} : tensor<1024x256xf16>, tensor<1024x64xf16>
  %0:2 = mpc.matmul_bias_grad %x, %dy {transpose_a} : tensor<1024x256xf16>, tensor<1024x64xf16>
  // CHECK: %{{.*}}, %{{.*}} = mpc.matmul_bias_grad %{{.*}}, %{{.*}} : tensor<256x1024xf32>, tensor<1024x64xf32>
  %1:2 = mpc.matmul_bias_grad %xt, %dy32 : tensor<256x1024xf32>, tensor<1024x64xf32>
  return %0#0, %0#1, %1#0, %1#1 : tensor<256x64xf16>, tensor<64xf32>, tensor<256x64xf32>, tensor<64xf32>
}

// The gradient of a weight stored [out, in] (x @ W^T): the bias gradient
// sums a, the output's gradient, over its rows.
// CHECK-LABEL: func @matmul_bias_grad_of_a
func.func @matmul_bias_grad_of_a(%dy: tensor<1024x64xf16>, %x: tensor<1024x256xf16>, %acc: tensor<64x256xf32>, %bacc: tensor<64xf32>) -> (tensor<64x256xf16>, tensor<64xf32>, tensor<64x256xf32>, tensor<64xf32>) {
  // CHECK: %{{.*}}, %{{.*}} = mpc.matmul_bias_grad %{{.*}}, %{{.*}} {bias_of_a, transpose_a} : tensor<1024x64xf16>, tensor<1024x256xf16>
  %0:2 = mpc.matmul_bias_grad %dy, %x {bias_of_a, transpose_a} : tensor<1024x64xf16>, tensor<1024x256xf16>
  // CHECK: %{{.*}}, %{{.*}} = mpc.matmul_bias_grad %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}) {bias_of_a, transpose_a} : tensor<1024x64xf16>, tensor<1024x256xf16>, tensor<64x256xf32> bias(tensor<64xf32>)
  %1:2 = mpc.matmul_bias_grad %dy, %x, %acc bias(%bacc) {bias_of_a, transpose_a} : tensor<1024x64xf16>, tensor<1024x256xf16>, tensor<64x256xf32> bias(tensor<64xf32>)
  return %0#0, %0#1, %1#0, %1#1 : tensor<64x256xf16>, tensor<64xf32>, tensor<64x256xf32>, tensor<64xf32>
}

// With an addend: the weight gradient summed into an f32 accumulator (the
// sum has the addend's type), or into one of the operands' type.
// CHECK-LABEL: func @matmul_bias_grad_addend
func.func @matmul_bias_grad_addend(%x: tensor<1024x256xf16>, %dy: tensor<1024x64xf16>, %acc: tensor<256x64xf32>, %acc16: tensor<256x64xf16>) -> (tensor<256x64xf32>, tensor<64xf32>, tensor<256x64xf16>) {
  // CHECK: %{{.*}}, %{{.*}} = mpc.matmul_bias_grad %{{.*}}, %{{.*}}, %{{.*}} {transpose_a} : tensor<1024x256xf16>, tensor<1024x64xf16>, tensor<256x64xf32>
  %0:2 = mpc.matmul_bias_grad %x, %dy, %acc {transpose_a} : tensor<1024x256xf16>, tensor<1024x64xf16>, tensor<256x64xf32>
  // CHECK: %{{.*}}, %{{.*}} = mpc.matmul_bias_grad %{{.*}}, %{{.*}}, %{{.*}} {transpose_a} : tensor<1024x256xf16>, tensor<1024x64xf16>, tensor<256x64xf16>
  %1:2 = mpc.matmul_bias_grad %x, %dy, %acc16 {transpose_a} : tensor<1024x256xf16>, tensor<1024x64xf16>, tensor<256x64xf16>
  return %0#0, %0#1, %1#0 : tensor<256x64xf32>, tensor<64xf32>, tensor<256x64xf16>
}

// A bias addend (the bias gradient's accumulator), with and without the
// product's.
// CHECK-LABEL: func @matmul_bias_grad_bias_addend
func.func @matmul_bias_grad_bias_addend(%x: tensor<1024x256xf16>, %dy: tensor<1024x64xf16>, %acc: tensor<256x64xf32>, %bacc: tensor<64xf32>) -> (tensor<256x64xf32>, tensor<64xf32>, tensor<256x64xf16>, tensor<64xf32>) {
  // CHECK: %{{.*}}, %{{.*}} = mpc.matmul_bias_grad %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}) {transpose_a} : tensor<1024x256xf16>, tensor<1024x64xf16>, tensor<256x64xf32> bias(tensor<64xf32>)
  %0:2 = mpc.matmul_bias_grad %x, %dy, %acc bias(%bacc) {transpose_a} : tensor<1024x256xf16>, tensor<1024x64xf16>, tensor<256x64xf32> bias(tensor<64xf32>)
  // CHECK: %{{.*}}, %{{.*}} = mpc.matmul_bias_grad %{{.*}}, %{{.*}} bias(%{{.*}}) {transpose_a} : tensor<1024x256xf16>, tensor<1024x64xf16> bias(tensor<64xf32>)
  %1:2 = mpc.matmul_bias_grad %x, %dy bias(%bacc) {transpose_a} : tensor<1024x256xf16>, tensor<1024x64xf16> bias(tensor<64xf32>)
  return %0#0, %0#1, %1#0, %1#1 : tensor<256x64xf32>, tensor<64xf32>, tensor<256x64xf16>, tensor<64xf32>
}

// Sibling layers' bias gradients: f32 sums of f16 matrices, f64 of f64.
// CHECK-LABEL: func @column_sums
func.func @column_sums(%dq: tensor<64x32xf16>, %dk: tensor<64x32xf16>, %g: tensor<5x3xf64>) -> (tensor<32xf32>, tensor<32xf32>, tensor<3xf64>) {
  // CHECK: %{{.*}}:2 = mpc.column_sums %{{.*}}, %{{.*}} : tensor<64x32xf16>, tensor<64x32xf16>
  %0:2 = mpc.column_sums %dq, %dk : tensor<64x32xf16>, tensor<64x32xf16>
  // CHECK: %{{.*}} = mpc.column_sums %{{.*}} : tensor<5x3xf64>
  %1 = mpc.column_sums %g : tensor<5x3xf64>
  return %0#0, %0#1, %1 : tensor<32xf32>, tensor<32xf32>, tensor<3xf64>
}

// Summed into accumulators (gradient accumulation).
// CHECK-LABEL: func @column_sums_addends
func.func @column_sums_addends(%dq: tensor<64x32xbf16>, %dk: tensor<64x32xbf16>, %aq: tensor<32xf32>, %ak: tensor<32xf32>) -> (tensor<32xf32>, tensor<32xf32>) {
  // CHECK: %{{.*}}:2 = mpc.column_sums %{{.*}}, %{{.*}} addends(%{{.*}}, %{{.*}}) : tensor<64x32xbf16>, tensor<64x32xbf16> addends(tensor<32xf32>, tensor<32xf32>)
  %0:2 = mpc.column_sums %dq, %dk addends(%aq, %ak) : tensor<64x32xbf16>, tensor<64x32xbf16> addends(tensor<32xf32>, tensor<32xf32>)
  return %0#0, %0#1 : tensor<32xf32>, tensor<32xf32>
}

// CHECK-LABEL: func @attention
func.func @attention(%q: tensor<8x4x128x64xf16>, %k: tensor<8x4x96x64xf16>, %v: tensor<8x4x96x32xf16>, %g: tensor<8x4x128x32xf16>) -> (tensor<8x4x128x32xf16>, tensor<8x4x128x64xf16>, tensor<8x4x96x64xf16>, tensor<8x4x96x32xf16>) {
  // CHECK: %[[O:.*]], %[[LSE:.*]] = mpc.attention %{{.*}}, %{{.*}}, %{{.*}} {dropout_p = 1.000000e-01 : f64, scale = 1.250000e-01 : f64, seed = 7 : i64} : tensor<8x4x128x64xf16>, tensor<8x4x96x64xf16>, tensor<8x4x96x32xf16>
  %o, %lse = mpc.attention %q, %k, %v {scale = 0.125 : f64, dropout_p = 0.1 : f64, seed = 7 : i64} : tensor<8x4x128x64xf16>, tensor<8x4x96x64xf16>, tensor<8x4x96x32xf16>
  // CHECK: mpc.attention_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[O]], %[[LSE]] {scale = 1.250000e-01 : f64} : tensor<8x4x128x32xf16>, tensor<8x4x128x64xf16>, tensor<8x4x96x64xf16>, tensor<8x4x96x32xf16>, tensor<8x4x128x32xf16>, tensor<8x4x128xf32>
  %dq, %dk, %dv = mpc.attention_backward %g, %q, %k, %v, %o, %lse {scale = 0.125 : f64} : tensor<8x4x128x32xf16>, tensor<8x4x128x64xf16>, tensor<8x4x96x64xf16>, tensor<8x4x96x32xf16>, tensor<8x4x128x32xf16>, tensor<8x4x128xf32>
  return %o, %dq, %dk, %dv : tensor<8x4x128x32xf16>, tensor<8x4x128x64xf16>, tensor<8x4x96x64xf16>, tensor<8x4x96x32xf16>
}

// CHECK-LABEL: func @attention_masked
func.func @attention_masked(%q: tensor<8x4x128x64xf16>, %k: tensor<8x4x96x64xf16>, %v: tensor<8x4x96x32xf16>, %m: tensor<8x1x1x96xi1>, %g: tensor<8x4x128x32xf16>) -> (tensor<8x4x128x32xf16>, tensor<8x4x128x64xf16>) {
  // CHECK: %[[O:.*]], %[[LSE:.*]] = mpc.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<8x1x1x96xi1>) {mask_value = -1.000000e+04 : f64, scale = 1.250000e-01 : f64} : tensor<8x4x128x64xf16>, tensor<8x4x96x64xf16>, tensor<8x4x96x32xf16>
  %o, %lse = mpc.attention %q, %k, %v mask(%m : tensor<8x1x1x96xi1>) {scale = 0.125 : f64, mask_value = -1.0e4 : f64} : tensor<8x4x128x64xf16>, tensor<8x4x96x64xf16>, tensor<8x4x96x32xf16>
  // CHECK: mpc.attention_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[O]], %[[LSE]] mask(%{{.*}} : tensor<8x1x1x96xi1>) {mask_value = -1.000000e+04 : f64, scale = 1.250000e-01 : f64}
  %dq, %dk, %dv = mpc.attention_backward %g, %q, %k, %v, %o, %lse mask(%m : tensor<8x1x1x96xi1>) {scale = 0.125 : f64, mask_value = -1.0e4 : f64} : tensor<8x4x128x32xf16>, tensor<8x4x128x64xf16>, tensor<8x4x96x64xf16>, tensor<8x4x96x32xf16>, tensor<8x4x128x32xf16>, tensor<8x4x128xf32>
  return %o, %dq : tensor<8x4x128x32xf16>, tensor<8x4x128x64xf16>
}

// CHECK-LABEL: func @attention_bshd
func.func @attention_bshd(%q: tensor<8x128x4x64xf16>, %k: tensor<8x96x4x64xf16>, %v: tensor<8x96x4x32xf16>, %m: tensor<8x1x1x96xi1>, %g: tensor<8x128x4x32xf16>) -> (tensor<8x128x4x32xf16>, tensor<8x4x128xf32>, tensor<8x128x4x64xf16>, tensor<8x96x4x64xf16>, tensor<8x96x4x32xf16>) {
  // CHECK: %[[O:.*]], %[[LSE:.*]] = mpc.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<8x1x1x96xi1>) {layout = "bshd", mask_value = -1.000000e+04 : f64, scale = 1.250000e-01 : f64} : tensor<8x128x4x64xf16>, tensor<8x96x4x64xf16>, tensor<8x96x4x32xf16>
  %o, %lse = mpc.attention %q, %k, %v mask(%m : tensor<8x1x1x96xi1>) {scale = 0.125 : f64, mask_value = -1.0e4 : f64, layout = "bshd"} : tensor<8x128x4x64xf16>, tensor<8x96x4x64xf16>, tensor<8x96x4x32xf16>
  // CHECK: mpc.attention_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[O]], %[[LSE]] mask(%{{.*}} : tensor<8x1x1x96xi1>) {layout = "bshd", mask_value = -1.000000e+04 : f64, scale = 1.250000e-01 : f64} : tensor<8x128x4x32xf16>, tensor<8x128x4x64xf16>, tensor<8x96x4x64xf16>, tensor<8x96x4x32xf16>, tensor<8x128x4x32xf16>, tensor<8x4x128xf32>
  %dq, %dk, %dv = mpc.attention_backward %g, %q, %k, %v, %o, %lse mask(%m : tensor<8x1x1x96xi1>) {scale = 0.125 : f64, mask_value = -1.0e4 : f64, layout = "bshd"} : tensor<8x128x4x32xf16>, tensor<8x128x4x64xf16>, tensor<8x96x4x64xf16>, tensor<8x96x4x32xf16>, tensor<8x128x4x32xf16>, tensor<8x4x128xf32>
  return %o, %lse, %dq, %dk, %dv : tensor<8x128x4x32xf16>, tensor<8x4x128xf32>, tensor<8x128x4x64xf16>, tensor<8x96x4x64xf16>, tensor<8x96x4x32xf16>
}

// CHECK-LABEL: func @convolutions
func.func @convolutions(%x: tensor<2x16x16x4xf32>, %w: tensor<8x3x3x4xf32>, %t: tensor<8x2x2x4xf32>) -> (tensor<2x8x8x8xf32>, tensor<2x16x16x4xf32>) {
  // CHECK: %[[Y:.*]] = mpc.conv2d %{{.*}}, %{{.*}} {padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : tensor<2x16x16x4xf32>, tensor<8x3x3x4xf32>
  %y = mpc.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x16x16x4xf32>, tensor<8x3x3x4xf32>
  // CHECK: mpc.conv2d_backward_data %[[Y]], %{{.*}} {{.*}} : tensor<2x8x8x8xf32>, tensor<8x3x3x4xf32> -> tensor<2x16x16x4xf32>
  %dx = mpc.conv2d_backward_data %y, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x8x8x8xf32>, tensor<8x3x3x4xf32> -> tensor<2x16x16x4xf32>
  // CHECK: mpc.conv2d_backward_filter %[[Y]], %{{.*}} {{.*}} : tensor<2x8x8x8xf32>, tensor<2x16x16x4xf32> -> tensor<8x3x3x4xf32>
  %dw = mpc.conv2d_backward_filter %y, %x {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x8x8x8xf32>, tensor<2x16x16x4xf32> -> tensor<8x3x3x4xf32>
  %gw = mpc.constant dense<1.0> : tensor<8x3x3x2xf32>
  // CHECK: mpc.conv2d %{{.*}}, %{{.*}} {dilation = array<i64: 2, 2>, groups = 2 : i64} : tensor<2x16x16x4xf32>, tensor<8x3x3x2xf32>
  %g = mpc.conv2d %x, %gw {dilation = array<i64: 2, 2>, groups = 2} : tensor<2x16x16x4xf32>, tensor<8x3x3x2xf32>
  // CHECK: mpc.conv2d %{{.*}}, %{{.*}} addend(%[[Y]] : tensor<2x8x8x8xf32>) {padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : tensor<2x16x16x4xf32>, tensor<8x3x3x4xf32>
  %ya = mpc.conv2d %x, %w addend(%y : tensor<2x8x8x8xf32>) {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x16x16x4xf32>, tensor<8x3x3x4xf32>
  // CHECK: mpc.conv_transpose2d %[[Y]], %{{.*}} {stride = array<i64: 2, 2>} : tensor<2x8x8x8xf32>, tensor<8x2x2x4xf32>
  %up = mpc.conv_transpose2d %y, %t {stride = array<i64: 2, 2>} : tensor<2x8x8x8xf32>, tensor<8x2x2x4xf32>
  return %y, %up : tensor<2x8x8x8xf32>, tensor<2x16x16x4xf32>
}

// CHECK-LABEL: func @reductions
func.func @reductions(%x: tensor<4x8x16xf32>) -> (tensor<4xf32>, tensor<4x1x16xf32>, tensor<8x16xf32>) {
  // CHECK: mpc.reduce_sum %{{.*}} {dims = array<i64: 1, 2>} : tensor<4x8x16xf32>
  %0 = mpc.reduce_sum %x {dims = array<i64: 1, 2>} : tensor<4x8x16xf32>
  // CHECK: mpc.reduce_mean %{{.*}} {dims = array<i64: 1>, keep_dims} : tensor<4x8x16xf32>
  %1 = mpc.reduce_mean %x {dims = array<i64: 1>, keep_dims} : tensor<4x8x16xf32>
  // CHECK: mpc.reduce_max %{{.*}} {dims = array<i64: 0>} : tensor<4x8x16xf32>
  %2 = mpc.reduce_max %x {dims = array<i64: 0>} : tensor<4x8x16xf32>
  // CHECK: mpc.reduce_max_backward %{{.*}}, %{{.*}}, %{{.*}} {dims = array<i64: 0>} : tensor<8x16xf32>, tensor<4x8x16xf32>
  %rm = mpc.reduce_max %x {dims = array<i64: 0>} : tensor<4x8x16xf32>
  %drm = mpc.reduce_max_backward %rm, %x, %rm {dims = array<i64: 0>} : tensor<8x16xf32>, tensor<4x8x16xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4x1x16xf32>, tensor<8x16xf32>
}

// CHECK-LABEL: func @softmax
func.func @softmax(%x: tensor<4x8xf32>, %g: tensor<4x8xf32>) {
  // CHECK: mpc.softmax %{{.*}} : tensor<4x8xf32>
  %0 = mpc.softmax %x : tensor<4x8xf32>
  // CHECK: mpc.log_softmax %{{.*}} {axis = 0 : i64} : tensor<4x8xf32>
  %1 = mpc.log_softmax %x {axis = 0} : tensor<4x8xf32>
  // CHECK: mpc.softmax_backward %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %2 = mpc.softmax_backward %g, %0 : tensor<4x8xf32>
  // CHECK: mpc.log_softmax_backward %{{.*}}, %{{.*}} {axis = 0 : i64} : tensor<4x8xf32>
  %3 = mpc.log_softmax_backward %g, %1 {axis = 0} : tensor<4x8xf32>
  return
}

// Mixed element types (what --mpc-fuse's cast folding builds): the types
// that differ from the first operand's are printed, the others left out.
// CHECK-LABEL: func @softmax_mixed
func.func @softmax_mixed(%x: tensor<4x8xbf16>, %g: tensor<4x8xbf16>, %x32: tensor<4x8xf32>) {
  // CHECK: %[[Y:.*]] = mpc.softmax %{{.*}} : tensor<4x8xbf16> -> tensor<4x8xf32>
  %0 = mpc.softmax %x : tensor<4x8xbf16> -> tensor<4x8xf32>
  // CHECK: mpc.log_softmax %{{.*}} : tensor<4x8xf32> -> tensor<4x8xf16>
  %1 = mpc.log_softmax %x32 : tensor<4x8xf32> -> tensor<4x8xf16>
  // CHECK: mpc.softmax_backward %{{.*}}, %[[Y]] : tensor<4x8xbf16>, tensor<4x8xf32>{{$}}
  %2 = mpc.softmax_backward %g, %0 : tensor<4x8xbf16>, tensor<4x8xf32>
  // CHECK: mpc.softmax_backward %{{.*}}, %[[Y]] : tensor<4x8xbf16>, tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = mpc.softmax_backward %g, %0 : tensor<4x8xbf16>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK: mpc.log_softmax_backward %{{.*}}, %{{.*}} : tensor<4x8xf32> -> tensor<4x8xbf16>
  %4 = mpc.log_softmax_backward %x32, %x32 : tensor<4x8xf32> -> tensor<4x8xbf16>
  // An explicit type equal to the gradient's is left out when printed.
  // CHECK: mpc.softmax_backward %{{.*}}, %{{.*}} : tensor<4x8xf32>{{$}}
  %5 = mpc.softmax_backward %x32, %x32 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // A scale (softmax(scale * x)); 1, the default, is not printed.
  // CHECK: mpc.softmax %{{.*}} {scale = 1.250000e-01 : f64} : tensor<4x8xbf16> -> tensor<4x8xf32>
  %s = mpc.softmax %x {scale = 0.125 : f64} : tensor<4x8xbf16> -> tensor<4x8xf32>
  // CHECK: mpc.log_softmax_backward %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f64} : tensor<4x8xf32>{{$}}
  %sb = mpc.log_softmax_backward %x32, %x32 {scale = 0.25 : f64} : tensor<4x8xf32>
  // CHECK: mpc.softmax %{{.*}} : tensor<4x8xf32>{{$}}
  %one = mpc.softmax %x32 {scale = 1.0 : f64} : tensor<4x8xf32>
  // CHECK: mpc.dropout %{{.*}} {p = 1.000000e-01 : f64, seed = 3 : i64} : tensor<4x8xf32> -> tensor<4x8xbf16>
  %6, %mask = mpc.dropout %x32 {p = 0.1 : f64, seed = 3 : i64} : tensor<4x8xf32> -> tensor<4x8xbf16>
  // CHECK: mpc.dropout %{{.*}} {p = 1.000000e-01 : f64, seed = 3 : i64} : tensor<4x8xbf16>{{$}}
  %7, %mask2 = mpc.dropout %x {p = 0.1 : f64, seed = 3 : i64} : tensor<4x8xbf16>
  return
}

// Low-precision rows with f32 parameters (keep-batchnorm-fp32 at O2).
// CHECK-LABEL: func @batch_norm_inference
func.func @batch_norm_inference(%x: tensor<2x8xf16>, %g: tensor<8xf32>) -> tensor<2x8xf16> {
  // CHECK: mpc.batch_norm_inference %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {activation = "relu", epsilon = 1.000000e-03 : f64} : tensor<2x8xf16>, tensor<8xf32>
  %y = mpc.batch_norm_inference %x, %g, %g, %g, %g {epsilon = 1.0e-3, activation = "relu"} : tensor<2x8xf16>, tensor<8xf32>
  return %y : tensor<2x8xf16>
}

// CHECK-LABEL: func @norms
func.func @norms(%x: tensor<2x4x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>, %img: tensor<2x4x4x8xf32>, %pos: tensor<4x8xf16>, %row: tensor<8xf16>) {
  // CHECK: %{{.*}}, %[[MEAN:.*]], %[[RSTD:.*]] = mpc.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.9999999999999995E-7 : f64} : tensor<2x4x8xf16>, tensor<8xf32>
  %y, %mean, %rstd = mpc.layer_norm %x, %g, %b {epsilon = 1.0e-6} : tensor<2x4x8xf16>, tensor<8xf32>
  // CHECK: mpc.layer_norm_backward %{{.*}}, %{{.*}}, %[[MEAN]], %[[RSTD]], %{{.*}} : tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<8xf32>
  %dx, %dg, %db = mpc.layer_norm_backward %x, %x, %mean, %rstd, %g : tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<8xf32>
  // CHECK: %{{.*}}, %[[SUM:.*]], %[[M2:.*]], %[[R2:.*]] = mpc.add_layer_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {dropout_p = 1.000000e-01 : f64, seed = 7 : i64} : tensor<2x4x8xf16>, tensor<8xf32>
  %ay, %as, %am, %ar = mpc.add_layer_norm %x, %x, %g, %b {dropout_p = 0.1, seed = 7} : tensor<2x4x8xf16>, tensor<8xf32>
  // A residual broadcast over the leading dimension: its type follows the input's.
  // CHECK: mpc.add_layer_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x8xf16>, tensor<4x8xf16>, tensor<8xf32>
  %py:4 = mpc.add_layer_norm %x, %pos, %g, %b : tensor<2x4x8xf16>, tensor<4x8xf16>, tensor<8xf32>
  // CHECK: mpc.add_layer_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x8xf16>, tensor<8xf16>, tensor<8xf32>
  %ry:4 = mpc.add_layer_norm %x, %row, %g, %b : tensor<2x4x8xf16>, tensor<8xf16>, tensor<8xf32>
  // CHECK: mpc.add_layer_norm_backward %{{.*}}, %[[SUM]], %[[M2]], %[[R2]], %{{.*}} {dropout_p = 1.000000e-01 : f64, seed = 7 : i64} : tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<8xf32>
  %ax:4 = mpc.add_layer_norm_backward %x, %as, %am, %ar, %g {dropout_p = 0.1, seed = 7} : tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<8xf32>
  // CHECK: mpc.add_layer_norm_backward %{{.*}}, %[[SUM]], %[[M2]], %[[R2]], %{{.*}} sum_grad(%{{.*}} : tensor<2x4x8xf16>) : tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<8xf32>
  %ag:4 = mpc.add_layer_norm_backward %x, %as, %am, %ar, %g sum_grad(%x : tensor<2x4x8xf16>) : tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<8xf32>
  // The parameter gradients' addends, either or both.
  // CHECK: mpc.layer_norm_backward %{{.*}}, %{{.*}}, %[[MEAN]], %[[RSTD]], %{{.*}} gamma_addend(%{{.*}} : tensor<8xf32>) beta_addend(%{{.*}} : tensor<8xf32>) : tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<8xf32>
  %sx:3 = mpc.layer_norm_backward %x, %x, %mean, %rstd, %g gamma_addend(%g : tensor<8xf32>) beta_addend(%b : tensor<8xf32>) : tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<8xf32>
  // CHECK: mpc.add_layer_norm_backward %{{.*}}, %[[SUM]], %[[M2]], %[[R2]], %{{.*}} sum_grad(%{{.*}} : tensor<2x4x8xf16>) beta_addend(%{{.*}} : tensor<8xf32>) : tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<8xf32>
  %sg:4 = mpc.add_layer_norm_backward %x, %as, %am, %ar, %g sum_grad(%x : tensor<2x4x8xf16>) beta_addend(%b : tensor<8xf32>) : tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<8xf32>
  // CHECK: mpc.add_layer_norm_backward %{{.*}}, %[[SUM]], %[[M2]], %[[R2]], %{{.*}} gamma_addend(%{{.*}} : tensor<8xf32>) : tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<8xf32>
  %sh:4 = mpc.add_layer_norm_backward %x, %as, %am, %ar, %g gamma_addend(%g : tensor<8xf32>) : tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<8xf32>
  // CHECK: mpc.batch_norm {{.*}} {momentum = 2.000000e-01 : f64} : tensor<2x4x4x8xf32>, tensor<8xf32>
  %o, %rm, %rv, %sm, %si = mpc.batch_norm %img, %g, %b, %g, %b {momentum = 0.2} : tensor<2x4x4x8xf32>, tensor<8xf32>
  // CHECK: mpc.batch_norm_backward {{.*}} : tensor<2x4x4x8xf32>, tensor<8xf32>
  %bx, %bg, %bb = mpc.batch_norm_backward %o, %img, %g, %sm, %si : tensor<2x4x4x8xf32>, tensor<8xf32>
  // CHECK: %[[Z:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = mpc.batch_norm {{.*}} {activation = "relu"} : tensor<2x4x4x8xf32>, tensor<8xf32>
  %z, %zm, %zv, %zsm, %zsi = mpc.batch_norm %img, %g, %b, %g, %b {activation = "relu"} : tensor<2x4x4x8xf32>, tensor<8xf32>
  // CHECK: mpc.batch_norm_backward {{.*}} result(%[[Z]] : tensor<2x4x4x8xf32>) {activation = "relu"} : tensor<2x4x4x8xf32>, tensor<8xf32>
  %zx, %zg, %zb = mpc.batch_norm_backward %o, %img, %g, %zsm, %zsi result(%z : tensor<2x4x4x8xf32>) {activation = "relu"} : tensor<2x4x4x8xf32>, tensor<8xf32>
  // CHECK: mpc.batch_norm_backward {{.*}} beta(%{{.*}} : tensor<8xf32>) {activation = "relu"} : tensor<2x4x4x8xf32>, tensor<8xf32>
  %fx, %fg, %fb = mpc.batch_norm_backward %o, %img, %g, %zsm, %zsi beta(%b : tensor<8xf32>) {activation = "relu"} : tensor<2x4x4x8xf32>, tensor<8xf32>
  // CHECK: mpc.batch_norm_backward {{.*}} beta(%{{.*}} : tensor<8xf32>) gamma_addend(%{{.*}} : tensor<8xf32>) beta_addend(%{{.*}} : tensor<8xf32>) {activation = "relu"} : tensor<2x4x4x8xf32>, tensor<8xf32>
  %ax2:3 = mpc.batch_norm_backward %o, %img, %g, %zsm, %zsi beta(%b : tensor<8xf32>) gamma_addend(%g : tensor<8xf32>) beta_addend(%b : tensor<8xf32>) {activation = "relu"} : tensor<2x4x4x8xf32>, tensor<8xf32>
  // CHECK: mpc.batch_norm_backward {{.*}} beta_addend(%{{.*}} : tensor<8xf32>) : tensor<2x4x4x8xf32>, tensor<8xf32>
  %ax3:3 = mpc.batch_norm_backward %o, %img, %g, %sm, %si beta_addend(%b : tensor<8xf32>) : tensor<2x4x4x8xf32>, tensor<8xf32>
  // CHECK: mpc.batch_norm_inference {{.*}} : tensor<2x4x4x8xf32>, tensor<8xf32>
  %ni = mpc.batch_norm_inference %img, %g, %b, %g, %b : tensor<2x4x4x8xf32>, tensor<8xf32>
  return
}

// The saved statistics are f32 beside f16 parameters (the function's f32
// result type checks the inferred one).
// CHECK-LABEL: func @batch_norm_low_precision_parameters
func.func @batch_norm_low_precision_parameters(%x: tensor<2x8xf16>, %g: tensor<8xf16>) -> (tensor<8xf32>, tensor<8xf16>) {
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[M:.*]], %[[S:.*]] = mpc.batch_norm %{{.*}} : tensor<2x8xf16>, tensor<8xf16>
  %y, %rm, %rv, %m, %s = mpc.batch_norm %x, %g, %g, %g, %g : tensor<2x8xf16>, tensor<8xf16>
  // CHECK: mpc.batch_norm_backward %{{.*}}, %{{.*}}, %{{.*}}, %[[M]], %[[S]] : tensor<2x8xf16>, tensor<8xf16>
  %dx, %dg, %db = mpc.batch_norm_backward %y, %x, %g, %m, %s : tensor<2x8xf16>, tensor<8xf16>
  return %m, %dg : tensor<8xf32>, tensor<8xf16>
}

// A synchronised batch norm (sync-batch-norm) and its backward.
// CHECK-LABEL: func @sync_batch_norm
func.func @sync_batch_norm(%x: tensor<2x4x4x8xf16>, %g: tensor<8xf32>) -> tensor<2x4x4x8xf16> {
  // CHECK: %[[Y:.*]], %{{.*}}, %{{.*}}, %[[M:.*]], %[[S:.*]] = mpc.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {activation = "relu", sync} : tensor<2x4x4x8xf16>, tensor<8xf32>
  %y, %rm, %rv, %m, %s = mpc.batch_norm %x, %g, %g, %g, %g {sync, activation = "relu"} : tensor<2x4x4x8xf16>, tensor<8xf32>
  // CHECK: mpc.batch_norm_backward %[[Y]], %{{.*}}, %{{.*}}, %[[M]], %[[S]] beta(%{{.*}} : tensor<8xf32>) {activation = "relu", sync} : tensor<2x4x4x8xf16>, tensor<8xf32>
  %dx, %dg, %db = mpc.batch_norm_backward %y, %x, %g, %m, %s beta(%g : tensor<8xf32>) {activation = "relu", sync} : tensor<2x4x4x8xf16>, tensor<8xf32>
  return %dx : tensor<2x4x4x8xf16>
}

// CHECK-LABEL: func @data_movement
func.func @data_movement(%x: tensor<2x4x8xf32>, %ids: tensor<2x4xi32>, %table: tensor<100x8xf32>) {
  // CHECK: mpc.reshape %{{.*}} : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %0 = mpc.reshape %x : tensor<2x4x8xf32> -> tensor<8x8xf32>
  // CHECK: mpc.transpose %{{.*}} {permutation = array<i64: 0, 2, 1>} : tensor<2x4x8xf32>
  %1 = mpc.transpose %x {permutation = array<i64: 0, 2, 1>} : tensor<2x4x8xf32>
  // CHECK: mpc.concat %{{.*}}, %{{.*}} {axis = -1 : i64} : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %2 = mpc.concat %x, %x {axis = -1} : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  // CHECK: mpc.slice %{{.*}} {offsets = array<i64: 0, 1, 0>, sizes = array<i64: 2, 2, 4>, strides = array<i64: 1, 2, 2>} : tensor<2x4x8xf32>
  %3 = mpc.slice %x {offsets = array<i64: 0, 1, 0>, sizes = array<i64: 2, 2, 4>, strides = array<i64: 1, 2, 2>} : tensor<2x4x8xf32>
  // CHECK: mpc.slice_backward %{{.*}} {offsets = array<i64: 0, 1, 0>, strides = array<i64: 1, 2, 2>} : tensor<2x2x4xf32> -> tensor<2x4x8xf32>
  %4 = mpc.slice_backward %3 {offsets = array<i64: 0, 1, 0>, strides = array<i64: 1, 2, 2>} : tensor<2x2x4xf32> -> tensor<2x4x8xf32>
  // CHECK: mpc.broadcast_to %{{.*}} : tensor<4x1xf32> -> tensor<2x4x8xf32>
  %c = mpc.constant dense<1.0> : tensor<4x1xf32>
  %5 = mpc.broadcast_to %c : tensor<4x1xf32> -> tensor<2x4x8xf32>
  // CHECK: %[[E:.*]] = mpc.embedding %{{.*}}, %{{.*}} : tensor<100x8xf32>, tensor<2x4xi32>
  %6 = mpc.embedding %table, %ids : tensor<100x8xf32>, tensor<2x4xi32>
  // CHECK: mpc.embedding_backward %[[E]], %{{.*}} : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<100x8xf32>
  %7 = mpc.embedding_backward %6, %ids : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<100x8xf32>
  // CHECK: mpc.embedding %{{.*}}, %{{.*}} {padding_idx = 0 : i64} : tensor<100x8xf32>, tensor<2x4xi32>
  %pe = mpc.embedding %table, %ids {padding_idx = 0 : i64} : tensor<100x8xf32>, tensor<2x4xi32>
  // CHECK: mpc.embedding_backward %{{.*}}, %{{.*}} {padding_idx = 99 : i64} : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<100x8xf32>
  %pb = mpc.embedding_backward %pe, %ids {padding_idx = 99 : i64} : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<100x8xf32>
  // CHECK: mpc.embedding_backward %{{.*}}, %{{.*}} addend(%{{.*}}) {padding_idx = 99 : i64} : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<100x8xf32>
  %ab = mpc.embedding_backward %pe, %ids addend(%table) {padding_idx = 99 : i64} : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<100x8xf32>
  return
}

// CHECK-LABEL: func @pooling
func.func @pooling(%x: tensor<2x8x8x4xf32>) {
  // CHECK: %[[P:.*]] = mpc.max_pool2d %{{.*}} {kernel = array<i64: 2, 2>} : tensor<2x8x8x4xf32>
  %0 = mpc.max_pool2d %x {kernel = array<i64: 2, 2>} : tensor<2x8x8x4xf32>
  // CHECK: mpc.max_pool2d_backward %[[P]], %{{.*}} {kernel = array<i64: 2, 2>} : tensor<2x4x4x4xf32>, tensor<2x8x8x4xf32>
  %1 = mpc.max_pool2d_backward %0, %x {kernel = array<i64: 2, 2>} : tensor<2x4x4x4xf32>, tensor<2x8x8x4xf32>
  // CHECK: mpc.max_pool2d_backward %[[P]], %{{.*}} addend(%{{.*}} : tensor<2x8x8x4xf32>) {kernel = array<i64: 2, 2>} : tensor<2x4x4x4xf32>, tensor<2x8x8x4xf32>
  %10 = mpc.max_pool2d_backward %0, %x addend(%x : tensor<2x8x8x4xf32>) {kernel = array<i64: 2, 2>} : tensor<2x4x4x4xf32>, tensor<2x8x8x4xf32>
  // CHECK: %[[A:.*]] = mpc.avg_pool2d %{{.*}} {count_include_pad = false, kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : tensor<2x8x8x4xf32>
  %2 = mpc.avg_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, count_include_pad = false} : tensor<2x8x8x4xf32>
  // CHECK: mpc.avg_pool2d_backward %[[A]], %{{.*}} {{.*}} : tensor<2x8x8x4xf32>, tensor<2x8x8x4xf32>
  %3 = mpc.avg_pool2d_backward %2, %x {kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, count_include_pad = false} : tensor<2x8x8x4xf32>, tensor<2x8x8x4xf32>
  // CHECK: %[[U:.*]] = mpc.upsample_nearest2d %{{.*}} {scale = array<i64: 2, 3>} : tensor<2x8x8x4xf32>
  %4 = mpc.upsample_nearest2d %x {scale = array<i64: 2, 3>} : tensor<2x8x8x4xf32>
  // CHECK: mpc.upsample_nearest2d_backward %[[U]] {scale = array<i64: 2, 3>} : tensor<2x16x24x4xf32>
  %5 = mpc.upsample_nearest2d_backward %4 {scale = array<i64: 2, 3>} : tensor<2x16x24x4xf32>
  return
}

// CHECK-LABEL: func @dropout
func.func @dropout(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  // CHECK: %{{.*}}, %[[M:.*]] = mpc.dropout %{{.*}} {p = 1.000000e-01 : f64, seed = 7 : i64} : tensor<4x8xf16>
  %y, %mask = mpc.dropout %x {p = 0.1, seed = 7} : tensor<4x8xf16>
  // CHECK: mpc.dropout_backward %{{.*}}, %[[M]] {p = 1.000000e-01 : f64} : tensor<4x8xf16>, tensor<4x8xi1>
  %dx = mpc.dropout_backward %y, %mask {p = 0.1} : tensor<4x8xf16>, tensor<4x8xi1>
  return %dx : tensor<4x8xf16>
}

// CHECK-LABEL: func @losses
func.func @losses(%logits: tensor<2x4x10xf32>, %labels: tensor<2x4xi64>, %p: tensor<8xf32>, %t: tensor<8xf32>, %g: tensor<f32>) {
  // CHECK: mpc.cross_entropy %{{.*}}, %{{.*}} : tensor<2x4x10xf32>, tensor<2x4xi64>
  %0 = mpc.cross_entropy %logits, %labels : tensor<2x4x10xf32>, tensor<2x4xi64>
  // CHECK: mpc.accuracy %{{.*}}, %{{.*}} : tensor<2x4x10xf32>, tensor<2x4xi64>
  %acc = mpc.accuracy %logits, %labels : tensor<2x4x10xf32>, tensor<2x4xi64>
  // CHECK: mpc.cross_entropy_backward %{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<2x4x10xf32>, tensor<2x4xi64>
  %1 = mpc.cross_entropy_backward %g, %logits, %labels : tensor<f32>, tensor<2x4x10xf32>, tensor<2x4xi64>
  // CHECK: mpc.cross_entropy %{{.*}}, %{{.*}} {ignore_index = -100 : i64, reduction = #mpc<reduction sum>} : tensor<2x4x10xf32>, tensor<2x4xi64>
  %ig = mpc.cross_entropy %logits, %labels {ignore_index = -100, reduction = #mpc<reduction sum>} : tensor<2x4x10xf32>, tensor<2x4xi64>
  // CHECK: mpc.cross_entropy_backward %{{.*}}, %{{.*}}, %{{.*}} {ignore_index = 0 : i64} : tensor<f32>, tensor<2x4x10xf32>, tensor<2x4xi64>
  %igb = mpc.cross_entropy_backward %g, %logits, %labels {ignore_index = 0} : tensor<f32>, tensor<2x4x10xf32>, tensor<2x4xi64>
  // CHECK: mpc.cross_entropy %{{.*}}, %{{.*}} {label_smoothing = 1.000000e-01 : f64} : tensor<2x4x10xf32>, tensor<2x4xi64>
  %sm = mpc.cross_entropy %logits, %labels {label_smoothing = 0.1} : tensor<2x4x10xf32>, tensor<2x4xi64>
  // CHECK: mpc.cross_entropy_backward %{{.*}}, %{{.*}}, %{{.*}} {label_smoothing = 1.000000e+00 : f64} : tensor<f32>, tensor<2x4x10xf32>, tensor<2x4xi64>
  %smb = mpc.cross_entropy_backward %g, %logits, %labels {label_smoothing = 1.0} : tensor<f32>, tensor<2x4x10xf32>, tensor<2x4xi64>
  // CHECK: mpc.accuracy %{{.*}}, %{{.*}} {ignore_index = -1 : i64} : tensor<2x4x10xf32>, tensor<2x4xi64>
  %igacc = mpc.accuracy %logits, %labels {ignore_index = -1} : tensor<2x4x10xf32>, tensor<2x4xi64>
  // CHECK: mpc.mse %{{.*}}, %{{.*}} {reduction = #mpc<reduction sum>} : tensor<8xf32>, tensor<8xf32>
  %2 = mpc.mse %p, %t {reduction = #mpc<reduction sum>} : tensor<8xf32>, tensor<8xf32>
  // CHECK: mpc.mse_backward
  %3 = mpc.mse_backward %g, %p, %t : tensor<f32>, tensor<8xf32>, tensor<8xf32>
  // CHECK: mpc.bce_with_logits
  %4 = mpc.bce_with_logits %p, %t : tensor<8xf32>, tensor<8xf32>
  // CHECK: mpc.bce_with_logits_backward
  %5 = mpc.bce_with_logits_backward %g, %p, %t : tensor<f32>, tensor<8xf32>, tensor<8xf32>
  // CHECK: mpc.binary_cross_entropy
  %6 = mpc.binary_cross_entropy %p, %t : tensor<8xf32>, tensor<8xf32>
  // CHECK: mpc.binary_cross_entropy_backward
  %7 = mpc.binary_cross_entropy_backward %g, %p, %t : tensor<f32>, tensor<8xf32>, tensor<8xf32>
  return
}

// CHECK-LABEL: func @loss_scaling
func.func @loss_scaling(%loss: tensor<f32>, %scale: tensor<f32>, %d0: tensor<4x8xf16>, %d1: tensor<8xbf16>, %growth: tensor<i32>, %hyst: tensor<i32>) {
  // CHECK: mpc.scale_loss %{{.*}}, %{{.*}} : tensor<f32>
  %0 = mpc.scale_loss %loss, %scale : tensor<f32>
  // CHECK: %{{.*}}:2, %[[INF:.*]] = mpc.unscale_and_check %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x8xf16>, tensor<8xbf16>
  %g:2, %inf = mpc.unscale_and_check %scale, %d0, %d1 : tensor<4x8xf16>, tensor<8xbf16>
  // CHECK: %{{.*}}:2 = mpc.all_reduce %{{.*}}, %{{.*}} {bucket = 3 : i64} : tensor<4x8xf16>, tensor<4x8xf16>
  %r:2 = mpc.all_reduce %d0, %d0 {bucket = 3} : tensor<4x8xf16>, tensor<4x8xf16>
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = mpc.clip_grad_norm %{{.*}}, %{{.*}}, %{{.*}} {max_norm = 1.000000e+00 : f64} : tensor<4x8xf16>, tensor<8xbf16>
  %cinv, %cnorm, %cinf = mpc.clip_grad_norm %scale, %d0, %d1 {max_norm = 1.0} : tensor<4x8xf16>, tensor<8xbf16>
  // CHECK: mpc.update_loss_scale %{{.*}}, %{{.*}}, %{{.*}}, %[[INF]] {hysteresis = 2 : i64, max_scale = 0x4170000000000000 : f64, min_scale = 1.000000e+00 : f64}
  %s, %gt, %ht = mpc.update_loss_scale %scale, %growth, %hyst, %inf {hysteresis = 2, min_scale = 1.0, max_scale = 16777216.0}
  // CHECK: %{{.*}} = mpc.grad_stats %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x8xf16>, tensor<8xbf16>
  %stats = mpc.grad_stats %scale, %d0, %d1 : tensor<4x8xf16>, tensor<8xbf16>
  return
}

// CHECK-LABEL: func @optimizers
func.func @optimizers(%p: tensor<4x8xf32>, %g16: tensor<4x8xf16>, %m: tensor<4x8xf32>, %v: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<i32>, %inf: tensor<i1>, %inv: tensor<f32>) {
  // CHECK: mpc.sgd_update %{{.*}}, %{{.*}} lr(%{{.*}}) : tensor<4x8xf32>, tensor<4x8xf16>
  %0 = mpc.sgd_update %p, %g16 lr(%lr) : tensor<4x8xf32>, tensor<4x8xf16>
  // CHECK: mpc.sgd_update %{{.*}}, %{{.*}} lr(%{{.*}}) momentum_buffer(%{{.*}}) found_inf(%{{.*}}) inv_scale(%{{.*}}) copy(f16) {momentum = 9.000000e-01 : f64, nesterov, weight_decay = 1.000000e-04 : f64} : tensor<4x8xf32>, tensor<4x8xf16>
  %1:3 = mpc.sgd_update %p, %g16 lr(%lr) momentum_buffer(%m) found_inf(%inf) inv_scale(%inv) copy(f16) {momentum = 0.9, nesterov, weight_decay = 1.0e-4} : tensor<4x8xf32>, tensor<4x8xf16>
  // CHECK: %[[T:.*]] = mpc.increment %{{.*}} : tensor<i32>
  %t = mpc.increment %step : tensor<i32>
  // CHECK: mpc.increment %[[T]] unless(%{{.*}}) : tensor<i32>
  %t2 = mpc.increment %t unless(%inf) : tensor<i32>
  // CHECK: mpc.lr_schedule %[[T]] {base = 1.000000e-03 : f64, kind = "cosine", min_lr = 1.000000e-05 : f64, total = 100 : i64, warmup = 10 : i64}
  %sched = mpc.lr_schedule %t {kind = "cosine", base = 1.0e-3, warmup = 10, total = 100, min_lr = 1.0e-5}
  // CHECK: mpc.lr_schedule %[[T]] {base = 1.000000e-02 : f64, div_factor = 1.000000e+01 : f64, final_div_factor = 1.000000e+02 : f64, kind = "one_cycle", pct_start = 2.500000e-01 : f64, three_phase = true, total = 1000 : i64}
  %cycle = mpc.lr_schedule %t {kind = "one_cycle", base = 1.0e-2, total = 1000, pct_start = 0.25, div_factor = 10.0, final_div_factor = 100.0, three_phase = true}
  // CHECK: mpc.lr_schedule %[[T]] {base = 1.000000e-01 : f64, gamma = 5.000000e-01 : f64, kind = "step", step_size = 30 : i64}
  %steplr = mpc.lr_schedule %t {kind = "step", base = 0.1, step_size = 30, gamma = 0.5}
  // CHECK: mpc.lr_schedule %[[T]] {base = 1.000000e-01 : f64, gamma = 7.500000e-01 : f64, kind = "exponential"}
  %explr = mpc.lr_schedule %t {kind = "exponential", base = 0.1, gamma = 0.75}
  // CHECK: mpc.adam_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lr(%{{.*}}) step(%[[T]]) : tensor<4x8xf32>, tensor<4x8xf32>
  %2:3 = mpc.adam_update %p, %p, %m, %v lr(%lr) step(%t) : tensor<4x8xf32>, tensor<4x8xf32>
  // CHECK: mpc.adam_update {{.*}} {decoupled, lamb, weight_decay = 1.000000e-02 : f64} : tensor<4x8xf32>, tensor<4x8xf32>
  %lamb:3 = mpc.adam_update %p, %p, %m, %v lr(%lr) step(%t) {decoupled, lamb, weight_decay = 0.01} : tensor<4x8xf32>, tensor<4x8xf32>
  // CHECK: mpc.adam_update {{.*}} found_inf(%{{.*}}) inv_scale(%{{.*}}) copy(bf16) {bias_correction = false, decoupled, weight_decay = 1.000000e-02 : f64} : tensor<4x8xf32>, tensor<4x8xf16>
  %3:4 = mpc.adam_update %p, %g16, %m, %v lr(%lr) step(%step) found_inf(%inf) inv_scale(%inv) copy(bf16) {decoupled, weight_decay = 0.01, bias_correction = false} : tensor<4x8xf32>, tensor<4x8xf16>
  return
}

// CHECK-LABEL: ml_program.global private mutable @w(#mpc.init<kaiming_uniform, seed = 3, gain = 1.000000e+00 : f64>) : tensor<16x8xf32>
ml_program.global private mutable @w(#mpc.init<kaiming_uniform, seed = 3, gain = 1.0>) : tensor<16x8xf32>
// CHECK: @z(#mpc.init<zeros>)
ml_program.global private mutable @z(#mpc.init<zeros>) : tensor<8xf32>
// CHECK: @c(#mpc.init<constant, value = 2.500000e-01 : f64>)
ml_program.global private mutable @c(#mpc.init<constant, value = 0.25>) : tensor<8xf32>
// CHECK: @u(#mpc.init<uniform, seed = 9, low = -1.000000e+00 : f64, high = 1.000000e+00 : f64>)
ml_program.global private mutable @u(#mpc.init<uniform, seed = 9, low = -1.0, high = 1.0>) : tensor<8xf32>
// CHECK: @d(dense<1.000000e+00> : tensor<8xf32>)
ml_program.global private mutable @d(dense<1.0> : tensor<8xf32>) : tensor<8xf32>

// CHECK-LABEL: func @numerics
func.func @numerics(%x: tensor<4x8xf16>) {
  // CHECK: mpc.numerics_begin {count = 2 : i64}
  mpc.numerics_begin {count = 2 : i64}
  // CHECK: mpc.check_numerics %{{.*}} {indices = array<i64: 1>} : tensor<4x8xf16>
  mpc.check_numerics %x {indices = array<i64: 1>} : tensor<4x8xf16>
  // CHECK: mpc.check_numerics %{{.*}}, %{{.*}} {indices = array<i64: 0, 2>} : tensor<4x8xf16>, tensor<4x8xf16>
  mpc.check_numerics %x, %x {indices = array<i64: 0, 2>} : tensor<4x8xf16>, tensor<4x8xf16>
  // CHECK: mpc.numerics_end {count = 2 : i64}
  mpc.numerics_end {count = 2 : i64}
  return
}

// CHECK-LABEL: func @cast_from_integers
func.func @cast_from_integers(%m: tensor<8x128xi32>) -> (tensor<8x128xf32>, tensor<8x128xbf16>) {
  // CHECK: mpc.cast %{{.*}} : tensor<8x128xi32> -> tensor<8x128xf32>
  %0 = mpc.cast %m : tensor<8x128xi32> -> tensor<8x128xf32>
  // CHECK: mpc.cast %{{.*}} : tensor<8x128xi32> -> tensor<8x128xbf16>
  %1 = mpc.cast %m : tensor<8x128xi32> -> tensor<8x128xbf16>
  return %0, %1 : tensor<8x128xf32>, tensor<8x128xbf16>
}

// CHECK-LABEL: func @attention_bias
func.func @attention_bias(%q: tensor<8x4x16x64xf16>, %k: tensor<8x4x16x64xf16>, %v: tensor<8x4x16x64xf16>, %m: tensor<8x1x1x16xi1>, %b: tensor<8x1x1x16xf32>, %g: tensor<8x4x16x64xf16>) -> (tensor<8x4x16x64xf16>, tensor<8x4x16x64xf16>) {
  // CHECK: %[[O:.*]], %[[L:.*]] = mpc.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<8x1x1x16xi1>) bias(%{{.*}} : tensor<8x1x1x16xf32>) {mask_value = -1.000000e+04 : f64, scale = 1.250000e-01 : f64}
  %o, %l = mpc.attention %q, %k, %v mask(%m : tensor<8x1x1x16xi1>) bias(%b : tensor<8x1x1x16xf32>) {scale = 0.125 : f64, mask_value = -1.0e4 : f64} : tensor<8x4x16x64xf16>, tensor<8x4x16x64xf16>, tensor<8x4x16x64xf16>
  // CHECK: mpc.attention_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[O]], %[[L]] bias(%{{.*}} : tensor<8x1x1x16xf32>) {scale = 1.250000e-01 : f64}
  %dq, %dk, %dv = mpc.attention_backward %g, %q, %k, %v, %o, %l bias(%b : tensor<8x1x1x16xf32>) {scale = 0.125 : f64} : tensor<8x4x16x64xf16>, tensor<8x4x16x64xf16>, tensor<8x4x16x64xf16>, tensor<8x4x16x64xf16>, tensor<8x4x16x64xf16>, tensor<8x4x16xf32>
  return %o, %dq : tensor<8x4x16x64xf16>, tensor<8x4x16x64xf16>
}

// The input gradient's column sums (input_sums): a fifth result of the
// accumulation type, f32 for f16/bf16 and f32, f64 for f64.
// CHECK-LABEL: func @add_layer_norm_backward_input_sums
// CHECK: %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[H:[^ ]*]] = mpc.add_layer_norm_backward %{{.*}} {dropout_p = 1.000000e-01 : f64, input_sums, seed = 7 : i64} : tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<8xf32>
// CHECK: %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[D:[^ ]*]] = mpc.add_layer_norm_backward %{{.*}} sum_grad(%{{.*}} : tensor<4x8xf64>) {input_sums} : tensor<4x8xf64>, tensor<4xf64>, tensor<8xf64>
// CHECK: return %[[H]], %[[D]] : tensor<8xf32>, tensor<8xf64>
func.func @add_layer_norm_backward_input_sums(%x: tensor<2x4x8xf16>, %s: tensor<2x4xf32>, %g: tensor<8xf32>, %x64: tensor<4x8xf64>, %s64: tensor<4xf64>, %g64: tensor<8xf64>) -> (tensor<8xf32>, tensor<8xf64>) {
  %h:5 = mpc.add_layer_norm_backward %x, %x, %s, %s, %g {dropout_p = 0.1, seed = 7, input_sums} : tensor<2x4x8xf16>, tensor<2x4xf32>, tensor<8xf32>
  %d:5 = mpc.add_layer_norm_backward %x64, %x64, %s64, %s64, %g64 sum_grad(%x64 : tensor<4x8xf64>) {input_sums} : tensor<4x8xf64>, tensor<4xf64>, tensor<8xf64>
  return %h#4, %d#4 : tensor<8xf32>, tensor<8xf64>
}
