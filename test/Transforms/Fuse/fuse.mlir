// RUN: mpc-opt %s -split-input-file --mpc-fuse | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A linear layer with ReLU in training: the product, sum and ReLU become one
// op; the ReLU gradient reads the fused op's output instead of the sum.
// CHECK-LABEL: func @relu_training
// CHECK-NEXT: %[[Y:.*]] = mpc.fused_matmul %arg0, %arg1, %arg2 {activation = "relu"} : tensor<64x784xf16>, tensor<784x512xf16>, tensor<512xf16> -> tensor<64x512xf16>
// CHECK-NEXT: %[[G:.*]] = mpc.relu_grad %arg3, %[[Y]] : tensor<64x512xf16>
// CHECK-NEXT: return %[[Y]], %[[G]]
// REMARK: remark: fused: mpc.matmul + mpc.add + mpc.relu -> mpc.fused_matmul (activation relu)
func.func @relu_training(%x: tensor<64x784xf16>, %w: tensor<784x512xf16>, %b: tensor<512xf16>, %dy: tensor<64x512xf16>) -> (tensor<64x512xf16>, tensor<64x512xf16>) {
  %0 = mpc.matmul %x, %w : tensor<64x784xf16>, tensor<784x512xf16>
  %1 = mpc.add %0, %b : tensor<64x512xf16>, tensor<512xf16>
  %2 = mpc.relu %1 : tensor<64x512xf16>
  %3 = mpc.relu_grad %dy, %1 : tensor<64x512xf16>
  return %2, %3 : tensor<64x512xf16>, tensor<64x512xf16>
}

// -----

// The bias on the left, a rank-3 activation against one weight, a
// transposed weight, no activation: the bias alone joins the GEMM.
// CHECK-LABEL: func @bias_only
// CHECK-NEXT: %[[Y:.*]] = mpc.fused_matmul %arg0, %arg1, %arg2 {transpose_b} : tensor<8x128x256xbf16>, tensor<1024x256xbf16>, tensor<1024xbf16> -> tensor<8x128x1024xbf16>
// CHECK-NEXT: return %[[Y]]
// REMARK: remark: fused: mpc.matmul + mpc.add -> mpc.fused_matmul (activation none)
func.func @bias_only(%x: tensor<8x128x256xbf16>, %w: tensor<1024x256xbf16>, %b: tensor<1024xbf16>) -> tensor<8x128x1024xbf16> {
  %0 = mpc.matmul %x, %w {transpose_b} : tensor<8x128x256xbf16>, tensor<1024x256xbf16>
  %1 = mpc.add %b, %0 : tensor<1024xbf16>, tensor<8x128x1024xbf16>
  return %1 : tensor<8x128x1024xbf16>
}

// -----

// O1: the f16 product widened to f32 for the f32 bias; the fused op takes
// the f16 operands and returns f32.
// CHECK-LABEL: func @o1_widened
// CHECK-NEXT: %[[Y:.*]] = mpc.fused_matmul %arg0, %arg1, %arg2 {activation = "relu"} : tensor<64x32xf16>, tensor<32x16xf16>, tensor<16xf32> -> tensor<64x16xf32>
// CHECK-NEXT: return %[[Y]]
// REMARK: remark: fused: mpc.matmul + mpc.cast + mpc.add + mpc.relu -> mpc.fused_matmul (activation relu)
func.func @o1_widened(%x: tensor<64x32xf16>, %w: tensor<32x16xf16>, %b: tensor<16xf32>) -> tensor<64x16xf32> {
  %0 = mpc.matmul %x, %w : tensor<64x32xf16>, tensor<32x16xf16>
  %1 = mpc.cast %0 : tensor<64x16xf16> -> tensor<64x16xf32>
  %2 = mpc.add %1, %b : tensor<64x16xf32>, tensor<16xf32>
  %3 = mpc.relu %2 : tensor<64x16xf32>
  return %3 : tensor<64x16xf32>
}

// -----

