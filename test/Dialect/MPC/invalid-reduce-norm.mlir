// RUN: mpc-opt %s -split-input-file -verify-diagnostics

func.func @reduce_dims(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.reduce_sum' op expects dims distinct, increasing and in [0, 2), got [1, 0]}}
  %0 = mpc.reduce_sum %x {dims = array<i64: 1, 0>} : tensor<4x8xf32>
  return
}

// -----

func.func @reduce_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.reduce_mean' op expects dims distinct, increasing and in [0, 2), got [2]}}
  %0 = mpc.reduce_mean %x {dims = array<i64: 2>} : tensor<4x8xf32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.softmax' op expects axis in [-2, 2), got 2}}
  %0 = mpc.softmax %x {axis = 2} : tensor<4x8xf32>
  return
}

// -----

func.func @log_softmax_backward_axis(%g: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.log_softmax_backward' op expects axis in [-2, 2), got -3}}
  %0 = mpc.log_softmax_backward %g, %g {axis = -3} : tensor<4x8xf32>
  return
}

// -----

func.func @softmax_scale(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.softmax' op expects a finite scale, got INF}}
  %0 = mpc.softmax %x {scale = 0x7FF0000000000000 : f64} : tensor<4x8xf32>
  return
}

// -----

func.func @softmax_backward_scale(%g: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.softmax_backward' op expects a finite scale, got nan}}
  %0 = mpc.softmax_backward %g, %g {scale = 0x7FF8000000000000 : f64} : tensor<4x8xf32>
  return
}

// -----

func.func @softmax_mixed_f64(%x: tensor<4x8xf64>) {
  // expected-error @+1 {{'mpc.softmax' op mixes element types only among f16, bf16 and f32, got 'f64'}}
  %0 = mpc.softmax %x : tensor<4x8xf64> -> tensor<4x8xf32>
  return
}

// -----

func.func @softmax_mixed_shape(%x: tensor<4x8xbf16>) {
  // expected-error @+1 {{'mpc.softmax' op failed to verify that all of {input, result} have same shape}}
  %0 = mpc.softmax %x : tensor<4x8xbf16> -> tensor<4x9xf32>
  return
}

// -----

func.func @softmax_backward_mixed_f64(%g: tensor<4x8xbf16>, %y: tensor<4x8xf64>) {
  // expected-error @+1 {{'mpc.softmax_backward' op mixes element types only among f16, bf16 and f32, got 'f64'}}
  %0 = mpc.softmax_backward %g, %y : tensor<4x8xbf16>, tensor<4x8xf64>
  return
}

// -----

func.func @softmax_backward_mixed_shape(%g: tensor<4x8xbf16>, %y: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.softmax_backward' op failed to verify that all of {grad, output, result} have same shape}}
  %0 = mpc.softmax_backward %g, %y : tensor<4x8xbf16>, tensor<4x8xf32> -> tensor<8x4xbf16>
  return
}

// -----

func.func @dropout_mixed_f64(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.dropout' op mixes element types only among f16, bf16 and f32, got 'f64'}}
  %0, %m = mpc.dropout %x {p = 0.1 : f64, seed = 1 : i64} : tensor<4x8xf32> -> tensor<4x8xf64>
  return
}

// -----

func.func @dropout_mixed_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.dropout' op expects a result of the input's shape, got 'tensor<4x9xbf16>' for 'tensor<4x8xf32>'}}
  %0, %m = mpc.dropout %x {p = 0.1 : f64, seed = 1 : i64} : tensor<4x8xf32> -> tensor<4x9xbf16>
  return
}

// -----

