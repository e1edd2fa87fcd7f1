// What the lowering refuses, each with the op's location.
// RUN: mpc-opt %s -split-input-file --mpc-lower-to-runtime -verify-diagnostics

// expected-error @+1 {{'func.func' op has no memory plan; run --mpc-plan-memory before --mpc-lower-to-runtime}}
func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = mpc.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A slice planned as a view of its operand's buffer (the same offset),
// then read by an op that takes no strides: copying it would overwrite
// its operand.
func.func @stale_view(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x4xf32> attributes {mpc.arena_bytes = 512 : i64} {
  %0 = mpc.matmul %x, %w {mpc.offsets = array<i64: 0>} : tensor<4x8xf32>, tensor<8x8xf32>
  // expected-error @+1 {{'mpc.slice' op shares its operand's buffer (a view) but is read by an op that takes no strides; run --mpc-plan-memory again after changing the graph}}
  %1 = mpc.slice %0 {mpc.offsets = array<i64: 0>, offsets = array<i64: 0, 4>, sizes = array<i64: 4, 4>} : tensor<4x8xf32>
  %2 = mpc.relu %1 {mpc.offsets = array<i64: 256>} : tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
}

// -----

// The same through a reshape: the slice's one reader is a reshape that
// shares the buffer (a view of the view), but the reshape's reader takes
// no strides.
func.func @stale_reshaped_view(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<16xf32> attributes {mpc.arena_bytes = 512 : i64} {
  %0 = mpc.matmul %x, %w {mpc.offsets = array<i64: 0>} : tensor<4x8xf32>, tensor<8x8xf32>
  // expected-error @+1 {{'mpc.slice' op shares its operand's buffer (a view) but is read by an op that takes no strides; run --mpc-plan-memory again after changing the graph}}
  %1 = mpc.slice %0 {mpc.offsets = array<i64: 0>, offsets = array<i64: 0, 4>, sizes = array<i64: 4, 4>} : tensor<4x8xf32>
  %2 = mpc.reshape %1 {mpc.offsets = array<i64: 0>} : tensor<4x4xf32> -> tensor<4x2x2xf32>
  %3 = mpc.relu %2 {mpc.offsets = array<i64: 256>} : tensor<4x2x2xf32>
  %4 = mpc.reshape %3 {mpc.offsets = array<i64: 256>} : tensor<4x2x2xf32> -> tensor<16xf32>
  return %4 : tensor<16xf32>
}

// -----

// A function of two blocks.
// expected-error @+1 {{'func.func' op must have a single block to be lowered to the runtime}}
func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mpc.arena_bytes = 64 : i64} {
  cf.br ^bb1
^bb1:
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op argument #0 must be a tensor}}
func.func @train_step(%x: f32, %y: tensor<4xf32>) -> tensor<4xf32> attributes {mpc.arena_bytes = 64 : i64} {
  return %y : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op result #0 must be a tensor}}
func.func @train_step(%y: tensor<4xf32>) -> f32 attributes {mpc.arena_bytes = 64 : i64} {
  %c = arith.constant 1.0 : f32
  return %c : f32
}

// -----

// An op planned without a buffer for its result.
func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mpc.arena_bytes = 64 : i64} {
  // expected-error @+1 {{'mpc.relu' op has no planned buffer for result #0; run --mpc-plan-memory before --mpc-lower-to-runtime}}
  %0 = mpc.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// An op of another dialect on tensors.
func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mpc.arena_bytes = 64 : i64} {
  // expected-error @+1 {{'tensor.empty' op has no lowering to the runtime}}
  %0 = tensor.empty() : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op has a malformed mpc.arena_guards entry: 1 : i64}}
func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mpc.arena_bytes = 64 : i64, mpc.arena_guards = [1]} {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op has a malformed mpc.arena_guards entry: {bytes = 64 : i64, offset = 0 : i64}}}
func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mpc.arena_bytes = 64 : i64, mpc.arena_guards = [{offset = 0, bytes = 64}]} {
  return %x : tensor<4xf32>
}

// -----

func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mpc.arena_bytes = 64 : i64} {
  return %x : tensor<4xf32>
}
// expected-error @+1 {{'func.func' op is an evaluation step whose arguments differ from the entry @train_step's; it must read the same inputs}}
func.func @eval(%x: tensor<8xf32>) -> tensor<f32> attributes {mpc.eval, mpc.arena_bytes = 64 : i64} {
  %c = mpc.constant dense<1.0> : tensor<f32>
  return %c : tensor<f32>
}

// -----

func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mpc.arena_bytes = 64 : i64} {
  return %x : tensor<4xf32>
}
// expected-error @+1 {{'func.func' op result #0 of an evaluation step must be a scalar float, got 'tensor<4xf32>'}}
func.func @eval(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mpc.eval, mpc.arena_bytes = 64 : i64} {
  return %x : tensor<4xf32>
}

// -----

func.func @train_step(%x: tensor<4xf32>) -> tensor<2x2xf32> attributes {mpc.arena_bytes = 64 : i64} {
  // expected-error @+1 {{'mpc.constant' op is lowered for dense element values only}}
  %c = "mpc.constant"() <{value = dense_resource<blob> : tensor<2x2xf32>}> : () -> tensor<2x2xf32>
  return %c : tensor<2x2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      blob: "0x040000000000803F0000803F0000803F0000803F"
    }
  }
#-}

// -----

// A slice planned as a view, then read by a heads product that cannot
// take it (every other column: its matrices' rows are not contiguous).
func.func @stale_heads_view(%x: tensor<2x6x8xf32>, %w: tensor<8x24xf32>, %k: tensor<2x6x3x4xf32>) -> tensor<2x3x6x6xf32> attributes {mpc.arena_bytes = 2048 : i64} {
  %0 = mpc.matmul %x, %w {mpc.offsets = array<i64: 0>} : tensor<2x6x8xf32>, tensor<8x24xf32>
  // expected-error @+1 {{'mpc.slice' op shares its operand's buffer (a view) but is read by an op that takes no strides; run --mpc-plan-memory again after changing the graph}}
  %1 = mpc.slice %0 {mpc.offsets = array<i64: 0>, offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 6, 12>, strides = array<i64: 1, 1, 2>} : tensor<2x6x24xf32>
  %2 = mpc.reshape %1 {mpc.offsets = array<i64: 0>} : tensor<2x6x12xf32> -> tensor<2x6x3x4xf32>
  %3 = mpc.heads_matmul %2, %k {a_bshd, b_bshd, mpc.offsets = array<i64: 1280>, transpose_b} : tensor<2x6x3x4xf32>, tensor<2x6x3x4xf32> -> tensor<2x3x6x6xf32>
  return %3 : tensor<2x3x6x6xf32>
}
