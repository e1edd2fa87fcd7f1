// RUN: mpc-opt %s --mpc-graph-summary -o /dev/null | FileCheck %s

// Parameters are the globals no function writes; @running_mean is state.
// 4x8 f32 + 8 f32 = 40 elements, 160 bytes; 4x8 f16 = 64 bytes.
// CHECK: module: 3 parameters, 72 elements, 224 bytes; 1 state globals, 32 bytes
// CHECK-NEXT: parameters f32: 2, 160 bytes
// CHECK-NEXT: parameters f16: 1, 64 bytes
// CHECK-NEXT: func @f: 7 ops
// CHECK-NEXT: ml_program.global_load 3
// CHECK-NEXT: func.return 1
// CHECK-NEXT: ml_program.global_store 1
// CHECK-NEXT: mpc.add 1
// CHECK-NEXT: mpc.matmul 1
ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<4x8xf32>
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @w16(#mpc.init<zeros>) : tensor<4x8xf16>
ml_program.global private mutable @running_mean(#mpc.init<zeros>) : tensor<8xf32>

func.func @f(%x: tensor<2x4xf32>) -> tensor<2x8xf32> {
  %w = ml_program.global_load @w : tensor<4x8xf32>
  %b = ml_program.global_load @b : tensor<8xf32>
  %rm = ml_program.global_load @running_mean : tensor<8xf32>
  %0 = mpc.matmul %x, %w : tensor<2x4xf32>, tensor<4x8xf32>
  %1 = mpc.add %0, %b : tensor<2x8xf32>, tensor<8xf32>
  ml_program.global_store @running_mean = %b : tensor<8xf32>
  return %1 : tensor<2x8xf32>
}
