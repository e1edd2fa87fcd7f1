// RUN: mpc-opt %s -split-input-file -verify-diagnostics

func.func @ce_labels(%l: tensor<4x10xf32>, %y: tensor<5xi32>) {
  // expected-error @+1 {{'mpc.cross_entropy' op expects labels of shape [4] (logits without the class dimension), got [5]}}
  %0 = mpc.cross_entropy %l, %y : tensor<4x10xf32>, tensor<5xi32>
  return
}

// -----

func.func @ce_rank(%l: tensor<10xf32>, %y: tensor<i32>) {
  // expected-error @+1 {{'mpc.cross_entropy' op expects logits of rank >= 2 with classes last, got 'tensor<10xf32>'}}
  %0 = mpc.cross_entropy %l, %y : tensor<10xf32>, tensor<i32>
  return
}

// -----

func.func @ce_float_labels(%l: tensor<4x10xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.cross_entropy' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values with no zero-sized dimension and at most 2^48 bytes, but got 'tensor<4xf32>'}}
  %0 = mpc.cross_entropy %l, %y : tensor<4x10xf32>, tensor<4xf32>
  return
}

// -----

func.func @mse_target(%p: tensor<4xf32>, %t: tensor<4xf16>) {
  // expected-error @+1 {{'mpc.mse' op expects input and target of the same type, got 'tensor<4xf32>' and 'tensor<4xf16>'}}
  %0 = mpc.mse %p, %t : tensor<4xf32>, tensor<4xf16>
  return
}

// -----

func.func @bce_backward_grad(%g: tensor<4xf32>, %p: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.bce_with_logits_backward' op expects a rank-0 loss gradient of type 'tensor<f32>', got 'tensor<4xf32>'}}
  %0 = mpc.bce_with_logits_backward %g, %p, %p : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @reduction_name(%p: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::mpc::Reduction to be one of: mean, sum}}
  // expected-error @+1 {{failed to parse MPC_ReductionAttr parameter 'value'}}
  %0 = mpc.mse %p, %p {reduction = #mpc<reduction max>} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @scale_loss_type(%l: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'mpc.scale_loss' op operand #0 must be 0D tensor of 32-bit float values, but got 'tensor<4xf32>'}}
  %0 = mpc.scale_loss %l, %s : tensor<4xf32>
  return
}

// -----

func.func @unscale_empty(%s: tensor<f32>) {
  // expected-error @+2 {{'mpc.unscale_and_check' op expects at least one gradient}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "mpc.unscale_and_check"(%s) : (tensor<f32>) -> tensor<i1>
  return
}

// -----

func.func @all_reduce_empty() {
  // expected-error @+2 {{'mpc.all_reduce' op expects at least one tensor}}
  // expected-error @+1 {{failed to infer returned types}}
  "mpc.all_reduce"() {bucket = 0} : () -> ()
  return
}

// -----

func.func @all_reduce_mixed(%a: tensor<4xf16>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.all_reduce' op expects one element type in a bucket, got 'f16' and 'f32'}}
  %0:2 = mpc.all_reduce %a, %b {bucket = 0} : tensor<4xf16>, tensor<4xf32>
  return
}

// -----

func.func @all_reduce_bucket(%a: tensor<4xf16>) {
  // expected-error @+1 {{'mpc.all_reduce' op bucket must be 0 or more, got -1}}
  %0 = mpc.all_reduce %a {bucket = -1} : tensor<4xf16>
  return
}

// -----

func.func @clip_empty(%s: tensor<f32>) {
  // expected-error @+1 {{'mpc.clip_grad_norm' op expects at least one gradient}}
  %0:3 = "mpc.clip_grad_norm"(%s) {max_norm = 1.0} : (tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<i1>)
  return
}

// -----

func.func @clip_max_norm(%s: tensor<f32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.clip_grad_norm' op expects max_norm > 0 and finite, got 0}}
  %0:3 = mpc.clip_grad_norm %s, %g {max_norm = 0.0} : tensor<4xf32>
  return
}

// -----

