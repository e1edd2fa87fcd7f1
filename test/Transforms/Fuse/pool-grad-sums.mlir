// RUN: mpc-opt %s -split-input-file --mpc-fuse="attention=false recompute-moves=false" | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="attention=false recompute-moves=false pool-grad-sums=false" | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse="attention=false recompute-moves=false remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A U-Net's skip connection, backward: the pooled encoder output's
// gradient (max_pool2d_backward) plus the gradient its concatenation
// sends back (here an argument), either order. The pool's backward takes
// the other gradient as its addend, at the add.
// CHECK-LABEL: func @skip
// CHECK-NEXT: %[[D:.*]] = mpc.max_pool2d_backward %arg0, %arg1 addend(%arg2 : tensor<2x8x8x8xf16>) {kernel = array<i64: 2, 2>} : tensor<2x4x4x8xf16>, tensor<2x8x8x8xf16>
// CHECK-NEXT: %[[E:.*]] = mpc.max_pool2d_backward %arg0, %arg1 addend(%arg2 : tensor<2x8x8x8xf16>) {kernel = array<i64: 2, 2>} : tensor<2x4x4x8xf16>, tensor<2x8x8x8xf16>
// CHECK-NEXT: return %[[D]], %[[E]]
// OFF-LABEL: func @skip
// OFF-COUNT-2: mpc.add
// REMARK-COUNT-2: remark: fused: mpc.max_pool2d_backward + mpc.add -> mpc.max_pool2d_backward
func.func @skip(%dy: tensor<2x4x4x8xf16>, %x: tensor<2x8x8x8xf16>, %g: tensor<2x8x8x8xf16>) -> (tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>) {
  %p = mpc.max_pool2d_backward %dy, %x {kernel = array<i64: 2, 2>} : tensor<2x4x4x8xf16>, tensor<2x8x8x8xf16>
  %s = mpc.add %g, %p : tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>
  %q = mpc.max_pool2d_backward %dy, %x {kernel = array<i64: 2, 2>} : tensor<2x4x4x8xf16>, tensor<2x8x8x8xf16>
  %t = mpc.add %q, %g : tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>
  return %s, %t : tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>
}

// -----

// What stays: a pool gradient read by something else too, an add that
// broadcasts its other operand, and an average pool's gradient; the sum
// of two pool gradients fuses once (one takes the other as its addend).
// CHECK-LABEL: func @kept
// CHECK: %[[P:.*]] = mpc.max_pool2d_backward %arg0, %arg1 {kernel = array<i64: 2, 2>}
// CHECK-NEXT: mpc.add %arg2, %[[P]]
// CHECK: %[[Q:.*]] = mpc.max_pool2d_backward %arg0, %arg1 {kernel = array<i64: 2, 2>}
// CHECK-NEXT: mpc.add %[[Q]], %arg3 : tensor<2x8x8x8xf16>, tensor<8xf16>
// CHECK: %[[R:.*]] = mpc.max_pool2d_backward %arg0, %arg1 {kernel = array<i64: 2, 2>}
// CHECK-NEXT: mpc.max_pool2d_backward %arg0, %arg1 addend(%[[R]] : tensor<2x8x8x8xf16>)
// CHECK: %[[V:.*]] = mpc.avg_pool2d_backward
// CHECK-NEXT: mpc.add %arg2, %[[V]]
func.func @kept(%dy: tensor<2x4x4x8xf16>, %x: tensor<2x8x8x8xf16>, %g: tensor<2x8x8x8xf16>, %b: tensor<8xf16>) -> (tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>) {
  %p = mpc.max_pool2d_backward %dy, %x {kernel = array<i64: 2, 2>} : tensor<2x4x4x8xf16>, tensor<2x8x8x8xf16>
  %s = mpc.add %g, %p : tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>
  %q = mpc.max_pool2d_backward %dy, %x {kernel = array<i64: 2, 2>} : tensor<2x4x4x8xf16>, tensor<2x8x8x8xf16>
  %t = mpc.add %q, %b : tensor<2x8x8x8xf16>, tensor<8xf16>
  %r = mpc.max_pool2d_backward %dy, %x {kernel = array<i64: 2, 2>} : tensor<2x4x4x8xf16>, tensor<2x8x8x8xf16>
  %r2 = mpc.max_pool2d_backward %dy, %x {kernel = array<i64: 2, 2>} : tensor<2x4x4x8xf16>, tensor<2x8x8x8xf16>
  %u = mpc.add %r, %r2 : tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>
  %v = mpc.avg_pool2d_backward %dy, %x {kernel = array<i64: 2, 2>} : tensor<2x4x4x8xf16>, tensor<2x8x8x8xf16>
  %w = mpc.add %g, %v : tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>
  return %s, %t, %u, %w, %p : tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>
}
