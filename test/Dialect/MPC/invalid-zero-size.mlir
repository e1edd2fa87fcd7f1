// RUN: mpc-opt %s -split-input-file -verify-diagnostics

// Tensors with a zero-sized dimension are refused by every op: a batch of
// 0, 0 classes or 0 channels has no meaning in a training step and would
// divide by zero downstream (means, row counts, layouts).

func.func @zero_classes(%l: tensor<4x0xf32>, %y: tensor<4xi32>) {
  // expected-error @+1 {{'mpc.cross_entropy' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values with no zero-sized dimension and at most 2^48 bytes, but got 'tensor<4x0xf32>'}}
  %0 = mpc.cross_entropy %l, %y : tensor<4x0xf32>, tensor<4xi32>
  return
}

// -----

func.func @softmax_over_nothing(%x: tensor<4x0xf32>) {
  // expected-error @+1 {{'mpc.softmax' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values with no zero-sized dimension and at most 2^48 bytes, but got 'tensor<4x0xf32>'}}
  %0 = mpc.softmax %x : tensor<4x0xf32>
  return
}

// -----

func.func @zero_channels(%img: tensor<2x4x4x0xf32>, %g: tensor<0xf32>) {
  // expected-error @+1 {{'mpc.batch_norm' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values with no zero-sized dimension and at most 2^48 bytes, but got 'tensor<2x4x4x0xf32>'}}
  %o, %rm, %rv, %sm, %si = mpc.batch_norm %img, %g, %g, %g, %g : tensor<2x4x4x0xf32>, tensor<0xf32>
  return
}

// -----

func.func @batch_of_zero(%x: tensor<0x784xf32>, %w: tensor<784x10xf32>) {
  // expected-error @+1 {{'mpc.matmul' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values with no zero-sized dimension and at most 2^48 bytes, but got 'tensor<0x784xf32>'}}
  %0 = mpc.matmul %x, %w : tensor<0x784xf32>, tensor<784x10xf32>
  return
}

// -----

func.func @zero_rows(%l: tensor<0x10xf32>, %y: tensor<0xi32>) {
  // expected-error @+1 {{'mpc.cross_entropy' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values with no zero-sized dimension and at most 2^48 bytes, but got 'tensor<0x10xf32>'}}
  %0 = mpc.cross_entropy %l, %y : tensor<0x10xf32>, tensor<0xi32>
  return
}

// -----

func.func @empty_reshape(%x: tensor<0x4xf32>) {
  // expected-error @+1 {{'mpc.reshape' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values with no zero-sized dimension and at most 2^48 bytes, but got 'tensor<0x4xf32>'}}
  %0 = mpc.reshape %x : tensor<0x4xf32> -> tensor<4x0xf32>
  return
}

// -----

// Over 2^48 bytes: refused, so that byte counts never overflow (2^61 f32
// elements are 2^63 bytes, which would wrap to a negative size).
func.func @too_large(%x: tensor<2305843009213693952xf32>) {
  // expected-error @+1 {{'mpc.relu' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values with no zero-sized dimension and at most 2^48 bytes, but got 'tensor<2305843009213693952xf32>'}}
  %0 = mpc.relu %x : tensor<2305843009213693952xf32>
  return
}

// -----

func.func @accuracy_no_classes(%l: tensor<4x0xf32>, %y: tensor<4xi32>) {
  // expected-error @+1 {{'mpc.accuracy' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values with no zero-sized dimension and at most 2^48 bytes, but got 'tensor<4x0xf32>'}}
  %0 = mpc.accuracy %l, %y : tensor<4x0xf32>, tensor<4xi32>
  return
}
