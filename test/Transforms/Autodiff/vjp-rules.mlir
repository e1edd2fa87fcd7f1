// One VJP rule per case: the backward ops --mpc-autodiff builds for each
// forward op (the same graphs the numeric checks of test/e2e/gradcheck.py
// run: loss = sum(op(params) * R)).
// RUN: mpc-opt %s -split-input-file --mpc-autodiff | FileCheck %s

// add_broadcast
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.reduce_sum %{{.*}} {dims = array<i64: 0>} : tensor<3x4xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<3x4xf64>
ml_program.global private mutable @p_b(#mpc.init<uniform, seed = 2, low = -1.0, high = 1.0>) : tensor<4xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<3x4xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<3x4xf64>
  %b = ml_program.global_load @p_b : tensor<4xf64>
  %rw = ml_program.global_load @r : tensor<3x4xf64>
  %y = mpc.add %a, %b : tensor<3x4xf64>, tensor<4xf64>
  %z = mpc.mul %y, %rw : tensor<3x4xf64>, tensor<3x4xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<3x4xf64>
  return %l : tensor<f64>
}

// -----

// avg_pool2d
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.avg_pool2d_backward %{{.*}}, %p_x {count_include_pad = false, kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : tensor<1x4x4x2xf64>, tensor<1x4x4x2xf64>
ml_program.global private mutable @p_x(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<1x4x4x2xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<1x4x4x2xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %x = ml_program.global_load @p_x : tensor<1x4x4x2xf64>
  %rw = ml_program.global_load @r : tensor<1x4x4x2xf64>
  %y = mpc.avg_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, count_include_pad = false} : tensor<1x4x4x2xf64>
  %z = mpc.mul %y, %rw : tensor<1x4x4x2xf64>, tensor<1x4x4x2xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1, 2, 3>} : tensor<1x4x4x2xf64>
  return %l : tensor<f64>
}

// -----

// batch_norm
// CHECK-LABEL: func.func @train_step(
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[SM:.*]], %[[SI:.*]] = mpc.batch_norm %p_x, %p_g, %p_b
// CHECK: mpc.batch_norm_backward %{{.*}}, %p_x, %p_g, %[[SM]], %[[SI]] : tensor<4x3xf64>, tensor<3xf64>
ml_program.global private mutable @p_x(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<4x3xf64>
ml_program.global private mutable @p_g(#mpc.init<uniform, seed = 2, low = 0.5, high = 1.5>) : tensor<3xf64>
ml_program.global private mutable @p_b(#mpc.init<uniform, seed = 3, low = -1.0, high = 1.0>) : tensor<3xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<4x3xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %x = ml_program.global_load @p_x : tensor<4x3xf64>
  %g = ml_program.global_load @p_g : tensor<3xf64>
  %b = ml_program.global_load @p_b : tensor<3xf64>
  %rw = ml_program.global_load @r : tensor<4x3xf64>
  %rm = mpc.constant dense<0.0> : tensor<3xf64>
  %rv = mpc.constant dense<1.0> : tensor<3xf64>
  %y, %nm, %nv, %sm, %si = mpc.batch_norm %x, %g, %b, %rm, %rv : tensor<4x3xf64>, tensor<3xf64>
  %z = mpc.mul %y, %rw : tensor<4x3xf64>, tensor<4x3xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<4x3xf64>
  return %l : tensor<f64>
}

// -----

// bce_with_logits
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.bce_with_logits_backward %{{.*}}, %p_a, %{{.*}} : tensor<f64>, tensor<6xf64>, tensor<6xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -2.0, high = 2.0>) : tensor<6xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<f64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<6xf64>
  %rw = ml_program.global_load @r : tensor<f64>
  %tg = mpc.constant dense<[0.0, 1.0, 0.3, 1.0, 0.0, 0.7]> : tensor<6xf64>
  %y = mpc.bce_with_logits %a, %tg : tensor<6xf64>, tensor<6xf64>
  %z = mpc.mul %y, %rw : tensor<f64>, tensor<f64>
  %l = mpc.neg %z : tensor<f64>
  return %l : tensor<f64>
}

// -----

// binary_cross_entropy
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.binary_cross_entropy_backward %{{.*}}, %p_a, %{{.*}} : tensor<f64>, tensor<6xf64>, tensor<6xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = 0.1, high = 0.9>) : tensor<6xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<f64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<6xf64>
  %rw = ml_program.global_load @r : tensor<f64>
  %tg = mpc.constant dense<[0.0, 1.0, 0.3, 1.0, 0.0, 0.7]> : tensor<6xf64>
  %y = mpc.binary_cross_entropy %a, %tg : tensor<6xf64>, tensor<6xf64>
  %z = mpc.mul %y, %rw : tensor<f64>, tensor<f64>
  %l = mpc.neg %z : tensor<f64>
  return %l : tensor<f64>
}

// -----

// broadcast_to
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.reduce_sum %{{.*}} {dims = array<i64: 0>} : tensor<2x3x4xf64>
// CHECK-NEXT: mpc.reduce_sum %{{.*}} {dims = array<i64: 1>, keep_dims} : tensor<3x4xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<3x1xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<2x3x4xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<3x1xf64>
  %rw = ml_program.global_load @r : tensor<2x3x4xf64>
  %y = mpc.broadcast_to %a : tensor<3x1xf64> -> tensor<2x3x4xf64>
  %z = mpc.mul %y, %rw : tensor<2x3x4xf64>, tensor<2x3x4xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1, 2>} : tensor<2x3x4xf64>
  return %l : tensor<f64>
}

