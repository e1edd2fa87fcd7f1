// Optimizer updates that share their rate, step, skip flag, unscale factor
// and hyperparameters become one mpcrt_adam_update_multi (or
// mpcrt_sgd_update_multi) call, one launch on CUDA for all of them,
// wherever they are in a run of updates, loads and stores of their
// results; different hyperparameters make another group (LAMB groups with
// LAMB only), and any other op ends the run, so nothing can
// read a parameter before its update.
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory --mpc-lower-to-runtime | FileCheck %s

ml_program.global private mutable @a(#mpc.init<zeros>) : tensor<4x8xf32>
ml_program.global private mutable @a_f16 : tensor<4x8xf16> {mpc.master = @a}
ml_program.global private mutable @am(#mpc.init<zeros>) : tensor<4x8xf32>
ml_program.global private mutable @av(#mpc.init<zeros>) : tensor<4x8xf32>
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @bm(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @bv(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @c(#mpc.init<zeros>) : tensor<3xf32>
ml_program.global private mutable @cm(#mpc.init<zeros>) : tensor<3xf32>
ml_program.global private mutable @cv(#mpc.init<zeros>) : tensor<3xf32>
ml_program.global private mutable @d(#mpc.init<zeros>) : tensor<5xf32>
ml_program.global private mutable @dm(#mpc.init<zeros>) : tensor<5xf32>
ml_program.global private mutable @dv(#mpc.init<zeros>) : tensor<5xf32>
ml_program.global private mutable @e(#mpc.init<zeros>) : tensor<6xf32>
ml_program.global private mutable @em(#mpc.init<zeros>) : tensor<6xf32>
ml_program.global private mutable @ev(#mpc.init<zeros>) : tensor<6xf32>
ml_program.global private @lr(dense<0.001> : tensor<f32>) : tensor<f32>
ml_program.global private mutable @step(dense<1> : tensor<i32>) : tensor<i32>

// @a (f32 master, f16 gradient, f16 copy) and @c (f32, f32, no copy) share
// everything: one call of 2 tensors, parameter dtypes f32 (2), gradient
// dtypes f16 (0) and f32, copy dtypes f16 and f32 (the same constant), 32
// and 3 elements. @b has no weight decay (a group of its own: the
// single-tensor call), @d is LAMB (a group of one), @e's beta2 differs
// (another single call).
// CHECK-DAG: llvm.mlir.global internal constant @[[PD:.*]](dense<2> : tensor<2xi32>)
// CHECK-DAG: llvm.mlir.global internal constant @[[GD:.*]](dense<[0, 2]> : tensor<2xi32>)
// CHECK-DAG: llvm.mlir.global internal constant @[[SZ:.*]](dense<[32, 3]> : tensor<2xi64>)
// CHECK-LABEL: func.func @train_step(
// The held groups after the run, in the order of their first update.
// CHECK: %[[PDS:.*]] = llvm.mlir.addressof @[[PD]]
// CHECK: %[[GDS:.*]] = llvm.mlir.addressof @[[GD]]
// CHECK: %[[P:.*]] = llvm.alloca %c2_i64{{(_[0-9]+)?}} x !llvm.ptr
// CHECK: %[[CDS:.*]] = llvm.mlir.addressof @[[GD]]
// CHECK: %[[SZS:.*]] = llvm.mlir.addressof @[[SZ]]
// CHECK: call @mpcrt_adam_update_multi(%c2_i64{{(_[0-9]+)?}}, %[[PDS]], %[[GDS]], %[[P]], %{{.*}}, %{{.*}}, %{{.*}}, %[[CDS]], %{{.*}}, %[[SZS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %cst{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}})
// CHECK: call @mpcrt_adam_update_f32_f32({{.*}}, %c8_i64, {{.*}}, %c0_i32{{(_[0-9]+)?}})
// CHECK: call @mpcrt_adam_update_f32_f32({{.*}}, %c5_i64, {{.*}}, %c1_i32{{(_[0-9]+)?}})
// CHECK: call @mpcrt_adam_update_f32_f32({{.*}}, %c6_i64, {{.*}}, %c0_i32{{(_[0-9]+)?}})
// CHECK-NOT: call @mpcrt_adam_update
// CHECK: return
func.func @train_step(%ga: tensor<4x8xf16>, %gb: tensor<8xf32>, %gc: tensor<3xf32>, %gd: tensor<5xf32>, %ge: tensor<6xf32>) {
  %lr = ml_program.global_load @lr : tensor<f32>
  %step = ml_program.global_load @step : tensor<i32>
  %a = ml_program.global_load @a : tensor<4x8xf32>
  %am = ml_program.global_load @am : tensor<4x8xf32>
  %av = ml_program.global_load @av : tensor<4x8xf32>
  %0:4 = mpc.adam_update %a, %ga, %am, %av lr(%lr) step(%step) copy(f16) {decoupled, weight_decay = 0.01} : tensor<4x8xf32>, tensor<4x8xf16>
  ml_program.global_store @a = %0#0 : tensor<4x8xf32>
  ml_program.global_store @am = %0#1 : tensor<4x8xf32>
  ml_program.global_store @av = %0#2 : tensor<4x8xf32>
  ml_program.global_store @a_f16 = %0#3 : tensor<4x8xf16>
  %b = ml_program.global_load @b : tensor<8xf32>
  %bm = ml_program.global_load @bm : tensor<8xf32>
  %bv = ml_program.global_load @bv : tensor<8xf32>
  %1:3 = mpc.adam_update %b, %gb, %bm, %bv lr(%lr) step(%step) {decoupled} : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @b = %1#0 : tensor<8xf32>
  ml_program.global_store @bm = %1#1 : tensor<8xf32>
  ml_program.global_store @bv = %1#2 : tensor<8xf32>
  %d = ml_program.global_load @d : tensor<5xf32>
  %dm = ml_program.global_load @dm : tensor<5xf32>
  %dv = ml_program.global_load @dv : tensor<5xf32>
  %3:3 = mpc.adam_update %d, %gd, %dm, %dv lr(%lr) step(%step) {decoupled, lamb, weight_decay = 0.01} : tensor<5xf32>, tensor<5xf32>
  ml_program.global_store @d = %3#0 : tensor<5xf32>
  ml_program.global_store @dm = %3#1 : tensor<5xf32>
  ml_program.global_store @dv = %3#2 : tensor<5xf32>
  %c = ml_program.global_load @c : tensor<3xf32>
  %cm = ml_program.global_load @cm : tensor<3xf32>
  %cv = ml_program.global_load @cv : tensor<3xf32>
  %2:3 = mpc.adam_update %c, %gc, %cm, %cv lr(%lr) step(%step) {decoupled, weight_decay = 0.01} : tensor<3xf32>, tensor<3xf32>
  ml_program.global_store @c = %2#0 : tensor<3xf32>
  ml_program.global_store @cm = %2#1 : tensor<3xf32>
  ml_program.global_store @cv = %2#2 : tensor<3xf32>
  %e = ml_program.global_load @e : tensor<6xf32>
  %em = ml_program.global_load @em : tensor<6xf32>
  %ev = ml_program.global_load @ev : tensor<6xf32>
  %4:3 = mpc.adam_update %e, %ge, %em, %ev lr(%lr) step(%step) {beta2 = 0.98, decoupled, weight_decay = 0.01} : tensor<6xf32>, tensor<6xf32>
  ml_program.global_store @e = %4#0 : tensor<6xf32>
  ml_program.global_store @em = %4#1 : tensor<6xf32>
  ml_program.global_store @ev = %4#2 : tensor<6xf32>
  return
}

// -----

ml_program.global private mutable @a(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @am(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @av(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @bm(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @bv(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private @lr(dense<0.001> : tensor<f32>) : tensor<f32>
ml_program.global private mutable @step(dense<1> : tensor<i32>) : tensor<i32>

// An op that is neither an update nor a load or store of one ends the
// run: the first update is called before it reads the new parameter, the
// second after, each alone.
// CHECK-LABEL: func.func @train_step(
// CHECK: call @mpcrt_adam_update_f32_f32(
// CHECK: call @mpcrt_binary_f32(
// CHECK: call @mpcrt_adam_update_f32_f32(
// CHECK-NOT: call @mpcrt_adam_update_multi
// CHECK: return
func.func @train_step(%ga: tensor<8xf32>, %gb: tensor<8xf32>) -> tensor<8xf32> {
  %lr = ml_program.global_load @lr : tensor<f32>
  %step = ml_program.global_load @step : tensor<i32>
  %a = ml_program.global_load @a : tensor<8xf32>
  %am = ml_program.global_load @am : tensor<8xf32>
  %av = ml_program.global_load @av : tensor<8xf32>
  %0:3 = mpc.adam_update %a, %ga, %am, %av lr(%lr) step(%step) : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @a = %0#0 : tensor<8xf32>
  ml_program.global_store @am = %0#1 : tensor<8xf32>
  ml_program.global_store @av = %0#2 : tensor<8xf32>
  %sum = mpc.add %0#0, %ga : tensor<8xf32>, tensor<8xf32>
  %b = ml_program.global_load @b : tensor<8xf32>
  %bm = ml_program.global_load @bm : tensor<8xf32>
  %bv = ml_program.global_load @bv : tensor<8xf32>
  %1:3 = mpc.adam_update %b, %gb, %bm, %bv lr(%lr) step(%step) : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @b = %1#0 : tensor<8xf32>
  ml_program.global_store @bm = %1#1 : tensor<8xf32>
  ml_program.global_store @bv = %1#2 : tensor<8xf32>
  return %sum : tensor<8xf32>
}

// -----

ml_program.global private mutable @a(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @am(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<4xf32>
ml_program.global private mutable @bm(#mpc.init<zeros>) : tensor<4xf32>
ml_program.global private mutable @c(#mpc.init<zeros>) : tensor<2xf32>
ml_program.global private @lr(dense<0.1> : tensor<f32>) : tensor<f32>

// SGD: @a and @b (momentum buffers, 8 and 4 elements) in one call; @c has
// no momentum buffer, so it is a group of its own.
// CHECK-DAG: llvm.mlir.global internal constant @[[SZ:.*]](dense<[8, 4]> : tensor<2xi64>)
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[SZS:.*]] = llvm.mlir.addressof @[[SZ]]
// CHECK: call @mpcrt_sgd_update_multi(%c2_i64{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SZS]], %{{.*}}, %{{.*}}, %{{.*}}, %cst{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}})
// CHECK: call @mpcrt_sgd_update_f32_f32({{.*}}, %c2_i64{{(_[0-9]+)?}},
// CHECK-NOT: call @mpcrt_sgd_update
// CHECK: return
func.func @train_step(%ga: tensor<8xf32>, %gb: tensor<4xf32>, %gc: tensor<2xf32>) {
  %lr = ml_program.global_load @lr : tensor<f32>
  %a = ml_program.global_load @a : tensor<8xf32>
  %am = ml_program.global_load @am : tensor<8xf32>
  %0:2 = mpc.sgd_update %a, %ga lr(%lr) momentum_buffer(%am) {momentum = 0.9} : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @a = %0#0 : tensor<8xf32>
  ml_program.global_store @am = %0#1 : tensor<8xf32>
  %c = ml_program.global_load @c : tensor<2xf32>
  %1 = mpc.sgd_update %c, %gc lr(%lr) : tensor<2xf32>, tensor<2xf32>
  ml_program.global_store @c = %1 : tensor<2xf32>
  %b = ml_program.global_load @b : tensor<4xf32>
  %bm = ml_program.global_load @bm : tensor<4xf32>
  %2:2 = mpc.sgd_update %b, %gb lr(%lr) momentum_buffer(%bm) {momentum = 0.9} : tensor<4xf32>, tensor<4xf32>
  ml_program.global_store @b = %2#0 : tensor<4xf32>
  ml_program.global_store @bm = %2#1 : tensor<4xf32>
  return
}

// -----

ml_program.global private mutable @a(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @am(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @av(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<4xf32>
ml_program.global private mutable @bm(#mpc.init<zeros>) : tensor<4xf32>
ml_program.global private mutable @bv(#mpc.init<zeros>) : tensor<4xf32>
ml_program.global private @lr(dense<0.001> : tensor<f32>) : tensor<f32>
ml_program.global private mutable @step(dense<1> : tensor<i32>) : tensor<i32>

// Two LAMB updates: one multi-tensor call with its lamb flag (1).
// CHECK-LABEL: func.func @train_step(
// CHECK: call @mpcrt_adam_update_multi(%c2_i64{{(_[0-9]+)?}}, {{.*}}, %c1_i32{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}})
// CHECK-NOT: call @mpcrt_adam_update
// CHECK: return
func.func @train_step(%ga: tensor<8xf32>, %gb: tensor<4xf32>) {
  %lr = ml_program.global_load @lr : tensor<f32>
  %step = ml_program.global_load @step : tensor<i32>
  %a = ml_program.global_load @a : tensor<8xf32>
  %am = ml_program.global_load @am : tensor<8xf32>
  %av = ml_program.global_load @av : tensor<8xf32>
  %0:3 = mpc.adam_update %a, %ga, %am, %av lr(%lr) step(%step) {decoupled, lamb} : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @a = %0#0 : tensor<8xf32>
  ml_program.global_store @am = %0#1 : tensor<8xf32>
  ml_program.global_store @av = %0#2 : tensor<8xf32>
  %b = ml_program.global_load @b : tensor<4xf32>
  %bm = ml_program.global_load @bm : tensor<4xf32>
  %bv = ml_program.global_load @bv : tensor<4xf32>
  %1:3 = mpc.adam_update %b, %gb, %bm, %bv lr(%lr) step(%step) {decoupled, lamb} : tensor<4xf32>, tensor<4xf32>
  ml_program.global_store @b = %1#0 : tensor<4xf32>
  ml_program.global_store @bm = %1#1 : tensor<4xf32>
  ml_program.global_store @bv = %1#2 : tensor<4xf32>
  return
}

// -----

ml_program.global private mutable @a(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<4xf32>
ml_program.global private @lr(dense<0.1> : tensor<f32>) : tensor<f32>
ml_program.global private mutable @mpc_numerics_first(dense<0> : tensor<i32>) : tensor<i32>
ml_program.global private mutable @mpc_numerics_amax(dense<0.0> : tensor<5x2xf32>) : tensor<5x2xf32>
ml_program.global private mutable @mpc_numerics_counts(dense<0> : tensor<5x4xi64>) : tensor<5x4xi64>

// Numerics checks (--mpc-check-numerics) do not end a run: held with it,
// the values the updates do not make (@b's state, loaded before its
// update, op 3) are checked in one call before the updates, the updates'
// results (ops 2 and 4) in one call after them; a check before the run
// (ops 0 and 1) stays where it is.
// CHECK-DAG: llvm.mlir.global internal constant @[[FIRST:.*]](dense<[0, 1]> : tensor<2xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @[[BEFORE:.*]](dense<3> : tensor<1xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @[[AFTER:.*]](dense<[2, 4]> : tensor<2xi64>)
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[I0:.*]] = llvm.mlir.addressof @[[FIRST]]
// CHECK: call @mpcrt_check_numerics(%c2_i64{{(_[0-9]+)?}}, {{.*}}, %[[I0]],
// CHECK: %[[I1:.*]] = llvm.mlir.addressof @[[BEFORE]]
// CHECK: call @mpcrt_check_numerics(%c1_i64{{(_[0-9]+)?}}, {{.*}}, %[[I1]],
// CHECK: call @mpcrt_sgd_update_multi(%c2_i64
// CHECK: %[[I2:.*]] = llvm.mlir.addressof @[[AFTER]]
// CHECK: call @mpcrt_check_numerics(%c2_i64{{(_[0-9]+)?}}, {{.*}}, %[[I2]],
// CHECK-NOT: call @mpcrt_{{check|sgd}}
// CHECK: return
func.func @train_step(%ga: tensor<8xf32>, %gb: tensor<4xf32>) {
  %lr = ml_program.global_load @lr : tensor<f32>
  %a = ml_program.global_load @a : tensor<8xf32>
  mpc.check_numerics %lr, %a {indices = array<i64: 0, 1>} : tensor<f32>, tensor<8xf32>
  %0 = mpc.sgd_update %a, %ga lr(%lr) : tensor<8xf32>, tensor<8xf32>
  mpc.check_numerics %0 {indices = array<i64: 2>} : tensor<8xf32>
  ml_program.global_store @a = %0 : tensor<8xf32>
  %b = ml_program.global_load @b : tensor<4xf32>
  mpc.check_numerics %b {indices = array<i64: 3>} : tensor<4xf32>
  %1 = mpc.sgd_update %b, %gb lr(%lr) : tensor<4xf32>, tensor<4xf32>
  mpc.check_numerics %1 {indices = array<i64: 4>} : tensor<4xf32>
  ml_program.global_store @b = %1 : tensor<4xf32>
  return
}

// -----

ml_program.global private mutable @a(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @a_f16 : tensor<8xf16> {mpc.master = @a}
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<4xf32>
ml_program.global private @lr(dense<0.1> : tensor<f32>) : tensor<f32>
ml_program.global private mutable @mpc_numerics_first(dense<0> : tensor<i32>) : tensor<i32>
ml_program.global private mutable @mpc_numerics_amax(dense<0.0> : tensor<2x2xf32>) : tensor<2x2xf32>
ml_program.global private mutable @mpc_numerics_counts(dense<0> : tensor<2x4xi64>) : tensor<2x4xi64>

// A check of a global loaded after the run stored it ends the run: held,
// it would be checked before the updates, not where it was loaded.
// CHECK-LABEL: func.func @train_step(
// CHECK: call @mpcrt_sgd_update_f32_f32(
// CHECK: call @mpcrt_check_numerics(
// CHECK: call @mpcrt_sgd_update_f32_f32(
// CHECK-NOT: call @mpcrt_{{check|sgd}}
// CHECK: return
func.func @train_step(%ga: tensor<8xf32>, %gb: tensor<4xf32>) -> tensor<8xf16> {
  %lr = ml_program.global_load @lr : tensor<f32>
  %a = ml_program.global_load @a : tensor<8xf32>
  %0:2 = mpc.sgd_update %a, %ga lr(%lr) copy(f16) : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @a = %0#0 : tensor<8xf32>
  ml_program.global_store @a_f16 = %0#1 : tensor<8xf16>
  %copy = ml_program.global_load @a_f16 : tensor<8xf16>
  mpc.check_numerics %copy {indices = array<i64: 0>} : tensor<8xf16>
  %b = ml_program.global_load @b : tensor<4xf32>
  %1 = mpc.sgd_update %b, %gb lr(%lr) : tensor<4xf32>, tensor<4xf32>
  ml_program.global_store @b = %1 : tensor<4xf32>
  return %copy : tensor<8xf16>
}
