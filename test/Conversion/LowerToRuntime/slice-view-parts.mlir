// A slice view whose reader lies in a later part of the step: the reader
// computes the view's pointer from its own part's arena argument (the
// product's offset, 0, plus the slice's 8 elements of 4 bytes), with the
// slice's strides. Slices take their place in the parts' count of ops.
// RUN: mpc-opt %s --mpc-plan-memory --mpc-lower-to-runtime="entry=f ops-per-part=2" | FileCheck %s

// CHECK-DAG: llvm.mlir.global internal constant @[[HALF:.*]](dense<[16, 1]> : tensor<2xi64>)
// CHECK-LABEL: func.func @f(
// CHECK: call @mpcrt_matmul_f32(
// CHECK-NOT: mpcrt_strided_copy
// CHECK: call @f.part1(
// The tanh (at 512) in part 1, the add in part 2: its operands are the
// product's right half and the tanh's left half (at 512 + 0).
// CHECK-LABEL: func.func private @f.part1(
// CHECK: call @mpcrt_unary_f32(
// CHECK-LABEL: func.func private @f.part2(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: !llvm.ptr)
// CHECK-NOT: mpcrt_strided_copy
// CHECK: %[[T:.*]] = llvm.getelementptr %arg0[%c512_i64] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: %[[V:.*]] = llvm.getelementptr %arg0[%c32_i64] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: %[[S:.*]] = llvm.mlir.addressof @[[HALF]]
// CHECK: %[[S2:.*]] = llvm.mlir.addressof @[[HALF]]
// CHECK: call @mpcrt_binary_f32(%{{[^,]*}}, %[[V]], %[[S]], %[[T]], %[[S2]],
func.func @f(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x8xf32> {
  %0 = mpc.matmul %x, %w : tensor<8x16xf32>, tensor<16x16xf32>
  %1 = mpc.slice %0 {offsets = array<i64: 0, 8>, sizes = array<i64: 8, 8>} : tensor<8x16xf32>
  %2 = mpc.tanh %0 : tensor<8x16xf32>
  %3 = mpc.slice %2 {offsets = array<i64: 0, 0>, sizes = array<i64: 8, 8>} : tensor<8x16xf32>
  %4 = mpc.add %1, %3 : tensor<8x8xf32>, tensor<8x8xf32>
  return %4 : tensor<8x8xf32>
}