// -----

// chain_reuse
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[T:.*]] = mpc.tanh_grad
// CHECK-DAG: %[[DA:.*]] = mpc.mul %[[T]], %p_b
// CHECK-DAG: %[[DB:.*]] = mpc.mul %[[T]], %p_a
// CHECK: %[[SUM:.*]] = mpc.add %{{.*}}, %[[DA]]
// CHECK: return %{{.*}}, %[[SUM]], %[[DB]]
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<4xf64>
ml_program.global private mutable @p_b(#mpc.init<uniform, seed = 2, low = -1.0, high = 1.0>) : tensor<4xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<4xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<4xf64>
  %b = ml_program.global_load @p_b : tensor<4xf64>
  %rw = ml_program.global_load @r : tensor<4xf64>
  %0 = mpc.mul %a, %b : tensor<4xf64>, tensor<4xf64>
  %1 = mpc.tanh %0 : tensor<4xf64>
  %y = mpc.add %1, %a : tensor<4xf64>, tensor<4xf64>
  %z = mpc.mul %y, %rw : tensor<4xf64>, tensor<4xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0>} : tensor<4xf64>
  return %l : tensor<f64>
}

// -----

// concat
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.slice %[[G:.*]] {offsets = array<i64: 0, 0>, sizes = array<i64: 2, 3>} : tensor<2x5xf64>
// CHECK: mpc.slice %[[G]] {offsets = array<i64: 0, 3>, sizes = array<i64: 2, 2>} : tensor<2x5xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<2x3xf64>
ml_program.global private mutable @p_b(#mpc.init<uniform, seed = 2, low = -1.0, high = 1.0>) : tensor<2x2xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<2x5xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<2x3xf64>
  %b = ml_program.global_load @p_b : tensor<2x2xf64>
  %rw = ml_program.global_load @r : tensor<2x5xf64>
  %y = mpc.concat %a, %b {axis = 1} : tensor<2x3xf64>, tensor<2x2xf64>
  %z = mpc.mul %y, %rw : tensor<2x5xf64>, tensor<2x5xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<2x5xf64>
  return %l : tensor<f64>
}

// -----

// conv2d
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.conv2d_backward_data %[[G:.*]], %p_w {groups = 2 : i64, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : tensor<1x3x3x6xf64>, tensor<6x3x3x2xf64> -> tensor<1x5x5x4xf64>
// CHECK: mpc.conv2d_backward_filter %[[G]], %p_x {groups = 2 : i64, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : tensor<1x3x3x6xf64>, tensor<1x5x5x4xf64> -> tensor<6x3x3x2xf64>
ml_program.global private mutable @p_x(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<1x5x5x4xf64>
ml_program.global private mutable @p_w(#mpc.init<uniform, seed = 2, low = -1.0, high = 1.0>) : tensor<6x3x3x2xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<1x3x3x6xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %x = ml_program.global_load @p_x : tensor<1x5x5x4xf64>
  %w = ml_program.global_load @p_w : tensor<6x3x3x2xf64>
  %rw = ml_program.global_load @r : tensor<1x3x3x6xf64>
  %y = mpc.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 2} : tensor<1x5x5x4xf64>, tensor<6x3x3x2xf64>
  %z = mpc.mul %y, %rw : tensor<1x3x3x6xf64>, tensor<1x3x3x6xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1, 2, 3>} : tensor<1x3x3x6xf64>
  return %l : tensor<f64>
}

// -----

// conv_transpose2d
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.conv2d %[[G:.*]], %p_w {padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : tensor<1x5x5x2xf64>, tensor<4x3x3x2xf64>
// CHECK: mpc.conv2d_backward_filter %p_x, %[[G]] {padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : tensor<1x3x3x4xf64>, tensor<1x5x5x2xf64> -> tensor<4x3x3x2xf64>
ml_program.global private mutable @p_x(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<1x3x3x4xf64>
ml_program.global private mutable @p_w(#mpc.init<uniform, seed = 2, low = -1.0, high = 1.0>) : tensor<4x3x3x2xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<1x5x5x2xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %x = ml_program.global_load @p_x : tensor<1x3x3x4xf64>
  %w = ml_program.global_load @p_w : tensor<4x3x3x2xf64>
  %rw = ml_program.global_load @r : tensor<1x5x5x2xf64>
  %y = mpc.conv_transpose2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<1x3x3x4xf64>, tensor<4x3x3x2xf64>
  %z = mpc.mul %y, %rw : tensor<1x5x5x2xf64>, tensor<1x5x5x2xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1, 2, 3>} : tensor<1x5x5x2xf64>
  return %l : tensor<f64>
}

// -----

// cross_entropy
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[LAB:.*]] = mpc.constant dense<[1, 4, 0]> : tensor<3xi32>
// CHECK: mpc.cross_entropy_backward %{{.*}}, %p_a, %[[LAB]] : tensor<f64>, tensor<3x5xf64>, tensor<3xi32>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -2.0, high = 2.0>) : tensor<3x5xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<f64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<3x5xf64>
  %rw = ml_program.global_load @r : tensor<f64>
  %lab = mpc.constant dense<[1, 4, 0]> : tensor<3xi32>
  %y = mpc.cross_entropy %a, %lab : tensor<3x5xf64>, tensor<3xi32>
  %z = mpc.mul %y, %rw : tensor<f64>, tensor<f64>
  %l = mpc.neg %z : tensor<f64>
  return %l : tensor<f64>
}

