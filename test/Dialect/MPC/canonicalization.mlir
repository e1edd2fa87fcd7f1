// RUN: mpc-opt %s -split-input-file -canonicalize | FileCheck %s
// RUN: mpc-opt %s -split-input-file -canonicalize -cse | FileCheck %s --check-prefix=CSE

// CHECK-LABEL: func @identity_cast
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NOT: mpc.cast
// CHECK: return %[[X]]
func.func @identity_cast(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = mpc.cast %x : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A narrowing cast rounds: it stays.
// CHECK-LABEL: func @narrowing_cast
// CHECK: mpc.cast %{{.*}} : tensor<4xf32> -> tensor<4xf16>
func.func @narrowing_cast(%x: tensor<4xf32>) -> tensor<4xf16> {
  %0 = mpc.cast %x : tensor<4xf32> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// Integer constants convert at compile time: to f32 (2^24 + 1 rounds to
// 2^24), then to the result type; a cast of integer data stays, and a
// selection below it is not moved above it (the cast stays first).
// CHECK-LABEL: func @cast_integers
// CHECK-DAG: mpc.constant dense<[1.000000e+00, 1.677720e+07, -3.000000e+00]> : tensor<3xbf16>
// CHECK-DAG: mpc.constant dense<[0.000000e+00, 1.000000e+00, 0x4B800000]> : tensor<3xf32>
// CHECK: %[[C:.*]] = mpc.cast %arg0 : tensor<2x4xi32> -> tensor<2x4xf32>
// CHECK: mpc.slice %[[C]]
func.func @cast_integers(%m: tensor<2x4xi32>) -> (tensor<3xbf16>, tensor<3xf32>, tensor<1x4xf32>) {
  %c = mpc.constant dense<[1, 16777217, -3]> : tensor<3xi32>
  %0 = mpc.cast %c : tensor<3xi32> -> tensor<3xbf16>
  %d = mpc.constant dense<[0, 1, 16777217]> : tensor<3xi32>
  %1 = mpc.cast %d : tensor<3xi32> -> tensor<3xf32>
  %2 = mpc.cast %m : tensor<2x4xi32> -> tensor<2x4xf32>
  %3 = mpc.slice %2 {offsets = array<i64: 0, 0>, sizes = array<i64: 1, 4>} : tensor<2x4xf32>
  return %0, %1, %3 : tensor<3xbf16>, tensor<3xf32>, tensor<1x4xf32>
}

// -----

// CHECK-LABEL: func @identity_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>)
// CHECK-NOT: mpc.reshape
// CHECK: return %[[X]]
func.func @identity_reshape(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = mpc.reshape %x : tensor<2x4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func @reshape
// CHECK: mpc.reshape %{{.*}} : tensor<2x4xf32> -> tensor<8xf32>
func.func @reshape(%x: tensor<2x4xf32>) -> tensor<8xf32> {
  %0 = mpc.reshape %x : tensor<2x4xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Constants are uniqued like any ConstantLike op.
// CHECK-LABEL: func @constants
// CHECK-COUNT-1: mpc.constant
// CHECK-NOT: mpc.constant
func.func @constants() -> (tensor<f32>, tensor<f32>) {
  %0 = mpc.constant dense<2.0> : tensor<f32>
  %1 = mpc.constant dense<2.0> : tensor<f32>
  return %0, %1 : tensor<f32>, tensor<f32>
}

// -----

// f16 -> f32 -> f16 is the identity: the widening cast is exact.
// CHECK-LABEL: func @widen_then_narrow
// CHECK-SAME: (%[[X:.*]]: tensor<4xf16>)
// CHECK-NOT: mpc.cast
// CHECK: return %[[X]]
func.func @widen_then_narrow(%x: tensor<4xf16>) -> tensor<4xf16> {
  %0 = mpc.cast %x : tensor<4xf16> -> tensor<4xf32>
  %1 = mpc.cast %0 : tensor<4xf32> -> tensor<4xf16>
  return %1 : tensor<4xf16>
}

// -----

// f32 -> f16 -> f32 rounds: it must not fold.
// CHECK-LABEL: func @narrow_then_widen
// CHECK: %[[H:.*]] = mpc.cast %{{.*}} : tensor<4xf32> -> tensor<4xf16>
// CHECK: %[[F:.*]] = mpc.cast %[[H]] : tensor<4xf16> -> tensor<4xf32>
// CHECK: return %[[F]]
func.func @narrow_then_widen(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = mpc.cast %x : tensor<4xf32> -> tensor<4xf16>
  %1 = mpc.cast %0 : tensor<4xf16> -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// bf16 -> f32 -> f16 is one cast bf16 -> f16.
// CHECK-LABEL: func @widen_then_other
// CHECK: %[[C:.*]] = mpc.cast %{{.*}} : tensor<4xbf16> -> tensor<4xf16>
// CHECK-NEXT: return %[[C]]
func.func @widen_then_other(%x: tensor<4xbf16>) -> tensor<4xf16> {
  %0 = mpc.cast %x : tensor<4xbf16> -> tensor<4xf32>
  %1 = mpc.cast %0 : tensor<4xf32> -> tensor<4xf16>
  return %1 : tensor<4xf16>
}

// -----

// Constants convert at compile time, rounding to nearest even:
// 1.0009765625 (1 + 2^-10) is an f16; 1 + 2^-11 ties to 1.0.
// CHECK-LABEL: func @constant_cast
// CHECK: mpc.constant dense<[1.000000e+00, 1.000980e+00]> : tensor<2xf16>
// CHECK-NOT: mpc.cast
func.func @constant_cast() -> tensor<2xf16> {
  %0 = mpc.constant dense<[1.00048828125, 1.0009765625]> : tensor<2xf32>
  %1 = mpc.cast %0 : tensor<2xf32> -> tensor<2xf16>
  return %1 : tensor<2xf16>
}

// -----

// A cast before a slice moves after it, onto the smaller tensor.
// CHECK-LABEL: func @cast_below_slice
// CHECK: %[[S:.*]] = mpc.slice %{{.*}} {{.*}} : tensor<64x64xf32>
// CHECK: mpc.cast %[[S]] : tensor<8x64xf32> -> tensor<8x64xf16>
func.func @cast_below_slice(%x: tensor<64x64xf32>) -> tensor<8x64xf16> {
  %0 = mpc.cast %x : tensor<64x64xf32> -> tensor<64x64xf16>
  %1 = mpc.slice %0 {offsets = array<i64: 0, 0>, sizes = array<i64: 8, 64>} : tensor<64x64xf16>
  return %1 : tensor<8x64xf16>
}

// -----

// CHECK-LABEL: func @cast_below_max_pool
// CHECK: %[[P:.*]] = mpc.max_pool2d %{{.*}} {kernel = array<i64: 2, 2>} : tensor<1x8x8x4xf32>
// CHECK: mpc.cast %[[P]] : tensor<1x4x4x4xf32> -> tensor<1x4x4x4xf16>
func.func @cast_below_max_pool(%x: tensor<1x8x8x4xf32>) -> tensor<1x4x4x4xf16> {
  %0 = mpc.cast %x : tensor<1x8x8x4xf32> -> tensor<1x8x8x4xf16>
  %1 = mpc.max_pool2d %0 {kernel = array<i64: 2, 2>} : tensor<1x8x8x4xf16>
  return %1 : tensor<1x4x4x4xf16>
}

// -----

// CHECK-LABEL: func @cast_below_reduce_max
// CHECK: %[[R:.*]] = mpc.reduce_max %{{.*}} {dims = array<i64: 1>} : tensor<4x8xf16>
// CHECK: mpc.cast %[[R]] : tensor<4xf16> -> tensor<4xf32>
func.func @cast_below_reduce_max(%x: tensor<4x8xf16>) -> tensor<4xf32> {
  %0 = mpc.cast %x : tensor<4x8xf16> -> tensor<4x8xf32>
  %1 = mpc.reduce_max %0 {dims = array<i64: 1>} : tensor<4x8xf32>
  return %1 : tensor<4xf32>
}

// -----

// A cast after a reshape moves before it: with -cse it then meets the other
// cast of the same value (a linear layer's output gradient, cast for both
// of its products), and one cast is left.
// CHECK-LABEL: func @cast_above_reshape
// CHECK: mpc.cast %arg0 : tensor<8x16xf32> -> tensor<8x16xf16>
// CHECK-NEXT: %[[C:.*]] = mpc.cast %arg0 : tensor<8x16xf32> -> tensor<8x16xf16>
// CHECK-NEXT: mpc.reshape %[[C]] : tensor<8x16xf16> -> tensor<128xf16>
// CSE-LABEL: func @cast_above_reshape
// CSE-NEXT: %[[C:.*]] = mpc.cast %arg0
// CSE-NEXT: %[[R:.*]] = mpc.reshape %[[C]]
// CSE-NEXT: return %[[C]], %[[R]]
func.func @cast_above_reshape(%g: tensor<8x16xf32>) -> (tensor<8x16xf16>, tensor<128xf16>) {
  %0 = mpc.cast %g : tensor<8x16xf32> -> tensor<8x16xf16>
  %1 = mpc.reshape %g : tensor<8x16xf32> -> tensor<128xf32>
  %2 = mpc.cast %1 : tensor<128xf32> -> tensor<128xf16>
  return %0, %2 : tensor<8x16xf16>, tensor<128xf16>
}

// -----

// A cast after a broadcast moves before it, onto the smaller tensor.
// CHECK-LABEL: func @cast_above_broadcast
// CHECK: %[[C:.*]] = mpc.cast %{{.*}} : tensor<8xf32> -> tensor<8xf16>
// CHECK: mpc.broadcast_to %[[C]] : tensor<8xf16> -> tensor<64x8xf16>
func.func @cast_above_broadcast(%b: tensor<8xf32>) -> tensor<64x8xf16> {
  %0 = mpc.broadcast_to %b : tensor<8xf32> -> tensor<64x8xf32>
  %1 = mpc.cast %0 : tensor<64x8xf32> -> tensor<64x8xf16>
  return %1 : tensor<64x8xf16>
}

// -----

// CHECK-LABEL: func @cast_above_upsample
// CHECK: %[[C:.*]] = mpc.cast %{{.*}} : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xbf16>
// CHECK: mpc.upsample_nearest2d %[[C]] {scale = array<i64: 2, 2>} : tensor<1x4x4x2xbf16>
func.func @cast_above_upsample(%x: tensor<1x4x4x2xf32>) -> tensor<1x8x8x2xbf16> {
  %0 = mpc.upsample_nearest2d %x {scale = array<i64: 2, 2>} : tensor<1x4x4x2xf32>
  %1 = mpc.cast %0 : tensor<1x8x8x2xf32> -> tensor<1x8x8x2xbf16>
  return %1 : tensor<1x8x8x2xbf16>
}

// -----

// Same-size follow ops (relu, reshape) keep their cast where it is.
// CHECK-LABEL: func @cast_stays_at_relu
// CHECK: mpc.cast
// CHECK-NEXT: mpc.relu %{{.*}} : tensor<4xf16>
func.func @cast_stays_at_relu(%x: tensor<4xf32>) -> tensor<4xf16> {
  %0 = mpc.cast %x : tensor<4xf32> -> tensor<4xf16>
  %1 = mpc.relu %0 : tensor<4xf16>
  return %1 : tensor<4xf16>
}

// -----

// The NCHW <-> NHWC pair around a convolution cancels.
// CHECK-LABEL: func @transpose_pair
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4x5xf32>)
// CHECK-NOT: mpc.transpose
// CHECK: return %[[X]]
func.func @transpose_pair(%x: tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32> {
  %0 = mpc.transpose %x {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x3x4x5xf32>
  %1 = mpc.transpose %0 {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x4x5x3xf32>
  return %1 : tensor<2x3x4x5xf32>
}

// -----

// Two that do not cancel compose into one.
// CHECK-LABEL: func @transpose_compose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[T:.*]] = mpc.transpose %[[X]] {permutation = array<i64: 2, 1, 0>} : tensor<2x3x4xf32>
// CHECK-NOT: mpc.transpose
// CHECK: return %[[T]]
func.func @transpose_compose(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %0 = mpc.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32>
  %1 = mpc.transpose %0 {permutation = array<i64: 2, 0, 1>} : tensor<3x2x4xf32>
  return %1 : tensor<4x3x2xf32>
}

// -----

// CHECK-LABEL: func @transpose_identity
// CHECK-NOT: mpc.transpose
func.func @transpose_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = mpc.transpose %x {permutation = array<i64: 0, 1>} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A transpose that keeps the order of the dimensions that are not 1 is a
// reshape (a view in the memory plan): a 1x1 filter to OHWI, a depthwise
// filter, a pooled [N, C, 1, 1] to NHWC.
// CHECK-LABEL: func @transpose_of_unit_dims
// CHECK-NOT: mpc.transpose
// CHECK: mpc.reshape %{{.*}} : tensor<32x8x1x1xf32> -> tensor<32x1x1x8xf32>
// CHECK: mpc.reshape %{{.*}} : tensor<32x1x3x3xf32> -> tensor<32x3x3x1xf32>
// CHECK: mpc.reshape %{{.*}} : tensor<4x8x1x1xf16> -> tensor<4x1x1x8xf16>
// CHECK-NOT: mpc.transpose
func.func @transpose_of_unit_dims(%a: tensor<32x8x1x1xf32>, %b: tensor<32x1x3x3xf32>, %c: tensor<4x8x1x1xf16>) -> (tensor<32x1x1x8xf32>, tensor<32x3x3x1xf32>, tensor<4x1x1x8xf16>) {
  %0 = mpc.transpose %a {permutation = array<i64: 0, 2, 3, 1>} : tensor<32x8x1x1xf32>
  %1 = mpc.transpose %b {permutation = array<i64: 0, 2, 3, 1>} : tensor<32x1x3x3xf32>
  %2 = mpc.transpose %c {permutation = array<i64: 0, 2, 3, 1>} : tensor<4x8x1x1xf16>
  return %0, %1, %2 : tensor<32x1x1x8xf32>, tensor<32x3x3x1xf32>, tensor<4x1x1x8xf16>
}

// -----

// One that reorders two dimensions that are not 1 stays, unit dimensions
// or not.
// CHECK-LABEL: func @transpose_of_two_dims
// CHECK: mpc.transpose %{{.*}} {permutation = array<i64: 0, 2, 3, 1>} : tensor<1x8x1x3xf32>
// CHECK-NOT: mpc.reshape
func.func @transpose_of_two_dims(%x: tensor<1x8x1x3xf32>) -> tensor<1x1x3x8xf32> {
  %0 = mpc.transpose %x {permutation = array<i64: 0, 2, 3, 1>} : tensor<1x8x1x3xf32>
  return %0 : tensor<1x1x3x8xf32>
}

// -----

// A reshape back to its input's input's shape folds away; a chain of
// reshapes to another shape stays (each a view).
// CHECK-LABEL: func @reshape_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>)
// CHECK: %[[A:.*]] = mpc.reshape %[[X]] : tensor<2x4xf32> -> tensor<8xf32>
// CHECK: %[[B:.*]] = mpc.reshape %[[A]] : tensor<8xf32> -> tensor<4x2xf32>
// CHECK: return %[[X]], %[[B]], %[[X]]
func.func @reshape_round_trip(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x2xf32>, tensor<2x4xf32>) {
  %0 = mpc.reshape %x : tensor<2x4xf32> -> tensor<8xf32>
  %1 = mpc.reshape %0 : tensor<8xf32> -> tensor<2x4xf32>
  %2 = mpc.reshape %0 : tensor<8xf32> -> tensor<4x2xf32>
  %3 = mpc.reshape %2 : tensor<4x2xf32> -> tensor<2x4xf32>
  return %1, %2, %3 : tensor<2x4xf32>, tensor<4x2xf32>, tensor<2x4xf32>
}

// -----

// NCHW -> NHWC, a unit dimension added, NHWC -> NCHW: the second
// transpose moves above the reshape and cancels the first.
// CHECK-LABEL: func @transpose_pair_around_unit_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<4x8x2x2xf32>)
// CHECK-NOT: mpc.transpose
// CHECK: %[[R:.*]] = mpc.reshape %[[X]] : tensor<4x8x2x2xf32> -> tensor<4x8x1x2x2xf32>
// CHECK-NOT: mpc.transpose
// CHECK: return %[[R]]
func.func @transpose_pair_around_unit_reshape(%x: tensor<4x8x2x2xf32>) -> tensor<4x8x1x2x2xf32> {
  %0 = mpc.transpose %x {permutation = array<i64: 0, 2, 3, 1>} : tensor<4x8x2x2xf32>
  %1 = mpc.reshape %0 : tensor<4x2x2x8xf32> -> tensor<4x1x2x2x8xf32>
  %2 = mpc.transpose %1 {permutation = array<i64: 0, 4, 1, 2, 3>} : tensor<4x1x2x2x8xf32>
  return %2 : tensor<4x8x1x2x2xf32>
}

// -----

// A transpose of a reshape that adds a unit dimension to a transposed
// value: one transpose and the reshape remain.
// CHECK-LABEL: func @transpose_above_unit_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[R:.*]] = mpc.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<1x2x3x4xf32>
// CHECK-NEXT: %[[T:.*]] = mpc.transpose %[[R]] {permutation = array<i64: 3, 0, 2, 1>} : tensor<1x2x3x4xf32>
// CHECK-NEXT: return %[[T]]
func.func @transpose_above_unit_reshape(%x: tensor<2x3x4xf32>) -> tensor<4x1x3x2xf32> {
  %0 = mpc.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32>
  %1 = mpc.reshape %0 : tensor<3x2x4xf32> -> tensor<3x1x2x4xf32>
  %2 = mpc.transpose %1 {permutation = array<i64: 3, 1, 0, 2>} : tensor<3x1x2x4xf32>
  return %2 : tensor<4x1x3x2xf32>
}

// -----

// A transpose of a reshape of a transpose that moves the reshape's groups
// whole ([3, 2] merged into 6) moves above it and composes with the first.
// CHECK-LABEL: func @transpose_above_merging_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[T:.*]] = mpc.transpose %[[X]] {permutation = array<i64: 2, 1, 0>} : tensor<2x3x4xf32>
// CHECK-NEXT: %[[R:.*]] = mpc.reshape %[[T]] : tensor<4x3x2xf32> -> tensor<4x6xf32>
// CHECK-NEXT: return %[[R]]
func.func @transpose_above_merging_reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = mpc.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32>
  %1 = mpc.reshape %0 : tensor<3x2x4xf32> -> tensor<6x4xf32>
  %2 = mpc.transpose %1 {permutation = array<i64: 1, 0>} : tensor<6x4xf32>
  return %2 : tensor<4x6xf32>
}

// -----

// A reshape of a transpose whose user is a transpose: the reshape splits
// a dimension (6 into [2, 3]) and moves above the transpose, the
// transposes compose into one.
// CHECK-LABEL: func @reshape_above_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>)
// CHECK-NEXT: %[[R:.*]] = mpc.reshape %[[X]] : tensor<4x6xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: %[[T:.*]] = mpc.transpose %[[R]] {permutation = array<i64: 2, 1, 0>} : tensor<4x2x3xf32>
// CHECK-NEXT: return %[[T]]
func.func @reshape_above_transpose(%x: tensor<4x6xf32>) -> tensor<3x2x4xf32> {
  %0 = mpc.transpose %x {permutation = array<i64: 1, 0>} : tensor<4x6xf32>
  %1 = mpc.reshape %0 : tensor<6x4xf32> -> tensor<2x3x4xf32>
  %2 = mpc.transpose %1 {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32>
  return %2 : tensor<3x2x4xf32>
}

// -----

// Not moved: a transpose within a group of the reshape (6 split into [2,
// 3], the two swapped) where the reshape's other group merges dimensions
// of the first transpose's input that are not adjacent ([2, 3] of [2, 6,
// 3] transposed to [2, 3, 6]); a reshape of a value no transpose made; a
// first transpose with another user.
// CHECK-LABEL: func @transpose_not_above_reshape
// CHECK: mpc.transpose %{{.*}} {permutation = array<i64: 0, 2, 1>} : tensor<2x6x3xf32>
// CHECK-NEXT: mpc.reshape %{{.*}} : tensor<2x3x6xf32> -> tensor<6x2x3xf32>
// CHECK-NEXT: mpc.transpose %{{.*}} {permutation = array<i64: 0, 2, 1>} : tensor<6x2x3xf32>
// CHECK-NEXT: mpc.reshape %{{.*}} : tensor<2x3xf32> -> tensor<2x1x3xf32>
// CHECK-NEXT: mpc.transpose %{{.*}} {permutation = array<i64: 2, 1, 0>} : tensor<2x1x3xf32>
// CHECK-NEXT: mpc.transpose %{{.*}} {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32>
// CHECK-NEXT: mpc.reshape %{{.*}} : tensor<3x2x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: mpc.transpose %{{.*}} {permutation = array<i64: 1, 0>} : tensor<6x4xf32>
func.func @transpose_not_above_reshape(%x: tensor<2x6x3xf32>, %y: tensor<2x3xf32>, %z: tensor<2x3x4xf32>) -> (tensor<6x3x2xf32>, tensor<3x1x2xf32>, tensor<4x6xf32>, tensor<3x2x4xf32>) {
  %0 = mpc.transpose %x {permutation = array<i64: 0, 2, 1>} : tensor<2x6x3xf32>
  %1 = mpc.reshape %0 : tensor<2x3x6xf32> -> tensor<6x2x3xf32>
  %2 = mpc.transpose %1 {permutation = array<i64: 0, 2, 1>} : tensor<6x2x3xf32>
  %3 = mpc.reshape %y : tensor<2x3xf32> -> tensor<2x1x3xf32>
  %4 = mpc.transpose %3 {permutation = array<i64: 2, 1, 0>} : tensor<2x1x3xf32>
  %5 = mpc.transpose %z {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32>
  %6 = mpc.reshape %5 : tensor<3x2x4xf32> -> tensor<6x4xf32>
  %7 = mpc.transpose %6 {permutation = array<i64: 1, 0>} : tensor<6x4xf32>
  return %2, %4, %7, %5 : tensor<6x3x2xf32>, tensor<3x1x2xf32>, tensor<4x6xf32>, tensor<3x2x4xf32>
}

// -----

// A channel shuffle between NHWC ops, as mpc-import-onnx writes it: NHWC
// -> NCHW, [N, C, H, W] -> [N, g, C/g, H, W], the groups swapped, back to
// [N, C, H, W], NCHW -> NHWC. The reshape moves above the first transpose
// (which composes with the swap), the last transpose above the second
// reshape (composing with them): one transpose of the NHWC value's
// channels, [N, H, W, g, C/g] -> [N, H, W, C/g, g].
// CHECK-LABEL: func @channel_shuffle
// CHECK-SAME: (%[[Y:.*]]: tensor<4x8x8x6xf32>)
// CHECK-NEXT: %[[A:.*]] = mpc.reshape %[[Y]] : tensor<4x8x8x6xf32> -> tensor<4x8x8x2x3xf32>
// CHECK-NEXT: %[[B:.*]] = mpc.transpose %[[A]] {permutation = array<i64: 0, 1, 2, 4, 3>} : tensor<4x8x8x2x3xf32>
// CHECK-NEXT: %[[C:.*]] = mpc.reshape %[[B]] : tensor<4x8x8x3x2xf32> -> tensor<4x8x8x6xf32>
// CHECK-NEXT: return %[[C]]
func.func @channel_shuffle(%y: tensor<4x8x8x6xf32>) -> tensor<4x8x8x6xf32> {
  %0 = mpc.transpose %y {permutation = array<i64: 0, 3, 1, 2>} : tensor<4x8x8x6xf32>
  %1 = mpc.reshape %0 : tensor<4x6x8x8xf32> -> tensor<4x2x3x8x8xf32>
  %2 = mpc.transpose %1 {permutation = array<i64: 0, 2, 1, 3, 4>} : tensor<4x2x3x8x8xf32>
  %3 = mpc.reshape %2 : tensor<4x3x2x8x8xf32> -> tensor<4x6x8x8xf32>
  %4 = mpc.transpose %3 {permutation = array<i64: 0, 2, 3, 1>} : tensor<4x6x8x8xf32>
  return %4 : tensor<4x8x8x6xf32>
}

// -----

// A reshape of a transpose moves above it only where the user is a
// transpose it then composes with, and where each group reads adjacent
// dimensions of the transpose's input in order: [2, 4] of [2, 3, 4]
// transposed to [2, 4, 3], regrouped as [4, 2], does not (nor does the
// outer transpose, which swaps within that group).
// CHECK-LABEL: func @reshape_not_above_transpose
// CHECK: mpc.transpose %{{.*}} {permutation = array<i64: 0, 2, 1>} : tensor<2x3x4xf32>
// CHECK-NEXT: mpc.reshape %{{.*}} : tensor<2x4x3xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: mpc.transpose %{{.*}} {permutation = array<i64: 1, 0, 2>} : tensor<4x2x3xf32>
// CHECK-NEXT: mpc.transpose %{{.*}} {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32>
// CHECK-NEXT: mpc.reshape %{{.*}} : tensor<3x2x4xf32> -> tensor<3x8xf32>
// CHECK-NEXT: mpc.relu
func.func @reshape_not_above_transpose(%x: tensor<2x3x4xf32>) -> (tensor<2x4x3xf32>, tensor<3x8xf32>) {
  %0 = mpc.transpose %x {permutation = array<i64: 0, 2, 1>} : tensor<2x3x4xf32>
  %1 = mpc.reshape %0 : tensor<2x4x3xf32> -> tensor<4x2x3xf32>
  %2 = mpc.transpose %1 {permutation = array<i64: 1, 0, 2>} : tensor<4x2x3xf32>
  %3 = mpc.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32>
  %4 = mpc.reshape %3 : tensor<3x2x4xf32> -> tensor<3x8xf32>
  %5 = mpc.relu %4 : tensor<3x8xf32>
  return %2, %5 : tensor<2x4x3xf32>, tensor<3x8xf32>
}

// -----

// A broadcast read by ops that broadcast themselves: they read its input
// (a reduction's gradient broadcast back, then added), and the broadcast
// goes. A column [8, 1], a row [16], a scalar.
// CHECK-LABEL: func @broadcast_into_readers
// CHECK-SAME: (%[[G:.*]]: tensor<8x16xf32>, %[[C:.*]]: tensor<8x1xf32>, %[[R:.*]]: tensor<16xf32>, %[[S:.*]]: tensor<f32>, %[[M:.*]]: tensor<8x16xi1>)
// CHECK-NOT: mpc.broadcast_to
// CHECK: %[[A:.*]] = mpc.add %[[G]], %[[C]] : tensor<8x16xf32>, tensor<8x1xf32>
// CHECK: %[[B:.*]] = mpc.mul %[[R]], %[[A]] : tensor<16xf32>, tensor<8x16xf32>
// CHECK: %[[D:.*]] = mpc.compare "lt", %[[B]], %[[S]] : tensor<8x16xf32>, tensor<f32>
// CHECK: mpc.where %[[M]], %[[S]], %[[G]] : tensor<8x16xi1>, tensor<f32>, tensor<8x16xf32>
func.func @broadcast_into_readers(%g: tensor<8x16xf32>, %c: tensor<8x1xf32>, %r: tensor<16xf32>, %s: tensor<f32>, %m: tensor<8x16xi1>) -> (tensor<8x16xi1>, tensor<8x16xf32>) {
  %0 = mpc.broadcast_to %c : tensor<8x1xf32> -> tensor<8x16xf32>
  %1 = mpc.add %g, %0 : tensor<8x16xf32>, tensor<8x16xf32>
  %2 = mpc.broadcast_to %r : tensor<16xf32> -> tensor<8x16xf32>
  %3 = mpc.mul %2, %1 : tensor<8x16xf32>, tensor<8x16xf32>
  %4 = mpc.broadcast_to %s : tensor<f32> -> tensor<8x16xf32>
  %5 = mpc.compare "lt", %3, %4 : tensor<8x16xf32>, tensor<8x16xf32>
  %6 = mpc.where %m, %4, %g : tensor<8x16xi1>, tensor<8x16xf32>, tensor<8x16xf32>
  return %5, %6 : tensor<8x16xi1>, tensor<8x16xf32>
}

// -----

// Kept: where the reader would broadcast to less than its result (both
// operands broadcast along the same dimension: the second is read as it
// is, the first keeps its broadcast), and for a reader that does not
// broadcast (an exp).
// CHECK-LABEL: func @broadcast_kept
// CHECK: %[[B0:.*]] = mpc.broadcast_to %arg0 : tensor<8x1xf32> -> tensor<8x16xf32>
// CHECK: %[[B1:.*]] = mpc.broadcast_to %arg1 : tensor<8x1xf32> -> tensor<8x16xf32>
// CHECK: mpc.add %[[B1]], %arg0 : tensor<8x16xf32>, tensor<8x1xf32>
// CHECK: mpc.exp %[[B0]]
func.func @broadcast_kept(%a: tensor<8x1xf32>, %b: tensor<8x1xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %0 = mpc.broadcast_to %a : tensor<8x1xf32> -> tensor<8x16xf32>
  %1 = mpc.broadcast_to %b : tensor<8x1xf32> -> tensor<8x16xf32>
  %2 = mpc.add %1, %0 : tensor<8x16xf32>, tensor<8x16xf32>
  %3 = mpc.exp %0 : tensor<8x16xf32>
  return %2, %3 : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// Without dropout an add-layer-norm backward's residual gradient is its
// input gradient, bit for bit: the residual's readers read the input's.
// With dropout the two differ, and both stay read.
// CHECK-LABEL: func @add_layer_norm_backward_one_gradient
// CHECK: %[[DX:.*]], %{{.*}}, %{{.*}}, %{{.*}} = mpc.add_layer_norm_backward %arg0, %arg1, %arg2, %arg3, %arg4 :
// CHECK: %[[PX:.*]], %[[PR:.*]], %{{.*}}, %{{.*}} = mpc.add_layer_norm_backward %arg0, %arg1, %arg2, %arg3, %arg4 {dropout_p = 1.000000e-01 : f64, seed = 3 : i64}
// CHECK: %[[S:.*]] = mpc.add %[[DX]], %[[DX]]
// CHECK: %[[T:.*]] = mpc.add %[[PX]], %[[PR]]
// CHECK: return %[[S]], %[[T]], %[[DX]]
func.func @add_layer_norm_backward_one_gradient(%dy: tensor<4x8xf16>, %s: tensor<4x8xf16>, %mean: tensor<4xf32>, %rstd: tensor<4xf32>, %g: tensor<8xf32>) -> (tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>) {
  %dx, %dr, %dg, %db = mpc.add_layer_norm_backward %dy, %s, %mean, %rstd, %g : tensor<4x8xf16>, tensor<4xf32>, tensor<8xf32>
  %px, %pr, %pg, %pb = mpc.add_layer_norm_backward %dy, %s, %mean, %rstd, %g {dropout_p = 0.1 : f64, seed = 3 : i64} : tensor<4x8xf16>, tensor<4xf32>, tensor<8xf32>
  %0 = mpc.add %dx, %dr : tensor<4x8xf16>, tensor<4x8xf16>
  %1 = mpc.add %px, %pr : tensor<4x8xf16>, tensor<4x8xf16>
  return %0, %1, %dr : tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>
}
