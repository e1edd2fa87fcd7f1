// --mpc-data-parallel on a two-layer classifier.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-data-parallel | FileCheck %s
// Buckets close before the gradient that would take them past bucket-bytes
// (gradients: b2 32 bytes, w2 1024, b1 128, w1 2048 in production order).
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-data-parallel=bucket-bytes=1100 | FileCheck %s --check-prefix=SMALL
// At O2 in f16 the low-precision gradients form their own buckets, reduced
// in f16, and loss scaling then checks the reduced gradients.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-assign-precision="level=O2 alignment-remarks=false" --mpc-data-parallel --mpc-loss-scaling | FileCheck %s --check-prefix=F16
// bf16 gradients are summed in f32 unless bf16-reduce=bf16.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-assign-precision="level=O2 dtype=bf16 alignment-remarks=false" --mpc-data-parallel | FileCheck %s --check-prefix=BF16
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-assign-precision="level=O2 dtype=bf16 alignment-remarks=false" --mpc-data-parallel=bf16-reduce=bf16 | FileCheck %s --check-prefix=BF16BF16
// The named pipeline adds the pass with data-parallel=true.
// RUN: mpc-opt %s --mpc-amp-pipeline="level=O2 data-parallel=true" | FileCheck %s --check-prefix=PIPE
// RUN: mpc-opt %s --mpc-amp-pipeline="level=O2" | FileCheck %s --check-prefix=NOPIPE
// PIPE: mpc.all_reduce
// PIPE: mpc.unscale_and_check
// NOPIPE-NOT: mpc.all_reduce
// With accumulation, both seeds are folded and only the step reduces.
// RUN: mpc-opt %s --mpc-autodiff --mpc-accumulate-gradients=steps=2 --mpc-optimizer --mpc-data-parallel | FileCheck %s --check-prefix=ACC
// Batch norm's running statistics are marked to be averaged over the
// ranks; other globals are not.
// RUN: mpc-opt %S/../../e2e/Inputs/eval-bn.txt --mpc-autodiff --mpc-optimizer --mpc-data-parallel | FileCheck %s --check-prefix=BN
// BN-DAG: ml_program.global private mutable @bn_running_mean(#mpc.init<zeros>) : tensor<5xf32> {mpc.rank_mean}
// BN-DAG: ml_program.global private mutable @bn_running_var(#mpc.init<ones>) : tensor<5xf32> {mpc.rank_mean}
// BN-DAG: ml_program.global private mutable @bn_gamma({{.*}}) : tensor<5xf32>{{$}}
// The memory plan lays each bucket out contiguously, 16-byte aligned, the
// sums in place; the lowering starts the collective after the bucket's
// last gradient and waits before the first reader.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-data-parallel --mpc-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-data-parallel=bucket-bytes=1100 --mpc-plan-memory --mpc-lower-to-runtime | FileCheck %s --check-prefix=LOWER

// CHECK: ml_program.global private mutable @data_parallel_inverse_size(dense<1.000000e+00> : tensor<f32>) : tensor<f32> {mpc.inverse_world_size}
// The loss function is left alone.
// CHECK-LABEL: func.func @loss(
// CHECK-NOT: data_parallel
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: attributes {mpc.data_parallel}
// CHECK: %[[SEED:.*]] = mpc.constant {mpc.loss_seed} dense<1.000000e+00> : tensor<f32>
// CHECK: %[[INV:.*]] = ml_program.global_load @data_parallel_inverse_size
// CHECK: %[[FOLDED:.*]] = mpc.mul %[[SEED]], %[[INV]]
// CHECK: mpc.cross_entropy_backward %[[FOLDED]]
// CHECK: %[[DB2:.*]] = mpc.reduce_sum
// CHECK: %[[DW2:.*]] = mpc.matmul %{{.*}}, %{{.*}} {transpose_a}
// CHECK: %[[DB1:.*]] = mpc.reduce_sum
// CHECK: %[[DW1:.*]] = mpc.matmul %{{.*}}, %{{.*}} {transpose_a}
// CHECK-NEXT: %[[R:.*]]:4 = mpc.all_reduce %[[DB2]], %[[DW2]], %[[DB1]], %[[DW1]] {bucket = 0 : i64} : tensor<8xf32>, tensor<32x8xf32>, tensor<32xf32>, tensor<16x32xf32>
// CHECK: mpc.sgd_update %{{.*}}, %[[R]]#3
// CHECK: mpc.sgd_update %{{.*}}, %[[R]]#2
// CHECK: mpc.sgd_update %{{.*}}, %[[R]]#1
// CHECK: mpc.sgd_update %{{.*}}, %[[R]]#0
// CHECK-NOT: mpc.all_reduce

// SMALL: %[[DB2:.*]] = mpc.reduce_sum
// SMALL: %[[DW2:.*]] = mpc.matmul %{{.*}}, %{{.*}} {transpose_a}
// SMALL-NEXT: %{{.*}}:2 = mpc.all_reduce %[[DB2]], %[[DW2]] {bucket = 0 : i64}
// SMALL: %[[DB1:.*]] = mpc.reduce_sum
// SMALL-NEXT: mpc.all_reduce %[[DB1]] {bucket = 1 : i64} : tensor<32xf32>
// SMALL-NEXT: %[[DW1:.*]] = mpc.matmul %{{.*}}, %{{.*}} {transpose_a}
// SMALL-NEXT: mpc.all_reduce %[[DW1]] {bucket = 2 : i64} : tensor<16x32xf32>

