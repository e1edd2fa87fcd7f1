// The neural-net family: pooling (one mpcrt_pool2d_shape: n, h, w, c, ho,
// wo, kernel, stride, padding, count_include_pad), nearest upsampling,
// embedding (a bad index stops the program with the op's location),
// dropout (seeded by the step counter in the state buffer) and the losses.
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory --mpc-lower-to-runtime | FileCheck %s

// Max pooling, 2x2, stride defaulting to the kernel; average pooling 3x3,
// stride 1, padding 1, count_include_pad = false.
// CHECK-DAG: llvm.mlir.global internal constant @[[MAX:.*]](dense<[2, 8, 8, 4, 4, 4, 2, 2, 2, 2, 0, 0, 0]> : tensor<13xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @[[AVG:.*]](dense<[2, 8, 8, 4, 8, 8, 3, 3, 1, 1, 1, 1, 0]> : tensor<13xi64>)
// CHECK-LABEL: func.func @pool(
// CHECK: %[[S:.*]] = llvm.mlir.addressof @[[MAX]]
// CHECK: call @mpcrt_max_pool2d_f32(%[[X:.*]], %[[Y:.*]], %[[S]])
// CHECK: %[[S1:.*]] = llvm.mlir.addressof @[[MAX]]
// CHECK: call @mpcrt_max_pool2d_backward_f32(%[[Y]], %[[X]], %{{.*}}, %[[S1]])
// CHECK: %[[S2:.*]] = llvm.mlir.addressof @[[AVG]]
// CHECK: call @mpcrt_avg_pool2d_f32(%[[X]], %[[A:.*]], %[[S2]])
// The average backward does not read the input:
// CHECK: %[[S3:.*]] = llvm.mlir.addressof @[[AVG]]
// CHECK: call @mpcrt_avg_pool2d_backward_f32(%[[A]], %{{.*}}, %[[S3]])
func.func @pool(%x: tensor<2x8x8x4xf32>) -> (tensor<2x8x8x4xf32>, tensor<2x8x8x4xf32>) {
  %0 = mpc.max_pool2d %x {kernel = array<i64: 2, 2>} : tensor<2x8x8x4xf32>
  %1 = mpc.max_pool2d_backward %0, %x {kernel = array<i64: 2, 2>} : tensor<2x4x4x4xf32>, tensor<2x8x8x4xf32>
  %2 = mpc.avg_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, count_include_pad = false} : tensor<2x8x8x4xf32>
  %3 = mpc.avg_pool2d_backward %2, %x {kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, count_include_pad = false} : tensor<2x8x8x4xf32>, tensor<2x8x8x4xf32>
  return %1, %3 : tensor<2x8x8x4xf32>, tensor<2x8x8x4xf32>
}

// -----

// Both directions pass the small side (n, h, w, c = 2, 8, 8, 4) and the
// scales 2, 3.
// CHECK-LABEL: func.func @upsample(
// CHECK: call @mpcrt_upsample_nearest2d_f16(%{{.*}}, %{{.*}}, %c2_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %c4_i64{{(_[0-9]+)?}}, %c2_i64{{(_[0-9]+)?}}, %c3_i64{{(_[0-9]+)?}})
// CHECK: call @mpcrt_upsample_nearest2d_backward_f16(%{{.*}}, %{{.*}}, %c2_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %c4_i64{{(_[0-9]+)?}}, %c2_i64{{(_[0-9]+)?}}, %c3_i64{{(_[0-9]+)?}})
func.func @upsample(%x: tensor<2x8x8x4xf16>) -> tensor<2x8x8x4xf16> {
  %0 = mpc.upsample_nearest2d %x {scale = array<i64: 2, 3>} : tensor<2x8x8x4xf16>
  %1 = mpc.upsample_nearest2d_backward %0 {scale = array<i64: 2, 3>} : tensor<2x16x24x4xf16>
  return %1 : tensor<2x8x8x4xf16>
}

// -----

// CHECK: llvm.mlir.global internal constant @[[WHERE:.*]]("{{.*}}neural-net.mlir:[[# @LINE + 9]]:8: 'mpc.embedding'\00")
// CHECK-LABEL: func.func @embedding(
// A 100x8 table, 32-bit indices, 8 of them:
// CHECK: %[[CODE:.*]] = call @mpcrt_embedding_f32(%{{.*}}, %c100_i64, %c8_i64, %{{.*}}, %c32_i32, %c8_i64{{(_[0-9]+)?}}, %{{.*}}) : {{.*}} -> i64
// CHECK: %[[AT:.*]] = llvm.mlir.addressof @[[WHERE]]
// CHECK: call @mpcrt_check_index(%[[CODE]], %[[AT]])
// CHECK: %[[CODE2:.*]] = call @mpcrt_embedding_backward_f32(
// CHECK: call @mpcrt_check_index(%[[CODE2]],
func.func @embedding(%table: tensor<100x8xf32>, %ids: tensor<2x4xi32>) -> tensor<100x8xf32> {
  %0 = mpc.embedding %table, %ids : tensor<100x8xf32>, tensor<2x4xi32>
  %1 = mpc.embedding_backward %0, %ids : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<100x8xf32>
  return %1 : tensor<100x8xf32>
}

