// A function of more ops than ops-per-part is lowered as a chain of
// functions: each part ends by calling the next with the same four
// pointers, and computes the pointers it uses from its own arguments (the
// arena and state offsets, the inputs). One function without the limit.
// RUN: mpc-opt %s --mpc-plan-memory --mpc-lower-to-runtime="entry=f ops-per-part=2" | FileCheck %s
// RUN: mpc-opt %s --mpc-plan-memory --mpc-lower-to-runtime="entry=f ops-per-part=0" | FileCheck %s --check-prefix=ONE
// A negative limit is refused (it was read as no limit).
// RUN: not mpc-opt %s --mpc-plan-memory --mpc-lower-to-runtime="entry=f ops-per-part=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: error: mpc-lower-to-runtime: ops-per-part must be 0 (one function) or positive, got -1

// CHECK-LABEL: func.func @f(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: !llvm.ptr)
// CHECK: call @mpcrt_unary_f32(
// CHECK: call @mpcrt_unary_f32(
// CHECK: call @f.part1(%arg0, %arg1, %arg2, %arg3)
// CHECK-NEXT: return
// The add reads the arena (offset 0) and the global (state offset 0)
// through part1's own arguments; the last part copies the result out
// through its own outputs argument and counts the step.
// CHECK-LABEL: func.func private @f.part1(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: !llvm.ptr)
// CHECK: call @mpcrt_binary_f32(%{{.*}}, %arg0, %{{.*}}, %arg1, %{{.*}}, %arg0,
// CHECK: call @f.part2(%arg0, %arg1, %arg2, %arg3)
// CHECK-LABEL: func.func private @f.part2(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: !llvm.ptr)
// CHECK: call @mpcrt_unary_f32(%{{.*}}, %arg0, %arg0,
// CHECK: %[[SLOT:.*]] = llvm.getelementptr %arg3[
// CHECK: %[[OUT:.*]] = llvm.load %[[SLOT]]
// CHECK: call @mpcrt_copy(%[[OUT]], %arg0,
// CHECK: call @mpcrt_increment_step(
// CHECK-NEXT: return
// ONE-NOT: part1
ml_program.global private mutable @w(dense<0.5> : tensor<4x8xf32>) : tensor<4x8xf32>

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = mpc.tanh %x : tensor<4x8xf32>
  %b = mpc.neg %a : tensor<4x8xf32>
  %w = ml_program.global_load @w : tensor<4x8xf32>
  %c = mpc.add %b, %w : tensor<4x8xf32>, tensor<4x8xf32>
  %d = mpc.sigmoid %c : tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}
