// Stores of zeros to globals that follow each other in the state (a
// step's resets of its gradient accumulators) are one mpcrt_zero over the
// run, the padding between them included; a store of anything else, a
// global that does not follow the run's last, or state guards (which the
// padding then holds) start another call.
// The plans share nothing, so that the stores stay where they are (a
// sharing plan moves stores of constants to the end of the function).
// RUN: mpc-opt %s --mpc-plan-memory=reuse=false --mpc-lower-to-runtime | FileCheck %s
// RUN: mpc-opt %s --mpc-plan-memory="reuse=false guard=64" --mpc-lower-to-runtime | FileCheck %s --check-prefix=GUARD

// @a (12 bytes at 0), @b (8 at 256) and @c (4 at 512) are one run of 516
// bytes; @d is stored a copy, and @e (after @d, not zeroed before it)
// starts a call of its own.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %{{[^:]*}}: !llvm.ptr, %[[S:[^:]*]]: !llvm.ptr
// CHECK-DAG: %[[E:.*]] = llvm.getelementptr %[[S]][%c1024_i64]
// CHECK: call @mpcrt_zero(%[[S]], %c516_i64{{(_[0-9]+)?}})
// CHECK-NEXT: arith.constant
// CHECK-NEXT: call @mpcrt_copy(
// CHECK: call @mpcrt_zero(%[[E]], %c16_i64{{(_[0-9]+)?}})
// CHECK-NOT: call @mpcrt_zero
// CHECK: return
// GUARD-LABEL: func.func @train_step(
// GUARD-COUNT-3: call @mpcrt_zero(
// GUARD: call @mpcrt_copy(
// GUARD: call @mpcrt_zero(
ml_program.global private mutable @a(#mpc.init<zeros>) : tensor<3xf32>
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<2xf32>
ml_program.global private mutable @c(#mpc.init<zeros>) : tensor<f32>
ml_program.global private mutable @d(#mpc.init<zeros>) : tensor<4xf32>
ml_program.global private mutable @e(#mpc.init<zeros>) : tensor<4xf32>
func.func @train_step(%x: tensor<4xf32>) {
  %za = mpc.constant dense<0.0> : tensor<3xf32>
  ml_program.global_store @a = %za : tensor<3xf32>
  %zb = mpc.constant dense<0.0> : tensor<2xf32>
  ml_program.global_store @b = %zb : tensor<2xf32>
  %zc = mpc.constant dense<0.0> : tensor<f32>
  ml_program.global_store @c = %zc : tensor<f32>
  ml_program.global_store @d = %x : tensor<4xf32>
  %ze = mpc.constant dense<0.0> : tensor<4xf32>
  ml_program.global_store @e = %ze : tensor<4xf32>
  return
}