// -----

// cross_entropy with ignore_index and label smoothing: the backward
// ignores the same label and smooths the same way.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[LAB:.*]] = mpc.constant dense<[1, -100, 0]> : tensor<3xi32>
// CHECK: mpc.cross_entropy_backward %{{.*}}, %p_a, %[[LAB]] {ignore_index = -100 : i64, label_smoothing = 2.500000e-01 : f64, reduction = #mpc<reduction sum>} : tensor<f64>, tensor<3x5xf64>, tensor<3xi32>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -2.0, high = 2.0>) : tensor<3x5xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<f64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<3x5xf64>
  %rw = ml_program.global_load @r : tensor<f64>
  %lab = mpc.constant dense<[1, -100, 0]> : tensor<3xi32>
  %y = mpc.cross_entropy %a, %lab {ignore_index = -100, label_smoothing = 0.25, reduction = #mpc<reduction sum>} : tensor<3x5xf64>, tensor<3xi32>
  %z = mpc.mul %y, %rw : tensor<f64>, tensor<f64>
  %l = mpc.neg %z : tensor<f64>
  return %l : tensor<f64>
}

// -----

// div
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.div %{{.*}}, %p_b
// CHECK: mpc.neg
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<3x4xf64>
ml_program.global private mutable @p_b(#mpc.init<uniform, seed = 2, low = 0.5, high = 2.0>) : tensor<3x4xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<3x4xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<3x4xf64>
  %b = ml_program.global_load @p_b : tensor<3x4xf64>
  %rw = ml_program.global_load @r : tensor<3x4xf64>
  %y = mpc.div %a, %b : tensor<3x4xf64>, tensor<3x4xf64>
  %z = mpc.mul %y, %rw : tensor<3x4xf64>, tensor<3x4xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<3x4xf64>
  return %l : tensor<f64>
}

// -----

// dropout
// CHECK-LABEL: func.func @train_step(
// CHECK: %{{.*}}, %[[MASK:.*]] = mpc.dropout %p_a
// CHECK: mpc.dropout_backward %{{.*}}, %[[MASK]] {p = 5.000000e-01 : f64} : tensor<16xf64>, tensor<16xi1>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<16xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<16xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<16xf64>
  %rw = ml_program.global_load @r : tensor<16xf64>
  %y, %mask = mpc.dropout %a {p = 0.5, seed = 3} : tensor<16xf64>
  %z = mpc.mul %y, %rw : tensor<16xf64>, tensor<16xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0>} : tensor<16xf64>
  return %l : tensor<f64>
}

// -----

// embedding (the padding row's index carried to the backward)
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[IDS:.*]] = mpc.constant dense<{{.*}}> : tensor<2x2xi32>
// CHECK: mpc.embedding_backward %{{.*}}, %[[IDS]] {padding_idx = 3 : i64} : tensor<2x2x3xf64>, tensor<2x2xi32> -> tensor<5x3xf64>
ml_program.global private mutable @p_t(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<5x3xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<2x2x3xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %t = ml_program.global_load @p_t : tensor<5x3xf64>
  %rw = ml_program.global_load @r : tensor<2x2x3xf64>
  %ids = mpc.constant dense<[[0, 3], [3, 4]]> : tensor<2x2xi32>
  %y = mpc.embedding %t, %ids {padding_idx = 3 : i64} : tensor<5x3xf64>, tensor<2x2xi32>
  %z = mpc.mul %y, %rw : tensor<2x2x3xf64>, tensor<2x2x3xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1, 2>} : tensor<2x2x3xf64>
  return %l : tensor<f64>
}

// -----

// exp
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[Y:.*]] = mpc.exp %p_a
// CHECK: mpc.mul %{{.*}}, %[[Y]] : tensor<5xf64>, tensor<5xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<5xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<5xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<5xf64>
  %rw = ml_program.global_load @r : tensor<5xf64>
  %y = mpc.exp %a : tensor<5xf64>
  %z = mpc.mul %y, %rw : tensor<5xf64>, tensor<5xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0>} : tensor<5xf64>
  return %l : tensor<f64>
}

// -----

// gelu
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.gelu_grad %{{.*}}, %p_a : tensor<8xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -2.0, high = 2.0>) : tensor<8xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<8xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<8xf64>
  %rw = ml_program.global_load @r : tensor<8xf64>
  %y = mpc.gelu %a : tensor<8xf64>
  %z = mpc.mul %y, %rw : tensor<8xf64>, tensor<8xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0>} : tensor<8xf64>
  return %l : tensor<f64>
}

// -----

