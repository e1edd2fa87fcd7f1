// RUN: mpc-opt %s -split-input-file --mpc-fuse | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse=weight-grad-sums=false | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse=report=- -o /dev/null | FileCheck %s --check-prefix=REPORT

// A weight gradient summed into an f32 gradient accumulator at O1/O2 (a
// micro-batch of gradient accumulation): the f16 product, its widening
// cast and the add become one GEMM with the accumulator as its addend,
// which returns the f32 sum; no f16 weight gradient is rounded.
// CHECK-LABEL: func @accumulated
// CHECK-NEXT: %[[S:.*]] = mpc.matmul_add %arg0, %arg1, %arg2 {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>, tensor<32x16xf32> -> tensor<32x16xf32>
// CHECK-NEXT: return %[[S]]
// REMARK: remark: fused: mpc.matmul + mpc.cast + mpc.add -> mpc.matmul_add
// OFF-LABEL: func @accumulated
// OFF-NEXT: mpc.matmul %arg0, %arg1 {transpose_a}
// OFF-NEXT: mpc.cast
// OFF-NEXT: mpc.add
func.func @accumulated(%x: tensor<64x32xf16>, %dy: tensor<64x16xf16>, %acc: tensor<32x16xf32>) -> tensor<32x16xf32> {
  %0 = mpc.matmul %x, %dy {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  %1 = mpc.cast %0 : tensor<32x16xf16> -> tensor<32x16xf32>
  %2 = mpc.add %acc, %1 : tensor<32x16xf32>, tensor<32x16xf32>
  return %2 : tensor<32x16xf32>
}

// -----

// With the layer's bias gradient (the f32 sums of the same gradient): one
// mpc.matmul_bias_grad with the accumulator as its addend, which reads the
// gradient once, and the bias gradient's accumulator as its bias addend.
// Without weight-grad-sums the bias gradient still fuses, and the product
// is rounded to f16 and added after it, the sums added by an add.
// CHECK-LABEL: func @accumulated_with_bias
// CHECK: %[[W:.*]], %[[B:.*]] = mpc.matmul_bias_grad %{{.*}}, %{{.*}}, %arg2 bias(%arg3) {transpose_a} : tensor<512x32xf16>, tensor<512x16xf16>, tensor<32x16xf32> bias(tensor<16xf32>)
// CHECK-NOT: mpc.cast
// CHECK-NOT: mpc.add
// CHECK: return %[[W]], %[[B]]
// REMARK: remark: fused: mpc.cast + mpc.reduce_sum + mpc.matmul + mpc.cast + mpc.add + mpc.add -> mpc.matmul_bias_grad
// OFF-LABEL: func @accumulated_with_bias
// OFF: %[[W:.*]], %[[B:.*]] = mpc.matmul_bias_grad %{{.*}}, %{{.*}} {transpose_a} : tensor<512x32xf16>, tensor<512x16xf16>
// OFF-NEXT: %[[C:.*]] = mpc.cast %[[W]] : tensor<32x16xf16> -> tensor<32x16xf32>
// OFF-NEXT: mpc.add %arg2, %[[C]]
// OFF-NEXT: mpc.add %[[B]], %arg3
// REPORT: "op": "mpc.matmul_bias_grad"
// REPORT: "from": [
// REPORT-NEXT: "mpc.cast",
// REPORT-NEXT: "mpc.reduce_sum",
// REPORT-NEXT: "mpc.matmul",
// REPORT-NEXT: "mpc.cast",
// REPORT-NEXT: "mpc.add",
// REPORT-NEXT: "mpc.add"
func.func @accumulated_with_bias(%x3: tensor<8x64x32xf16>, %dy3: tensor<8x64x16xf16>, %acc: tensor<32x16xf32>, %bacc: tensor<16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>) {
  %x = mpc.reshape %x3 : tensor<8x64x32xf16> -> tensor<512x32xf16>
  %dy = mpc.reshape %dy3 : tensor<8x64x16xf16> -> tensor<512x16xf16>
  %0 = mpc.cast %dy3 : tensor<8x64x16xf16> -> tensor<8x64x16xf32>
  %1 = mpc.reduce_sum %0 {dims = array<i64: 0, 1>} : tensor<8x64x16xf32>
  %2 = mpc.matmul %x, %dy {transpose_a} : tensor<512x32xf16>, tensor<512x16xf16>
  %3 = mpc.cast %2 : tensor<32x16xf16> -> tensor<32x16xf32>
  %4 = mpc.add %acc, %3 : tensor<32x16xf32>, tensor<32x16xf32>
  %5 = mpc.add %1, %bacc : tensor<16xf32>, tensor<16xf32>
  return %4, %5 : tensor<32x16xf32>, tensor<16xf32>
}

// -----

// The bias gradient's sum alone (the weight gradient read elsewhere):
// its accumulator still becomes the bias addend. Not where the sums have
// another reader, or are added to a broadcast.
// CHECK-LABEL: func @bias_sum_only
// CHECK: %[[W:.*]], %[[B:.*]] = mpc.matmul_bias_grad %arg0, %arg1 bias(%arg2) {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16> bias(tensor<16xf32>)
// CHECK-NEXT: return %[[W]], %[[B]]
// CHECK-LABEL: func @bias_sum_read_twice
// CHECK: %[[W:.*]], %[[B:.*]] = mpc.matmul_bias_grad %arg0, %arg1 {transpose_a}
// CHECK-NEXT: mpc.add %[[B]], %arg2
// CHECK-LABEL: func @bias_sum_broadcast
// CHECK: %[[W:.*]], %[[B:.*]] = mpc.matmul_bias_grad %arg0, %arg1 {transpose_a}
// CHECK-NEXT: mpc.add %[[B]], %arg2
// OFF-LABEL: func @bias_sum_only
// OFF: mpc.matmul_bias_grad %arg0, %arg1 {transpose_a}
// OFF-NEXT: mpc.add
func.func @bias_sum_only(%x: tensor<64x32xf16>, %dy: tensor<64x16xf16>, %bacc: tensor<16xf32>) -> (tensor<32x16xf16>, tensor<16xf32>) {
  %0 = mpc.cast %dy : tensor<64x16xf16> -> tensor<64x16xf32>
  %1 = mpc.reduce_sum %0 {dims = array<i64: 0>} : tensor<64x16xf32>
  %2 = mpc.matmul %x, %dy {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  %3 = mpc.add %bacc, %1 : tensor<16xf32>, tensor<16xf32>
  return %2, %3 : tensor<32x16xf16>, tensor<16xf32>
}
func.func @bias_sum_read_twice(%x: tensor<64x32xf16>, %dy: tensor<64x16xf16>, %bacc: tensor<16xf32>) -> (tensor<32x16xf16>, tensor<16xf32>, tensor<16xf32>) {
  %0 = mpc.cast %dy : tensor<64x16xf16> -> tensor<64x16xf32>
  %1 = mpc.reduce_sum %0 {dims = array<i64: 0>} : tensor<64x16xf32>
  %2 = mpc.matmul %x, %dy {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  %3 = mpc.add %1, %bacc : tensor<16xf32>, tensor<16xf32>
  return %2, %3, %1 : tensor<32x16xf16>, tensor<16xf32>, tensor<16xf32>
}
func.func @bias_sum_broadcast(%x: tensor<64x32xf16>, %dy: tensor<64x16xf16>, %s: tensor<f32>) -> (tensor<32x16xf16>, tensor<16xf32>) {
  %0 = mpc.cast %dy : tensor<64x16xf16> -> tensor<64x16xf32>
  %1 = mpc.reduce_sum %0 {dims = array<i64: 0>} : tensor<64x16xf32>
  %2 = mpc.matmul %x, %dy {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  %3 = mpc.add %1, %s : tensor<16xf32>, tensor<f32>
  return %2, %3 : tensor<32x16xf16>, tensor<16xf32>
}

// -----

// Two gradients of one weight (a weight read twice, as tied embeddings
// are), summed: the second GEMM adds the first's result.
// CHECK-LABEL: func @tied
// CHECK-NEXT: %[[A:.*]] = mpc.matmul %arg2, %arg3 {transpose_a}
// CHECK-NEXT: %[[S:.*]] = mpc.matmul_add %arg0, %arg1, %[[A]] {transpose_a} : tensor<64x32xf32>, tensor<64x16xf32>, tensor<32x16xf32> -> tensor<32x16xf32>
// CHECK-NEXT: return %[[S]]
// REMARK: remark: fused: mpc.matmul + mpc.add -> mpc.matmul_add
// OFF-LABEL: func @tied
// OFF-NOT: mpc.matmul_add
func.func @tied(%x1: tensor<64x32xf32>, %dy1: tensor<64x16xf32>, %x2: tensor<64x32xf32>, %dy2: tensor<64x16xf32>) -> tensor<32x16xf32> {
  %0 = mpc.matmul %x1, %dy1 {transpose_a} : tensor<64x32xf32>, tensor<64x16xf32>
  %1 = mpc.matmul %x2, %dy2 {transpose_a} : tensor<64x32xf32>, tensor<64x16xf32>
  %2 = mpc.add %0, %1 : tensor<32x16xf32>, tensor<32x16xf32>
  return %2 : tensor<32x16xf32>
}

// -----

// What must not fuse: a product read elsewhere, a widening cast read
// elsewhere, a transposed batch of matrices (one weight gradient per
// batch, summed by no GEMM).
// CHECK-LABEL: func @not_summed
// CHECK-NOT: mpc.matmul_add
// CHECK-NOT: mpc.matmul_bias_grad
// REMARK-NOT: remark: fused
func.func @not_summed(%x: tensor<64x32xf16>, %dy: tensor<64x16xf16>, %acc: tensor<32x16xf32>, %acc16: tensor<32x16xf16>, %xb: tensor<2x64x32xf16>, %accb: tensor<2x32x16xf16>) -> (tensor<32x16xf16>, tensor<32x16xf16>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<2x32x16xf16>) {
  %0 = mpc.matmul %x, %dy {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  %1 = mpc.add %acc16, %0 : tensor<32x16xf16>, tensor<32x16xf16>
  %2 = mpc.matmul %x, %dy {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  %3 = mpc.cast %2 : tensor<32x16xf16> -> tensor<32x16xf32>
  %4 = mpc.add %acc, %3 : tensor<32x16xf32>, tensor<32x16xf32>
  %5 = mpc.matmul %xb, %dy {transpose_a} : tensor<2x64x32xf16>, tensor<64x16xf16>
  %6 = mpc.add %accb, %5 : tensor<2x32x16xf16>, tensor<2x32x16xf16>
  return %0, %1, %3, %4, %6 : tensor<32x16xf16>, tensor<32x16xf16>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<2x32x16xf16>
}

// -----

// The sum goes where the product was, so that the layer's input and
// gradient die there: the accumulator's load moves up to it. A store to the
// accumulator between the two keeps the load, and the sum, in place.
// CHECK-LABEL: func @placed_at_the_product
// CHECK-NEXT: %[[L:.*]] = ml_program.global_load @acc
// CHECK-NEXT: %[[S:.*]] = mpc.matmul_add %arg0, %arg1, %[[L]] {transpose_a}
// CHECK-NEXT: mpc.exp %arg2
// CHECK-NEXT: ml_program.global_store @acc = %[[S]]
// CHECK-LABEL: func @stored_between
// CHECK-NEXT: mpc.exp %arg2
// CHECK-NEXT: ml_program.global_store @acc = %arg3
// CHECK-NEXT: %[[L:.*]] = ml_program.global_load @acc
// CHECK-NEXT: %[[S:.*]] = mpc.matmul_add %arg0, %arg1, %[[L]] {transpose_a}
// CHECK-NEXT: ml_program.global_store @acc = %[[S]]
// REMARK-COUNT-2: remark: fused: mpc.matmul + mpc.cast + mpc.add -> mpc.matmul_add
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<32x16xf32>
func.func @placed_at_the_product(%x: tensor<64x32xf16>, %dy: tensor<64x16xf16>, %h: tensor<64x32xf16>) -> tensor<64x32xf16> {
  %0 = mpc.matmul %x, %dy {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  %1 = mpc.exp %h : tensor<64x32xf16>
  %a = ml_program.global_load @acc : tensor<32x16xf32>
  %2 = mpc.cast %0 : tensor<32x16xf16> -> tensor<32x16xf32>
  %3 = mpc.add %a, %2 : tensor<32x16xf32>, tensor<32x16xf32>
  ml_program.global_store @acc = %3 : tensor<32x16xf32>
  return %1 : tensor<64x32xf16>
}
func.func @stored_between(%x: tensor<64x32xf16>, %dy: tensor<64x16xf16>, %h: tensor<64x32xf16>, %z: tensor<32x16xf32>) -> tensor<64x32xf16> {
  %0 = mpc.matmul %x, %dy {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  %1 = mpc.exp %h : tensor<64x32xf16>
  ml_program.global_store @acc = %z : tensor<32x16xf32>
  %a = ml_program.global_load @acc : tensor<32x16xf32>
  %2 = mpc.cast %0 : tensor<32x16xf16> -> tensor<32x16xf32>
  %3 = mpc.add %a, %2 : tensor<32x16xf32>, tensor<32x16xf32>
  ml_program.global_store @acc = %3 : tensor<32x16xf32>
  return %1 : tensor<64x32xf16>
}
