// RUN: mpc-opt %s -split-input-file -verify-diagnostics --mpc-verify-graph

// A well-formed graph passes unchanged.
ml_program.global private mutable @w(#mpc.init<kaiming_uniform, seed = 1>) : tensor<3x3x3x8xf32>
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @steps(dense<0> : tensor<i32>) : tensor<i32>

// -----

// expected-error @+1 {{global @w must have a statically shaped tensor type (dynamic shapes are not supported), got 'tensor<?x4xf32>'}}
ml_program.global private mutable @w : tensor<?x4xf32>

// -----

// expected-error @+1 {{global @w: 'xavier_uniform' needs a tensor of rank >= 2 to compute fans, got 'tensor<4xf32>'}}
ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<4xf32>

// -----

// expected-error @+1 {{global @w: an #mpc.init initializer needs a floating-point element type, got 'i32'}}
ml_program.global private mutable @w(#mpc.init<normal>) : tensor<4x4xi32>

// -----

// An O2 weight copy and its master.
ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<4x4xf32>
ml_program.global private mutable @w_f16 : tensor<4x4xf16> {mpc.master = @w}

// -----

// expected-error @+1 {{global @w_f16: 'mpc.master' must name a global of the module, got @nope}}
ml_program.global private mutable @w_f16 : tensor<4x4xf16> {mpc.master = @nope}

// -----

ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<4x8xf32>
// expected-error @+1 {{global @w_f16 must have the shape of its master @w, got 'tensor<4x4xf16>' and 'tensor<4x8xf32>'}}
ml_program.global private mutable @w_f16 : tensor<4x4xf16> {mpc.master = @w}

// -----

// Sizes are checked without overflow: a global of 2^62 f32 elements is an
// error, not a 0-byte slot in the state buffer.
// expected-error @+1 {{global @huge takes more than 2^48 bytes: 'tensor<4611686018427387904xf32>'}}
ml_program.global private mutable @huge(dense<0.0> : tensor<4611686018427387904xf32>) : tensor<4611686018427387904xf32>

// -----

// expected-error @+1 {{global @empty has a zero-sized dimension: 'tensor<0x4xf32>'}}
ml_program.global private mutable @empty(dense<0.0> : tensor<0x4xf32>) : tensor<0x4xf32>

// -----

// Functions' signatures and the values of ops of other dialects are checked
// before a pass sizes them: a dynamic shape is an error, not a size of -2^63
// bytes.
// expected-error @+1 {{argument #0 of @dynamic must have a statically shaped tensor type (dynamic shapes are not supported), got 'tensor<?xf32>'}}
func.func @dynamic(%x: tensor<?xf32>) {
  return
}

// -----

// expected-error @+1 {{argument #0 of @unranked must have a statically shaped tensor type (dynamic shapes are not supported), got 'tensor<*xf32>'}}
func.func @unranked(%x: tensor<*xf32>) {
  return
}

// -----

// expected-error @+1 {{result #1 of @results has a zero-sized dimension: 'tensor<0x4xf32>'}}
func.func private @results() -> (tensor<4xf32>, tensor<0x4xf32>)

// -----

// expected-error @+1 {{argument #0 of @external takes more than 2^48 bytes: 'tensor<4611686018427387904xf32>'}}
func.func private @external(tensor<4611686018427387904xf32>)

// -----

func.func @empty(%n: index) {
  // expected-error @+1 {{'tensor.empty' op result #0 must have a statically shaped tensor type (dynamic shapes are not supported), got 'tensor<?xf32>'}}
  %0 = tensor.empty(%n) : tensor<?xf32>
  return
}

// -----

// Arguments that are not tensors are left to the passes that read them.
func.func @index(%n: index) -> tensor<4xf32> {
  %0 = tensor.empty() : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// At the module's top level too (its region holds values).
%n = arith.constant 4 : index
// expected-error @+1 {{'tensor.empty' op result #0 must have a statically shaped tensor type (dynamic shapes are not supported), got 'tensor<?xf32>'}}
%0 = tensor.empty(%n) : tensor<?xf32>

// -----

// And the arguments of blocks other than a function's entry block.
func.func @blocks() {
  return
// expected-error @+1 {{block argument #0 in 'func.func' must have a statically shaped tensor type (dynamic shapes are not supported), got 'tensor<?xf32>'}}
^bb1(%a: tensor<?xf32>):
  return
}

// -----

// An initial value of another element type or shape than the global's
// (ml_program's verifier takes either; the lowering read the value as the
// global's type, past the end of its data).
// expected-error @+1 {{global @counts: its initial value is 'tensor<5x4xi68>', not the global's type 'tensor<5x4xi64>'}}
ml_program.global private mutable @counts(dense<0> : tensor<5x4xi68>) : tensor<5x4xi64>

// -----

// expected-error @+1 {{global @first: its initial value is 'tensor<2xi32>', not the global's type 'tensor<i32>'}}
ml_program.global private mutable @first(dense<0> : tensor<2xi32>) : tensor<i32>