// gelu_tanh
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.gelu_grad %{{.*}}, %p_a {approximate} : tensor<8xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -2.0, high = 2.0>) : tensor<8xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<8xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<8xf64>
  %rw = ml_program.global_load @r : tensor<8xf64>
  %y = mpc.gelu %a {approximate} : tensor<8xf64>
  %z = mpc.mul %y, %rw : tensor<8xf64>, tensor<8xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0>} : tensor<8xf64>
  return %l : tensor<f64>
}

// -----

// layer_norm
// CHECK-LABEL: func.func @train_step(
// CHECK: %{{.*}}, %[[M:.*]], %[[R:.*]] = mpc.layer_norm %p_x, %p_g, %p_b
// CHECK: mpc.layer_norm_backward %{{.*}}, %p_x, %[[M]], %[[R]], %p_g : tensor<3x6xf64>, tensor<3xf64>, tensor<6xf64>
ml_program.global private mutable @p_x(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<3x6xf64>
ml_program.global private mutable @p_g(#mpc.init<uniform, seed = 2, low = 0.5, high = 1.5>) : tensor<6xf64>
ml_program.global private mutable @p_b(#mpc.init<uniform, seed = 3, low = -1.0, high = 1.0>) : tensor<6xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<3x6xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %x = ml_program.global_load @p_x : tensor<3x6xf64>
  %g = ml_program.global_load @p_g : tensor<6xf64>
  %b = ml_program.global_load @p_b : tensor<6xf64>
  %rw = ml_program.global_load @r : tensor<3x6xf64>
  %y, %m, %r = mpc.layer_norm %x, %g, %b : tensor<3x6xf64>, tensor<6xf64>
  %z = mpc.mul %y, %rw : tensor<3x6xf64>, tensor<3x6xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<3x6xf64>
  return %l : tensor<f64>
}

// -----

// log
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.div %{{.*}}, %p_a
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = 0.5, high = 2.0>) : tensor<5xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<5xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<5xf64>
  %rw = ml_program.global_load @r : tensor<5xf64>
  %y = mpc.log %a : tensor<5xf64>
  %z = mpc.mul %y, %rw : tensor<5xf64>, tensor<5xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0>} : tensor<5xf64>
  return %l : tensor<f64>
}

// -----

// log_softmax
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[Y:.*]] = mpc.log_softmax %p_a
// CHECK: mpc.log_softmax_backward %{{.*}}, %[[Y]] : tensor<3x5xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -2.0, high = 2.0>) : tensor<3x5xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<3x5xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<3x5xf64>
  %rw = ml_program.global_load @r : tensor<3x5xf64>
  %y = mpc.log_softmax %a : tensor<3x5xf64>
  %z = mpc.mul %y, %rw : tensor<3x5xf64>, tensor<3x5xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<3x5xf64>
  return %l : tensor<f64>
}

// -----

// matmul
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.matmul %[[G:.*]], %p_b {transpose_b} : tensor<3x5xf64>, tensor<4x5xf64>
// CHECK: mpc.matmul %p_a, %[[G]] {transpose_a} : tensor<3x4xf64>, tensor<3x5xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<3x4xf64>
ml_program.global private mutable @p_b(#mpc.init<uniform, seed = 2, low = -1.0, high = 1.0>) : tensor<4x5xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<3x5xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<3x4xf64>
  %b = ml_program.global_load @p_b : tensor<4x5xf64>
  %rw = ml_program.global_load @r : tensor<3x5xf64>
  %y = mpc.matmul %a, %b : tensor<3x4xf64>, tensor<4x5xf64>
  %z = mpc.mul %y, %rw : tensor<3x5xf64>, tensor<3x5xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<3x5xf64>
  return %l : tensor<f64>
}

// -----

// matmul_batch_broadcast: the weight's gradient is one product over all
// 2 x 3 rows (the batch folded into the contraction), not a product per
// batch summed after.
// CHECK-LABEL: func.func @train_step(
// CHECK-DAG: %[[A2:.*]] = mpc.reshape %p_a : tensor<2x3x4xf64> -> tensor<6x4xf64>
// CHECK-DAG: %[[G2:.*]] = mpc.reshape %{{.*}} : tensor<2x3x5xf64> -> tensor<6x5xf64>
// CHECK: mpc.matmul %[[A2]], %[[G2]] {transpose_a} : tensor<6x4xf64>, tensor<6x5xf64>
// CHECK-NOT: tensor<2x4x5xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<2x3x4xf64>
ml_program.global private mutable @p_b(#mpc.init<uniform, seed = 2, low = -1.0, high = 1.0>) : tensor<4x5xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<2x3x5xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<2x3x4xf64>
  %b = ml_program.global_load @p_b : tensor<4x5xf64>
  %rw = ml_program.global_load @r : tensor<2x3x5xf64>
  %y = mpc.matmul %a, %b : tensor<2x3x4xf64>, tensor<4x5xf64>
  %z = mpc.mul %y, %rw : tensor<2x3x5xf64>, tensor<2x3x5xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1, 2>} : tensor<2x3x5xf64>
  return %l : tensor<f64>
}

// -----

