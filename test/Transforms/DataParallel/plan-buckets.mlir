// --mpc-plan-memory lays each all-reduce bucket out as one range: its
// members in operand order, each at a multiple of 16 bytes, the results in
// the operands' buffers.
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory | FileCheck %s

// 5 f16 are 10 bytes: the next member starts 16 bytes on; 3 f16 after it.
// CHECK-LABEL: func.func @odd_sizes
// CHECK: mpc.neg {{.*}} {mpc.offsets = array<i64: 0>}
// CHECK: mpc.neg {{.*}} {mpc.offsets = array<i64: 16>}
// CHECK: mpc.all_reduce {{.*}} {bucket = 0 : i64, mpc.offsets = array<i64: 0, 16>}
func.func @odd_sizes(%a: tensor<5xf16>, %b: tensor<3xf16>) -> (tensor<5xf16>, tensor<3xf16>) {
  %x = mpc.neg %a : tensor<5xf16>
  %y = mpc.neg %b : tensor<3xf16>
  %r:2 = mpc.all_reduce %x, %y {bucket = 0} : tensor<5xf16>, tensor<3xf16>
  return %r#0, %r#1 : tensor<5xf16>, tensor<3xf16>
}

// -----

// The bucket is live from its first member's definition to its results'
// last use: a tensor defined and dead in between does not share its bytes.
// CHECK-LABEL: func.func @live_range
// CHECK: %[[X:.*]] = mpc.neg %{{.*}} {mpc.offsets = array<i64: 0>}
// CHECK: mpc.exp {{.*}} {mpc.offsets = array<i64: 256>}
// CHECK: mpc.all_reduce {{.*}} {bucket = 0 : i64, mpc.offsets = array<i64: 0, 16>}
func.func @live_range(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<f32>) {
  %x = mpc.neg %a : tensor<4xf32>
  %t = mpc.exp %b : tensor<4xf32>
  %s = mpc.reduce_sum %t {dims = array<i64: 0>} : tensor<4xf32>
  %y = mpc.neg %b : tensor<4xf32>
  %r:2 = mpc.all_reduce %x, %y {bucket = 0} : tensor<4xf32>, tensor<4xf32>
  return %r#0, %r#1, %s : tensor<4xf32>, tensor<4xf32>, tensor<f32>
}

// -----

// A buffer is summed in place by one bucket only: an operand given twice,
// or a sum summed again, gets a buffer of its own (the lowering copies).
// CHECK-LABEL: func.func @twice
// CHECK: mpc.neg {{.*}} {mpc.offsets = array<i64: 0>}
// CHECK: mpc.all_reduce {{.*}} {bucket = 0 : i64, mpc.offsets = array<i64: 0, 16>}
// CHECK: %[[R:.*]] = mpc.all_reduce %arg0 {bucket = 1 : i64, mpc.offsets = array<i64: [[R0:[0-9]+]]>}
// CHECK-NOT: array<i64: [[R0]]>
// CHECK: mpc.all_reduce %[[R]] {bucket = 2 : i64, mpc.offsets
func.func @twice(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %x = mpc.neg %a : tensor<4xf32>
  %r:2 = mpc.all_reduce %x, %x {bucket = 0} : tensor<4xf32>, tensor<4xf32>
  %s = mpc.all_reduce %a {bucket = 1} : tensor<4xf32>
  %t = mpc.all_reduce %s {bucket = 2} : tensor<4xf32>
  return %r#0, %r#1, %t : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A reshape is a view of its operand's buffer, except where an all-reduce
// sums it in place: then it has a buffer of its own (the product, read
// after the sum, keeps its values).
// CHECK-LABEL: func.func @reshape_summed
// CHECK: mpc.neg {{.*}} {mpc.offsets = array<i64: 0>}
// CHECK: mpc.reshape {{.*}} {mpc.offsets = array<i64: 256>}
// CHECK: mpc.all_reduce {{.*}} {bucket = 0 : i64, mpc.offsets = array<i64: 256>}
func.func @reshape_summed(%a: tensor<2x2xf32>) -> (tensor<4xf32>, tensor<2x2xf32>) {
  %x = mpc.neg %a : tensor<2x2xf32>
  %v = mpc.reshape %x : tensor<2x2xf32> -> tensor<4xf32>
  %r = mpc.all_reduce %v {bucket = 0} : tensor<4xf32>
  return %r, %x : tensor<4xf32>, tensor<2x2xf32>
}