// tanh GELU that is the sum's only reader joins the epilogue.
// CHECK-LABEL: func @gelu_tanh
// CHECK-NEXT: %[[Y:.*]] = mpc.fused_matmul %arg0, %arg1, %arg2 {activation = "gelu_tanh"} : tensor<64x32xf32>, tensor<32x16xf32>, tensor<16xf32> -> tensor<64x16xf32>
// CHECK-NEXT: return %[[Y]]
// REMARK: remark: fused: mpc.matmul + mpc.add + mpc.gelu -> mpc.fused_matmul (activation gelu_tanh)
func.func @gelu_tanh(%x: tensor<64x32xf32>, %w: tensor<32x16xf32>, %b: tensor<16xf32>) -> tensor<64x16xf32> {
  %0 = mpc.matmul %x, %w : tensor<64x32xf32>, tensor<32x16xf32>
  %1 = mpc.add %0, %b : tensor<64x16xf32>, tensor<16xf32>
  %2 = mpc.gelu %1 {approximate} : tensor<64x16xf32>
  return %2 : tensor<64x16xf32>
}

// -----

// Exact GELU (not cuBLASLt's): the bias is fused, the GELU stays an op
// reading the fused sum.
// CHECK-LABEL: func @gelu_stays
// CHECK-NEXT: %[[H:.*]] = mpc.fused_matmul %arg0, %arg1, %arg2 : {{.*}} -> tensor<64x16xf16>
// CHECK-NEXT: %[[Y:.*]] = mpc.gelu %[[H]] : tensor<64x16xf16>
// CHECK-NEXT: %[[G:.*]] = mpc.gelu_grad %arg3, %[[H]] : tensor<64x16xf16>
// CHECK-NEXT: return %[[Y]], %[[G]]
// REMARK: remark: fused: mpc.matmul + mpc.add -> mpc.fused_matmul (activation none)
func.func @gelu_stays(%x: tensor<64x32xf16>, %w: tensor<32x16xf16>, %b: tensor<16xf16>, %dy: tensor<64x16xf16>) -> (tensor<64x16xf16>, tensor<64x16xf16>) {
  %0 = mpc.matmul %x, %w : tensor<64x32xf16>, tensor<32x16xf16>
  %1 = mpc.add %0, %b : tensor<64x16xf16>, tensor<16xf16>
  %2 = mpc.gelu %1 : tensor<64x16xf16>
  %3 = mpc.gelu_grad %dy, %1 : tensor<64x16xf16>
  return %2, %3 : tensor<64x16xf16>, tensor<64x16xf16>
}

// -----

// Tanh GELU in training (GELU_AUX_BIAS): its gradient reads the sum, which
// the fused op writes as its pre-activation result beside the GELU.
// CHECK-LABEL: func @gelu_tanh_training
// CHECK-NEXT: %[[Y:.*]], %[[PRE:.*]] = mpc.fused_matmul %arg0, %arg1, %arg2 {activation = "gelu_tanh"} : tensor<64x32xf16>, tensor<32x16xf16>, tensor<16xf16> -> tensor<64x16xf16>, tensor<64x16xf16>
// CHECK-NEXT: %[[G:.*]] = mpc.gelu_grad %arg3, %[[PRE]] {approximate} : tensor<64x16xf16>
// CHECK-NEXT: return %[[Y]], %[[G]]
// REMARK: remark: fused: mpc.matmul + mpc.add + mpc.gelu -> mpc.fused_matmul (activation gelu_tanh, pre-activation kept)
func.func @gelu_tanh_training(%x: tensor<64x32xf16>, %w: tensor<32x16xf16>, %b: tensor<16xf16>, %dy: tensor<64x16xf16>) -> (tensor<64x16xf16>, tensor<64x16xf16>) {
  %0 = mpc.matmul %x, %w : tensor<64x32xf16>, tensor<32x16xf16>
  %1 = mpc.add %0, %b : tensor<64x16xf16>, tensor<16xf16>
  %2 = mpc.gelu %1 {approximate} : tensor<64x16xf16>
  %3 = mpc.gelu_grad %dy, %1 {approximate} : tensor<64x16xf16>
  return %2, %3 : tensor<64x16xf16>, tensor<64x16xf16>
}

// -----

// A sum read by a gradient of another activation (exact GELU's beside a
// tanh GELU): the GELU stays.
// CHECK-LABEL: func @gelu_tanh_mixed_gradient
// CHECK-NEXT: %[[H:.*]] = mpc.fused_matmul %arg0, %arg1, %arg2 : {{.*}} -> tensor<64x16xf16>
// CHECK-NEXT: mpc.gelu %[[H]] {approximate}
// CHECK-NEXT: mpc.gelu_grad %arg3, %[[H]] : tensor<64x16xf16>
func.func @gelu_tanh_mixed_gradient(%x: tensor<64x32xf16>, %w: tensor<32x16xf16>, %b: tensor<16xf16>, %dy: tensor<64x16xf16>) -> (tensor<64x16xf16>, tensor<64x16xf16>) {
  %0 = mpc.matmul %x, %w : tensor<64x32xf16>, tensor<32x16xf16>
  %1 = mpc.add %0, %b : tensor<64x16xf16>, tensor<16xf16>
  %2 = mpc.gelu %1 {approximate} : tensor<64x16xf16>
  %3 = mpc.gelu_grad %dy, %1 : tensor<64x16xf16>
  return %2, %3 : tensor<64x16xf16>, tensor<64x16xf16>
}

