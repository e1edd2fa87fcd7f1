// RUN: mpc-opt %s -split-input-file -verify-diagnostics

// Attributes are checked before result types are inferred from them:
// a missing required attribute or one of the wrong kind is an error
// with a location, never a crash (inference runs while parsing, before
// the verifier).
func.func @missing_reduce_sum_dims(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.reduce_sum' op requires attribute 'dims'}}
  %y = mpc.reduce_sum %x : tensor<4x8xf32>
  return
}

// -----

func.func @missing_reduce_mean_dims(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.reduce_mean' op requires attribute 'dims'}}
  %y = mpc.reduce_mean %x : tensor<4x8xf32>
  return
}

// -----

func.func @missing_reduce_max_dims(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.reduce_max' op requires attribute 'dims'}}
  %y = mpc.reduce_max %x : tensor<4x8xf32>
  return
}

// -----

func.func @missing_transpose_permutation(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.transpose' op requires attribute 'permutation'}}
  %y = mpc.transpose %x : tensor<4x8xf32>
  return
}

// -----

func.func @missing_slice_offsets(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.slice' op requires attribute 'offsets'}}
  %y = mpc.slice %x {sizes = array<i64: 2, 2>} : tensor<4x8xf32>
  return
}

// -----

func.func @missing_slice_sizes(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.slice' op requires attribute 'sizes'}}
  %y = mpc.slice %x {offsets = array<i64: 0, 0>} : tensor<4x8xf32>
  return
}

// -----

func.func @missing_concat_axis(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.concat' op requires attribute 'axis'}}
  %y = mpc.concat %x, %x : tensor<4x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @missing_dropout_seed(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.dropout' op requires attribute 'seed'}}
  %y:2 = mpc.dropout %x {p = 0.5 : f64} : tensor<4x8xf32>
  return
}

// -----

func.func @missing_dropout_p(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.dropout' op requires attribute 'p'}}
  %y:2 = mpc.dropout %x {seed = 1 : i64} : tensor<4x8xf32>
  return
}

// -----

func.func @missing_max_pool2d_kernel(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.max_pool2d' op requires attribute 'kernel'}}
  %y = mpc.max_pool2d %i : tensor<2x8x8x4xf32>
  return
}

// -----

func.func @missing_avg_pool2d_kernel(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.avg_pool2d' op requires attribute 'kernel'}}
  %y = mpc.avg_pool2d %i : tensor<2x8x8x4xf32>
  return
}

// -----

func.func @missing_upsample_nearest2d_scale(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.upsample_nearest2d' op requires attribute 'scale'}}
  %y = mpc.upsample_nearest2d %i : tensor<2x8x8x4xf32>
  return
}

// -----

func.func @missing_upsample_nearest2d_backward_scale(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.upsample_nearest2d_backward' op requires attribute 'scale'}}
  %y = mpc.upsample_nearest2d_backward %i : tensor<2x8x8x4xf32>
  return
}

// -----

func.func @wrong_kind_reduce_sum(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{attribute 'dims' failed to satisfy constraint: i64 dense array attribute}}
  %y = mpc.reduce_sum %x {dims = 1 : i64} : tensor<4x8xf32>
  return
}

// -----

func.func @wrong_kind_transpose(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{attribute 'permutation' failed to satisfy constraint: i64 dense array attribute}}
  %y = mpc.transpose %x {permutation = "10"} : tensor<4x8xf32>
  return
}

// -----

func.func @wrong_kind_dropout(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{attribute 'p' failed to satisfy constraint: 64-bit float attribute}}
  %y:2 = mpc.dropout %x {p = 1 : i64, seed = 1 : i64} : tensor<4x8xf32>
  return
}

// -----

func.func @wrong_kind_concat(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{attribute 'axis' failed to satisfy constraint: 64-bit signless integer attribute}}
  %y = mpc.concat %x, %x {axis = 1.0 : f64} : tensor<4x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @wrong_kind_max_pool2d(%x: tensor<4x8xf32>, %i: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{attribute 'kernel' failed to satisfy constraint}}
  %y = mpc.max_pool2d %i {kernel = [2, 2]} : tensor<2x8x8x4xf32>
  return
}

// -----

func.func @wrong_kind_sgd_momentum(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{custom op 'mpc.sgd_update' attribute 'momentum' failed to satisfy constraint: 64-bit float attribute}}
  %0 = mpc.sgd_update %p, %p lr(%lr) {momentum = 1} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @wrong_kind_sgd_nesterov(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{custom op 'mpc.sgd_update' attribute 'nesterov' failed to satisfy constraint: unit attribute}}
  %0 = mpc.sgd_update %p, %p lr(%lr) {nesterov = 3 : i32} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @wrong_kind_adam_bias_correction(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i32>) {
  // expected-error @+1 {{custom op 'mpc.adam_update' attribute 'bias_correction' failed to satisfy constraint: bool attribute}}
  %0:3 = mpc.adam_update %p, %p, %p, %p lr(%lr) step(%t) {bias_correction = "no"} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @wrong_kind_adam_eps(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i32>) {
  // expected-error @+1 {{custom op 'mpc.adam_update' attribute 'eps' failed to satisfy constraint: 64-bit float attribute}}
  %0:3 = mpc.adam_update %p, %p, %p, %p lr(%lr) step(%t) {eps = 1 : i64} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @dropout_add_p(%x: tensor<4x8xf16>, %r: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.dropout_add' op expects p in [0, 1), got 1}}
  %y = mpc.dropout_add %x, %r {p = 1.0 : f64, seed = 1 : i64} : tensor<4x8xf16>, tensor<4x8xf16>
  return
}

// -----

func.func @dropout_add_nan_p(%x: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.dropout_add' op expects p in [0, 1), got nan}}
  %y = mpc.dropout_add %x {p = 0x7FF8000000000000 : f64, seed = 1 : i64} : tensor<4x8xf16>
  return
}

// -----

func.func @dropout_add_residual(%x: tensor<4x8xf16>, %r: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.dropout_add' op expects a residual of the input's type 'tensor<4x8xf16>', got 'tensor<4x8xf32>'}}
  %y = mpc.dropout_add %x, %r {p = 0.1 : f64, seed = 1 : i64} : tensor<4x8xf16>, tensor<4x8xf32>
  return
}
