// RUN: mpc-opt %s -split-input-file -verify-diagnostics

func.func @reshape_count(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.reshape' op expects the same number of elements, got 32 and 30}}
  %0 = mpc.reshape %x : tensor<4x8xf32> -> tensor<5x6xf32>
  return
}

// -----

func.func @reshape_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.reshape' op expects the same element type, got 'f32' and 'f16'}}
  %0 = mpc.reshape %x : tensor<4x8xf32> -> tensor<32xf16>
  return
}

// -----

func.func @transpose_perm(%x: tensor<4x8x2xf32>) {
  // expected-error @+1 {{'mpc.transpose' op expects a permutation of [0, 3), got [0, 0, 1]}}
  %0 = mpc.transpose %x {permutation = array<i64: 0, 0, 1>} : tensor<4x8x2xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+2 {{'mpc.concat' op expects at least one input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "mpc.concat"() {axis = 0 : i64} : () -> tensor<4xf32>
  return
}

// -----

func.func @concat_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.concat' op expects axis in [-2, 2), got 2}}
  %0 = mpc.concat %x, %x {axis = 2} : tensor<4x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @concat_rank(%x: tensor<4x8xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.concat' op expects inputs of the same rank, got 'tensor<4x8xf32>' and 'tensor<4xf32>'}}
  %0 = mpc.concat %x, %y {axis = 0} : tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @concat_sizes(%x: tensor<4x8xf32>, %y: tensor<4x6xf32>) {
  // expected-error @+1 {{'mpc.concat' op expects inputs to agree except along axis 0, got 'tensor<4x8xf32>' and 'tensor<4x6xf32>'}}
  %0 = mpc.concat %x, %y {axis = 0} : tensor<4x8xf32>, tensor<4x6xf32>
  return
}

// -----

func.func @concat_types(%x: tensor<4x8xf32>, %y: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.concat' op expects inputs and inputs of the same element type, got 'f32' and 'f16'}}
  %0 = mpc.concat %x, %y {axis = 0} : tensor<4x8xf32>, tensor<4x8xf16>
  return
}

// -----

func.func @slice_bounds(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.slice' op expects the slice within bounds in dimension 1: offset 2 + (4 - 1) * 2 >= 8}}
  %0 = mpc.slice %x {offsets = array<i64: 0, 2>, sizes = array<i64: 4, 4>, strides = array<i64: 1, 2>} : tensor<4x8xf32>
  return
}

// -----

func.func @slice_arity(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.slice' op expects offsets, sizes and strides with one entry per dimension (2)}}
  %0 = mpc.slice %x {offsets = array<i64: 0>, sizes = array<i64: 4>} : tensor<4x8xf32>
  return
}

// -----

func.func @slice_stride(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.slice' op expects offsets >= 0, sizes >= 1 and strides >= 1 in dimension 1}}
  %0 = mpc.slice %x {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 4>, strides = array<i64: 1, 0>} : tensor<4x8xf32>
  return
}

// -----

func.func @slice_backward_bounds(%g: tensor<4x4xf32>) {
  // expected-error @+1 {{'mpc.slice_backward' op expects the slice within bounds in dimension 1: offset 6 + (4 - 1) * 1 >= 8}}
  %0 = mpc.slice_backward %g {offsets = array<i64: 0, 6>} : tensor<4x4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_backward_rank(%g: tensor<4x4xf32>) {
  // expected-error @+1 {{'mpc.slice_backward' op expects grad and result of the same rank, got 'tensor<4x4xf32>' and 'tensor<16xf32>'}}
  %0 = mpc.slice_backward %g {offsets = array<i64: 0>} : tensor<4x4xf32> -> tensor<16xf32>
  return
}

// -----

func.func @slice_backward_type(%g: tensor<4x4xf32>) {
  // expected-error @+1 {{'mpc.slice_backward' op expects grad and result of the same element type, got 'f32' and 'f16'}}
  %0 = mpc.slice_backward %g {offsets = array<i64: 0, 0>} : tensor<4x4xf32> -> tensor<4x8xf16>
  return
}

// -----

func.func @broadcast_to(%x: tensor<3xf32>) {
  // expected-error @+1 {{'mpc.broadcast_to' op cannot broadcast [3] to [4, 8]}}
  %0 = mpc.broadcast_to %x : tensor<3xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_to_type(%x: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.broadcast_to' op expects the same element type, got 'f32' and 'f16'}}
  %0 = mpc.broadcast_to %x : tensor<8xf32> -> tensor<4x8xf16>
  return
}

// -----

func.func @embedding_table(%t: tensor<100xf32>, %i: tensor<4xi32>) {
  // expected-error @+1 {{'mpc.embedding' op expects a [V, D] table of rank 2, got 'tensor<100xf32>'}}
  %0 = mpc.embedding %t, %i : tensor<100xf32>, tensor<4xi32>
  return
}

// -----

func.func @embedding_float_indices(%t: tensor<100x8xf32>, %i: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.embedding' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values with no zero-sized dimension and at most 2^48 bytes, but got 'tensor<4xf32>'}}
  %0 = mpc.embedding %t, %i : tensor<100x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @embedding_backward(%g: tensor<4x8xf32>, %i: tensor<5xi32>) {
  // expected-error @+1 {{'mpc.embedding_backward' op expects grad of shape [5, 8] (indices shape, then D), got [4, 8]}}
  %0 = mpc.embedding_backward %g, %i : tensor<4x8xf32>, tensor<5xi32> -> tensor<100x8xf32>
  return
}

// -----

func.func @embedding_backward_addend(%g: tensor<4x8xf32>, %i: tensor<4xi32>, %a: tensor<100x8xf16>) {
  // expected-error @+1 {{'mpc.embedding_backward' op failed to verify that addend has the result's type}}
  %0 = "mpc.embedding_backward"(%g, %i, %a) : (tensor<4x8xf32>, tensor<4xi32>, tensor<100x8xf16>) -> tensor<100x8xf32>
  return
}

// -----

func.func @embedding_backward_rank(%g: tensor<4x8xf32>, %i: tensor<4xi32>) {
  // expected-error @+1 {{'mpc.embedding_backward' op expects a [V, D] table result of rank 2, got 'tensor<800xf32>'}}
  %0 = mpc.embedding_backward %g, %i : tensor<4x8xf32>, tensor<4xi32> -> tensor<800xf32>
  return
}

// -----

func.func @pool_padding(%x: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.max_pool2d' op expects padding at most half the kernel, got padding [2, 2] for kernel [3, 3]}}
  %0 = mpc.max_pool2d %x {kernel = array<i64: 3, 3>, padding = array<i64: 2, 2>} : tensor<2x8x8x4xf32>
  return
}

// -----

func.func @pool_kernel(%x: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.avg_pool2d' op expects 'kernel' elements >= 1, got [0, 2]}}
  %0 = mpc.avg_pool2d %x {kernel = array<i64: 0, 2>} : tensor<2x8x8x4xf32>
  return
}

// -----

func.func @pool_fit(%x: tensor<2x2x2x4xf32>) {
  // expected-error @+1 {{'mpc.max_pool2d' op expects the kernel [3, 3] to fit the padded input}}
  %0 = mpc.max_pool2d %x {kernel = array<i64: 3, 3>} : tensor<2x2x2x4xf32>
  return
}

// -----

func.func @pool_rank(%x: tensor<8x8x4xf32>) {
  // expected-error @+1 {{'mpc.max_pool2d' op expects an NHWC input of rank 4, got 'tensor<8x8x4xf32>'}}
  %0 = mpc.max_pool2d %x {kernel = array<i64: 2, 2>} : tensor<8x8x4xf32>
  return
}

// -----

func.func @pool_backward(%g: tensor<2x8x8x4xf32>, %x: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.max_pool2d_backward' op expects grad of the forward output's shape [2, 4, 4, 4], got [2, 8, 8, 4]}}
  %0 = mpc.max_pool2d_backward %g, %x {kernel = array<i64: 2, 2>} : tensor<2x8x8x4xf32>, tensor<2x8x8x4xf32>
  return
}

// -----

func.func @pool_backward_addend(%g: tensor<2x4x4x4xf32>, %x: tensor<2x8x8x4xf32>, %a: tensor<2x8x8x4xf16>) {
  // expected-error @+1 {{'mpc.max_pool2d_backward' op expects an addend of the result's type 'tensor<2x8x8x4xf32>', got 'tensor<2x8x8x4xf16>'}}
  %0 = mpc.max_pool2d_backward %g, %x addend(%a : tensor<2x8x8x4xf16>) {kernel = array<i64: 2, 2>} : tensor<2x4x4x4xf32>, tensor<2x8x8x4xf32>
  return
}

// -----

func.func @avg_pool_backward_types(%g: tensor<2x4x4x4xf16>, %x: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.avg_pool2d_backward' op expects grad and input of the same element type, got 'f16' and 'f32'}}
  %0 = mpc.avg_pool2d_backward %g, %x {kernel = array<i64: 2, 2>} : tensor<2x4x4x4xf16>, tensor<2x8x8x4xf32>
  return
}

// -----

func.func @upsample_scale(%x: tensor<2x8x8x4xf32>) {
  // expected-error @+1 {{'mpc.upsample_nearest2d' op expects 'scale' elements >= 1, got [0, 2]}}
  %0 = mpc.upsample_nearest2d %x {scale = array<i64: 0, 2>} : tensor<2x8x8x4xf32>
  return
}

// -----

func.func @upsample_backward(%g: tensor<2x9x8x4xf32>) {
  // expected-error @+1 {{'mpc.upsample_nearest2d_backward' op expects grad H and W divisible by scale [2, 2], got 'tensor<2x9x8x4xf32>'}}
  %0 = mpc.upsample_nearest2d_backward %g {scale = array<i64: 2, 2>} : tensor<2x9x8x4xf32>
  return
}

// -----

func.func @upsample_rank(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{'mpc.upsample_nearest2d' op expects an NHWC tensor of rank 4, got 'tensor<8x8xf32>'}}
  %0 = mpc.upsample_nearest2d %x {scale = array<i64: 2, 2>} : tensor<8x8xf32>
  return
}

// -----

func.func @dropout_p(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.dropout' op expects p in [0, 1), got 1.000000e+00}}
  %0:2 = mpc.dropout %x {p = 1.0, seed = 0} : tensor<4xf32>
  return
}

// -----

func.func @dropout_backward_p(%g: tensor<4xf32>, %m: tensor<4xi1>) {
  // expected-error @+1 {{'mpc.dropout_backward' op expects p in [0, 1), got -5.000000e-01}}
  %0 = mpc.dropout_backward %g, %m {p = -0.5} : tensor<4xf32>, tensor<4xi1>
  return
}

// -----

func.func @dropout_backward_mask(%g: tensor<4xf32>, %m: tensor<5xi1>) {
  // expected-error @+1 {{'mpc.dropout_backward' op expects mask and grad of the same shape, got 'tensor<5xi1>' and 'tensor<4xf32>'}}
  %0 = mpc.dropout_backward %g, %m {p = 0.5} : tensor<4xf32>, tensor<5xi1>
  return
}

// -----

// offset + (size - 1) * stride would overflow 64 bits (and wrap below the
// dimension): out of bounds, not accepted.
func.func @slice_overflow(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{'mpc.slice' op expects the slice within bounds in dimension 0: offset 0 + (3 - 1) * 4611686018427387904 >= 8}}
  %0 = mpc.slice %x {offsets = array<i64: 0, 0>, sizes = array<i64: 3, 8>, strides = array<i64: 4611686018427387904, 1>} : tensor<8x8xf32>
  return
}

// -----

func.func @slice_offset_overflow(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{'mpc.slice' op expects the slice within bounds in dimension 0: offset 9223372036854775807 + (2 - 1) * 1 >= 8}}
  %0 = mpc.slice %x {offsets = array<i64: 9223372036854775807, 0>, sizes = array<i64: 2, 8>} : tensor<8x8xf32>
  return
}

// -----

func.func @embedding_padding(%t: tensor<100x8xf32>, %i: tensor<4xi32>) {
  // expected-error @+1 {{'mpc.embedding' op expects padding_idx in [0, 100), got 100}}
  %0 = mpc.embedding %t, %i {padding_idx = 100 : i64} : tensor<100x8xf32>, tensor<4xi32>
  return
}

// -----

func.func @embedding_backward_padding(%g: tensor<4x8xf32>, %i: tensor<4xi32>) {
  // expected-error @+1 {{'mpc.embedding_backward' op expects padding_idx in [0, 100), got -1}}
  %0 = mpc.embedding_backward %g, %i {padding_idx = -1 : i64} : tensor<4x8xf32>, tensor<4xi32> -> tensor<100x8xf32>
  return
}
