// The evaluation step in the lowering: mpc.accuracy as mpcrt_accuracy
// (rows, classes, label width, the loss's ignore_index: 1, -1), the step behind mpc_eval (not counting
// steps), its scalar results in the descriptor's eval_outputs. Without one,
// mpc_eval does nothing and eval_outputs is empty.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-eval-step --mpc-plan-memory --mpc-lower-to-runtime | FileCheck %s
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-plan-memory --mpc-lower-to-runtime | FileCheck %s --check-prefix=NONE
// RUN: not mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-eval-step --mpc-eval-step=name=again --mpc-plan-memory --mpc-lower-to-runtime 2>&1 | FileCheck %s --check-prefix=TWO
// TWO: error: 'func.func' op is a second evaluation step (mpc.eval); the first is @again

// CHECK-LABEL: func.func @eval_step(
// 2 x 4 rows of 10 classes, i64 labels.
// CHECK: call @mpcrt_accuracy_f32(%{{.*}}, %{{.*}}, %c64_i32{{(_[0-9]+)?}}, %{{.*}}, %c8_i64{{(_[0-9]+)?}}, %c10_i64{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}}, %c-1_i64{{(_[0-9]+)?}})
// CHECK-NOT: mpcrt_increment_step
// CHECK: return
// CHECK-LABEL: func.func @mpc_eval(
// CHECK-NEXT: call @eval_step(
// CHECK: \22eval_outputs\22:[{\22bytes\22:4,\22dtype\22:\22f32\22,\22name\22:\22loss\22,\22shape\22:[]},{\22bytes\22:4,\22dtype\22:\22f32\22,\22name\22:\22accuracy\22,\22shape\22:[]}]

// NONE-LABEL: func.func @mpc_eval(
// NONE-NEXT: return
// NONE: \22eval_outputs\22:[]

ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<16x10xf32>

func.func @loss(%x: tensor<2x4x16xf32>, %y: tensor<2x4xi64>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<16x10xf32>
  %0 = mpc.matmul %x, %w : tensor<2x4x16xf32>, tensor<16x10xf32>
  %l = mpc.cross_entropy %0, %y {ignore_index = -1} : tensor<2x4x10xf32>, tensor<2x4xi64>
  return %l : tensor<f32>
}