// -----

// A padding row gets no gradient: the kernel skips its indices (padding
// 3; -1 where none, as above); no addend (null).
// CHECK-LABEL: func.func @embedding_padding(
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @mpcrt_embedding_backward_f32(%{{[^,]*}}, %{{[^,]*}}, %c32_i32, %c8_i64{{(_[0-9]+)?}}, %c100_i64, %c8_i64{{(_[0-9]+)?}}, %c3_i64, %[[NULL]], %{{[^)]*}}) : {{.*}} -> i64
// CHECK: call @mpcrt_check_index(
// CHECK-NOT: mpcrt_zero
// CHECK: return
func.func @embedding_padding(%g: tensor<2x4x8xf32>, %ids: tensor<2x4xi32>) -> tensor<100x8xf32> {
  %0 = mpc.embedding_backward %g, %ids {padding_idx = 3 : i64} : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<100x8xf32>
  return %0 : tensor<100x8xf32>
}

// -----

// With an addend, its pointer: the table's rows are added to it (here the
// argument's; the result has a buffer of its own, as the argument lives on).
// CHECK-LABEL: func.func @embedding_addend(
// CHECK: %[[P:.*]] = llvm.getelementptr %arg2[%c2_i64]
// CHECK-NEXT: %[[ACC:.*]] = llvm.load %[[P]]
// CHECK: call @mpcrt_embedding_backward_f32(%{{[^,]*}}, %{{[^,]*}}, %c32_i32, %c8_i64{{(_[0-9]+)?}}, %c100_i64, %c8_i64{{(_[0-9]+)?}}, %c-1_i64, %[[ACC]], %arg0) : {{.*}} -> i64
// CHECK: call @mpcrt_check_index(
// CHECK-NOT: mpcrt_zero
// CHECK: return
func.func @embedding_addend(%g: tensor<2x4x8xf32>, %ids: tensor<2x4xi32>, %acc: tensor<100x8xf32>) -> tensor<100x8xf32> {
  %0 = mpc.embedding_backward %g, %ids addend(%acc) : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<100x8xf32>
  return %0 : tensor<100x8xf32>
}

// -----

// The step counter is the state buffer's last slot (here the only one, at
// offset 0): dropout reads it, the entry function increments it.
// CHECK-LABEL: func.func @dropout(
// CHECK-SAME: %[[ARENA:[^:]*]]: !llvm.ptr, %[[STATE:[^:]*]]: !llvm.ptr
// CHECK: call @mpcrt_dropout_f32(%{{.*}}, %[[Y:.*]], %[[MASK:.*]], %c64_i64, %cst, %c42_i64, %[[STATE]])
// CHECK: call @mpcrt_dropout_backward_f32(%[[Y]], %[[MASK]], %{{.*}}, %c64_i64{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}})
// CHECK: call @mpcrt_increment_step(%[[STATE]])
func.func @dropout(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %y, %mask = mpc.dropout %x {p = 0.25, seed = 42} : tensor<8x8xf32>
  %dx = mpc.dropout_backward %y, %mask {p = 0.25} : tensor<8x8xf32>, tensor<8x8xi1>
  return %dx : tensor<8x8xf32>
}

// -----

// A narrower result: mpcrt_dropout_mixed with the dtype codes (f32 2, f16 0).
// CHECK-LABEL: func.func @dropout_mixed(
// CHECK-SAME: %[[ARENA:[^:]*]]: !llvm.ptr, %[[STATE:[^:]*]]: !llvm.ptr
// CHECK: call @mpcrt_dropout_mixed(%c2_i32, %{{.*}}, %c0_i32, %{{.*}}, %{{.*}}, %c64_i64, %cst, %c42_i64, %[[STATE]])
func.func @dropout_mixed(%x: tensor<8x8xf32>) -> tensor<8x8xf16> {
  %y, %mask = mpc.dropout %x {p = 0.25, seed = 42} : tensor<8x8xf32> -> tensor<8x8xf16>
  return %y : tensor<8x8xf16>
}

// -----

