// The training family: the multi-tensor unscale (pointer arrays on the
// stack), the loss-scale update and the optimizer updates work in place on
// the globals their state was loaded from: stores of their results copy
// nothing, and the low-precision copy is written straight into its global.
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory --mpc-lower-to-runtime | FileCheck %s

ml_program.global private mutable @scale(dense<65536.0> : tensor<f32>) : tensor<f32>
ml_program.global private mutable @growth(dense<0> : tensor<i32>) : tensor<i32>
ml_program.global private mutable @hyst(dense<2> : tensor<i32>) : tensor<i32>

// dtypes f16 (0) and bf16 (1); 32 and 8 elements.
// CHECK-DAG: llvm.mlir.global internal constant @[[DT:.*]](dense<[0, 1]> : tensor<2xi32>)
// CHECK-DAG: llvm.mlir.global internal constant @[[SZ:.*]](dense<[32, 8]> : tensor<2xi64>)
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[ARENA:[^:]*]]: !llvm.ptr, %[[STATE:[^:]*]]: !llvm.ptr
// The scale is the first global (offset 0), the trackers at 256 and 512.
// CHECK-DAG: %[[GROWTH:.*]] = llvm.getelementptr %[[STATE]][%c256_i64]
// CHECK-DAG: %[[HYST:.*]] = llvm.getelementptr %[[STATE]][%c512_i64]
// CHECK: %[[GRADS:.*]] = llvm.alloca %c2_i64{{(_[0-9]+)?}} x !llvm.ptr
// CHECK: llvm.store %{{.*}}, %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK: llvm.store %{{.*}}, %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK: %[[OUTS:.*]] = llvm.alloca %c2_i64{{(_[0-9]+)?}} x !llvm.ptr
// CHECK: call @mpcrt_unscale_and_check(%[[STATE]], %c2_i64{{(_[0-9]+)?}}, %{{.*}}, %[[GRADS]], %{{.*}}, %[[OUTS]], %[[INF:[^)]*]])
// CHECK: call @mpcrt_update_loss_scale(%[[STATE]], %[[GROWTH]], %[[HYST]], %[[INF]], %cst, %cst_{{[0-9]+}}, %c2000_i64, %c2_i64{{(_[0-9]+)?}}, %cst_{{[0-9]+}}, %cst_{{[0-9]+}})
// The stores write back in place: no copy.
// CHECK-NOT: call @mpcrt_copy(%[[STATE]]
// CHECK: return
func.func @train_step(%d0: tensor<4x8xf16>, %d1: tensor<8xbf16>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %scale = ml_program.global_load @scale : tensor<f32>
  %growth = ml_program.global_load @growth : tensor<i32>
  %hyst = ml_program.global_load @hyst : tensor<i32>
  %g:2, %inf = mpc.unscale_and_check %scale, %d0, %d1 : tensor<4x8xf16>, tensor<8xbf16>
  %s, %gt, %ht = mpc.update_loss_scale %scale, %growth, %hyst, %inf {hysteresis = 2}
  ml_program.global_store @scale = %s : tensor<f32>
  ml_program.global_store @growth = %gt : tensor<i32>
  ml_program.global_store @hyst = %ht : tensor<i32>
  return %g#0, %g#1 : tensor<4x8xf32>, tensor<8xf32>
}

// -----

