// RUN: mpc-opt %s -split-input-file --mpc-fuse | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse=weight-grad-sums=false | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse=report=- -o /dev/null | FileCheck %s --check-prefix=REPORT

// A layer norm's gamma and beta gradients each summed into an accumulator
// (a micro-batch of gradient accumulation): the accumulators become the
// backward's addends, and the adds go. The accumulators' loads move up to
// the backward (no store of them lies between).
// CHECK-LABEL: func @layer_norm
// CHECK-NEXT: %[[GA:.*]] = ml_program.global_load @gamma_acc
// CHECK-NEXT: %[[BA:.*]] = ml_program.global_load @beta_acc
// CHECK-NEXT: %{{.*}}, %[[DG:.*]], %[[DB:.*]] = mpc.layer_norm_backward %arg0, %arg1, %arg2, %arg3, %arg4 gamma_addend(%[[GA]] : tensor<16xf32>) beta_addend(%[[BA]] : tensor<16xf32>) : tensor<8x16xf32>, tensor<8xf32>, tensor<16xf32>
// CHECK-NEXT: ml_program.global_store @gamma_acc = %[[DG]]
// CHECK-NEXT: ml_program.global_store @beta_acc = %[[DB]]
// CHECK-NOT: mpc.add
// REMARK: remark: fused: mpc.layer_norm_backward + mpc.add + mpc.add -> mpc.layer_norm_backward
// OFF-LABEL: func @layer_norm
// OFF: mpc.layer_norm_backward %arg0, %arg1, %arg2, %arg3, %arg4 :
// OFF: mpc.add
// OFF: mpc.add
// REPORT: "op": "mpc.layer_norm_backward"
// REPORT: "from": [
// REPORT-NEXT: "mpc.layer_norm_backward",
// REPORT-NEXT: "mpc.add",
// REPORT-NEXT: "mpc.add"
ml_program.global private mutable @gamma_acc(#mpc.init<zeros>) : tensor<16xf32>
ml_program.global private mutable @beta_acc(#mpc.init<zeros>) : tensor<16xf32>
func.func @layer_norm(%dy: tensor<8x16xf32>, %x: tensor<8x16xf32>, %mean: tensor<8xf32>, %rstd: tensor<8xf32>, %g: tensor<16xf32>) -> tensor<8x16xf32> {
  %dx, %dg, %db = mpc.layer_norm_backward %dy, %x, %mean, %rstd, %g : tensor<8x16xf32>, tensor<8xf32>, tensor<16xf32>
  %ga = ml_program.global_load @gamma_acc : tensor<16xf32>
  %sg = mpc.add %ga, %dg : tensor<16xf32>, tensor<16xf32>
  ml_program.global_store @gamma_acc = %sg : tensor<16xf32>
  %ba = ml_program.global_load @beta_acc : tensor<16xf32>
  %sb = mpc.add %db, %ba : tensor<16xf32>, tensor<16xf32>
  ml_program.global_store @beta_acc = %sb : tensor<16xf32>
  return %dx : tensor<8x16xf32>
}

// -----

// The fused residual norm's backward (f16 activations, f32 parameters, as
// at O2) likewise; here gamma's gradient is also read elsewhere, so only
// beta's sum folds.
// CHECK-LABEL: func @add_layer_norm
// CHECK: %{{.*}}, %{{.*}}, %[[DG:.*]], %[[DB:.*]] = mpc.add_layer_norm_backward %arg0, %arg1, %arg2, %arg3, %arg4 beta_addend(%arg6 : tensor<16xf32>) {dropout_p = 1.000000e-01 : f64, seed = 3 : i64}
// CHECK-NEXT: %[[S:.*]] = mpc.add %arg5, %[[DG]]
// CHECK-NEXT: return %{{.*}}, %[[S]], %[[DB]], %[[DG]]
// REMARK: remark: fused: mpc.add_layer_norm_backward + mpc.add -> mpc.add_layer_norm_backward
func.func @add_layer_norm(%dy: tensor<8x16xf16>, %s: tensor<8x16xf16>, %mean: tensor<8xf32>, %rstd: tensor<8xf32>, %g: tensor<16xf32>, %gacc: tensor<16xf32>, %bacc: tensor<16xf32>) -> (tensor<8x16xf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %dx, %dr, %dg, %db = mpc.add_layer_norm_backward %dy, %s, %mean, %rstd, %g {dropout_p = 0.1, seed = 3} : tensor<8x16xf16>, tensor<8xf32>, tensor<16xf32>
  %sg = mpc.add %gacc, %dg : tensor<16xf32>, tensor<16xf32>
  %sb = mpc.add %bacc, %db : tensor<16xf32>, tensor<16xf32>
  return %dx, %sg, %sb, %dg : tensor<8x16xf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// A batch norm + ReLU's backward (f16 activations, f32 parameters, the
// ReLU's mask formed from its beta, as at O2) likewise: both sums fold.
// CHECK-LABEL: func @batch_norm
// CHECK: %{{.*}}, %[[DG:.*]], %[[DB:.*]] = mpc.batch_norm_backward %arg0, %arg1, %arg2, %arg3, %arg4 beta(%arg5 : tensor<8xf32>) gamma_addend(%arg6 : tensor<8xf32>) beta_addend(%arg7 : tensor<8xf32>) {activation = "relu"} : tensor<2x4x4x8xf16>, tensor<8xf32>
// CHECK-NEXT: return %{{.*}}, %[[DG]], %[[DB]]
// REMARK: remark: fused: mpc.batch_norm_backward + mpc.add + mpc.add -> mpc.batch_norm_backward
// OFF-LABEL: func @batch_norm
// OFF: mpc.batch_norm_backward %arg0, %arg1, %arg2, %arg3, %arg4 beta(%arg5 : tensor<8xf32>) {activation = "relu"} :
// OFF: mpc.add
// OFF: mpc.add
// REPORT: "op": "mpc.batch_norm_backward"
// REPORT: "from": [
// REPORT-NEXT: "mpc.batch_norm_backward",
// REPORT-NEXT: "mpc.add",
// REPORT-NEXT: "mpc.add"
func.func @batch_norm(%dy: tensor<2x4x4x8xf16>, %x: tensor<2x4x4x8xf16>, %g: tensor<8xf32>, %mean: tensor<8xf32>, %invstd: tensor<8xf32>, %b: tensor<8xf32>, %gacc: tensor<8xf32>, %bacc: tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %dg, %db = mpc.batch_norm_backward %dy, %x, %g, %mean, %invstd beta(%b : tensor<8xf32>) {activation = "relu"} : tensor<2x4x4x8xf16>, tensor<8xf32>
  %sg = mpc.add %gacc, %dg : tensor<8xf32>, tensor<8xf32>
  %sb = mpc.add %db, %bacc : tensor<8xf32>, tensor<8xf32>
  return %dx, %sg, %sb : tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>
}

// -----

// An embedding's table gradient summed into its accumulator: the rows the
// batch hits are added to the accumulator, padding row and all.
// CHECK-LABEL: func @embedding
// CHECK-NEXT: %[[T:.*]] = mpc.embedding_backward %arg0, %arg1 addend(%arg2) {padding_idx = 0 : i64} : tensor<4x8x32xf32>, tensor<4x8xi32> -> tensor<100x32xf32>
// CHECK-NEXT: return %[[T]]
// REMARK: remark: fused: mpc.embedding_backward + mpc.add -> mpc.embedding_backward
// OFF-LABEL: func @embedding
// OFF-NEXT: mpc.embedding_backward %arg0, %arg1 {padding_idx = 0 : i64}
// OFF-NEXT: mpc.add
// REPORT: "op": "mpc.embedding_backward"
// REPORT: "from": [
// REPORT-NEXT: "mpc.embedding_backward",
// REPORT-NEXT: "mpc.add"
func.func @embedding(%dy: tensor<4x8x32xf32>, %ids: tensor<4x8xi32>, %acc: tensor<100x32xf32>) -> tensor<100x32xf32> {
  %t = mpc.embedding_backward %dy, %ids {padding_idx = 0 : i64} : tensor<4x8x32xf32>, tensor<4x8xi32> -> tensor<100x32xf32>
  %s = mpc.add %t, %acc : tensor<100x32xf32>, tensor<100x32xf32>
  return %s : tensor<100x32xf32>
}

// -----

// What does not fold: an f16 table gradient widened before the add (the
// add's operand is the cast, not the gradient); a sum with a broadcast
// operand; a gradient added to itself; a gradient added to an accumulator
// loaded after a store to it that follows the gradient (the load cannot
// move up to the backward).
// CHECK-LABEL: func @not_summed
// CHECK-NEXT: mpc.embedding_backward %arg0, %arg1 :
// CHECK-NEXT: mpc.cast
// CHECK-NEXT: mpc.add
// CHECK-NEXT: mpc.layer_norm_backward %arg3, %arg4, %arg5, %arg6, %arg7 :
// CHECK-NEXT: mpc.add
// CHECK-NEXT: mpc.add
// CHECK-NEXT: %{{.*}}, %[[DG:.*]], %{{.*}} = mpc.layer_norm_backward %arg3, %arg4, %arg5, %arg6, %arg7 :
// CHECK-NEXT: ml_program.global_store @acc
// CHECK-NEXT: %[[A:.*]] = ml_program.global_load @acc
// CHECK-NEXT: mpc.add %[[A]], %[[DG]]
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<16xf32>
func.func @not_summed(%dy: tensor<4x8x32xf16>, %ids: tensor<4x8xi32>, %acc: tensor<100x32xf32>, %ldy: tensor<8x16xf32>, %x: tensor<8x16xf32>, %mean: tensor<8xf32>, %rstd: tensor<8xf32>, %g: tensor<16xf32>, %s: tensor<f32>, %z: tensor<16xf32>) -> (tensor<100x32xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %t = mpc.embedding_backward %dy, %ids : tensor<4x8x32xf16>, tensor<4x8xi32> -> tensor<100x32xf16>
  %w = mpc.cast %t : tensor<100x32xf16> -> tensor<100x32xf32>
  %st = mpc.add %acc, %w : tensor<100x32xf32>, tensor<100x32xf32>
  %dx, %dg, %db = mpc.layer_norm_backward %ldy, %x, %mean, %rstd, %g : tensor<8x16xf32>, tensor<8xf32>, tensor<16xf32>
  %sg = mpc.add %dg, %s : tensor<16xf32>, tensor<f32>
  %sb = mpc.add %db, %db : tensor<16xf32>, tensor<16xf32>
  %dx2, %dg2, %db2 = mpc.layer_norm_backward %ldy, %x, %mean, %rstd, %g : tensor<8x16xf32>, tensor<8xf32>, tensor<16xf32>
  ml_program.global_store @acc = %z : tensor<16xf32>
  %a = ml_program.global_load @acc : tensor<16xf32>
  %sa = mpc.add %a, %dg2 : tensor<16xf32>, tensor<16xf32>
  return %st, %sg, %sb, %sa : tensor<100x32xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
