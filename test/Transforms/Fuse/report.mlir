// --mpc-fuse's report: every fused op of the module, with its function,
// kind, the product's source line and the ops it replaced.
// RUN: mpc-opt %s --mpc-fuse="report=-" -o /dev/null | FileCheck %s
// RUN: mpc-opt %s --mpc-fuse="report=%t.json" -o /dev/null
// RUN: FileCheck %s < %t.json
// RUN: not mpc-opt %s --mpc-fuse="report=%t.missing/r.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADFILE
// BADFILE: error: mpc-fuse: cannot open report output:

// CHECK: "fused": [
// CHECK: "function": "forward",
// CHECK-NEXT: "op": "mpc.attention",
// CHECK-NEXT: "dropout_p": 0.5,
// CHECK-NEXT: "masked": false,
// CHECK-NEXT: "bias": false,
// CHECK-NEXT: "location": "{{.*}}report.mlir:40:8",
// CHECK-NEXT: "from": [
// CHECK-NEXT: "mpc.matmul",
// CHECK-NEXT: "mpc.mul",
// CHECK-NEXT: "mpc.softmax",
// CHECK-NEXT: "mpc.dropout",
// CHECK-NEXT: "mpc.matmul"
// CHECK: "function": "forward",
// CHECK-NEXT: "op": "mpc.fused_matmul",
// CHECK-NEXT: "activation": "relu",
// CHECK-NEXT: "pre_activation": false,
// CHECK-NEXT: "location": "{{.*}}report.mlir:45:8",
// CHECK-NEXT: "from": [
// CHECK-NEXT: "mpc.matmul",
// CHECK-NEXT: "mpc.add",
// CHECK-NEXT: "mpc.relu"
// CHECK: "function": "backward",
// CHECK-NEXT: "op": "mpc.matmul_bias_grad",
// CHECK-NEXT: "location": "{{.*}}report.mlir:{{[0-9]+}}:8",
// CHECK-NEXT: "from": [
// CHECK-NEXT: "mpc.cast",
// CHECK-NEXT: "mpc.reduce_sum",
// CHECK-NEXT: "mpc.matmul"
func.func @forward(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf32>, %v: tensor<2x8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) -> tensor<2x8x4xf32> {
  %c = mpc.constant dense<0.25> : tensor<f32>
  %s = mpc.matmul %q, %k {transpose_b} : tensor<2x8x16xf32>, tensor<2x8x16xf32>
  %t = mpc.mul %s, %c : tensor<2x8x8xf32>, tensor<f32>
  %p = mpc.softmax %t : tensor<2x8x8xf32>
  %pd, %mask = mpc.dropout %p {p = 0.5, seed = 3} : tensor<2x8x8xf32>
  %o = mpc.matmul %pd, %v : tensor<2x8x8xf32>, tensor<2x8x16xf32>
  %l = mpc.matmul %o, %w : tensor<2x8x16xf32>, tensor<16x4xf32>
  %h = mpc.add %l, %b : tensor<2x8x4xf32>, tensor<4xf32>
  %y = mpc.relu %h : tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

func.func @backward(%x: tensor<16x4xf16>, %dy: tensor<16x8xf16>) -> (tensor<4x8xf16>, tensor<8xf32>) {
  %c = mpc.cast %dy : tensor<16x8xf16> -> tensor<16x8xf32>
  %db = mpc.reduce_sum %c {dims = array<i64: 0>} : tensor<16x8xf32>
  %dw = mpc.matmul %x, %dy {transpose_a} : tensor<16x4xf16>, tensor<16x8xf16>
  return %dw, %db : tensor<4x8xf16>, tensor<8xf32>
}