func.func @grad_stats_empty(%s: tensor<f32>) {
  // expected-error @+2 {{'mpc.grad_stats' op expects at least one gradient}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "mpc.grad_stats"(%s) : (tensor<f32>) -> tensor<4xi64>
  return
}

// -----

func.func @grad_stats_result(%s: tensor<f32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{'mpc.grad_stats' op inferred type(s) 'tensor<4xi64>' are incompatible with return type(s) of operation 'tensor<3xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "mpc.grad_stats"(%s, %g) : (tensor<f32>, tensor<8xf32>) -> tensor<3xi64>
  return
}

// -----

func.func @grad_stats_scale(%s: tensor<2xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.grad_stats' op operand #0 must be}}
  %0 = "mpc.grad_stats"(%s, %g) : (tensor<2xf32>, tensor<8xf32>) -> tensor<4xi64>
  return
}

func.func @update_scale_growth(%s: tensor<f32>, %t: tensor<i32>, %f: tensor<i1>) {
  // expected-error @+1 {{'mpc.update_loss_scale' op expects growth_factor > 1, got 1.000000e+00}}
  %0:3 = mpc.update_loss_scale %s, %t, %t, %f {growth_factor = 1.0}
  return
}

// -----

func.func @update_scale_backoff(%s: tensor<f32>, %t: tensor<i32>, %f: tensor<i1>) {
  // expected-error @+1 {{'mpc.update_loss_scale' op expects backoff_factor in (0, 1), got 1.000000e+00}}
  %0:3 = mpc.update_loss_scale %s, %t, %t, %f {backoff_factor = 1.0}
  return
}

// -----

func.func @update_scale_interval(%s: tensor<f32>, %t: tensor<i32>, %f: tensor<i1>) {
  // expected-error @+1 {{'mpc.update_loss_scale' op expects growth_interval >= 1, got 0}}
  %0:3 = mpc.update_loss_scale %s, %t, %t, %f {growth_interval = 0}
  return
}

// -----

func.func @update_scale_hysteresis(%s: tensor<f32>, %t: tensor<i32>, %f: tensor<i1>) {
  // expected-error @+1 {{'mpc.update_loss_scale' op expects hysteresis >= 1, got 0}}
  %0:3 = mpc.update_loss_scale %s, %t, %t, %f {hysteresis = 0}
  return
}

// -----

func.func @update_scale_min(%s: tensor<f32>, %t: tensor<i32>, %f: tensor<i1>) {
  // expected-error @+1 {{'mpc.update_loss_scale' op expects min_scale > 0, got 0.000000e+00}}
  %0:3 = mpc.update_loss_scale %s, %t, %t, %f {min_scale = 0.0}
  return
}

// -----

func.func @update_scale_max(%s: tensor<f32>, %t: tensor<i32>, %f: tensor<i1>) {
  // expected-error @+1 {{'mpc.update_loss_scale' op expects min_scale <= max_scale, got 4.000000e+00 > 2.000000e+00}}
  %0:3 = mpc.update_loss_scale %s, %t, %t, %f {min_scale = 4.0, max_scale = 2.0}
  return
}

// -----

func.func @update_scale_max_positive(%s: tensor<f32>, %t: tensor<i32>, %f: tensor<i1>) {
  // expected-error @+1 {{'mpc.update_loss_scale' op expects max_scale > 0, got -1.000000e+00}}
  %0:3 = mpc.update_loss_scale %s, %t, %t, %f {max_scale = -1.0}
  return
}

// -----

func.func @sgd_grad_shape(%p: tensor<4xf32>, %g: tensor<5xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'mpc.sgd_update' op expects grad of the parameter's shape [4], got 'tensor<5xf32>'}}
  %0 = mpc.sgd_update %p, %g lr(%lr) : tensor<4xf32>, tensor<5xf32>
  return
}

// -----

func.func @sgd_missing_lr(%p: tensor<4xf32>) {
  // expected-error @+1 {{expects 'lr(...)'}}
  %0 = mpc.sgd_update %p, %p : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @sgd_momentum_without_buffer(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'mpc.sgd_update' op expects a momentum buffer exactly when momentum > 0}}
  %0 = mpc.sgd_update %p, %p lr(%lr) {momentum = 0.9} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @sgd_nesterov(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'mpc.sgd_update' op expects momentum > 0 and zero dampening with nesterov}}
  %0:2 = mpc.sgd_update %p, %p lr(%lr) momentum_buffer(%p) {momentum = 0.9, dampening = 0.1, nesterov} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @sgd_negative_momentum(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'mpc.sgd_update' op expects momentum >= 0, got -1.000000e+00}}
  %0 = mpc.sgd_update %p, %p lr(%lr) {momentum = -1.0} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @sgd_dampening(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'mpc.sgd_update' op expects dampening in [0, 1], got 2.000000e+00}}
  %0:2 = mpc.sgd_update %p, %p lr(%lr) momentum_buffer(%p) {momentum = 0.9, dampening = 2.0} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @sgd_weight_decay(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'mpc.sgd_update' op expects weight_decay >= 0, got -1.000000e+00}}
  %0 = mpc.sgd_update %p, %p lr(%lr) {weight_decay = -1.0} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @sgd_copy_type(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{expects a floating-point copy type, got 'i8'}}
  %0:2 = mpc.sgd_update %p, %p lr(%lr) copy(i8) : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @sgd_buffer_result(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'mpc.sgd_update' op expects a new momentum buffer result exactly when a momentum buffer is given}}
  %0:2 = "mpc.sgd_update"(%p, %p, %lr, %p) {momentum = 0.9 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 1>} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @sgd_copy_result(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'mpc.sgd_update' op expects a parameter copy result exactly when 'copy_type' is set}}
  %0:2 = "mpc.sgd_update"(%p, %p, %lr) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 1>} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf16>)
  return
}

