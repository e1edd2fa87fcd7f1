// Transposes written into their concatenation's window in one part of
// the step, the concat in a later one: each part computes the
// concatenation's pointer from its own arena argument, the transposes
// scatter into it, and the concat scatters only its other operand.
// RUN: mpc-opt %s --mpc-plan-memory --mpc-lower-to-runtime="entry=f ops-per-part=2" | FileCheck %s

// CHECK-LABEL: func.func @f(
// CHECK: call @mpcrt_strided_scatter(%{{[^,]*}}, %arg0, %c0_i64
// CHECK-NOT: mpcrt_strided
// CHECK: call @f.part1(
// CHECK-LABEL: func.func private @f.part1(%arg0: !llvm.ptr,
// CHECK: call @mpcrt_strided_scatter(%{{[^,]*}}, %arg0, %c16_i64
// CHECK-NOT: mpcrt_strided
// CHECK-LABEL: func.func private @f.part2(%arg0: !llvm.ptr,
// CHECK: call @mpcrt_strided_scatter(%{{[^,]*}}, %arg0, %c32_i64
// CHECK-NOT: mpcrt_strided
// CHECK: return
func.func @f(%dq: tensor<16x4xf32>, %dk: tensor<2x4x8xf32>, %v: tensor<4x16xf32>) -> tensor<4x48xf32> {
  %0 = mpc.transpose %dq {permutation = array<i64: 1, 0>} : tensor<16x4xf32>
  %1 = mpc.tanh %v : tensor<4x16xf32>
  %2 = mpc.transpose %dk {permutation = array<i64: 1, 0, 2>} : tensor<2x4x8xf32>
  %3 = mpc.reshape %2 : tensor<4x2x8xf32> -> tensor<4x16xf32>
  %4 = mpc.concat %0, %3, %1 {axis = 1 : i64} : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  return %4 : tensor<4x48xf32>
}