// matmul_ta
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.matmul %p_b, %[[G:.*]] {transpose_b} : tensor<4x5xf64>, tensor<3x5xf64>
// CHECK: mpc.matmul %p_a, %[[G]] : tensor<4x3xf64>, tensor<3x5xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<4x3xf64>
ml_program.global private mutable @p_b(#mpc.init<uniform, seed = 2, low = -1.0, high = 1.0>) : tensor<4x5xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<3x5xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<4x3xf64>
  %b = ml_program.global_load @p_b : tensor<4x5xf64>
  %rw = ml_program.global_load @r : tensor<3x5xf64>
  %y = mpc.matmul %a, %b {transpose_a} : tensor<4x3xf64>, tensor<4x5xf64>
  %z = mpc.mul %y, %rw : tensor<3x5xf64>, tensor<3x5xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<3x5xf64>
  return %l : tensor<f64>
}

// -----

// matmul_tab
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.matmul %p_b, %[[G:.*]] {transpose_a, transpose_b} : tensor<5x4xf64>, tensor<3x5xf64>
// CHECK: mpc.matmul %[[G]], %p_a {transpose_a, transpose_b} : tensor<3x5xf64>, tensor<4x3xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<4x3xf64>
ml_program.global private mutable @p_b(#mpc.init<uniform, seed = 2, low = -1.0, high = 1.0>) : tensor<5x4xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<3x5xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<4x3xf64>
  %b = ml_program.global_load @p_b : tensor<5x4xf64>
  %rw = ml_program.global_load @r : tensor<3x5xf64>
  %y = mpc.matmul %a, %b {transpose_a, transpose_b} : tensor<4x3xf64>, tensor<5x4xf64>
  %z = mpc.mul %y, %rw : tensor<3x5xf64>, tensor<3x5xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<3x5xf64>
  return %l : tensor<f64>
}

// -----

// matmul_tb
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.matmul %[[G:.*]], %p_b : tensor<3x5xf64>, tensor<5x4xf64>
// CHECK: mpc.matmul %[[G]], %p_a {transpose_a} : tensor<3x5xf64>, tensor<3x4xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<3x4xf64>
ml_program.global private mutable @p_b(#mpc.init<uniform, seed = 2, low = -1.0, high = 1.0>) : tensor<5x4xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<3x5xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<3x4xf64>
  %b = ml_program.global_load @p_b : tensor<5x4xf64>
  %rw = ml_program.global_load @r : tensor<3x5xf64>
  %y = mpc.matmul %a, %b {transpose_b} : tensor<3x4xf64>, tensor<5x4xf64>
  %z = mpc.mul %y, %rw : tensor<3x5xf64>, tensor<3x5xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<3x5xf64>
  return %l : tensor<f64>
}

// -----

// max_pool2d
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.max_pool2d_backward %{{.*}}, %p_x {kernel = array<i64: 2, 2>} : tensor<1x2x2x2xf64>, tensor<1x4x4x2xf64>
ml_program.global private mutable @p_x(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<1x4x4x2xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<1x2x2x2xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %x = ml_program.global_load @p_x : tensor<1x4x4x2xf64>
  %rw = ml_program.global_load @r : tensor<1x2x2x2xf64>
  %y = mpc.max_pool2d %x {kernel = array<i64: 2, 2>} : tensor<1x4x4x2xf64>
  %z = mpc.mul %y, %rw : tensor<1x2x2x2xf64>, tensor<1x2x2x2xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1, 2, 3>} : tensor<1x2x2x2xf64>
  return %l : tensor<f64>
}

// -----

// mse
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[D:.*]] = mpc.mse_backward %{{.*}}, %p_a, %p_t : tensor<f64>, tensor<6xf64>, tensor<6xf64>
// CHECK: %[[DT:.*]] = mpc.neg %[[D]]
// CHECK: return %{{.*}}, %[[D]], %[[DT]]
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<6xf64>
ml_program.global private mutable @p_t(#mpc.init<uniform, seed = 2, low = -1.0, high = 1.0>) : tensor<6xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<f64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<6xf64>
  %t = ml_program.global_load @p_t : tensor<6xf64>
  %rw = ml_program.global_load @r : tensor<f64>
  %y = mpc.mse %a, %t : tensor<6xf64>, tensor<6xf64>
  %z = mpc.mul %y, %rw : tensor<f64>, tensor<f64>
  %l = mpc.neg %z : tensor<f64>
  return %l : tensor<f64>
}

// -----

// mul_broadcast
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.reduce_sum %{{.*}} {dims = array<i64: 0>} : tensor<2x3x4xf64>
// CHECK-NEXT: mpc.reduce_sum %{{.*}} {dims = array<i64: 1>, keep_dims} : tensor<3x4xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<2x3x4xf64>
ml_program.global private mutable @p_b(#mpc.init<uniform, seed = 2, low = -1.0, high = 1.0>) : tensor<3x1xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<2x3x4xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<2x3x4xf64>
  %b = ml_program.global_load @p_b : tensor<3x1xf64>
  %rw = ml_program.global_load @r : tensor<2x3x4xf64>
  %y = mpc.mul %a, %b : tensor<2x3x4xf64>, tensor<3x1xf64>
  %z = mpc.mul %y, %rw : tensor<2x3x4xf64>, tensor<2x3x4xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1, 2>} : tensor<2x3x4xf64>
  return %l : tensor<f64>
}

// -----