// -----

func.func @sgd_copy_shape(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'mpc.sgd_update' op expects the copy of type 'tensor<4xf16>'}}
  %0:2 = "mpc.sgd_update"(%p, %p, %lr) {copy_type = f16, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 1>} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<8xf16>)
  return
}

// -----

func.func @sgd_new_param(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'mpc.sgd_update' op expects the new parameter of type 'tensor<4xf32>'}}
  %0 = "mpc.sgd_update"(%p, %p, %lr) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf16>
  return
}

// -----

func.func @adam_state(%p: tensor<4xf32>, %m: tensor<4xf16>, %lr: tensor<f32>, %t: tensor<i32>) {
  // expected-error @+1 {{'mpc.adam_update' op expects optimizer state and its new value of the parameter's type 'tensor<4xf32>', got 'tensor<4xf16>' and 'tensor<4xf32>'}}
  %0:3 = "mpc.adam_update"(%p, %p, %m, %m, %lr, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0>} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<4xf16>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adam_beta(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i32>) {
  // expected-error @+1 {{'mpc.adam_update' op expects beta2 in [0, 1), got 1.000000e+00}}
  %0:3 = mpc.adam_update %p, %p, %p, %p lr(%lr) step(%t) {beta2 = 1.0} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @adam_eps(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i32>) {
  // expected-error @+1 {{'mpc.adam_update' op expects eps > 0, got 0.000000e+00}}
  %0:3 = mpc.adam_update %p, %p, %p, %p lr(%lr) step(%t) {eps = 0.0} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @adam_missing_step(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{expects 'step(...)'}}
  %0:3 = mpc.adam_update %p, %p, %p, %p lr(%lr) : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// expected-note @+1 {{prior use here}}
func.func @adam_lr_type(%p: tensor<4xf32>, %lr: tensor<f16>, %t: tensor<i32>) {
  // expected-error @+1 {{use of value '%lr' expects different type than prior uses: 'tensor<f32>' vs 'tensor<f16>'}}
  %0:3 = mpc.adam_update %p, %p, %p, %p lr(%lr) step(%t) : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @sgd_operand_count(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{expects 2 leading operands}}
  %0 = mpc.sgd_update %p lr(%lr) : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @sgd_param_type(%p: memref<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{expects a ranked tensor parameter type}}
  %0 = mpc.sgd_update %p, %p lr(%lr) : memref<4xf32>, memref<4xf32>
  return
}

// -----

func.func @adam_new_state(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i32>) {
  // expected-error @+1 {{'mpc.adam_update' op expects optimizer state and its new value of the parameter's type 'tensor<4xf32>', got 'tensor<4xf32>' and 'tensor<4xf16>'}}
  %0:3 = "mpc.adam_update"(%p, %p, %p, %p, %lr, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0>} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xf16>, tensor<4xf32>)
  return
}

// -----

func.func @increment_float(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'mpc.increment' op operand #0 must be 0D tensor of 32-bit signless integer values, but got 'tensor<f32>'}}
  %0 = mpc.increment %x : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @lr_schedule(%t: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{'mpc.lr_schedule' op expects kind constant, linear_warmup, cosine, one_cycle, step or exponential, got 'poly'}}
  %0 = mpc.lr_schedule %t {kind = "poly", base = 0.1}
  return %0 : tensor<f32>
}

// -----

func.func @lr_schedule(%t: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{'mpc.lr_schedule' op expects warmup >= 0, got -1}}
  %0 = mpc.lr_schedule %t {kind = "cosine", base = 0.1, warmup = -1, total = 10}
  return %0 : tensor<f32>
}

// -----

func.func @lr_schedule(%t: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{'mpc.lr_schedule' op expects warmup > 0 for a linear warm-up}}
  %0 = mpc.lr_schedule %t {kind = "linear_warmup", base = 0.1}
  return %0 : tensor<f32>
}

