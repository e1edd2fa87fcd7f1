// The elementwise family: unary ops and activation gradients (op codes of
// mpcrt_unary_op), broadcasting binary ops (strides 0 where an operand
// repeats), scale_loss, casts.
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory --mpc-lower-to-runtime | FileCheck %s

// CHECK-LABEL: func.func @unary(
// CHECK-SAME: %[[ARENA:.*]]: !llvm.ptr, %[[STATE:.*]]: !llvm.ptr, %[[IN:.*]]: !llvm.ptr, %[[OUT:.*]]: !llvm.ptr)
// CHECK: %[[SLOT:.*]] = llvm.getelementptr %[[IN]][%c0_i64] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[X:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> !llvm.ptr
// GELU, tanh form (9), over 32 elements, into the arena at offset 0:
// CHECK: call @mpcrt_unary_f16(%c9_i32{{(_[0-9]+)?}}, %[[X]], %[[ARENA]], %c32_i64{{(_[0-9]+)?}})
// CHECK: %[[R:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK: call @mpcrt_copy(%[[R]], %[[ARENA]], %c64_i64{{(_[0-9]+)?}})
// CHECK: call @mpcrt_increment_step(%[[STATE]])
func.func @unary(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %0 = mpc.gelu %x {approximate} : tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}

// -----

// CHECK-DAG: llvm.mlir.global internal constant @[[LHS:.*]](dense<[12, 4, 1]> : tensor<3xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @[[RHS:.*]](dense<[0, 1, 0]> : tensor<3xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @[[SHAPE:.*]](dense<[2, 3, 4]> : tensor<3xi64>)
// CHECK-LABEL: func.func @binary(
// CHECK-DAG: %[[LS:.*]] = llvm.mlir.addressof @[[LHS]]
// CHECK-DAG: %[[RS:.*]] = llvm.mlir.addressof @[[RHS]]
// CHECK-DAG: %[[S:.*]] = llvm.mlir.addressof @[[SHAPE]]
// CHECK: call @mpcrt_binary_f32(%c3_i32{{(_[0-9]+)?}}, %{{.*}}, %[[LS]], %{{.*}}, %[[RS]], %arg0, %[[S]], %c3_i32_0)
func.func @binary(%a: tensor<2x3x4xf32>, %b: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %0 = mpc.div %a, %b : tensor<2x3x4xf32>, tensor<3x1xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// A rank-0 operation is a one-element vector.
// CHECK-DAG: llvm.mlir.global internal constant @[[ONE:.*]](dense<1> : tensor<1xi64>)
// CHECK-LABEL: func.func @scale_loss(
// CHECK: %[[A:.*]] = llvm.mlir.addressof @[[ONE]]
// CHECK: call @mpcrt_binary_f32(%c2_i32{{(_[0-9]+)?}}, %{{.*}}, %[[A]], %{{.*}}, %{{.*}}, %arg0, %{{.*}}, %c1_i32{{(_[0-9]+)?}})
func.func @scale_loss(%l: tensor<f32>, %s: tensor<f32>) -> tensor<f32> {
  %0 = mpc.scale_loss %l, %s : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @grads(
// ReLU (7) gradient with the input saved, sigmoid (6) with the output:
// CHECK: call @mpcrt_unary_grad_bf16(%c7_i32{{(_[0-9]+)?}}, %[[G:.*]], %[[X:.*]], %arg0, %c16_i64{{(_[0-9]+)?}})
// CHECK: call @mpcrt_unary_grad_bf16(%c6_i32{{(_[0-9]+)?}}, %{{.*}}, %[[X]], %{{.*}}, %c16_i64{{(_[0-9]+)?}})
func.func @grads(%g: tensor<16xbf16>, %x: tensor<16xbf16>) -> (tensor<16xbf16>, tensor<16xbf16>) {
  %0 = mpc.relu_grad %g, %x : tensor<16xbf16>
  %1 = mpc.sigmoid_grad %0, %x : tensor<16xbf16>
  return %0, %1 : tensor<16xbf16>, tensor<16xbf16>
}

// -----

// CHECK-LABEL: func.func @cast(
// f32 (2) to bf16 (1), 12 elements:
// CHECK: call @mpcrt_cast(%c2_i32{{(_[0-9]+)?}}, %{{.*}}, %c1_i32{{(_[0-9]+)?}}, %arg0, %c12_i64{{(_[0-9]+)?}})
func.func @cast(%x: tensor<3x4xf32>) -> tensor<3x4xbf16> {
  %0 = mpc.cast %x : tensor<3x4xf32> -> tensor<3x4xbf16>
  return %0 : tensor<3x4xbf16>
}
