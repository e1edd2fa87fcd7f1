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
