// RUN: mpc-opt %s -split-input-file --mpc-fuse=recompute-moves=false | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="remarks=true recompute-moves=false" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse="norm-bias-grads=false recompute-moves=false" | FileCheck %s --check-prefix=OFF

// The O2 backward of a linear layer whose output a residual layer norm
// takes (a transformer's attention output or second feed-forward layer):
// its bias gradient sums the norm's f16 input gradient widened to f32.
// The norm backward takes those sums (input_sums, its fifth result) in
// its own column reduction; the weight gradient stays a plain product,
// the widening cast goes.
// CHECK-LABEL: func @o2_norm_input
// CHECK-NEXT: %[[DX:[^,]*]], %[[DR:[^,]*]], %[[DG:[^,]*]], %{{[^,]*}}, %[[SUMS:[^ ]*]] = mpc.add_layer_norm_backward %arg0, %arg1, %arg2, %arg2, %arg3 {dropout_p = 1.000000e-01 : f64, input_sums, seed = 5 : i64} : tensor<2x8x16xf16>, tensor<2x8xf32>, tensor<16xf32>
// CHECK-NEXT: %[[G:.*]] = mpc.reshape %[[DX]] : tensor<2x8x16xf16> -> tensor<16x16xf16>
// CHECK-NEXT: %[[DW:.*]] = mpc.matmul %arg4, %[[G]] {transpose_a} : tensor<16x32xf16>, tensor<16x16xf16>
// CHECK-NEXT: return %[[DW]], %[[SUMS]], %[[DR]], %[[DG]] : tensor<32x16xf16>, tensor<16xf32>, tensor<2x8x16xf16>, tensor<16xf32>
// REMARK: remark: fused: mpc.add_layer_norm_backward + mpc.cast + mpc.reduce_sum -> mpc.add_layer_norm_backward
// OFF-LABEL: func @o2_norm_input
// OFF: mpc.add_layer_norm_backward
// OFF-NOT: input_sums
// OFF: mpc.matmul_bias_grad %arg4, %{{.*}} {transpose_a}
func.func @o2_norm_input(%dy: tensor<2x8x16xf16>, %s: tensor<2x8x16xf16>, %m: tensor<2x8xf32>, %g: tensor<16xf32>, %x: tensor<16x32xf16>) -> (tensor<32x16xf16>, tensor<16xf32>, tensor<2x8x16xf16>, tensor<16xf32>) {
  %b:4 = mpc.add_layer_norm_backward %dy, %s, %m, %m, %g {dropout_p = 0.1, seed = 5} : tensor<2x8x16xf16>, tensor<2x8xf32>, tensor<16xf32>
  %0 = mpc.cast %b#0 : tensor<2x8x16xf16> -> tensor<2x8x16xf32>
  %1 = mpc.reduce_sum %0 {dims = array<i64: 0, 1>} : tensor<2x8x16xf32>
  %2 = mpc.reshape %b#0 : tensor<2x8x16xf16> -> tensor<16x16xf16>
  %3 = mpc.matmul %x, %2 {transpose_a} : tensor<16x32xf16>, tensor<16x16xf16>
  return %3, %1, %b#1, %b#2 : tensor<32x16xf16>, tensor<16xf32>, tensor<2x8x16xf16>, tensor<16xf32>
}

// -----

// The sums with no product beside them, of a bf16 gradient, the widened
// gradient read elsewhere too (it stays), the norm's other operands
// (sum_grad, a gamma addend) and its mpc.precision kept.
// CHECK-LABEL: func @bf16_cast_kept
// CHECK-NEXT: %[[DX:[^,]*]], %{{[^,]*}}, %[[DG:[^,]*]], %{{[^,]*}}, %[[SUMS:[^ ]*]] = mpc.add_layer_norm_backward %arg0, %arg1, %arg2, %arg2, %arg3 sum_grad(%arg1 : tensor<4x8xbf16>) gamma_addend(%arg3 : tensor<8xf32>) {input_sums, mpc.precision = "promote"} : tensor<4x8xbf16>, tensor<4xf32>, tensor<8xf32>
// CHECK-NEXT: %[[W:.*]] = mpc.cast %[[DX]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[SUMS]], %[[W]], %[[DG]] : tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>
// REMARK: remark: fused: mpc.add_layer_norm_backward + mpc.reduce_sum -> mpc.add_layer_norm_backward
func.func @bf16_cast_kept(%dy: tensor<4x8xbf16>, %s: tensor<4x8xbf16>, %m: tensor<4xf32>, %g: tensor<8xf32>) -> (tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>) {
  %b:4 = mpc.add_layer_norm_backward %dy, %s, %m, %m, %g sum_grad(%s : tensor<4x8xbf16>) gamma_addend(%g : tensor<8xf32>) {mpc.precision = "promote"} : tensor<4x8xbf16>, tensor<4xf32>, tensor<8xf32>
  %0 = mpc.cast %b#0 : tensor<4x8xbf16> -> tensor<4x8xf32>
  %1 = mpc.reduce_sum %0 {dims = array<i64: 0>} : tensor<4x8xf32>
  return %1, %0, %b#2 : tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>
}

