// RUN: mpc-opt %s -split-input-file --mpc-fuse | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse=norms=false | FileCheck %s --check-prefix=OFF

// BERT's post-norm residual: dropout of the sublayer's output, the residual
// add, the layer norm. One op at the norm; the dropout's seed and p move
// to it.
// CHECK-LABEL: func @post_norm
// CHECK-NEXT: %[[Y:.*]], %[[S:.*]], %{{.*}}, %{{.*}} = mpc.add_layer_norm %arg0, %arg1, %arg2, %arg3 {dropout_p = 1.000000e-01 : f64, epsilon = 9.9999999999999998E-13 : f64, seed = 104 : i64} : tensor<8x16x32xf32>, tensor<32xf32>
// CHECK-NEXT: return %[[Y]]
// REMARK: remark: fused: mpc.dropout + mpc.add + mpc.layer_norm -> mpc.add_layer_norm
// OFF-LABEL: func @post_norm
// OFF-NOT: mpc.add_layer_norm
// OFF: mpc.layer_norm
func.func @post_norm(%h: tensor<8x16x32xf32>, %x: tensor<8x16x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<8x16x32xf32> {
  %d, %mask = mpc.dropout %h {p = 0.1, seed = 104} : tensor<8x16x32xf32>
  %s = mpc.add %x, %d : tensor<8x16x32xf32>, tensor<8x16x32xf32>
  %y:3 = mpc.layer_norm %s, %g, %b {epsilon = 1.0e-12} : tensor<8x16x32xf32>, tensor<32xf32>
  return %y#0 : tensor<8x16x32xf32>
}

// -----

// Pre-norm (GPT): the sum is the residual stream, read again after the
// norm; no dropout. The fused op's sum replaces it there.
// CHECK-LABEL: func @pre_norm
// CHECK-NEXT: %[[Y:.*]], %[[S:.*]], %{{.*}}, %{{.*}} = mpc.add_layer_norm %arg0, %arg1, %arg2, %arg3 : tensor<4x8xbf16>, tensor<8xf32>
// CHECK-NEXT: %[[N:.*]] = mpc.add %[[S]], %[[Y]]
// CHECK-NEXT: return %[[N]]
// REMARK: remark: fused: mpc.add + mpc.layer_norm -> mpc.add_layer_norm
func.func @pre_norm(%a: tensor<4x8xbf16>, %r: tensor<4x8xbf16>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xbf16> {
  %s = mpc.add %a, %r : tensor<4x8xbf16>, tensor<4x8xbf16>
  %y:3 = mpc.layer_norm %s, %g, %b : tensor<4x8xbf16>, tensor<8xf32>
  %n = mpc.add %s, %y#0 : tensor<4x8xbf16>, tensor<4x8xbf16>
  return %n : tensor<4x8xbf16>
}

// -----

// What does not fuse: statistics read (a backward graph), a norm over
// more than the last axis, an add broadcasting a size-1 dimension (not
// the shape of the last dimensions), a sum read before the norm.
// A dropout whose mask is read stays, and the add and norm fuse without it.
// CHECK-LABEL: func @stats_read
// CHECK-NOT: mpc.add_layer_norm
// CHECK-LABEL: func @two_axes
// CHECK-NOT: mpc.add_layer_norm
// CHECK-LABEL: func @broadcast_ones
// CHECK-NOT: mpc.add_layer_norm
// CHECK-LABEL: func @read_before
// CHECK-NOT: mpc.add_layer_norm
// CHECK-LABEL: func @mask_read
// CHECK: %[[D:.*]], %[[M:.*]] = mpc.dropout
// CHECK-NEXT: mpc.add_layer_norm %[[D]], %arg1, %arg2, %arg3 :
// REMARK: remark: fused: mpc.add + mpc.layer_norm -> mpc.add_layer_norm
// REMARK-NOT: remark
func.func @stats_read(%a: tensor<4x8xf32>, %r: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %s = mpc.add %a, %r : tensor<4x8xf32>, tensor<4x8xf32>
  %y:3 = mpc.layer_norm %s, %g, %b : tensor<4x8xf32>, tensor<8xf32>
  return %y#0, %y#1 : tensor<4x8xf32>, tensor<4xf32>
}
func.func @two_axes(%a: tensor<4x8xf32>, %r: tensor<4x8xf32>, %g: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = mpc.add %a, %r : tensor<4x8xf32>, tensor<4x8xf32>
  %y:3 = mpc.layer_norm %s, %g, %b {axis = 0} : tensor<4x8xf32>, tensor<4x8xf32>
  return %y#0 : tensor<4x8xf32>
}
func.func @broadcast_ones(%a: tensor<4x8xf32>, %r: tensor<1x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %s = mpc.add %a, %r : tensor<4x8xf32>, tensor<1x8xf32>
  %y:3 = mpc.layer_norm %s, %g, %b : tensor<4x8xf32>, tensor<8xf32>
  return %y#0 : tensor<4x8xf32>
}
func.func @read_before(%a: tensor<4x8xf32>, %r: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = mpc.add %a, %r : tensor<4x8xf32>, tensor<4x8xf32>
  %t = mpc.relu %s : tensor<4x8xf32>
  %y:3 = mpc.layer_norm %s, %g, %b : tensor<4x8xf32>, tensor<8xf32>
  return %y#0, %t : tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @mask_read(%h: tensor<4x8xf32>, %r: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>) {
  %d, %mask = mpc.dropout %h {p = 0.5, seed = 1} : tensor<4x8xf32>
  %s = mpc.add %d, %r : tensor<4x8xf32>, tensor<4x8xf32>
  %y:3 = mpc.layer_norm %s, %g, %b : tensor<4x8xf32>, tensor<8xf32>
  return %y#0, %mask : tensor<4x8xf32>, tensor<4x8xi1>
}

// -----

// BERT's embeddings: the position embeddings [S, E] broadcast over the
// batch, added to the token embeddings on either side of the add, are the
// fused op's residual (its type written after the input's). A dropout on
// the tokens' side moves into the op; one on the broadcast side stays.
// CHECK-LABEL: func @positions
// CHECK-NEXT: %[[Y:.*]], %{{.*}}, %{{.*}}, %{{.*}} = mpc.add_layer_norm %arg0, %arg1, %arg2, %arg3 {epsilon = 9.9999999999999998E-13 : f64} : tensor<8x16x32xf32>, tensor<16x32xf32>, tensor<32xf32>
// CHECK-NEXT: return %[[Y]]
// CHECK-LABEL: func @positions_first
// CHECK-NEXT: mpc.add_layer_norm %arg1, %arg0, %arg2, %arg3 : tensor<2x4x8xf16>, tensor<8xf16>, tensor<8xf32>
// CHECK-LABEL: func @positions_dropped_tokens
// CHECK-NEXT: mpc.add_layer_norm %arg0, %arg1, %arg2, %arg3 {dropout_p = 2.500000e-01 : f64, seed = 7 : i64} : tensor<8x16x32xf32>, tensor<16x32xf32>, tensor<32xf32>
// CHECK-LABEL: func @positions_dropped
// CHECK-NEXT: %[[D:.*]], %{{.*}} = mpc.dropout %arg1
// CHECK-NEXT: mpc.add_layer_norm %arg0, %[[D]], %arg2, %arg3 : tensor<8x16x32xf32>, tensor<16x32xf32>, tensor<32xf32>
// REMARK: remark: fused: mpc.add + mpc.layer_norm -> mpc.add_layer_norm
// REMARK: remark: fused: mpc.add + mpc.layer_norm -> mpc.add_layer_norm
// REMARK: remark: fused: mpc.dropout + mpc.add + mpc.layer_norm -> mpc.add_layer_norm
// REMARK: remark: fused: mpc.add + mpc.layer_norm -> mpc.add_layer_norm
// OFF-LABEL: func @positions
// OFF-NOT: mpc.add_layer_norm
func.func @positions(%tokens: tensor<8x16x32xf32>, %pos: tensor<16x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<8x16x32xf32> {
  %s = mpc.add %tokens, %pos : tensor<8x16x32xf32>, tensor<16x32xf32>
  %y:3 = mpc.layer_norm %s, %g, %b {epsilon = 1.0e-12} : tensor<8x16x32xf32>, tensor<32xf32>
  return %y#0 : tensor<8x16x32xf32>
}
func.func @positions_first(%pos: tensor<8xf16>, %tokens: tensor<2x4x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf16> {
  %s = mpc.add %pos, %tokens : tensor<8xf16>, tensor<2x4x8xf16>
  %y:3 = mpc.layer_norm %s, %g, %b : tensor<2x4x8xf16>, tensor<8xf32>
  return %y#0 : tensor<2x4x8xf16>
}
func.func @positions_dropped_tokens(%tokens: tensor<8x16x32xf32>, %pos: tensor<16x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<8x16x32xf32> {
  %d, %mask = mpc.dropout %tokens {p = 0.25, seed = 7} : tensor<8x16x32xf32>
  %s = mpc.add %d, %pos : tensor<8x16x32xf32>, tensor<16x32xf32>
  %y:3 = mpc.layer_norm %s, %g, %b : tensor<8x16x32xf32>, tensor<32xf32>
  return %y#0 : tensor<8x16x32xf32>
}
func.func @positions_dropped(%tokens: tensor<8x16x32xf32>, %pos: tensor<16x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<8x16x32xf32> {
  %d, %mask = mpc.dropout %pos {p = 0.25, seed = 7} : tensor<16x32xf32>
  %s = mpc.add %tokens, %d : tensor<8x16x32xf32>, tensor<16x32xf32>
  %y:3 = mpc.layer_norm %s, %g, %b : tensor<8x16x32xf32>, tensor<32xf32>
  return %y#0 : tensor<8x16x32xf32>
}