// -----

// The data gradient of the next layer through the activation's gradient
// (DRELU / DGELU): one mpc.matmul_activation_grad; at O1 through the
// product's widening cast (f16 operands, f32 result).
// CHECK-LABEL: func @activation_grads
// CHECK-NEXT: %[[R:.*]] = mpc.matmul_activation_grad %arg0, %arg1, %arg2 {activation = "relu", transpose_b} : tensor<64x16xf16>, tensor<32x16xf16>, tensor<64x32xf16> -> tensor<64x32xf16>
// CHECK-NEXT: %[[G:.*]] = mpc.matmul_activation_grad %arg0, %arg1, %arg3 {activation = "gelu_tanh", transpose_b} : tensor<64x16xf16>, tensor<32x16xf16>, tensor<64x32xf32> -> tensor<64x32xf32>
// CHECK-NEXT: return %[[R]], %[[G]]
// REMARK: remark: fused: mpc.matmul + mpc.relu_grad -> mpc.matmul_activation_grad (activation relu)
// REMARK: remark: fused: mpc.matmul + mpc.cast + mpc.gelu_grad -> mpc.matmul_activation_grad (activation gelu_tanh)
func.func @activation_grads(%dy: tensor<64x16xf16>, %w: tensor<32x16xf16>, %h: tensor<64x32xf16>, %pre: tensor<64x32xf32>) -> (tensor<64x32xf16>, tensor<64x32xf32>) {
  %0 = mpc.matmul %dy, %w {transpose_b} : tensor<64x16xf16>, tensor<32x16xf16>
  %1 = mpc.relu_grad %0, %h : tensor<64x32xf16>
  %2 = mpc.matmul %dy, %w {transpose_b} : tensor<64x16xf16>, tensor<32x16xf16>
  %3 = mpc.cast %2 : tensor<64x32xf16> -> tensor<64x32xf32>
  %4 = mpc.gelu_grad %3, %pre {approximate} : tensor<64x32xf32>
  return %1, %4 : tensor<64x32xf16>, tensor<64x32xf32>
}

// -----

// What must not fuse into an activation gradient: a product read
// elsewhere, a product as the saved value, exact GELU's gradient, a
// batched weight, f64.
// CHECK-LABEL: func @no_activation_grad
// CHECK-NOT: mpc.matmul_activation_grad
// REMARK-NOT: remark
func.func @no_activation_grad(%dy: tensor<64x16xf16>, %w: tensor<32x16xf16>, %h: tensor<64x32xf16>, %g: tensor<64x32xf16>, %dyb: tensor<2x64x16xf16>, %wb: tensor<2x32x16xf16>, %hb: tensor<2x64x32xf16>, %dyd: tensor<64x16xf64>, %wd: tensor<32x16xf64>, %hd: tensor<64x32xf64>) -> (tensor<64x32xf16>, tensor<64x32xf16>, tensor<64x32xf16>, tensor<64x32xf16>, tensor<2x64x32xf16>, tensor<64x32xf64>) {
  %0 = mpc.matmul %dy, %w {transpose_b} : tensor<64x16xf16>, tensor<32x16xf16>
  %1 = mpc.relu_grad %0, %h : tensor<64x32xf16>
  %2 = mpc.matmul %dy, %w {transpose_b} : tensor<64x16xf16>, tensor<32x16xf16>
  %3 = mpc.relu_grad %g, %2 : tensor<64x32xf16>
  %4 = mpc.matmul %dy, %w {transpose_b} : tensor<64x16xf16>, tensor<32x16xf16>
  %5 = mpc.gelu_grad %4, %h : tensor<64x32xf16>
  %6 = mpc.matmul %dyb, %wb {transpose_b} : tensor<2x64x16xf16>, tensor<2x32x16xf16>
  %7 = mpc.relu_grad %6, %hb : tensor<2x64x32xf16>
  %8 = mpc.matmul %dyd, %wd {transpose_b} : tensor<64x16xf64>, tensor<32x16xf64>
  %9 = mpc.relu_grad %8, %hd : tensor<64x32xf64>
  return %0, %1, %3, %5, %7, %9 : tensor<64x32xf16>, tensor<64x32xf16>, tensor<64x32xf16>, tensor<64x32xf16>, tensor<2x64x32xf16>, tensor<64x32xf64>
}