// -----

func.func @lr_schedule(%t: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{'mpc.lr_schedule' op expects total > warmup for a cosine schedule, got total 10 and warmup 10}}
  %0 = mpc.lr_schedule %t {kind = "cosine", base = 0.1, warmup = 10, total = 10}
  return %0 : tensor<f32>
}

// -----

func.func @lr_schedule(%t: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{'mpc.lr_schedule' op expects step_size >= 1 for a step schedule, got 0}}
  %0 = mpc.lr_schedule %t {kind = "step", base = 0.1}
  return %0 : tensor<f32>
}

// -----

func.func @lr_schedule(%t: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{'mpc.lr_schedule' op expects gamma > 0, got -0.5}}
  %0 = mpc.lr_schedule %t {kind = "exponential", base = 0.1, gamma = -0.5}
  return %0 : tensor<f32>
}

// -----

func.func @lr_schedule(%t: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{'mpc.lr_schedule' op expects no warmup for a exponential schedule (warm-up is linear_warmup's and cosine's)}}
  %0 = mpc.lr_schedule %t {kind = "exponential", base = 0.1, gamma = 0.5, warmup = 3}
  return %0 : tensor<f32>
}

// -----

func.func @lr_schedule(%t: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{'mpc.lr_schedule' op expects 0 < pct_start < 1, got 0}}
  %0 = mpc.lr_schedule %t {kind = "one_cycle", base = 0.1, total = 100, pct_start = 0.0}
  return %0 : tensor<f32>
}

// -----

func.func @lr_schedule(%t: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{'mpc.lr_schedule' op expects div_factor and final_div_factor > 0}}
  %0 = mpc.lr_schedule %t {kind = "one_cycle", base = 0.1, total = 100, final_div_factor = 0.0}
  return %0 : tensor<f32>
}

// -----

func.func @lr_schedule(%t: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{'mpc.lr_schedule' op expects phases of positive length: total 0 with pct_start 0.3 leaves a phase empty}}
  %0 = mpc.lr_schedule %t {kind = "one_cycle", base = 0.1}
  return %0 : tensor<f32>
}

// -----

func.func @accuracy_labels(%l: tensor<4x10xf16>, %y: tensor<5xi32>) {
  // expected-error @+1 {{'mpc.accuracy' op expects labels of shape [4] (logits without the class dimension), got [5]}}
  %0 = mpc.accuracy %l, %y : tensor<4x10xf16>, tensor<5xi32>
  return
}