// neg
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[G:.*]] = mpc.broadcast_to
// CHECK-NEXT: mpc.mul %[[G]]
// CHECK-NEXT: mpc.neg
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<5xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<5xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<5xf64>
  %rw = ml_program.global_load @r : tensor<5xf64>
  %y = mpc.neg %a : tensor<5xf64>
  %z = mpc.mul %y, %rw : tensor<5xf64>, tensor<5xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0>} : tensor<5xf64>
  return %l : tensor<f64>
}

// -----

// pow: PyTorch's limits, 0 for d/da where b = 0 and for d/db where a = 0
// and b >= 0 (the formulas give 0 * inf there).
// CHECK-LABEL: func.func @train_step(
// CHECK-DAG: mpc.log %p_a
// CHECK-DAG: mpc.pow %p_a, %{{.*}}
// CHECK-DAG: mpc.constant dense<1.000000e+00> : tensor<f64>
// CHECK-DAG: %[[BZ:.*]] = mpc.compare "eq", %p_b, %{{.*}} : tensor<4xf64>, tensor<f64>
// CHECK-DAG: mpc.where %[[BZ]], %{{.*}}, %{{.*}} : tensor<4xi1>, tensor<f64>, tensor<3x4xf64>
// CHECK-DAG: %[[AZ:.*]] = mpc.compare "eq", %p_a, %{{.*}} : tensor<3x4xf64>, tensor<f64>
// CHECK-DAG: %[[BNN:.*]] = mpc.compare "ge", %p_b, %{{.*}} : tensor<4xf64>, tensor<f64>
// CHECK-DAG: %[[IN:.*]] = mpc.where %[[BNN]], %{{.*}}, %{{.*}} : tensor<4xi1>, tensor<f64>, tensor<3x4xf64>
// CHECK-DAG: mpc.where %[[AZ]], %[[IN]], %{{.*}} : tensor<3x4xi1>, tensor<3x4xf64>, tensor<3x4xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = 0.5, high = 2.0>) : tensor<3x4xf64>
ml_program.global private mutable @p_b(#mpc.init<uniform, seed = 2, low = -1.0, high = 1.0>) : tensor<4xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<3x4xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<3x4xf64>
  %b = ml_program.global_load @p_b : tensor<4xf64>
  %rw = ml_program.global_load @r : tensor<3x4xf64>
  %y = mpc.pow %a, %b : tensor<3x4xf64>, tensor<4xf64>
  %z = mpc.mul %y, %rw : tensor<3x4xf64>, tensor<3x4xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<3x4xf64>
  return %l : tensor<f64>
}

// -----

// pow by a constant exponent without zeros (x^2): d/da needs no guard, and
// the exponent has no gradient to take.
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: mpc.compare
// CHECK-NOT: mpc.where
// CHECK: return
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = 0.5, high = 2.0>) : tensor<3x4xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<3x4xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<3x4xf64>
  %rw = ml_program.global_load @r : tensor<3x4xf64>
  %two = mpc.constant dense<2.0> : tensor<f64>
  %y = mpc.pow %a, %two : tensor<3x4xf64>, tensor<f64>
  %z = mpc.mul %y, %rw : tensor<3x4xf64>, tensor<3x4xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<3x4xf64>
  return %l : tensor<f64>
}

// -----

// reduce_max
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[M:.*]] = mpc.reduce_max %p_a
// CHECK: mpc.reduce_max_backward %{{.*}}, %p_a, %[[M]] {dims = array<i64: 1>} : tensor<3x2xf64>, tensor<3x4x2xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<3x4x2xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<3x2xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<3x4x2xf64>
  %rw = ml_program.global_load @r : tensor<3x2xf64>
  %y = mpc.reduce_max %a {dims = array<i64: 1>} : tensor<3x4x2xf64>
  %z = mpc.mul %y, %rw : tensor<3x2xf64>, tensor<3x2xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<3x2xf64>
  return %l : tensor<f64>
}

// -----

// reduce_mean_keep
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.constant dense<0.33333333333333331> : tensor<f64>
// CHECK: mpc.broadcast_to %{{.*}} : tensor<1x4xf64> -> tensor<3x4xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<3x4xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<1x4xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<3x4xf64>
  %rw = ml_program.global_load @r : tensor<1x4xf64>
  %y = mpc.reduce_mean %a {dims = array<i64: 0>, keep_dims} : tensor<3x4xf64>
  %z = mpc.mul %y, %rw : tensor<1x4xf64>, tensor<1x4xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<1x4xf64>
  return %l : tensor<f64>
}

// -----

// reduce_sum
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[R:.*]] = mpc.reshape %{{.*}} : tensor<3x2xf64> -> tensor<3x1x2xf64>
// CHECK: mpc.broadcast_to %[[R]] : tensor<3x1x2xf64> -> tensor<3x4x2xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<3x4x2xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<3x2xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<3x4x2xf64>
  %rw = ml_program.global_load @r : tensor<3x2xf64>
  %y = mpc.reduce_sum %a {dims = array<i64: 1>} : tensor<3x4x2xf64>
  %z = mpc.mul %y, %rw : tensor<3x2xf64>, tensor<3x2xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<3x2xf64>
  return %l : tensor<f64>
}

// -----

// relu
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.relu_grad %{{.*}}, %p_a : tensor<8xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<8xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<8xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<8xf64>
  %rw = ml_program.global_load @r : tensor<8xf64>
  %y = mpc.relu %a : tensor<8xf64>
  %z = mpc.mul %y, %rw : tensor<8xf64>, tensor<8xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0>} : tensor<8xf64>
  return %l : tensor<f64>
}

