// Gradient accumulation in the lowering: the micro-step behind
// mpc_accumulate (counting steps, as the entry does: each micro-batch draws
// its own dropout masks), K in the descriptor, and stored zeros (the
// accumulators' reset) as mpcrt_zero on the globals with no constant
// stored anywhere. Without a micro-step, mpc_accumulate does nothing and K
// is 1.
// RUN: mpc-opt %s --mpc-autodiff --mpc-accumulate-gradients=steps=4 --mpc-optimizer --canonicalize --cse --mpc-plan-memory --mpc-lower-to-runtime | FileCheck %s
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-plan-memory --mpc-lower-to-runtime | FileCheck %s --check-prefix=ONE

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %{{[^:]*}}: !llvm.ptr, %[[STATE:[^:]*]]: !llvm.ptr
// The step adds the last micro-batch's gradient in the accumulator's
// storage too, the update reads the sum there, and only then are the
// accumulators zeroed (the plan moves the resets after the update): the
// 16x8 f32 one (512 bytes at 768) and the scalar loss's (4 at 1280), next
// to each other in the state, in one call of 516 bytes.
// CHECK-DAG: %[[SLACC:.*]] = llvm.getelementptr %[[STATE]][%c1280_i64]
// CHECK-DAG: %[[SWACC:.*]] = llvm.getelementptr %[[STATE]][%c768_i64]
// CHECK: call @mpcrt_binary_f32(%{{[^,]*}}, %[[SWACC]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[SWACC]],
// CHECK: call @mpcrt_sgd_update_f32_f32(%{{[^,]*}}, %[[SWACC]],
// CHECK: call @mpcrt_zero(%[[SWACC]], %c516_i64{{(_[0-9]+)?}})
// CHECK-NOT: call @mpcrt_zero
// CHECK: call @mpcrt_increment_step
// The micro-step adds each micro-batch's gradient (and loss) into its
// accumulator's own storage in the state (the weight's at 768, the loss's
// at 1280): the sum is both an operand and the output, and the stores after
// it copy nothing; the one copy left is the loss to the step's output.
// CHECK-LABEL: func.func @train_step_accumulate(
// CHECK-SAME: %{{[^:]*}}: !llvm.ptr, %[[MSTATE:[^:]*]]: !llvm.ptr
// CHECK-DAG: %[[LACC:.*]] = llvm.getelementptr %[[MSTATE]][%c1280_i64]
// CHECK-DAG: %[[WACC:.*]] = llvm.getelementptr %[[MSTATE]][%c768_i64]
// CHECK-NOT: _update_
// CHECK: call @mpcrt_binary_f32(%{{[^,]*}}, %[[WACC]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[WACC]],
// CHECK: call @mpcrt_binary_f32(%{{[^,]*}}, %[[LACC]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[LACC]],
// CHECK: call @mpcrt_copy(
// CHECK-NOT: call @mpcrt_copy(
// CHECK: call @mpcrt_increment_step
// CHECK-LABEL: func.func @mpc_step(
// CHECK: call @train_step(
// CHECK-LABEL: func.func @mpc_accumulate(
// CHECK-NEXT: call @train_step_accumulate(
// CHECK: @mpc_model("{\22accumulate_steps\22:4,

// ONE-LABEL: func.func @mpc_accumulate(
// ONE-NEXT: return
// ONE: @mpc_model("{\22accumulate_steps\22:1,

ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<16x8xf32>

func.func @loss(%x: tensor<4x16xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<16x8xf32>
  %0 = mpc.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32>
  %l = mpc.cross_entropy %0, %y : tensor<4x8xf32>, tensor<4xi32>
  return %l : tensor<f32>
}