// A sum with a reader besides the ReLU (and its gradients): the ReLU stays.
// CHECK-LABEL: func @relu_stays
// CHECK-NEXT: %[[H:.*]] = mpc.fused_matmul %arg0, %arg1, %arg2 : {{.*}} -> tensor<64x16xf16>
// CHECK-NEXT: %[[Y:.*]] = mpc.relu %[[H]]
// CHECK-NEXT: return %[[Y]], %[[H]]
// REMARK: remark: fused: mpc.matmul + mpc.add -> mpc.fused_matmul (activation none)
func.func @relu_stays(%x: tensor<64x32xf16>, %w: tensor<32x16xf16>, %b: tensor<16xf16>) -> (tensor<64x16xf16>, tensor<64x16xf16>) {
  %0 = mpc.matmul %x, %w : tensor<64x32xf16>, tensor<32x16xf16>
  %1 = mpc.add %0, %b : tensor<64x16xf16>, tensor<16xf16>
  %2 = mpc.relu %1 : tensor<64x16xf16>
  return %2, %1 : tensor<64x16xf16>, tensor<64x16xf16>
}

// -----

// What must not fuse: a product read elsewhere, a widening cast read
// elsewhere, a bias that is not a vector, a transposed activation, a
// batched weight, f64.
// CHECK-LABEL: func @no_fusion
// CHECK-NOT: mpc.fused_matmul
// CHECK-COUNT-6: mpc.matmul
// CHECK-NOT: mpc.fused_matmul
// REMARK-NOT: remark: fused
func.func @no_fusion(%x: tensor<64x32xf16>, %w: tensor<32x16xf16>, %b: tensor<16xf16>, %b32: tensor<16xf32>, %bm: tensor<1x16xf16>, %xt: tensor<32x64xf16>, %wb: tensor<2x32x16xf16>, %xb: tensor<2x64x32xf16>, %xd: tensor<64x32xf64>, %wd: tensor<32x16xf64>, %bd: tensor<16xf64>) -> (tensor<64x16xf16>, tensor<64x16xf16>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x16xf16>, tensor<64x16xf16>, tensor<2x64x16xf16>, tensor<64x16xf64>) {
  %0 = mpc.matmul %x, %w : tensor<64x32xf16>, tensor<32x16xf16>
  %1 = mpc.add %0, %b : tensor<64x16xf16>, tensor<16xf16>
  %2 = mpc.matmul %x, %w : tensor<64x32xf16>, tensor<32x16xf16>
  %3 = mpc.cast %2 : tensor<64x16xf16> -> tensor<64x16xf32>
  %4 = mpc.add %3, %b32 : tensor<64x16xf32>, tensor<16xf32>
  %5 = mpc.matmul %x, %w : tensor<64x32xf16>, tensor<32x16xf16>
  %6 = mpc.add %5, %bm : tensor<64x16xf16>, tensor<1x16xf16>
  %7 = mpc.matmul %xt, %w {transpose_a} : tensor<32x64xf16>, tensor<32x16xf16>
  %8 = mpc.add %7, %b : tensor<64x16xf16>, tensor<16xf16>
  %9 = mpc.matmul %xb, %wb : tensor<2x64x32xf16>, tensor<2x32x16xf16>
  %10 = mpc.add %9, %b : tensor<2x64x16xf16>, tensor<16xf16>
  %11 = mpc.matmul %xd, %wd : tensor<64x32xf64>, tensor<32x16xf64>
  %12 = mpc.add %11, %bd : tensor<64x16xf64>, tensor<16xf64>
  return %0, %1, %3, %4, %6, %8, %10, %12 : tensor<64x16xf16>, tensor<64x16xf16>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x16xf16>, tensor<64x16xf16>, tensor<2x64x16xf16>, tensor<64x16xf64>
}

// -----

