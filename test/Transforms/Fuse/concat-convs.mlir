// RUN: mpc-opt %s -split-input-file --mpc-fuse="attention=false recompute-moves=false" | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="attention=false recompute-moves=false concat-convs=false" | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse="attention=false recompute-moves=false remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse="attention=false recompute-moves=false report=%t.json" -o /dev/null && FileCheck %s --check-prefix=REPORT < %t.json

// Three parts chain their sums; the strides, dilations and precision
// marks carry over to every part's convolution and filter slice.
// CHECK-LABEL: func @three
// CHECK: %[[F0:.*]] = mpc.slice %arg3 {mpc.precision = "lowp", offsets = array<i64: 0, 0, 0, 0>, sizes = array<i64: 8, 3, 3, 8>}
// CHECK-NEXT: %[[Y0:.*]] = mpc.conv2d %arg0, %[[F0]] {dilation = array<i64: 2, 2>, mpc.precision = "lowp", stride = array<i64: 2, 2>}
// CHECK: %[[Y1:.*]] = mpc.conv2d %arg1, %{{.*}} addend(%[[Y0]] : tensor<1x4x4x8xf32>) {dilation = array<i64: 2, 2>, mpc.precision = "lowp", stride = array<i64: 2, 2>}
// CHECK: %[[F2:.*]] = mpc.slice %arg3 {mpc.precision = "lowp", offsets = array<i64: 0, 0, 0, 16>, sizes = array<i64: 8, 3, 3, 8>}
// CHECK-NEXT: %[[Y:.*]] = mpc.conv2d %arg2, %[[F2]] addend(%[[Y1]] : tensor<1x4x4x8xf32>)
// CHECK-NEXT: return %[[Y]]
func.func @three(%a: tensor<1x12x12x8xf32>, %b: tensor<1x12x12x8xf32>, %c: tensor<1x12x12x8xf32>, %w: tensor<8x3x3x24xf32>) -> tensor<1x4x4x8xf32> {
  %x = mpc.concat %a, %b, %c {axis = 3 : i64} : tensor<1x12x12x8xf32>, tensor<1x12x12x8xf32>, tensor<1x12x12x8xf32>
  %y = mpc.conv2d %x, %w {stride = array<i64: 2, 2>, dilation = array<i64: 2, 2>, mpc.precision = "lowp"} : tensor<1x12x12x24xf32>, tensor<8x3x3x24xf32>
  return %y : tensor<1x4x4x8xf32>
}

// -----