// F16: mpc.mul %loss_scale, %data_parallel_inverse_size
// F16: mpc.all_reduce %{{.*}}, %{{.*}} {bucket = 0 : i64} : tensor<8xf32>, tensor<32xf32>
// F16: %[[H:.*]]:2 = mpc.all_reduce %{{.*}}, %{{.*}} {bucket = 1 : i64} : tensor<32x8xf16>, tensor<16x32xf16>
// F16: mpc.unscale_and_check %loss_scale, %[[H]]#1, %{{.*}}, %[[H]]#0

// BF16: %[[G:.*]] = mpc.matmul %{{.*}}, %{{.*}} {transpose_a} : tensor<4x32xbf16>, tensor<4x8xbf16>
// BF16-NEXT: %[[G32:.*]] = mpc.cast %[[G]] : tensor<32x8xbf16> -> tensor<32x8xf32>
// BF16: mpc.all_reduce {{.*}}%[[G32]]{{.*}} : {{.*}}tensor<32x8xf32>
// BF16-NOT: mpc.all_reduce {{.*}}bf16

// BF16BF16-NOT: mpc.cast {{.*}} : tensor<32x8xbf16> -> tensor<32x8xf32>
// BF16BF16: mpc.all_reduce %{{.*}}, %{{.*}} {bucket = 1 : i64} : tensor<32x8xbf16>, tensor<16x32xbf16>

// ACC-LABEL: func.func @train_step(
// ACC: %[[SEED:.*]] = mpc.constant {mpc.loss_seed} dense<5.000000e-01>
// ACC: mpc.mul %[[SEED]], %data_parallel_inverse_size
// ACC: mpc.all_reduce {{.*}} {bucket = 0 : i64}
// ACC: mpc.sgd_update
// ACC-LABEL: func.func @train_step_accumulate(
// ACC: %[[SEED:.*]] = mpc.constant {mpc.loss_seed} dense<5.000000e-01>
// ACC: mpc.mul %[[SEED]], %data_parallel_inverse_size
// ACC-NOT: mpc.all_reduce

// Offsets of b2's (32 bytes), w2's (1024), b1's (128) and w1's gradients:
// one after the other from the bucket's start (see plan-buckets.mlir for
// the alignment of other sizes).
// PLAN: mpc.all_reduce {{.*}} {bucket = 0 : i64, mpc.offsets = array<i64: 0, 32, 1056, 1184>}

// Each bucket is waited on where its first reader stood (without loss
// scaling the update of its first parameter); the updates, held together
// into one multi-tensor call, come after every wait.
// LOWER-NOT: call @mpcrt_comm_all_reduce_wait
// LOWER: call @mpcrt_comm_all_reduce_start(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i32, !llvm.ptr, i64) -> ()
// LOWER-NOT: call @mpcrt_comm_all_reduce_wait
// LOWER: call @mpcrt_comm_all_reduce_start
// LOWER-NOT: call @mpcrt_comm_all_reduce_wait
// LOWER: call @mpcrt_comm_all_reduce_start
// LOWER-NOT: call @mpcrt_sgd_update
// LOWER: call @mpcrt_comm_all_reduce_wait
// LOWER: call @mpcrt_comm_all_reduce_wait
// LOWER: call @mpcrt_comm_all_reduce_wait
// LOWER-NOT: call @mpcrt_comm
// LOWER: call @mpcrt_sgd_update_multi(%c4_i64
// With loss scaling, every bucket before the check of them all.
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-data-parallel=bucket-bytes=1100 --mpc-loss-scaling=mode=dynamic --mpc-plan-memory --mpc-lower-to-runtime | FileCheck %s --check-prefix=LOWERLS
// LOWERLS-NOT: call @mpcrt_unscale_and_check
// LOWERLS: call @mpcrt_comm_all_reduce_wait
// LOWERLS-NOT: call @mpcrt_unscale_and_check
// LOWERLS: call @mpcrt_comm_all_reduce_wait
// LOWERLS-NOT: call @mpcrt_unscale_and_check
// LOWERLS: call @mpcrt_comm_all_reduce_wait
// LOWERLS-NOT: call @mpcrt_comm
// LOWERLS: call @mpcrt_unscale_and_check

ml_program.global private mutable @w1(#mpc.init<xavier_uniform, seed = 1>) : tensor<16x32xf32>
ml_program.global private mutable @b1(#mpc.init<zeros>) : tensor<32xf32>
ml_program.global private mutable @w2(#mpc.init<xavier_uniform, seed = 2>) : tensor<32x8xf32>
ml_program.global private mutable @b2(#mpc.init<zeros>) : tensor<8xf32>

func.func @loss(%x: tensor<4x16xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %w1 = ml_program.global_load @w1 : tensor<16x32xf32>
  %b1 = ml_program.global_load @b1 : tensor<32xf32>
  %w2 = ml_program.global_load @w2 : tensor<32x8xf32>
  %b2 = ml_program.global_load @b2 : tensor<8xf32>
  %0 = mpc.matmul %x, %w1 : tensor<4x16xf32>, tensor<16x32xf32>
  %1 = mpc.add %0, %b1 : tensor<4x32xf32>, tensor<32xf32>
  %2 = mpc.relu %1 : tensor<4x32xf32>
  %3 = mpc.matmul %2, %w2 : tensor<4x32xf32>, tensor<32x8xf32>
  %4 = mpc.add %3, %b2 : tensor<4x8xf32>, tensor<8xf32>
  %l = mpc.cross_entropy %4, %y : tensor<4x8xf32>, tensor<4xi32>
  return %l : tensor<f32>
}
