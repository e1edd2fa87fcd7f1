// What the lowering refuses in planned graphs, with the op's location.
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory --mpc-lower-to-runtime -verify-diagnostics

func.func @softmax_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'mpc.softmax' op is lowered along the last axis only; transpose axis 0 last first}}
  %0 = mpc.softmax %x {axis = 0} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @reduce_gap(%x: tensor<4x8x16xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'mpc.reduce_sum' op is lowered over adjacent dimensions only; transpose them together first}}
  %0 = mpc.reduce_sum %x {dims = array<i64: 0, 2>} : tensor<4x8x16xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @partial_batch(%a: tensor<2x3x4x5xf32>, %b: tensor<3x5x6xf32>) -> tensor<2x3x4x6xf32> {
  // expected-error @+1 {{'mpc.matmul' op operand B broadcasts only some batch dimensions ('tensor<3x5x6xf32>' against 'tensor<2x3x4x6xf32>'); the runtime takes all or none}}
  %0 = mpc.matmul %a, %b : tensor<2x3x4x5xf32>, tensor<3x5x6xf32>
  return %0 : tensor<2x3x4x6xf32>
}

// -----

ml_program.global private mutable @w(#mpc.init<zeros>) : tensor<4xf32>
ml_program.global private @lr(dense<0.1> : tensor<f32>) : tensor<f32>

func.func @read_after_update(%g: tensor<4xf32>) -> tensor<4xf32> {
  %w = ml_program.global_load @w : tensor<4xf32>
  %lr = ml_program.global_load @lr : tensor<f32>
  // expected-error @+1 {{'mpc.sgd_update' op updates @w in place, but it is read afterwards by 'mpc.relu'}}
  %0 = mpc.sgd_update %w, %g lr(%lr) : tensor<4xf32>, tensor<4xf32>
  // expected-note @+1 {{read here}}
  %1 = mpc.relu %w : tensor<4xf32>
  ml_program.global_store @w = %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

ml_program.global private @lr(dense<0.1> : tensor<f32>) : tensor<f32>

func.func @param_argument(%w: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %lr = ml_program.global_load @lr : tensor<f32>
  // expected-error @+1 {{'mpc.sgd_update' op updates its state in place, so operand must be loaded from a global (ml_program.global_load)}}
  %0 = mpc.sgd_update %w, %g lr(%lr) : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

ml_program.global private mutable @w(#mpc.init<zeros>) : tensor<4xf32>
ml_program.global private @lr(dense<0.1> : tensor<f32>) : tensor<f32>

func.func @copy_not_stored(%g: tensor<4xf16>) -> tensor<4xf16> {
  %w = ml_program.global_load @w : tensor<4xf32>
  %lr = ml_program.global_load @lr : tensor<f32>
  // expected-error @+1 {{'mpc.sgd_update' op is lowered with its parameter copy stored to a global (ml_program.global_store), the storage the kernel writes}}
  %0:2 = mpc.sgd_update %w, %g lr(%lr) copy(f16) : tensor<4xf32>, tensor<4xf16>
  ml_program.global_store @w = %0#0 : tensor<4xf32>
  return %0#1 : tensor<4xf16>
}

// -----

func.func @callee(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'func.call' op calls between graphs are not lowered to the runtime yet; inline the callee}}
  %0 = func.call @callee(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{no entry function @train_step to lower (functions: @a, @b); name one with entry=NAME (mpc-compile's --entry=NAME)}}
module {
  func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
  func.func @b(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

ml_program.global private mutable @w(#mpc.init<zeros>) : tensor<4xf32>
ml_program.global private @lr(dense<0.1> : tensor<f32>) : tensor<f32>

func.func @stored_before_update(%g: tensor<4xf32>, %x: tensor<4xf32>) {
  // expected-note @+1 {{loaded here}}
  %w = ml_program.global_load @w : tensor<4xf32>
  %lr = ml_program.global_load @lr : tensor<f32>
  ml_program.global_store @w = %x : tensor<4xf32>
  // expected-error @+1 {{'mpc.sgd_update' op updates @w in place, but @w is stored to between its load and this op}}
  %0 = mpc.sgd_update %w, %g lr(%lr) : tensor<4xf32>, tensor<4xf32>
  ml_program.global_store @w = %0 : tensor<4xf32>
  return
}

// -----

// The runtime's row counts are 32-bit where it reports a bad label.
func.func @accuracy_rows(%x: tensor<2147483648x2xf32>, %y: tensor<2147483648xi32>) -> tensor<f32> {
  // expected-error @+1 {{'mpc.accuracy' op is lowered for fewer than 2^31 rows, got 2147483648}}
  %0 = mpc.accuracy %x, %y : tensor<2147483648x2xf32>, tensor<2147483648xi32>
  return %0 : tensor<f32>
}

// -----

// A mask's layout is passed with at most 8 dimensions.
func.func @attention_rank(%q: tensor<1x1x1x1x1x1x2x4x8xf32>, %m: tensor<1x1x1x1x1x1x1x1x4xi1>) -> tensor<1x1x1x1x1x1x2x4x8xf32> {
  // expected-error @+1 {{'mpc.attention' op is lowered with at most 8 dimensions, got 9}}
  %o, %lse = mpc.attention %q, %q, %q mask(%m : tensor<1x1x1x1x1x1x1x1x4xi1>) {scale = 0.35 : f64, mask_value = -1.0e4 : f64} : tensor<1x1x1x1x1x1x2x4x8xf32>, tensor<1x1x1x1x1x1x2x4x8xf32>, tensor<1x1x1x1x1x1x2x4x8xf32>
  return %o : tensor<1x1x1x1x1x1x2x4x8xf32>
}

// -----

// No update kernel for these types.
ml_program.global private mutable @w(#mpc.init<zeros>) : tensor<4xf64>
ml_program.global private @lr(dense<0.1> : tensor<f32>) : tensor<f32>

func.func @train_step(%g: tensor<4xf32>) -> tensor<4xf32> {
  %w = ml_program.global_load @w : tensor<4xf64>
  %lr = ml_program.global_load @lr : tensor<f32>
  // expected-error @+1 {{'mpc.sgd_update' op has no runtime kernel for 'f64' parameters with 'f32' gradients}}
  %0 = mpc.sgd_update %w, %g lr(%lr) : tensor<4xf64>, tensor<4xf32>
  ml_program.global_store @w = %0 : tensor<4xf64>
  return %g : tensor<4xf32>
}