// CHECK-LABEL: func.func @losses(
// Cross-entropy: 6 rows (2x3) of 10 classes, 64-bit labels, mean (1), no
// label ignored (0, 0), no label smoothing (0.0); the backward ignores -100
// (1, -100) and smooths by 0.1. Labels outside [0, 10) stop the step,
// naming the op's location.
// CHECK: %[[NONE:.*]] = arith.constant 0.000000e+00 : f64
// CHECK: %[[CE:.*]] = call @mpcrt_cross_entropy_f32(%{{.*}}, %{{.*}}, %c64_i32, %{{.*}}, %c6_i64, %c10_i64, %c1_i32, %c0_i32{{(_[0-9]+)?}}, %c0_i64{{(_[0-9]+)?}}, %[[NONE]])
// CHECK: call @mpcrt_check_label(%[[CE]], %c10_i64{{(_[0-9]+)?}}, %{{.*}})
// CHECK: %[[TENTH:.*]] = arith.constant 1.000000e-01 : f64
// CHECK: %[[CEB:.*]] = call @mpcrt_cross_entropy_backward_f32(%{{.*}}, %{{.*}}, %{{.*}}, %c64_i32{{(_[0-9]+)?}}, %{{.*}}, %c6_i64{{(_[0-9]+)?}}, %c10_i64{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}}, %c-100_i64{{(_[0-9]+)?}}, %[[TENTH]])
// CHECK: call @mpcrt_check_label(%[[CEB]], %c10_i64{{(_[0-9]+)?}}, %{{.*}})
// MSE (kind 0) summed (0), BCE with logits (kind 1) backward, mean:
// CHECK: call @mpcrt_pointwise_loss_f32(%c0_i32{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %{{.*}}, %c60_i64, %c0_i32{{(_[0-9]+)?}})
// CHECK: call @mpcrt_pointwise_loss_backward_f32(%c1_i32{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c60_i64{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}})
func.func @losses(%logits: tensor<2x3x10xf32>, %labels: tensor<2x3xi64>, %t: tensor<2x3x10xf32>) -> (tensor<f32>, tensor<2x3x10xf32>, tensor<f32>, tensor<2x3x10xf32>) {
  %l = mpc.cross_entropy %logits, %labels : tensor<2x3x10xf32>, tensor<2x3xi64>
  %one = mpc.constant dense<1.0> : tensor<f32>
  %d = mpc.cross_entropy_backward %one, %logits, %labels {ignore_index = -100, label_smoothing = 0.1} : tensor<f32>, tensor<2x3x10xf32>, tensor<2x3xi64>
  %m = mpc.mse %logits, %t {reduction = #mpc<reduction sum>} : tensor<2x3x10xf32>, tensor<2x3x10xf32>
  %b = mpc.bce_with_logits_backward %one, %logits, %t : tensor<f32>, tensor<2x3x10xf32>, tensor<2x3x10xf32>
  return %l, %d, %m, %b : tensor<f32>, tensor<2x3x10xf32>, tensor<f32>, tensor<2x3x10xf32>
}

// -----

// A max pool's gradient with an addend (--mpc-fuse's pool-grad-sums): the
// addend a channel slice of a wider tensor, read where it lies (a view:
// the exp's buffer 4 floats in, its positions 8 elements apart) by
// mpcrt_max_pool2d_backward_add, which adds it as it writes.
// CHECK-LABEL: func.func @pool_grad_sum
// CHECK: call @mpcrt_unary_f32(%{{.*}}, %{{.*}}, %arg0, %{{.*}})
// CHECK-NOT: mpcrt_strided_copy
// CHECK: %[[C16:.*]] = arith.constant 16 : i64
// CHECK-NEXT: %[[A:.*]] = llvm.getelementptr %arg0[%[[C16]]]
// CHECK-NEXT: %[[ROW:.*]] = arith.constant 8 : i64
// CHECK-NEXT: call @mpcrt_max_pool2d_backward_add_f32(%{{.*}}, %{{.*}}, %[[A]], %[[ROW]], %{{.*}}, %{{.*}})
func.func @pool_grad_sum(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x8x8x4xf32>, %w: tensor<2x8x8x8xf32>) -> tensor<2x8x8x4xf32> {
  %e = mpc.exp %w : tensor<2x8x8x8xf32>
  %a = mpc.slice %e {offsets = array<i64: 0, 0, 0, 4>, sizes = array<i64: 2, 8, 8, 4>} : tensor<2x8x8x8xf32>
  %0 = mpc.max_pool2d_backward %dy, %x addend(%a : tensor<2x8x8x4xf32>) {kernel = array<i64: 2, 2>} : tensor<2x4x4x4xf32>, tensor<2x8x8x4xf32>
  return %0 : tensor<2x8x8x4xf32>
}