// -----

// What stays a reduction (or the GEMM's): an f32 gradient (cuBLASLt's
// epilogue sums it in the product), the residual's gradient (not the
// input's), sums over the rows alone, and a second reduction of a
// gradient already summed.
// CHECK-LABEL: func @not_folded
// CHECK: mpc.add_layer_norm_backward %arg0, {{.*}} : tensor<16x16xf32>
// CHECK-NOT: input_sums
// CHECK: mpc.matmul_bias_grad
// CHECK: mpc.add_layer_norm_backward %arg4, {{.*}} : tensor<2x8x16xf16>
// CHECK-NOT: input_sums
// CHECK: mpc.reduce_sum %{{.*}} {dims = array<i64: 0, 1>}
// CHECK: mpc.reduce_sum %{{.*}} {dims = array<i64: 0>}
// CHECK-LABEL: func @summed_twice
// CHECK: %[[DX:[^,]*]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[SUMS:[^ ]*]] = mpc.add_layer_norm_backward {{.*}}input_sums
// CHECK-NEXT: %[[W:.*]] = mpc.cast %[[DX]]
// CHECK-NEXT: %[[AGAIN:.*]] = mpc.reduce_sum %[[W]]
// CHECK-NEXT: return %[[SUMS]], %[[AGAIN]]
func.func @not_folded(%dy: tensor<16x16xf32>, %m: tensor<16xf32>, %g: tensor<16xf32>, %x: tensor<16x32xf32>, %dh: tensor<2x8x16xf16>, %mh: tensor<2x8xf32>) -> (tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8x16xf32>) {
  %b:4 = mpc.add_layer_norm_backward %dy, %dy, %m, %m, %g : tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>
  %0 = mpc.reduce_sum %b#0 {dims = array<i64: 0>} : tensor<16x16xf32>
  %1 = mpc.matmul %x, %b#0 {transpose_a} : tensor<16x32xf32>, tensor<16x16xf32>
  %h:4 = mpc.add_layer_norm_backward %dh, %dh, %mh, %mh, %g : tensor<2x8x16xf16>, tensor<2x8xf32>, tensor<16xf32>
  %2 = mpc.cast %h#1 : tensor<2x8x16xf16> -> tensor<2x8x16xf32>
  %3 = mpc.reduce_sum %2 {dims = array<i64: 0, 1>} : tensor<2x8x16xf32>
  %4 = mpc.cast %h#0 : tensor<2x8x16xf16> -> tensor<2x8x16xf32>
  %5 = mpc.reduce_sum %4 {dims = array<i64: 0>} : tensor<2x8x16xf32>
  return %1, %0, %3, %5 : tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8x16xf32>
}
func.func @summed_twice(%dy: tensor<4x8xf16>, %m: tensor<4xf32>, %g: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %b:4 = mpc.add_layer_norm_backward %dy, %dy, %m, %m, %g : tensor<4x8xf16>, tensor<4xf32>, tensor<8xf32>
  %0 = mpc.cast %b#0 : tensor<4x8xf16> -> tensor<4x8xf32>
  %1 = mpc.reduce_sum %0 {dims = array<i64: 0>} : tensor<4x8xf32>
  %2 = mpc.reduce_sum %0 {dims = array<i64: 0>} : tensor<4x8xf32>
  return %1, %2 : tensor<8xf32>, tensor<8xf32>
}
