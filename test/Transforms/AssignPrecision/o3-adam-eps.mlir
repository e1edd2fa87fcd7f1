// At O3 f16 Adam's moments are f16: an eps below 2^-14 is warned about
// (the second moment flushes to 0 and the step becomes |m| / eps); not
// with bf16, nor with eps = 1e-4.
// RUN: mpc-opt %s --mpc-assign-precision="level=O3 alignment-remarks=false" -o /dev/null 2>&1 | FileCheck %s
// RUN: mpc-opt %s --mpc-assign-precision="level=O3 dtype=bf16 alignment-remarks=false" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BF16
// RUN: mpc-opt %s --mpc-assign-precision="level=O2 alignment-remarks=false" -o /dev/null 2>&1 | FileCheck %s --allow-empty --check-prefix=O2
// CHECK: o3-adam-eps.mlir:[[@LINE+11]]:{{[0-9]+}}: warning: at O3 the moments are f16, where the second moment is 0 for gradients below 2^-12, and eps 1e-08 then makes steps of |m| / eps (the weights overflow to inf and NaN): use eps >= 1e-4, bf16, or O2
// CHECK-NOT: warning: at O3
// BF16-NOT: warning: at O3
// O2-NOT: warning
ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<8x8xf32>
ml_program.global private mutable @m(#mpc.init<zeros>) : tensor<8x8xf32>
ml_program.global private mutable @v(#mpc.init<zeros>) : tensor<8x8xf32>
func.func @train_step(%g: tensor<8x8xf32>, %lr: tensor<f32>, %t: tensor<i32>) {
  %w = ml_program.global_load @w : tensor<8x8xf32>
  %m = ml_program.global_load @m : tensor<8x8xf32>
  %v = ml_program.global_load @v : tensor<8x8xf32>
  %p1, %m1, %v1 = mpc.adam_update %w, %g, %m, %v lr(%lr) step(%t) {eps = 1.0e-8} : tensor<8x8xf32>, tensor<8x8xf32>
  %p2, %m2, %v2 = mpc.adam_update %p1, %g, %m1, %v1 lr(%lr) step(%t) {eps = 1.0e-4} : tensor<8x8xf32>, tensor<8x8xf32>
  ml_program.global_store @w = %p2 : tensor<8x8xf32>
  ml_program.global_store @m = %m2 : tensor<8x8xf32>
  ml_program.global_store @v = %v2 : tensor<8x8xf32>
  return
}