// -----

func.func @accuracy_rank(%l: tensor<10xf32>, %y: tensor<i32>) {
  // expected-error @+1 {{'mpc.accuracy' op expects logits of rank >= 2 with classes last, got 'tensor<10xf32>'}}
  %0 = mpc.accuracy %l, %y : tensor<10xf32>, tensor<i32>
  return
}

// -----

func.func @accuracy_float_labels(%l: tensor<4x10xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.accuracy' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values with no zero-sized dimension and at most 2^48 bytes, but got 'tensor<4xf32>'}}
  %0 = mpc.accuracy %l, %y : tensor<4x10xf32>, tensor<4xf32>
  return
}

// -----

func.func @check_numerics_index(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.check_numerics' op expects non-negative indices, got -1}}
  mpc.check_numerics %x {indices = array<i64: -1>} : tensor<4xf32>
  return
}

// -----

func.func @check_numerics_indices_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.check_numerics' op expects one index per value, got 1 for 2 values}}
  mpc.check_numerics %x, %x {indices = array<i64: 0>} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @check_numerics_twice(%x: tensor<4xf32>, %y: tensor<2xf16>) {
  // expected-error @+1 {{'mpc.check_numerics' op checks index 3 twice}}
  mpc.check_numerics %x, %y {indices = array<i64: 3, 3>} : tensor<4xf32>, tensor<2xf16>
  return
}

// -----

func.func @check_numerics_nothing() {
  // expected-error @+1 {{'mpc.check_numerics' op expects at least one value to check}}
  "mpc.check_numerics"() {indices = array<i64>} : () -> ()
  return
}

// -----

func.func @ce_ignore_index_past_i32(%l: tensor<4x10xf32>, %y: tensor<4xi32>) {
  // expected-error @+1 {{'mpc.cross_entropy' op expects an ignore_index that 32-bit labels can hold, got 4294967296}}
  %0 = mpc.cross_entropy %l, %y {ignore_index = 4294967296} : tensor<4x10xf32>, tensor<4xi32>
  return
}

// -----

func.func @ce_backward_ignore_index_past_i32(%g: tensor<f32>, %l: tensor<4x10xf32>, %y: tensor<4xi32>) {
  // expected-error @+1 {{'mpc.cross_entropy_backward' op expects an ignore_index that 32-bit labels can hold, got -2147483649}}
  %0 = mpc.cross_entropy_backward %g, %l, %y {ignore_index = -2147483649} : tensor<f32>, tensor<4x10xf32>, tensor<4xi32>
  return
}

// -----

func.func @accuracy_ignore_index_past_i32(%l: tensor<4x10xf32>, %y: tensor<4xi32>) {
  // expected-error @+1 {{'mpc.accuracy' op expects an ignore_index that 32-bit labels can hold, got 2147483648}}
  %0 = mpc.accuracy %l, %y {ignore_index = 2147483648} : tensor<4x10xf32>, tensor<4xi32>
  return
}

// -----

func.func @ce_ignore_index_float(%l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'mpc.cross_entropy' op attribute 'ignore_index' failed to satisfy constraint: 64-bit signless integer attribute}}
  %0 = mpc.cross_entropy %l, %y {ignore_index = 1.5 : f32} : tensor<4x10xf32>, tensor<4xi64>
  return
}

// -----

func.func @ce_label_smoothing_past_one(%l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'mpc.cross_entropy' op expects a label_smoothing in [0, 1], got 1.500000e+00}}
  %0 = mpc.cross_entropy %l, %y {label_smoothing = 1.5} : tensor<4x10xf32>, tensor<4xi64>
  return
}

// -----

func.func @ce_backward_label_smoothing_negative(%g: tensor<f32>, %l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'mpc.cross_entropy_backward' op expects a label_smoothing in [0, 1], got -2.500000e-01}}
  %0 = mpc.cross_entropy_backward %g, %l, %y {label_smoothing = -0.25} : tensor<f32>, tensor<4x10xf32>, tensor<4xi64>
  return
}