func.func @layer_norm_gamma(%x: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.layer_norm' op expects gamma of the normalised shape [8], got [4]}}
  %0:3 = mpc.layer_norm %x, %g, %g : tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.layer_norm' op expects epsilon > 0, got 0.000000e+00}}
  %0:3 = mpc.layer_norm %x, %g, %g {epsilon = 0.0} : tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.layer_norm' op expects axis in [-2, 2), got 5}}
  %0:3 = mpc.layer_norm %x, %g, %g {axis = 5} : tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @layer_norm_scalar(%x: tensor<f32>, %g: tensor<f32>) {
  // expected-error @+1 {{'mpc.layer_norm' op expects an input of rank >= 1}}
  %0:3 = mpc.layer_norm %x, %g, %g : tensor<f32>, tensor<f32>
  return
}

// -----

func.func @layer_norm_backward_stats(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.layer_norm_backward' op expects mean and rstd of type 'tensor<4xf32>', got 'tensor<8xf32>' and 'tensor<8xf32>'}}
  %0:3 = mpc.layer_norm_backward %x, %x, %s, %s, %g : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @layer_norm_backward_gamma_addend(%x: tensor<4x8xf16>, %s: tensor<4xf32>, %g: tensor<8xf32>, %a: tensor<8xf16>) {
  // expected-error @+1 {{'mpc.layer_norm_backward' op expects gamma_addend of gamma's type 'tensor<8xf32>', got 'tensor<8xf16>'}}
  %0:3 = mpc.layer_norm_backward %x, %x, %s, %s, %g gamma_addend(%a : tensor<8xf16>) : tensor<4x8xf16>, tensor<4xf32>, tensor<8xf32>
  return
}

// -----

func.func @layer_norm_backward_beta_addend(%x: tensor<4x8xf32>, %s: tensor<4xf32>, %g: tensor<8xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.layer_norm_backward' op expects beta_addend of gamma's type 'tensor<8xf32>', got 'tensor<4xf32>'}}
  %0:3 = mpc.layer_norm_backward %x, %x, %s, %s, %g beta_addend(%a : tensor<4xf32>) : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>
  return
}

// -----

