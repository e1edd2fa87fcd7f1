// --mpc-data-parallel=sync-batch-norm=true (PyTorch's SyncBatchNorm) on
// a classifier with batch norm: the step's batch norm and its backward get
// `sync`; the loss function and the evaluation step are left alone; the
// running statistics, the same on every rank, are not averaged at
// checkpoints (no mpc.rank_mean).
// RUN: mpc-opt %S/../../e2e/Inputs/eval-bn.txt --mpc-autodiff --mpc-optimizer --mpc-eval-step --mpc-data-parallel=sync-batch-norm=true | FileCheck %s
// Without the option nothing is synchronised.
// RUN: mpc-opt %S/../../e2e/Inputs/eval-bn.txt --mpc-autodiff --mpc-optimizer --mpc-data-parallel | FileCheck %s --check-prefix=OFF
// With gradient accumulation the micro-step's batch norm is synchronised
// too (each micro-batch normalises with every rank's micro-batches).
// RUN: mpc-opt %S/../../e2e/Inputs/eval-bn.txt --mpc-autodiff --mpc-accumulate-gradients=steps=2 --mpc-optimizer --mpc-data-parallel=sync-batch-norm=true | FileCheck %s --check-prefix=ACC
// A fused batch norm + ReLU keeps `sync` (--mpc-fuse changes the op in
// place), and so does the backward that forms the ReLU's mask again.
// RUN: sed 's/%2:2 = mpc.dropout %1#0/%r = mpc.relu %1#0 : tensor<4x5xf32>\n  %2:2 = mpc.dropout %r/' %S/../../e2e/Inputs/eval-bn.txt > %t.relu.mlir
// RUN: mpc-opt %t.relu.mlir --mpc-autodiff --mpc-optimizer --mpc-data-parallel=sync-batch-norm=true --mpc-fuse | FileCheck %s --check-prefix=FUSED
// Both backends call the synchronised kernels.
// RUN: mpc-opt %S/../../e2e/Inputs/eval-bn.txt --mpc-autodiff --mpc-optimizer --mpc-data-parallel=sync-batch-norm=true --mpc-plan-memory --mpc-lower-to-runtime | FileCheck %s --check-prefix=LOWER
// RUN: mpc-opt %S/../../e2e/Inputs/eval-bn.txt --mpc-autodiff --mpc-optimizer --mpc-data-parallel=sync-batch-norm=true --mpc-plan-memory --mpc-lower-to-runtime=backend=cuda | FileCheck %s --check-prefix=LOWER
// A step without a batch norm gets a warning.
// RUN: mpc-opt %S/data-parallel.mlir --mpc-autodiff --mpc-optimizer --mpc-data-parallel=sync-batch-norm=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE

// CHECK-DAG: ml_program.global private mutable @bn_running_mean(#mpc.init<zeros>) : tensor<5xf32>{{$}}
// CHECK-DAG: ml_program.global private mutable @bn_running_var(#mpc.init<ones>) : tensor<5xf32>{{$}}
// CHECK-LABEL: func.func @loss(
// CHECK: mpc.batch_norm
// CHECK-NOT: sync
// CHECK-SAME: : tensor<4x5xf32>, tensor<5xf32>
// CHECK-LABEL: func.func @eval_step(
// CHECK-NOT: sync
// CHECK: mpc.batch_norm_inference
// CHECK-NOT: sync
// CHECK-LABEL: func.func @train_step(
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[M:.*]], %[[S:.*]] = mpc.batch_norm %{{.*}} {epsilon = 1.000000e-03 : f64, momentum = 3.000000e-01 : f64, sync} : tensor<4x5xf32>, tensor<5xf32>
// CHECK: mpc.batch_norm_backward %{{.*}}, %{{.*}}, %{{.*}}, %[[M]], %[[S]] {sync} : tensor<4x5xf32>, tensor<5xf32>
// CHECK: mpc.all_reduce

// OFF-NOT: sync
// OFF: mpc.rank_mean
// OFF-NOT: sync

// ACC-LABEL: func.func @train_step(
// ACC: mpc.batch_norm {{.*}}sync}
// ACC: mpc.batch_norm_backward {{.*}}{sync}
// ACC-LABEL: func.func @train_step_accumulate(
// ACC: mpc.batch_norm {{.*}}sync}
// ACC: mpc.batch_norm_backward {{.*}}{sync}

// FUSED-LABEL: func.func @train_step(
// FUSED: mpc.batch_norm {{.*}}{activation = "relu", {{.*}}sync}
// FUSED: mpc.batch_norm_backward {{.*}}{activation = "relu", sync}

// LOWER-LABEL: func.func @loss(
// LOWER: call @mpcrt_batch_norm_f32(
// LOWER-LABEL: func.func @train_step(
// LOWER-NOT: call @mpcrt_batch_norm_
// LOWER: call @mpcrt_sync_batch_norm_f32(
// LOWER-NOT: call @mpcrt_batch_norm_
// LOWER: call @mpcrt_sync_batch_norm_backward_f32(
// LOWER-NOT: call @mpcrt_batch_norm_

// NONE: warning: mpc-data-parallel: sync-batch-norm=true, but the step has no batch norm