// What stays: a concatenation read by something else too (here returned),
// one along another axis, a part whose channels are not a multiple of 8
// (its convolution would leave Tensor Core shapes), a grouped
// convolution, a convolution that has an addend already, and one that
// reads the concatenation as its filter.
// CHECK-LABEL: func @kept
// CHECK: %[[C:.*]] = mpc.concat %arg0, %arg1 {axis = 3 : i64}
// CHECK-NEXT: mpc.conv2d %[[C]], %arg2
// CHECK: %[[H:.*]] = mpc.concat %arg0, %arg0 {axis = 2 : i64}
// CHECK: mpc.conv2d %[[H]]
// CHECK: %[[O:.*]] = mpc.concat %arg0, %arg3 {axis = 3 : i64}
// CHECK: mpc.conv2d %[[O]]
// CHECK: %[[G:.*]] = mpc.concat %arg0, %arg1 {axis = 3 : i64}
// CHECK: mpc.conv2d %[[G]], %{{.*}} {groups = 2 : i64, padding
// CHECK: %[[A:.*]] = mpc.concat %arg0, %arg1 {axis = 3 : i64}
// CHECK-NEXT: mpc.conv2d %[[A]], %arg2 addend(%arg4 : tensor<2x8x8x16xf16>)
// CHECK: %[[F:.*]] = mpc.concat %arg5, %arg5 {axis = 3 : i64}
// CHECK-NEXT: mpc.conv2d %arg6, %[[F]]
func.func @kept(%up: tensor<2x8x8x8xf16>, %skip: tensor<2x8x8x16xf16>, %w: tensor<16x3x3x24xf16>, %odd: tensor<2x8x8x4xf16>, %z: tensor<2x8x8x16xf16>, %half: tensor<8x1x1x8xf16>, %img: tensor<2x8x8x16xf16>) -> (tensor<2x8x8x24xf16>, tensor<2x8x8x16xf16>, tensor<2x8x8x16xf16>, tensor<2x8x8x16xf16>, tensor<2x8x8x16xf16>, tensor<2x8x8x16xf16>, tensor<2x8x8x8xf16>) {
  %c = mpc.concat %up, %skip {axis = 3 : i64} : tensor<2x8x8x8xf16>, tensor<2x8x8x16xf16>
  %y = mpc.conv2d %c, %w {padding = array<i64: 1, 1>} : tensor<2x8x8x24xf16>, tensor<16x3x3x24xf16>
  %h = mpc.concat %up, %up {axis = 2 : i64} : tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>
  %wh = mpc.slice %w {offsets = array<i64: 0, 0, 0, 0>, sizes = array<i64: 16, 3, 3, 8>} : tensor<16x3x3x24xf16>
  %yh = mpc.conv2d %h, %wh {padding = array<i64: 1, 1>, stride = array<i64: 1, 2>} : tensor<2x8x16x8xf16>, tensor<16x3x3x8xf16>
  %o = mpc.concat %up, %odd {axis = 3 : i64} : tensor<2x8x8x8xf16>, tensor<2x8x8x4xf16>
  %wo = mpc.slice %w {offsets = array<i64: 0, 0, 0, 0>, sizes = array<i64: 16, 3, 3, 12>} : tensor<16x3x3x24xf16>
  %yo = mpc.conv2d %o, %wo {padding = array<i64: 1, 1>} : tensor<2x8x8x12xf16>, tensor<16x3x3x12xf16>
  %g = mpc.concat %up, %skip {axis = 3 : i64} : tensor<2x8x8x8xf16>, tensor<2x8x8x16xf16>
  %wg = mpc.slice %w {offsets = array<i64: 0, 0, 0, 0>, sizes = array<i64: 16, 3, 3, 12>} : tensor<16x3x3x24xf16>
  %yg = mpc.conv2d %g, %wg {padding = array<i64: 1, 1>, groups = 2 : i64} : tensor<2x8x8x24xf16>, tensor<16x3x3x12xf16>
  %a = mpc.concat %up, %skip {axis = 3 : i64} : tensor<2x8x8x8xf16>, tensor<2x8x8x16xf16>
  %ya = mpc.conv2d %a, %w addend(%z : tensor<2x8x8x16xf16>) {padding = array<i64: 1, 1>} : tensor<2x8x8x24xf16>, tensor<16x3x3x24xf16>
  %f = mpc.concat %half, %half {axis = 3 : i64} : tensor<8x1x1x8xf16>, tensor<8x1x1x8xf16>
  %yf = mpc.conv2d %img, %f : tensor<2x8x8x16xf16>, tensor<8x1x1x16xf16>
  return %c, %yh, %yo, %yg, %ya, %y, %yf : tensor<2x8x8x24xf16>, tensor<2x8x8x16xf16>, tensor<2x8x8x16xf16>, tensor<2x8x8x16xf16>, tensor<2x8x8x16xf16>, tensor<2x8x8x16xf16>, tensor<2x8x8x8xf16>
}

// -----

// A reader in another block (a region of its own) keeps the
// concatenation.
// CHECK-LABEL: func @nested
// CHECK: %[[C:.*]] = mpc.concat %arg0, %arg1 {axis = 3 : i64}
// CHECK: scf.if
// CHECK-NEXT: mpc.conv2d %[[C]], %arg2
func.func @nested(%up: tensor<2x8x8x8xf16>, %skip: tensor<2x8x8x16xf16>, %w: tensor<16x3x3x24xf16>, %p: i1) -> tensor<2x8x8x16xf16> {
  %c = mpc.concat %up, %skip {axis = 3 : i64} : tensor<2x8x8x8xf16>, tensor<2x8x8x16xf16>
  %r = scf.if %p -> tensor<2x8x8x16xf16> {
    %y = mpc.conv2d %c, %w {padding = array<i64: 1, 1>} : tensor<2x8x8x24xf16>, tensor<16x3x3x24xf16>
    scf.yield %y : tensor<2x8x8x16xf16>
  } else {
    scf.yield %skip : tensor<2x8x8x16xf16>
  }
  return %r : tensor<2x8x8x16xf16>
}

// -----

