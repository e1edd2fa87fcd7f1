// At O2, a master written without an optimizer op (a hand-written update)
// is computed in f32 and also writes its low-precision copy: the master never
// rounds to f16 and the copy never goes stale.
// RUN: mpc-opt %s --mpc-assign-precision="level=O2 alignment-remarks=false" | FileCheck %s

ml_program.global private mutable @w(#mpc.init<xavier_uniform, seed = 1>) : tensor<16x8xf32>

// CHECK-LABEL: func @manual_sgd
// The op that writes the f32 master runs in f32 on the master, not the copy.
// CHECK: %[[W:.*]] = ml_program.global_load @w : tensor<16x8xf32>
// CHECK: %[[NEW:.*]] = mpc.sub %[[W]], %{{.*}} : tensor<16x8xf32>, tensor<16x8xf32>
// CHECK: ml_program.global_store @w = %[[NEW]] : tensor<16x8xf32>
// CHECK-NEXT: %[[LOW:.*]] = mpc.cast %[[NEW]] : tensor<16x8xf32> -> tensor<16x8xf16>
// CHECK-NEXT: ml_program.global_store @w_f16 = %[[LOW]] : tensor<16x8xf16>
func.func @manual_sgd(%x: tensor<4x16xf32>, %dw: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %w = ml_program.global_load @w : tensor<16x8xf32>
  %y = mpc.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32>
  %new = mpc.sub %w, %dw : tensor<16x8xf32>, tensor<16x8xf32>
  ml_program.global_store @w = %new : tensor<16x8xf32>
  return %y : tensor<4x8xf32>
}