// -----

// reshape
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.reshape %{{.*}} : tensor<2x6xf64> -> tensor<3x4xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<3x4xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<2x6xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<3x4xf64>
  %rw = ml_program.global_load @r : tensor<2x6xf64>
  %y = mpc.reshape %a : tensor<3x4xf64> -> tensor<2x6xf64>
  %z = mpc.mul %y, %rw : tensor<2x6xf64>, tensor<2x6xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<2x6xf64>
  return %l : tensor<f64>
}

// -----

// rsqrt
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.constant dense<-5.000000e-01> : tensor<f64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = 0.5, high = 2.0>) : tensor<5xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<5xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<5xf64>
  %rw = ml_program.global_load @r : tensor<5xf64>
  %y = mpc.rsqrt %a : tensor<5xf64>
  %z = mpc.mul %y, %rw : tensor<5xf64>, tensor<5xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0>} : tensor<5xf64>
  return %l : tensor<f64>
}

// -----

// sigmoid
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[Y:.*]] = mpc.sigmoid %p_a
// CHECK: mpc.sigmoid_grad %{{.*}}, %[[Y]]
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -2.0, high = 2.0>) : tensor<5xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<5xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<5xf64>
  %rw = ml_program.global_load @r : tensor<5xf64>
  %y = mpc.sigmoid %a : tensor<5xf64>
  %z = mpc.mul %y, %rw : tensor<5xf64>, tensor<5xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0>} : tensor<5xf64>
  return %l : tensor<f64>
}

// -----

// slice
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.slice_backward %{{.*}} {offsets = array<i64: 1, 0>, strides = array<i64: 1, 2>} : tensor<2x3xf64> -> tensor<4x6xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<4x6xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<2x3xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<4x6xf64>
  %rw = ml_program.global_load @r : tensor<2x3xf64>
  %y = mpc.slice %a {offsets = array<i64: 1, 0>, sizes = array<i64: 2, 3>, strides = array<i64: 1, 2>} : tensor<4x6xf64>
  %z = mpc.mul %y, %rw : tensor<2x3xf64>, tensor<2x3xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<2x3xf64>
  return %l : tensor<f64>
}

// -----

// softmax
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[Y:.*]] = mpc.softmax %p_a
// CHECK: mpc.softmax_backward %{{.*}}, %[[Y]] : tensor<3x5xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -2.0, high = 2.0>) : tensor<3x5xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<3x5xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<3x5xf64>
  %rw = ml_program.global_load @r : tensor<3x5xf64>
  %y = mpc.softmax %a : tensor<3x5xf64>
  %z = mpc.mul %y, %rw : tensor<3x5xf64>, tensor<3x5xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<3x5xf64>
  return %l : tensor<f64>
}

// -----

// sqrt
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[Y:.*]] = mpc.sqrt %p_a
// CHECK: %[[TWO:.*]] = mpc.constant dense<2.000000e+00> : tensor<f64>
// CHECK: %[[D:.*]] = mpc.mul %[[Y]], %[[TWO]]
// CHECK: mpc.div %{{.*}}, %[[D]]
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = 0.5, high = 2.0>) : tensor<5xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<5xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<5xf64>
  %rw = ml_program.global_load @r : tensor<5xf64>
  %y = mpc.sqrt %a : tensor<5xf64>
  %z = mpc.mul %y, %rw : tensor<5xf64>, tensor<5xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0>} : tensor<5xf64>
  return %l : tensor<f64>
}

// -----

// sub_broadcast
// CHECK-LABEL: func.func @train_step(
// CHECK-DAG: mpc.reduce_sum %{{.*}} {dims = array<i64: 1>, keep_dims} : tensor<3x4xf64>
// CHECK-DAG: mpc.neg %{{.*}} : tensor<3x4xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<3x1xf64>
ml_program.global private mutable @p_b(#mpc.init<uniform, seed = 2, low = -1.0, high = 1.0>) : tensor<3x4xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<3x4xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<3x1xf64>
  %b = ml_program.global_load @p_b : tensor<3x4xf64>
  %rw = ml_program.global_load @r : tensor<3x4xf64>
  %y = mpc.sub %a, %b : tensor<3x1xf64>, tensor<3x4xf64>
  %z = mpc.mul %y, %rw : tensor<3x4xf64>, tensor<3x4xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<3x4xf64>
  return %l : tensor<f64>
}

// -----

// tanh
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[Y:.*]] = mpc.tanh %p_a
// CHECK: mpc.tanh_grad %{{.*}}, %[[Y]]
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -2.0, high = 2.0>) : tensor<5xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<5xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<5xf64>
  %rw = ml_program.global_load @r : tensor<5xf64>
  %y = mpc.tanh %a : tensor<5xf64>
  %z = mpc.mul %y, %rw : tensor<5xf64>, tensor<5xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0>} : tensor<5xf64>
  return %l : tensor<f64>
}

// -----