ml_program.global private mutable @w(#mpc.init<zeros>) : tensor<4x8xf32>
ml_program.global private mutable @w_f16 : tensor<4x8xf16> {mpc.master = @w}
ml_program.global private mutable @m(#mpc.init<zeros>) : tensor<4x8xf32>
ml_program.global private mutable @v(#mpc.init<zeros>) : tensor<4x8xf32>
ml_program.global private @lr(dense<0.001> : tensor<f32>) : tensor<f32>
ml_program.global private mutable @step(dense<1> : tensor<i32>) : tensor<i32>

// f32 master, f16 gradient; the copy (f16, dtype 0) goes to @w_f16 (at
// offset 256); AdamW (decoupled), bias correction on.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[ARENA:[^:]*]]: !llvm.ptr, %[[STATE:[^:]*]]: !llvm.ptr
// CHECK-DAG: %[[STEP:.*]] = llvm.getelementptr %[[STATE]][%c1280_i64]
// CHECK-DAG: %[[LR:.*]] = llvm.getelementptr %[[STATE]][%c1024_i64]
// CHECK-DAG: %[[V:.*]] = llvm.getelementptr %[[STATE]][%c768_i64]
// CHECK-DAG: %[[M:.*]] = llvm.getelementptr %[[STATE]][%c512_i64]
// CHECK-DAG: %[[COPY:.*]] = llvm.getelementptr %[[STATE]][%c256_i64]
// CHECK: %[[NOINF:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[NOSCALE:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @mpcrt_adam_update_f32_f16(%[[STATE]], %{{.*}}, %[[M]], %[[V]], %[[LR]], %[[STEP]], %[[NOINF]], %[[NOSCALE]], %c0_i32, %[[COPY]], %c32_i64, %cst, %cst_{{[0-9]+}}, %cst_{{[0-9]+}}, %cst_{{[0-9]+}}, %c1_i32{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}})
// CHECK-NOT: call @mpcrt_copy(%[[STATE]]
// CHECK-NOT: call @mpcrt_copy(%[[COPY]]
// CHECK: return
// The copy starts as its master: f32 (2) at 0 to f16 (0) at 256, 32
// elements, after the initializers (and again after --init in the runner).
// CHECK-LABEL: func.func @mpc_init_globals(
// CHECK: call @mpc_refresh_copies(%arg0)
// CHECK-LABEL: func.func @mpc_refresh_copies(
// CHECK: %[[TO:.*]] = llvm.getelementptr %arg0[%c256_i64]
// CHECK: call @mpcrt_cast(%c2_i32, %arg0, %c0_i32, %[[TO]], %c32_i64)
func.func @train_step(%g: tensor<4x8xf16>) {
  %w = ml_program.global_load @w : tensor<4x8xf32>
  %m = ml_program.global_load @m : tensor<4x8xf32>
  %v = ml_program.global_load @v : tensor<4x8xf32>
  %lr = ml_program.global_load @lr : tensor<f32>
  %step = ml_program.global_load @step : tensor<i32>
  %0:4 = mpc.adam_update %w, %g, %m, %v lr(%lr) step(%step) copy(f16) {decoupled, weight_decay = 0.01} : tensor<4x8xf32>, tensor<4x8xf16>
  ml_program.global_store @w = %0#0 : tensor<4x8xf32>
  ml_program.global_store @m = %0#1 : tensor<4x8xf32>
  ml_program.global_store @v = %0#2 : tensor<4x8xf32>
  ml_program.global_store @w_f16 = %0#3 : tensor<4x8xf16>
  return
}

// -----

ml_program.global private mutable @w(#mpc.init<zeros>) : tensor<16xf32>
ml_program.global private @lr(dense<0.1> : tensor<f32>) : tensor<f32>

// Plain SGD: no momentum buffer, no copy (null pointers), copy dtype f32 (2).
// CHECK-LABEL: func.func @train_step(
// CHECK: call @mpcrt_sgd_update_f32_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c2_i32, %{{.*}}, %c16_i64, %cst, %cst{{(_[0-9]+)?}}, %c0_i32, %cst{{(_[0-9]+)?}})
func.func @train_step(%g: tensor<16xf32>) {
  %w = ml_program.global_load @w : tensor<16xf32>
  %lr = ml_program.global_load @lr : tensor<f32>
  %0 = mpc.sgd_update %w, %g lr(%lr) : tensor<16xf32>, tensor<16xf32>
  ml_program.global_store @w = %0 : tensor<16xf32>
  return
}

// -----

// Without a condition the skip pointer is null.
// CHECK-LABEL: func.func @increment(
// CHECK: %[[SLOT:.*]] = llvm.getelementptr %arg2[%c1_i64]
// CHECK: %[[INF:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @mpcrt_increment_i32(%{{.*}}, %arg0, %[[NULL]])
// CHECK: call @mpcrt_increment_i32(%arg0, %{{.*}}, %[[INF]])
func.func @increment(%t: tensor<i32>, %inf: tensor<i1>) -> tensor<i32> {
  %0 = mpc.increment %t : tensor<i32>
  %1 = mpc.increment %0 unless(%inf) : tensor<i32>
  return %1 : tensor<i32>
}

// -----

// Cosine (2), base 0.1, 5 warm-up steps of 50.
// CHECK-LABEL: func.func @schedule(
// CHECK: call @mpcrt_lr_schedule(%{{.*}}, %arg0, %c2_i32, %cst, %c5_i64, %c50_i64, %cst{{(_[0-9]+)?}}, %cst{{.*}}, %c0_i64{{.*}}, %cst{{.*}}, %cst{{.*}}, %cst{{.*}}, %c0_i32{{.*}})
func.func @schedule(%t: tensor<i32>) -> tensor<f32> {
  %0 = mpc.lr_schedule %t {kind = "cosine", base = 0.1, warmup = 5, total = 50}
  return %0 : tensor<f32>
}

// -----

// OneCycleLR (3): every parameter passed, in mpcrt.h's order.
// CHECK-LABEL: func.func @one_cycle(
// CHECK-DAG: %[[KIND:.*]] = arith.constant 3 : i32
// CHECK-DAG: %[[TOTAL:.*]] = arith.constant 50 : i64
// CHECK-DAG: %[[GAMMA:.*]] = arith.constant 7.500000e-01 : f64
// CHECK-DAG: %[[PCT:.*]] = arith.constant 2.500000e-01 : f64
// CHECK-DAG: %[[DIV:.*]] = arith.constant 2.000000e+01 : f64
// CHECK-DAG: %[[FINAL:.*]] = arith.constant 1.000000e+03 : f64
// CHECK-DAG: %[[THREE:.*]] = arith.constant 1 : i32
// CHECK: call @mpcrt_lr_schedule(%{{.*}}, %arg0, %[[KIND]], %{{.*}}, %{{.*}}, %[[TOTAL]], %{{.*}}, %[[GAMMA]], %{{.*}}, %[[PCT]], %[[DIV]], %[[FINAL]], %[[THREE]])
func.func @one_cycle(%t: tensor<i32>) -> tensor<f32> {
  %0 = mpc.lr_schedule %t {kind = "one_cycle", base = 0.1, total = 50, pct_start = 0.25, div_factor = 20.0, final_div_factor = 1000.0, gamma = 0.75, three_phase = true}
  return %0 : tensor<f32>
}

// -----

// StepLR (4) and ExponentialLR (5).
// CHECK-LABEL: func.func @step_decay(
// CHECK-DAG: %[[KIND:.*]] = arith.constant 4 : i32
// CHECK-DAG: %[[SIZE:.*]] = arith.constant 30 : i64
// CHECK: call @mpcrt_lr_schedule(%{{.*}}, %arg0, %[[KIND]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SIZE]],
func.func @step_decay(%t: tensor<i32>) -> tensor<f32> {
  %0 = mpc.lr_schedule %t {kind = "step", base = 0.1, step_size = 30, gamma = 0.5}
  return %0 : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @exponential(
// CHECK: %[[KIND:.*]] = arith.constant 5 : i32
// CHECK: call @mpcrt_lr_schedule(%{{.*}}, %arg0, %[[KIND]],
func.func @exponential(%t: tensor<i32>) -> tensor<f32> {
  %0 = mpc.lr_schedule %t {kind = "exponential", base = 0.1, gamma = 0.9}
  return %0 : tensor<f32>
}

// -----

// Unscaled gradients nobody reads get no buffer: the kernel only checks
// (null output pointers), and the arena holds just found_inf.
// CHECK-LABEL: func.func @check_only(
// CHECK-SAME: attributes {mpc.arena_bytes = 1 : i64}
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: llvm.alloca
// CHECK: %[[OUTS:.*]] = llvm.alloca
// CHECK: llvm.store %[[NULL]], %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK: call @mpcrt_unscale_and_check(%{{.*}}, %c1_i64{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[OUTS]], %arg0)
func.func @check_only(%s: tensor<f32>, %g: tensor<4x8xf16>) -> tensor<i1> {
  %u, %inf = mpc.unscale_and_check %s, %g : tensor<4x8xf16>
  return %inf : tensor<i1>
}

// -----

// Clipping: one call over all gradients, max_norm as a double, writing the
// factor, the norm and found_inf.
// CHECK-LABEL: func.func @clip(
// CHECK: %[[MAX:.*]] = arith.constant 2.500000e-01 : f64
// CHECK: call @mpcrt_clip_grad_norm(%{{.*}}, %c2_i64{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MAX]], %arg0, %{{.*}}, %{{.*}})
func.func @clip(%s: tensor<f32>, %g0: tensor<4x8xf16>, %g1: tensor<8xf32>) -> (tensor<f32>, tensor<f32>, tensor<i1>) {
  %inv, %norm, %inf = mpc.clip_grad_norm %s, %g0, %g1 {max_norm = 0.25} : tensor<4x8xf16>, tensor<8xf32>
  return %inv, %norm, %inf : tensor<f32>, tensor<f32>, tensor<i1>
}

// -----

// Gradient statistics: one call over all gradients (dtypes f32 (2) and
// bf16 (1)), written into the global they are stored to.
// CHECK-DAG: llvm.mlir.global internal constant @[[DT:.*]](dense<[2, 1]> : tensor<2xi32>)
// CHECK-DAG: llvm.mlir.global internal constant @[[SZ:.*]](dense<[32, 8]> : tensor<2xi64>)
// CHECK-LABEL: func.func @stats(
// CHECK-SAME: %[[ARENA:[^:]*]]: !llvm.ptr, %[[STATE:[^:]*]]: !llvm.ptr
// CHECK: %[[GRADS:.*]] = llvm.alloca %c2_i64{{(_[0-9]+)?}} x !llvm.ptr
// CHECK: %[[SIZES:.*]] = llvm.mlir.addressof @[[SZ]]
// CHECK: call @mpcrt_grad_stats(%{{.*}}, %c2_i64{{(_[0-9]+)?}}, %{{.*}}, %[[GRADS]], %[[SIZES]], %[[OUT:[^)]*]])
// CHECK: call @mpcrt_copy(%[[STATE]], %[[OUT]], %c32_i64)
ml_program.global private mutable @grad_stats(dense<0> : tensor<4xi64>) : tensor<4xi64>
func.func @stats(%s: tensor<f32>, %g0: tensor<4x8xf32>, %g1: tensor<8xbf16>) {
  %0 = mpc.grad_stats %s, %g0, %g1 : tensor<4x8xf32>, tensor<8xbf16>
  ml_program.global_store @grad_stats = %0 : tensor<4xi64>
  return
}
