// Optimizer results keep their parameter's and state's types; a copy its
// own. Every combination of optional results survives every level.
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 alignment-remarks=false" | FileCheck %s --check-prefix=O1
// RUN: mpc-opt %s --mpc-assign-precision="level=O2 alignment-remarks=false" | FileCheck %s --check-prefix=O1
// RUN: mpc-opt %s --mpc-assign-precision="level=O3 alignment-remarks=false" 2>/dev/null | FileCheck %s --check-prefix=O3

ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<8x8xf32>
ml_program.global private mutable @m(#mpc.init<zeros>) : tensor<8x8xf32>
ml_program.global private mutable @v(#mpc.init<zeros>) : tensor<8x8xf32>

// O1: mpc.sgd_update {{.*}} momentum_buffer({{.*}}) copy(bf16){{.*}} : tensor<8x8xf32>, tensor<8x8xf16>
// O1: mpc.adam_update {{.*}} copy(bf16){{.*}} : tensor<8x8xf32>, tensor<8x8xf16>
// O3: mpc.sgd_update {{.*}} momentum_buffer({{.*}}) copy(bf16){{.*}} : tensor<8x8xf16>, tensor<8x8xf16>
// O3: mpc.adam_update {{.*}} copy(bf16){{.*}} : tensor<8x8xf16>, tensor<8x8xf16>
func.func @step(%g: tensor<8x8xf16>, %lr: tensor<f32>, %t: tensor<i32>) -> (tensor<8x8xbf16>, tensor<8x8xbf16>) {
  %w = ml_program.global_load @w : tensor<8x8xf32>
  %m = ml_program.global_load @m : tensor<8x8xf32>
  %v = ml_program.global_load @v : tensor<8x8xf32>
  %p1, %b1, %c1 = mpc.sgd_update %w, %g lr(%lr) momentum_buffer(%m) copy(bf16) {momentum = 0.9} : tensor<8x8xf32>, tensor<8x8xf16>
  %p2, %m2, %v2, %c2 = mpc.adam_update %p1, %g, %b1, %v lr(%lr) step(%t) copy(bf16) : tensor<8x8xf32>, tensor<8x8xf16>
  ml_program.global_store @w = %p2 : tensor<8x8xf32>
  ml_program.global_store @m = %m2 : tensor<8x8xf32>
  ml_program.global_store @v = %v2 : tensor<8x8xf32>
  return %c1, %c2 : tensor<8x8xbf16>, tensor<8x8xbf16>
}