// transpose
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.transpose %{{.*}} {permutation = array<i64: 1, 2, 0>} : tensor<4x2x3xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<2x3x4xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<4x2x3xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<2x3x4xf64>
  %rw = ml_program.global_load @r : tensor<4x2x3xf64>
  %y = mpc.transpose %a {permutation = array<i64: 2, 0, 1>} : tensor<2x3x4xf64>
  %z = mpc.mul %y, %rw : tensor<4x2x3xf64>, tensor<4x2x3xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1, 2>} : tensor<4x2x3xf64>
  return %l : tensor<f64>
}

// -----

// upsample
// CHECK-LABEL: func.func @train_step(
// CHECK: mpc.upsample_nearest2d_backward %{{.*}} {scale = array<i64: 2, 3>} : tensor<1x4x6x3xf64>
ml_program.global private mutable @p_x(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<1x2x2x3xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<1x4x6x3xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %x = ml_program.global_load @p_x : tensor<1x2x2x3xf64>
  %rw = ml_program.global_load @r : tensor<1x4x6x3xf64>
  %y = mpc.upsample_nearest2d %x {scale = array<i64: 2, 3>} : tensor<1x2x2x3xf64>
  %z = mpc.mul %y, %rw : tensor<1x4x6x3xf64>, tensor<1x4x6x3xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1, 2, 3>} : tensor<1x4x6x3xf64>
  return %l : tensor<f64>
}

// -----

// sin
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[C:.*]] = mpc.cos %p_a : tensor<8xf64>
// CHECK: mpc.mul %{{.*}}, %[[C]] : tensor<8xf64>, tensor<8xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -4.0, high = 4.0>) : tensor<8xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<8xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<8xf64>
  %rw = ml_program.global_load @r : tensor<8xf64>
  %y = mpc.sin %a : tensor<8xf64>
  %z = mpc.mul %y, %rw : tensor<8xf64>, tensor<8xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0>} : tensor<8xf64>
  return %l : tensor<f64>
}

// -----

// cos
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[S:.*]] = mpc.sin %p_a : tensor<8xf64>
// CHECK: %[[M:.*]] = mpc.mul %{{.*}}, %[[S]] : tensor<8xf64>, tensor<8xf64>
// CHECK: mpc.neg %[[M]] : tensor<8xf64>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -4.0, high = 4.0>) : tensor<8xf64>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<8xf64>
func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {
  %a = ml_program.global_load @p_a : tensor<8xf64>
  %rw = ml_program.global_load @r : tensor<8xf64>
  %y = mpc.cos %a : tensor<8xf64>
  %z = mpc.mul %y, %rw : tensor<8xf64>, tensor<8xf64>
  %l = mpc.reduce_sum %z {dims = array<i64: 0>} : tensor<8xf64>
  return %l : tensor<f64>
}

// -----

// softmax with a wider result (mixed types) and a scale: the input's
// gradient in the input's type, from the f32 output gradient and output,
// with the forward's scale
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[Y:.*]] = mpc.softmax %p_a {scale = 5.000000e-01 : f64} : tensor<3x5xbf16> -> tensor<3x5xf32>
// CHECK: mpc.softmax_backward %{{.*}}, %[[Y]] {scale = 5.000000e-01 : f64} : tensor<3x5xf32> -> tensor<3x5xbf16>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -2.0, high = 2.0>) : tensor<3x5xbf16>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<3x5xf32>
func.func @loss(%d: tensor<1xf32>) -> tensor<f32> {
  %a = ml_program.global_load @p_a : tensor<3x5xbf16>
  %rw = ml_program.global_load @r : tensor<3x5xf32>
  %y = mpc.softmax %a {scale = 0.5 : f64} : tensor<3x5xbf16> -> tensor<3x5xf32>
  %z = mpc.mul %y, %rw : tensor<3x5xf32>, tensor<3x5xf32>
  %l = mpc.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<3x5xf32>
  return %l : tensor<f32>
}

// -----

// dropout with a narrower result (mixed types): the mask's gradient, cast
// to the input's type
// CHECK-LABEL: func.func @train_step(
// CHECK: %{{.*}}, %[[MASK:.*]] = mpc.dropout %p_a {{.*}} : tensor<16xf32> -> tensor<16xbf16>
// CHECK: %[[G:.*]] = mpc.dropout_backward %{{.*}}, %[[MASK]] {p = 5.000000e-01 : f64} : tensor<16xbf16>, tensor<16xi1>
// CHECK: mpc.cast %[[G]] : tensor<16xbf16> -> tensor<16xf32>
ml_program.global private mutable @p_a(#mpc.init<uniform, seed = 1, low = -1.0, high = 1.0>) : tensor<16xf32>
ml_program.global private @r(#mpc.init<uniform, seed = 100, low = -1.0, high = 1.0>) : tensor<16xbf16>
func.func @loss(%d: tensor<1xf32>) -> tensor<bf16> {
  %a = ml_program.global_load @p_a : tensor<16xf32>
  %rw = ml_program.global_load @r : tensor<16xbf16>
  %y, %mask = mpc.dropout %a {p = 0.5, seed = 3} : tensor<16xf32> -> tensor<16xbf16>
  %z = mpc.mul %y, %rw : tensor<16xbf16>, tensor<16xbf16>
  %l = mpc.reduce_sum %z {dims = array<i64: 0>} : tensor<16xbf16>
  return %l : tensor<bf16>
}