// A product added to a tensor of its type (a residual gradient plus a
// linear layer's data gradient): one mpc.matmul_add, either side, at O1
// through the product's widening cast; a chain of such adds accumulates
// into one tensor.
// CHECK-LABEL: func @matmul_add
// CHECK-NEXT: %[[A:.*]] = mpc.matmul_add %arg0, %arg1, %arg2 {transpose_b} : tensor<8x16x32xf16>, tensor<64x32xf16>, tensor<8x16x64xf16> -> tensor<8x16x64xf16>
// CHECK-NEXT: %[[B:.*]] = mpc.matmul_add %arg0, %arg1, %[[A]] {transpose_b} : tensor<8x16x32xf16>, tensor<64x32xf16>, tensor<8x16x64xf16> -> tensor<8x16x64xf16>
// CHECK-NEXT: %[[C:.*]] = mpc.matmul_add %arg0, %arg1, %arg3 {transpose_b} : tensor<8x16x32xf16>, tensor<64x32xf16>, tensor<8x16x64xf32> -> tensor<8x16x64xf32>
// CHECK-NEXT: return %[[B]], %[[C]]
// REMARK-COUNT-2: remark: fused: mpc.matmul + mpc.add -> mpc.matmul_add
// REMARK: remark: fused: mpc.matmul + mpc.cast + mpc.add -> mpc.matmul_add
func.func @matmul_add(%dy: tensor<8x16x32xf16>, %w: tensor<64x32xf16>, %g: tensor<8x16x64xf16>, %g32: tensor<8x16x64xf32>) -> (tensor<8x16x64xf16>, tensor<8x16x64xf32>) {
  %0 = mpc.matmul %dy, %w {transpose_b} : tensor<8x16x32xf16>, tensor<64x32xf16>
  %1 = mpc.add %g, %0 : tensor<8x16x64xf16>, tensor<8x16x64xf16>
  %2 = mpc.matmul %dy, %w {transpose_b} : tensor<8x16x32xf16>, tensor<64x32xf16>
  %3 = mpc.add %2, %1 : tensor<8x16x64xf16>, tensor<8x16x64xf16>
  %4 = mpc.matmul %dy, %w {transpose_b} : tensor<8x16x32xf16>, tensor<64x32xf16>
  %5 = mpc.cast %4 : tensor<8x16x64xf16> -> tensor<8x16x64xf32>
  %6 = mpc.add %g32, %5 : tensor<8x16x64xf32>, tensor<8x16x64xf32>
  return %3, %6 : tensor<8x16x64xf16>, tensor<8x16x64xf32>
}

// -----

// What must not fuse into a GEMM's addend: a broadcasting add, a product
// read elsewhere, a widening cast read elsewhere, a batched weight.
// CHECK-LABEL: func @no_matmul_add
// CHECK-NOT: mpc.matmul_add
// REMARK-NOT: remark
func.func @no_matmul_add(%dy: tensor<8x16x32xf16>, %w: tensor<64x32xf16>, %g: tensor<16x64xf16>, %g2: tensor<8x16x64xf16>, %g32: tensor<8x16x64xf32>, %wb: tensor<8x64x32xf16>) -> (tensor<8x16x64xf16>, tensor<8x16x64xf16>, tensor<8x16x64xf16>, tensor<8x16x64xf32>, tensor<8x16x64xf16>) {
  %0 = mpc.matmul %dy, %w {transpose_b} : tensor<8x16x32xf16>, tensor<64x32xf16>
  %1 = mpc.add %0, %g : tensor<8x16x64xf16>, tensor<16x64xf16>
  %2 = mpc.matmul %dy, %w {transpose_b} : tensor<8x16x32xf16>, tensor<64x32xf16>
  %3 = mpc.add %2, %g2 : tensor<8x16x64xf16>, tensor<8x16x64xf16>
  %4 = mpc.matmul %dy, %w {transpose_b} : tensor<8x16x32xf16>, tensor<64x32xf16>
  %5 = mpc.cast %4 : tensor<8x16x64xf16> -> tensor<8x16x64xf32>
  %6 = mpc.add %5, %g32 : tensor<8x16x64xf32>, tensor<8x16x64xf32>
  %7 = mpc.matmul %dy, %wb {transpose_b} : tensor<8x16x32xf16>, tensor<8x64x32xf16>
  %8 = mpc.add %7, %g2 : tensor<8x16x64xf16>, tensor<8x16x64xf16>
  return %1, %2, %3, %5, %8 : tensor<8x16x64xf16>, tensor<8x16x64xf16>, tensor<8x16x64xf16>, tensor<8x16x64xf32>, tensor<8x16x64xf16>
}
