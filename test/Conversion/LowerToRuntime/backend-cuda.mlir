// backend=cuda: tensor constants are copied into the state buffer (device
// memory) by mpc_init_globals, after the globals and the step counter, and
// kernels read them there; the descriptor's state_bytes counts them.
// RUN: mpc-opt %s --mpc-plan-memory --mpc-lower-to-runtime=backend=cuda | FileCheck %s
// RUN: mpc-opt %s --mpc-plan-memory --mpc-lower-to-runtime | FileCheck %s --check-prefix=CPU
// RUN: not mpc-opt %s --mpc-plan-memory --mpc-lower-to-runtime=backend=tpu 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: mpc-lower-to-runtime: unknown backend 'tpu' (expected cpu or cuda)

// CHECK: llvm.mlir.global internal constant @[[C:__mpc_const_[0-9]+]](dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>)
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[ARENA:[^:]*]]: !llvm.ptr, %[[STATE:[^:]*]]: !llvm.ptr
// CHECK: %[[CP:.*]] = llvm.getelementptr %[[STATE]][%c512_i64]
// CHECK-NOT: llvm.mlir.addressof @[[C]]
// CHECK: call @mpcrt_binary_f32(%c0_i32, %{{.*}}, %{{.*}}, %[[CP]],
// CHECK-LABEL: func.func @mpc_init_globals(
// CHECK: call @mpcrt_zero
// CHECK: %[[DST:.*]] = llvm.getelementptr %arg0[%c512_i64{{(_[0-9]+)?}}]
// CHECK: %[[SRC:.*]] = llvm.mlir.addressof @[[C]]
// CHECK: call @mpcrt_copy(%[[DST]], %[[SRC]], %c16_i64{{(_[0-9]+)?}})
// CHECK: \22state_bytes\22:768

// With the default backend the kernels read the program's constant.
// CPU-LABEL: func.func @train_step(
// CPU: %[[CP:.*]] = llvm.mlir.addressof @__mpc_const_
// CPU: call @mpcrt_binary_f32(%c0_i32, %{{.*}}, %{{.*}}, %[[CP]],
// CPU: \22state_bytes\22:512
ml_program.global private mutable @w(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = mpc.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %w = ml_program.global_load @w : tensor<4xf32>
  %0 = mpc.add %x, %c : tensor<4xf32>, tensor<4xf32>
  %1 = mpc.mul %0, %w : tensor<4xf32>, tensor<4xf32>
  return %1 : tensor<4xf32>
}
