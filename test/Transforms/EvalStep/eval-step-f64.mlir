// At O3 every weight is stored low, f64 ones too; an f32 evaluation step
// reads each cast back up to the type it had, f64 here, so its ops keep
// their types and verify.
// RUN: mpc-opt %s --mpc-eval-step --mpc-assign-precision="level=O3 alignment-remarks=false" 2>/dev/null | FileCheck %s

ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<6x5xf64>

// CHECK-LABEL: ml_program.global private mutable @w({{.*}}) : tensor<6x5xf16>
// CHECK-LABEL: func.func @eval_step(
// CHECK: %[[W:.*]] = ml_program.global_load @w : tensor<6x5xf16>
// CHECK: %[[UP:.*]] = mpc.cast %[[W]] : tensor<6x5xf16> -> tensor<6x5xf64>
// CHECK: mpc.matmul %arg0, %[[UP]] : tensor<4x6xf64>, tensor<6x5xf64>
func.func @loss(%x: tensor<4x6xf64>) -> tensor<f64> {
  %w = ml_program.global_load @w : tensor<6x5xf64>
  %0 = mpc.matmul %x, %w : tensor<4x6xf64>, tensor<6x5xf64>
  %l = mpc.reduce_sum %0 {dims = array<i64: 0, 1>} : tensor<4x5xf64>
  return %l : tensor<f64>
}