// Last (the report is the last module's). A U-Net's skip connection: the decoder's part and the encoder's,
// concatenated along the channels, read by a convolution and, in the
// backward pass, by its filter gradient. Each convolution becomes one of
// each part with its channels of the filter, the second adding to the
// first; the filter gradient the concatenation of the parts'. The
// concatenation is gone; the data gradient stays one convolution.
// CHECK-LABEL: func @skip
// CHECK-NOT: mpc.concat %arg0
// CHECK: %[[F0:.*]] = mpc.slice %arg2 {offsets = array<i64: 0, 0, 0, 0>, sizes = array<i64: 16, 3, 3, 8>} : tensor<16x3x3x24xf16>
// CHECK-NEXT: %[[Y0:.*]] = mpc.conv2d %arg0, %[[F0]] {padding = array<i64: 1, 1>} : tensor<2x8x8x8xf16>, tensor<16x3x3x8xf16>
// CHECK-NEXT: %[[F1:.*]] = mpc.slice %arg2 {offsets = array<i64: 0, 0, 0, 8>, sizes = array<i64: 16, 3, 3, 16>} : tensor<16x3x3x24xf16>
// CHECK-NEXT: %[[Y:.*]] = mpc.conv2d %arg1, %[[F1]] addend(%[[Y0]] : tensor<2x8x8x16xf16>) {padding = array<i64: 1, 1>} : tensor<2x8x8x16xf16>, tensor<16x3x3x16xf16>
// CHECK-NEXT: %[[DX:.*]] = mpc.conv2d_backward_data %arg3, %arg2 {padding = array<i64: 1, 1>} : tensor<2x8x8x16xf16>, tensor<16x3x3x24xf16> -> tensor<2x8x8x24xf16>
// CHECK-NEXT: %[[W0:.*]] = mpc.conv2d_backward_filter %arg3, %arg0 {padding = array<i64: 1, 1>} : tensor<2x8x8x16xf16>, tensor<2x8x8x8xf16> -> tensor<16x3x3x8xf16>
// CHECK-NEXT: %[[W1:.*]] = mpc.conv2d_backward_filter %arg3, %arg1 {padding = array<i64: 1, 1>} : tensor<2x8x8x16xf16>, tensor<2x8x8x16xf16> -> tensor<16x3x3x16xf16>
// CHECK-NEXT: %[[DW:.*]] = mpc.concat %[[W0]], %[[W1]] {axis = 3 : i64} : tensor<16x3x3x8xf16>, tensor<16x3x3x16xf16>
// CHECK-NEXT: return %[[Y]], %[[DX]], %[[DW]]
// OFF-LABEL: func @skip
// OFF: %[[C:.*]] = mpc.concat %arg0, %arg1 {axis = 3 : i64}
// OFF-NEXT: mpc.conv2d %[[C]], %arg2
// OFF: mpc.conv2d_backward_filter %arg3, %[[C]]
// REMARK: remark: fused: mpc.concat + mpc.conv2d -> mpc.conv2d (a convolution of each of 2 channel parts, each after the first adding to the one before)
// REMARK: remark: fused: mpc.concat + mpc.conv2d_backward_filter -> mpc.concat (the filter gradients of 2 channel parts)
// REPORT: "op": "mpc.conv2d"
// REPORT: "from": [
// REPORT-NEXT: "mpc.concat",
// REPORT-NEXT: "mpc.conv2d"
// REPORT: "op": "mpc.concat"
// REPORT: "from": [
// REPORT-NEXT: "mpc.concat",
// REPORT-NEXT: "mpc.conv2d_backward_filter"
func.func @skip(%up: tensor<2x8x8x8xf16>, %skip: tensor<2x8x8x16xf16>, %w: tensor<16x3x3x24xf16>, %dy: tensor<2x8x8x16xf16>) -> (tensor<2x8x8x16xf16>, tensor<2x8x8x24xf16>, tensor<16x3x3x24xf16>) {
  %c = mpc.concat %up, %skip {axis = 3 : i64} : tensor<2x8x8x8xf16>, tensor<2x8x8x16xf16>
  %y = mpc.conv2d %c, %w {padding = array<i64: 1, 1>} : tensor<2x8x8x24xf16>, tensor<16x3x3x24xf16>
  %dx = mpc.conv2d_backward_data %dy, %w {padding = array<i64: 1, 1>} : tensor<2x8x8x16xf16>, tensor<16x3x3x24xf16> -> tensor<2x8x8x24xf16>
  %dw = mpc.conv2d_backward_filter %dy, %c {padding = array<i64: 1, 1>} : tensor<2x8x8x16xf16>, tensor<2x8x8x24xf16> -> tensor<16x3x3x24xf16>
  return %y, %dx, %dw : tensor<2x8x8x16xf16>, tensor<2x8x8x24xf16>, tensor<16x3x3x24xf16>
}