func.func @layer_norm_backward_grad(%dy: tensor<4x8xf16>, %x: tensor<4x8xf32>, %s: tensor<4xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.layer_norm_backward' op failed to verify that all of {grad, input} have same type}}
  %0:3 = "mpc.layer_norm_backward"(%dy, %x, %s, %s, %g) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0>} : (tensor<4x8xf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @batch_norm_rank(%x: tensor<2x4x8xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.batch_norm' op expects an NC or NHWC input (rank 2 or 4), got 'tensor<2x4x8xf32>'}}
  %0:5 = mpc.batch_norm %x, %c, %c, %c, %c : tensor<2x4x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_channels(%x: tensor<2x4x4x8xf32>, %c: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.batch_norm' op expects per-channel tensors of shape [8], got 'tensor<4xf32>'}}
  %0:5 = mpc.batch_norm %x, %c, %c, %c, %c : tensor<2x4x4x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @batch_norm_momentum(%x: tensor<2x8xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.batch_norm' op expects momentum in [0, 1], got 1.500000e+00}}
  %0:5 = mpc.batch_norm %x, %c, %c, %c, %c {momentum = 1.5} : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_epsilon(%x: tensor<2x8xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.batch_norm' op expects epsilon > 0, got -1.000000e+00}}
  %0:5 = mpc.batch_norm %x, %c, %c, %c, %c {epsilon = -1.0} : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_activation(%x: tensor<2x8xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.batch_norm' op unknown activation 'gelu' (expected none or relu)}}
  %0:5 = mpc.batch_norm %x, %c, %c, %c, %c {activation = "gelu"} : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_inference_rank(%x: tensor<2x4x8xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.batch_norm_inference' op expects an NC or NHWC input (rank 2 or 4), got 'tensor<2x4x8xf32>'}}
  %0 = mpc.batch_norm_inference %x, %c, %c, %c, %c : tensor<2x4x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_inference_channels(%x: tensor<2x4x4x8xf32>, %c: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.batch_norm_inference' op expects per-channel tensors of shape [8], got 'tensor<4xf32>'}}
  %0 = mpc.batch_norm_inference %x, %c, %c, %c, %c : tensor<2x4x4x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @batch_norm_inference_epsilon(%x: tensor<2x8xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.batch_norm_inference' op expects epsilon > 0, got 0.000000e+00}}
  %0 = mpc.batch_norm_inference %x, %c, %c, %c, %c {epsilon = 0.0} : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_inference_activation(%x: tensor<2x8xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.batch_norm_inference' op unknown activation 'gelu' (expected none or relu)}}
  %0 = mpc.batch_norm_inference %x, %c, %c, %c, %c {activation = "gelu"} : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_inference_statistics(%x: tensor<2x8xf32>, %c: tensor<8xf32>, %v: tensor<8xf16>) {
  // expected-error @+1 {{'mpc.batch_norm_inference' op failed to verify that all of {gamma, beta, running_mean, running_var} have same type}}
  %0 = "mpc.batch_norm_inference"(%x, %c, %c, %c, %v) : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf16>) -> tensor<2x8xf32>
  return
}

// -----

func.func @batch_norm_backward_gamma_addend(%dy: tensor<2x8xf16>, %c: tensor<8xf32>, %a: tensor<8xf16>) {
  // expected-error @+1 {{'mpc.batch_norm_backward' op expects gamma_addend of gamma's type 'tensor<8xf32>', got 'tensor<8xf16>'}}
  %0:3 = mpc.batch_norm_backward %dy, %dy, %c, %c, %c gamma_addend(%a : tensor<8xf16>) : tensor<2x8xf16>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_backward_beta_addend(%dy: tensor<2x8xf32>, %c: tensor<8xf32>, %a: tensor<2xf32>) {
  // expected-error @+1 {{'mpc.batch_norm_backward' op expects beta_addend of gamma's type 'tensor<8xf32>', got 'tensor<2xf32>'}}
  %0:3 = mpc.batch_norm_backward %dy, %dy, %c, %c, %c beta_addend(%a : tensor<2xf32>) : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_backward_activation(%dy: tensor<2x8xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.batch_norm_backward' op unknown activation 'tanh' (expected none or relu)}}
  %0:3 = mpc.batch_norm_backward %dy, %dy, %c, %c, %c result(%dy : tensor<2x8xf32>) {activation = "tanh"} : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_backward_no_result(%dy: tensor<2x8xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.batch_norm_backward' op with activation 'relu' expects the fused op's result as `result(...)` or its beta as `beta(...)`}}
  %0:3 = mpc.batch_norm_backward %dy, %dy, %c, %c, %c {activation = "relu"} : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_backward_result_without_relu(%dy: tensor<2x8xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.batch_norm_backward' op has a result operand but no activation (it is the fused op's output, for the ReLU's gradient)}}
  %0:3 = mpc.batch_norm_backward %dy, %dy, %c, %c, %c result(%dy : tensor<2x8xf32>) : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_backward_result_and_beta(%dy: tensor<2x8xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.batch_norm_backward' op takes the fused op's result or its beta, not both (the ReLU's mask comes from one)}}
  %0:3 = mpc.batch_norm_backward %dy, %dy, %c, %c, %c result(%dy : tensor<2x8xf32>) beta(%c : tensor<8xf32>) {activation = "relu"} : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_backward_beta_without_relu(%dy: tensor<2x8xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.batch_norm_backward' op has a beta operand but no activation (it forms the fused op's output again, for the ReLU's gradient)}}
  %0:3 = mpc.batch_norm_backward %dy, %dy, %c, %c, %c beta(%c : tensor<8xf32>) : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_backward_beta_type(%dy: tensor<2x8xf16>, %c: tensor<8xf32>, %b: tensor<8xf16>) {
  // expected-error @+1 {{'mpc.batch_norm_backward' op expects a beta of gamma's type 'tensor<8xf32>', got 'tensor<8xf16>'}}
  %0:3 = mpc.batch_norm_backward %dy, %dy, %c, %c, %c beta(%b : tensor<8xf16>) {activation = "relu"} : tensor<2x8xf16>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_backward_beta_f64(%dy: tensor<2x8xf64>, %c: tensor<8xf64>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.batch_norm_backward' op cannot form the ReLU's mask again from an f64 input (its forward applied f64 statistics, saved as f32): expects `result(...)`}}
  %0:3 = mpc.batch_norm_backward %dy, %dy, %c, %s, %s beta(%c : tensor<8xf64>) {activation = "relu"} : tensor<2x8xf64>, tensor<8xf64>
  return
}

// -----

func.func @batch_norm_backward_result_type(%dy: tensor<2x8xf32>, %z: tensor<2x8xf16>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.batch_norm_backward' op expects a result of the gradient's type 'tensor<2x8xf32>', got 'tensor<2x8xf16>'}}
  %0:3 = mpc.batch_norm_backward %dy, %dy, %c, %c, %c result(%z : tensor<2x8xf16>) {activation = "relu"} : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_backward(%dy: tensor<2x8xf32>, %c: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.batch_norm_backward' op expects per-channel tensors of shape [8], got 'tensor<4xf32>'}}
  %0:3 = mpc.batch_norm_backward %dy, %dy, %c, %c, %c : tensor<2x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @batch_norm_backward_grad(%dy: tensor<2x8xf16>, %x: tensor<2x8xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.batch_norm_backward' op failed to verify that all of {grad, input} have same type}}
  %0:3 = "mpc.batch_norm_backward"(%dy, %x, %c, %c, %c) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0>}> : (tensor<2x8xf16>, tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// The saved statistics are the forward's f32 ones, whatever gamma's type
// (f16 ones would be half the bytes the kernels read).
func.func @batch_norm_backward_saved_type(%dy: tensor<2x8xf16>, %c: tensor<8xf16>) {
  // expected-error @+1 {{'mpc.batch_norm_backward' op failed to verify that the saved mean is f32 of gamma's shape}}
  %0:3 = "mpc.batch_norm_backward"(%dy, %dy, %c, %c, %c) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0>}> : (tensor<2x8xf16>, tensor<2x8xf16>, tensor<8xf16>, tensor<8xf16>, tensor<8xf16>) -> (tensor<2x8xf16>, tensor<8xf16>, tensor<8xf16>)
  return
}

// -----

// The backward of a synchronised batch norm takes the means over every
// rank; one that disagrees with its forward is refused either way.
func.func @batch_norm_backward_unsynced(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  %y, %rm, %rv, %m, %s = mpc.batch_norm %x, %g, %g, %g, %g {sync} : tensor<2x8xf32>, tensor<8xf32>
  // expected-error @+1 {{'mpc.batch_norm_backward' op is the backward of a batch norm with `sync` and must have `sync` too (its input's gradient takes the means over every rank)}}
  %dx, %dg, %db = mpc.batch_norm_backward %y, %x, %g, %m, %s : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_backward_synced(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  %y, %rm, %rv, %m, %s = mpc.batch_norm %x, %g, %g, %g, %g : tensor<2x8xf32>, tensor<8xf32>
  // expected-error @+1 {{'mpc.batch_norm_backward' op has `sync` but its forward batch norm has not (the statistics it reads are the rank's own)}}
  %dx, %dg, %db = mpc.batch_norm_backward %y, %x, %g, %m, %s {sync} : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @batch_norm_backward_saved_invstd_type(%dy: tensor<2x8xf16>, %c: tensor<8xf16>, %m: tensor<8xf32>, %s: tensor<8xf64>) {
  // expected-error @+1 {{'mpc.batch_norm_backward' op failed to verify that the saved invstd is f32 of gamma's shape}}
  %0:3 = "mpc.batch_norm_backward"(%dy, %dy, %c, %m, %s) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0>}> : (tensor<2x8xf16>, tensor<2x8xf16>, tensor<8xf16>, tensor<8xf32>, tensor<8xf64>) -> (tensor<2x8xf16>, tensor<8xf16>, tensor<8xf16>)
  return
}

// -----

func.func @batch_norm_saved_result_type(%x: tensor<2x8xf16>, %c: tensor<8xf16>) {
  // expected-error @+2 {{'mpc.batch_norm' op failed to infer returned types}}
  // expected-error @+1 {{'mpc.batch_norm' op inferred type(s) 'tensor<2x8xf16>', 'tensor<8xf16>', 'tensor<8xf16>', 'tensor<8xf32>', 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<2x8xf16>', 'tensor<8xf16>', 'tensor<8xf16>', 'tensor<8xf16>', 'tensor<8xf16>'}}
  %0:5 = "mpc.batch_norm"(%x, %c, %c, %c, %c) : (tensor<2x8xf16>, tensor<8xf16>, tensor<8xf16>, tensor<8xf16>, tensor<8xf16>) -> (tensor<2x8xf16>, tensor<8xf16>, tensor<8xf16>, tensor<8xf16>, tensor<8xf16>)
  return
}

// -----

func.func @reduce_max_backward_grad(%g: tensor<4xf32>, %x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'mpc.reduce_max_backward' op expects the gradient of the maximum to have type 'tensor<4x1xf32>', got 'tensor<4xf32>'}}
  %0 = mpc.reduce_max_backward %g, %x, %g {dims = array<i64: 1>, keep_dims} : tensor<4xf32>, tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @add_layer_norm_residual(%x: tensor<4x8xf16>, %r: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.add_layer_norm' op expects a residual of the input's type or of the shape of its last dimensions, with its element type; got 'tensor<4x8xf16>' and 'tensor<4x8xf32>'}}
  %0:4 = mpc.add_layer_norm %x, %r, %g, %g : tensor<4x8xf16>, tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

// A residual broadcast over a size-1 dimension is not the shape of the
// input's last dimensions.
func.func @add_layer_norm_residual_ones(%x: tensor<2x4x8xf16>, %r: tensor<1x8xf16>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.add_layer_norm' op expects a residual of the input's type or of the shape of its last dimensions, with its element type; got 'tensor<2x4x8xf16>' and 'tensor<1x8xf16>'}}
  %0:4 = mpc.add_layer_norm %x, %r, %g, %g : tensor<2x4x8xf16>, tensor<1x8xf16>, tensor<8xf32>
  return
}

// -----

func.func @add_layer_norm_residual_scalar(%x: tensor<4x8xf32>, %r: tensor<f32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.add_layer_norm' op expects a residual of the input's type or of the shape of its last dimensions, with its element type; got 'tensor<4x8xf32>' and 'tensor<f32>'}}
  %0:4 = mpc.add_layer_norm %x, %r, %g, %g : tensor<4x8xf32>, tensor<f32>, tensor<8xf32>
  return
}

// -----

func.func @add_layer_norm_residual_longer(%x: tensor<4x8xf32>, %r: tensor<2x4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.add_layer_norm' op expects a residual of the input's type or of the shape of its last dimensions, with its element type; got 'tensor<4x8xf32>' and 'tensor<2x4x8xf32>'}}
  %0:4 = mpc.add_layer_norm %x, %r, %g, %g : tensor<4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @add_layer_norm_gamma(%x: tensor<4x8xf16>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.add_layer_norm' op expects gamma of the normalised shape [8], got [4]}}
  %0:4 = mpc.add_layer_norm %x, %x, %g, %g : tensor<4x8xf16>, tensor<4xf32>
  return
}

// -----

func.func @add_layer_norm_dropout(%x: tensor<4x8xf16>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.add_layer_norm' op expects dropout_p in [0, 1), got 1.000000e+00}}
  %0:4 = mpc.add_layer_norm %x, %x, %g, %g {dropout_p = 1.0} : tensor<4x8xf16>, tensor<8xf32>
  return
}

// -----

func.func @add_layer_norm_epsilon(%x: tensor<4x8xf16>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.add_layer_norm' op expects epsilon > 0, got -1.000000e+00}}
  %0:4 = mpc.add_layer_norm %x, %x, %g, %g {epsilon = -1.0} : tensor<4x8xf16>, tensor<8xf32>
  return
}

// -----

func.func @add_layer_norm_backward_stats(%x: tensor<4x8xf16>, %m: tensor<4xf16>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.add_layer_norm_backward' op expects mean and rstd of type 'tensor<4xf32>', got 'tensor<4xf16>'}}
  %0:4 = mpc.add_layer_norm_backward %x, %x, %m, %m, %g : tensor<4x8xf16>, tensor<4xf16>, tensor<8xf32>
  return
}

// -----

func.func @add_layer_norm_backward_beta_addend(%x: tensor<4x8xf16>, %m: tensor<4xf32>, %g: tensor<8xf32>, %a: tensor<8xf64>) {
  // expected-error @+1 {{'mpc.add_layer_norm_backward' op expects beta_addend of gamma's type 'tensor<8xf32>', got 'tensor<8xf64>'}}
  %0:4 = mpc.add_layer_norm_backward %x, %x, %m, %m, %g beta_addend(%a : tensor<8xf64>) : tensor<4x8xf16>, tensor<4xf32>, tensor<8xf32>
  return
}

// -----

func.func @add_layer_norm_backward_sum_grad(%x: tensor<4x8xf16>, %d: tensor<4x8xf32>, %m: tensor<4xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.add_layer_norm_backward' op expects sum_grad of the sum's type 'tensor<4x8xf16>', got 'tensor<4x8xf32>'}}
  %0:4 = mpc.add_layer_norm_backward %x, %x, %m, %m, %g sum_grad(%d : tensor<4x8xf32>) : tensor<4x8xf16>, tensor<4xf32>, tensor<8xf32>
  return
}

// -----

// With input_sums the op has a fifth result, the sums in f32.
func.func @add_layer_norm_backward_input_sums_count(%x: tensor<4x8xf16>, %m: tensor<4xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{operation defines 5 results but was provided 4 to bind}}
  %0:4 = mpc.add_layer_norm_backward %x, %x, %m, %m, %g {input_sums} : tensor<4x8xf16>, tensor<4xf32>, tensor<8xf32>
  return
}

// -----

func.func @add_layer_norm_backward_input_sums_type(%x: tensor<4x8xf16>, %m: tensor<4xf32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{'mpc.add_layer_norm_backward' op inferred type(s) 'tensor<4x8xf16>', 'tensor<4x8xf16>', 'tensor<8xf32>', 'tensor<8xf32>', 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<4x8xf16>', 'tensor<4x8xf16>', 'tensor<8xf32>', 'tensor<8xf32>', 'tensor<8xf16>'}}
  // expected-error @+1 {{'mpc.add_layer_norm_backward' op failed to infer returned types}}
  %0:5 = "mpc.add_layer_norm_backward"(%x, %x, %m, %m, %g) <{input_sums, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>}> : (tensor<4x8xf16>, tensor<4x8xf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4x8xf16>, tensor<4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf16>)
  return
}

// -----

func.func @softmax_dropout_p(%x: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.softmax_dropout' op expects p in [0, 1), got 1}}
  %0 = mpc.softmax_dropout %x {p = 1.0 : f64, seed = 1 : i64} : tensor<4x8xf16>
  return
}

// -----

func.func @softmax_dropout_scale(%x: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.softmax_dropout' op expects a finite scale, got INF}}
  %0 = mpc.softmax_dropout %x {p = 0.1 : f64, scale = 0x7FF0000000000000 : f64, seed = 1 : i64} : tensor<4x8xf16>
  return
}

// -----

func.func @softmax_dropout_rank0(%x: tensor<f16>) {
  // expected-error @+1 {{'mpc.softmax_dropout' op expects a tensor of rank >= 1, got 'tensor<f16>'}}
  %0 = mpc.softmax_dropout %x {p = 0.1 : f64, seed = 1 : i64} : tensor<f16>
  return
}

// -----

func.func @softmax_dropout_mixed_f64(%x: tensor<4x8xf64>) {
  // expected-error @+1 {{'mpc.softmax_dropout' op mixes element types only among f16, bf16 and f32, got 'f64'}}
  %0 = mpc.softmax_dropout %x {p = 0.1 : f64, seed = 1 : i64} : tensor<4x8xf64> -> tensor<4x8xf32>
  return
}

// -----

func.func @softmax_dropout_shape(%x: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.softmax_dropout' op failed to verify that all of {input, result} have same shape}}
  %0 = mpc.softmax_dropout %x {p = 0.1 : f64, seed = 1 : i64} : tensor<4x8xf16> -> tensor<4x9xf16>
  return
}

// -----

func.func @softmax_dropout_backward_p(%g: tensor<4x8xf16>, %x: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.softmax_dropout_backward' op expects p in [0, 1), got -5.000000e-01}}
  %0 = mpc.softmax_dropout_backward %g, %x {p = -0.5 : f64, seed = 1 : i64} : tensor<4x8xf16>
  return
}

// -----

func.func @softmax_dropout_backward_shape(%g: tensor<4x8xf16>, %x: tensor<4x7xf16>) {
  // expected-error @+1 {{'mpc.softmax_dropout_backward' op failed to verify that all of {grad, input, result} have same shape}}
  %0 = mpc.softmax_dropout_backward %g, %x {p = 0.1 : f64, seed = 1 : i64} : tensor<4x8xf16>, tensor<4x7xf16>
  return
}

// -----

func.func @softmax_dropout_backward_dropped_type(%g: tensor<4x8xf16>, %x: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.softmax_dropout_backward' op expects dropped probabilities of the gradient's type 'tensor<4x8xf16>', got 'tensor<4x8xf32>'}}
  %0:2 = mpc.softmax_dropout_backward %g, %x {p = 0.1 : f64, seed = 1 : i64} : tensor<4x8xf16> dropped tensor<4x8xf32>
  return
}

// -----

func.func @softmax_dropout_backward_dropped_shape(%g: tensor<4x8xf16>, %x: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.softmax_dropout_backward' op expects dropped probabilities of the gradient's type 'tensor<4x8xf16>', got 'tensor<8x4xf16>'}}
  %0:2 = mpc.softmax_dropout_backward %g, %x {p = 0.1 : f64, seed = 1 : i64} : tensor<4x8xf16> dropped tensor<8x4xf16>
  return
}

// -----

func.func @softmax_dropout_no_seed(%x: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.softmax_dropout' op requires attribute 'seed'}}
  %0 = mpc.softmax_dropout %x {p = 0.1 : f64} : tensor<4x8xf16>
  return
}
