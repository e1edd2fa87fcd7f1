// RUN: mpc-opt %s -split-input-file --mpc-fuse | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse=recompute-moves=false | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse --mpc-plan-memory="report=-" -o /dev/null | FileCheck %s --check-prefix=REPORT

// OFF-NOT: mpc.recomputed

// A skip connection: the concatenation is read at once and again after
// the block's peak (the 16 KiB exponential), and its operands are
// arguments: a copy before the later reader computes it again, so it is
// not kept across the peak.
// CHECK-LABEL: func @skip
// CHECK-NEXT: %[[C:.*]] = mpc.concat %arg0, %arg1 {axis = 3 : i64} :
// CHECK-NEXT: %[[R:.*]] = mpc.relu %[[C]]
// CHECK-NEXT: mpc.exp %arg2
// CHECK-NEXT: mpc.reduce_sum
// CHECK-NEXT: %[[C2:.*]] = mpc.concat %arg0, %arg1 {axis = 3 : i64, mpc.recomputed} :
// CHECK-NEXT: %[[M:.*]] = mpc.add %[[C2]], %[[R]]
// CHECK-NEXT: return %[[M]]
// REMARK: remark: recomputed: mpc.concat before mpc.add (its result is not kept across 2 ops)
// REPORT: "function": "skip"
// REPORT: "mpc.concat recomputed": 1
func.func @skip(%a: tensor<2x4x4x8xf32>, %b: tensor<2x4x4x8xf32>, %big: tensor<64x64xf32>) -> (tensor<2x4x4x16xf32>, tensor<64xf32>) {
  %c = mpc.concat %a, %b {axis = 3} : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>
  %r = mpc.relu %c : tensor<2x4x4x16xf32>
  %e = mpc.exp %big : tensor<64x64xf32>
  %s = mpc.reduce_sum %e {dims = array<i64: 1>} : tensor<64x64xf32>
  %m = mpc.add %c, %r : tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>
  return %m, %s : tensor<2x4x4x16xf32>, tensor<64xf32>
}

// -----

// A widening cast read only after the peak (the layer norm backward of a
// fused residual norm reads its sum so): the cast itself moves down to its
// reader, once, its f16 operand (an argument) kept instead of the f32
// result; not a copy.
// CHECK-LABEL: func @moved
// CHECK-NEXT: mpc.exp %arg1
// CHECK-NEXT: mpc.reduce_sum
// CHECK-NEXT: %[[W:.*]] = mpc.cast %arg0 : tensor<16x16xf16> -> tensor<16x16xf32>
// CHECK-NEXT: %[[R:.*]] = mpc.relu %[[W]]
// CHECK-NEXT: return %[[R]]
// REMARK: remark: moved: mpc.cast before mpc.relu (its result is not kept across 2 ops)
// OFF-LABEL: func @moved
// OFF-NEXT: mpc.cast
func.func @moved(%a: tensor<16x16xf16>, %big: tensor<64x64xf32>) -> (tensor<16x16xf32>, tensor<64xf32>) {
  %w = mpc.cast %a : tensor<16x16xf16> -> tensor<16x16xf32>
  %e = mpc.exp %big : tensor<64x64xf32>
  %s = mpc.reduce_sum %e {dims = array<i64: 1>} : tensor<64x64xf32>
  %r = mpc.relu %w : tensor<16x16xf32>
  return %r, %s : tensor<16x16xf32>, tensor<64xf32>
}

// -----

// Operands that are not kept until the later reader (both exponentials
// die at the concatenation): computing the concatenation again would keep
// them instead, as many bytes as its result. Nothing changes.
// CHECK-LABEL: func @operands_not_kept
// CHECK: mpc.concat
// CHECK-NOT: mpc.recomputed
// CHECK: return
func.func @operands_not_kept(%a: tensor<2x4x4x8xf32>, %b: tensor<2x4x4x8xf32>, %big: tensor<64x64xf32>) -> (tensor<2x4x4x16xf32>, tensor<64xf32>) {
  %x = mpc.exp %a : tensor<2x4x4x8xf32>
  %y = mpc.exp %b : tensor<2x4x4x8xf32>
  %c = mpc.concat %x, %y {axis = 3} : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>
  %r = mpc.relu %c : tensor<2x4x4x16xf32>
  %e = mpc.exp %big : tensor<64x64xf32>
  %s = mpc.reduce_sum %e {dims = array<i64: 1>} : tensor<64x64xf32>
  %m = mpc.add %c, %r : tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>
  return %m, %s : tensor<2x4x4x16xf32>, tensor<64xf32>
}

// -----

// One operand not kept (the exponential, half the concatenation's bytes):
// the copy keeps it until the later reader instead of the result, half
// the bytes across the peak.
// CHECK-LABEL: func @operand_kept_longer
// CHECK: %[[X:.*]] = mpc.exp %arg0
// CHECK: mpc.concat %[[X]], %arg1 {axis = 3 : i64} :
// CHECK: mpc.reduce_sum
// CHECK-NEXT: mpc.concat %[[X]], %arg1 {axis = 3 : i64, mpc.recomputed} :
// CHECK-NEXT: mpc.add
func.func @operand_kept_longer(%a: tensor<2x4x4x8xf32>, %b: tensor<2x4x4x8xf32>, %big: tensor<64x64xf32>) -> (tensor<2x4x4x16xf32>, tensor<64xf32>) {
  %x = mpc.exp %a : tensor<2x4x4x8xf32>
  %c = mpc.concat %x, %b {axis = 3} : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>
  %r = mpc.relu %c : tensor<2x4x4x16xf32>
  %e = mpc.exp %big : tensor<64x64xf32>
  %s = mpc.reduce_sum %e {dims = array<i64: 1>} : tensor<64x64xf32>
  %m = mpc.add %c, %r : tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>
  return %m, %s : tensor<2x4x4x16xf32>, tensor<64xf32>
}

// -----

// An operand kept longer would itself make a new peak. The peak (20736
// bytes) is the 16 KiB exponential's reduction with the concatenation and
// its ReLU (2 KiB each). Before the first reader, the 69x64 exponential's
// reduction holds 19988 bytes with the concatenation; keeping the 1 KiB
// operand there too would pass the peak. Nothing changes (with a 64x64
// one it would be computed again).
// CHECK-LABEL: func @extension_reaches_the_peak
// CHECK-NOT: mpc.recomputed
// CHECK: return
func.func @extension_reaches_the_peak(%a: tensor<2x4x4x8xf32>, %b: tensor<2x4x4x8xf32>, %mid: tensor<69x64xf32>, %big: tensor<64x64xf32>) -> (tensor<2x4x4x16xf32>, tensor<69xf32>, tensor<64xf32>) {
  %x = mpc.exp %a : tensor<2x4x4x8xf32>
  %c = mpc.concat %x, %b {axis = 3} : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>
  %w = mpc.exp %mid : tensor<69x64xf32>
  %t = mpc.reduce_sum %w {dims = array<i64: 1>} : tensor<69x64xf32>
  %r = mpc.relu %c : tensor<2x4x4x16xf32>
  %e = mpc.exp %big : tensor<64x64xf32>
  %s = mpc.reduce_sum %e {dims = array<i64: 1>} : tensor<64x64xf32>
  %m = mpc.add %c, %r : tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>
  return %m, %t, %s : tensor<2x4x4x16xf32>, tensor<69xf32>, tensor<64xf32>
}

// -----

// The peak (the exponential) comes after the later reader: keeping the
// concatenation costs nothing there, a copy would cost a pass. Nothing
// changes.
// CHECK-LABEL: func @peak_elsewhere
// CHECK: mpc.concat
// CHECK-NOT: mpc.recomputed
// CHECK: return
func.func @peak_elsewhere(%a: tensor<2x4x4x8xf32>, %b: tensor<2x4x4x8xf32>, %big: tensor<64x64xf32>) -> (tensor<2x4x4x16xf32>, tensor<64xf32>) {
  %c = mpc.concat %a, %b {axis = 3} : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>
  %r = mpc.relu %c : tensor<2x4x4x16xf32>
  %n = mpc.neg %r : tensor<2x4x4x16xf32>
  %m = mpc.add %c, %n : tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>
  %e = mpc.exp %big : tensor<64x64xf32>
  %s = mpc.reduce_sum %e {dims = array<i64: 1>} : tensor<64x64xf32>
  return %m, %s : tensor<2x4x4x16xf32>, tensor<64xf32>
}

// -----

// Readers next to each other: no gap to save. Nothing changes.
// CHECK-LABEL: func @adjacent
// CHECK-NOT: mpc.recomputed
// CHECK: return
func.func @adjacent(%a: tensor<2x4x4x8xf32>, %b: tensor<2x4x4x8xf32>) -> tensor<2x4x4x16xf32> {
  %c = mpc.concat %a, %b {axis = 3} : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>
  %r = mpc.relu %c : tensor<2x4x4x16xf32>
  %m = mpc.add %c, %r : tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>
  return %m : tensor<2x4x4x16xf32>
}

// -----

// An upsampling and a cast kept across the peak, both of an argument: each
// is computed again before its later reader (the cast's bits are the
// same: one rounding of the same f32 values).
// CHECK-LABEL: func @upsample_and_cast
// CHECK-NEXT: %[[U:.*]] = mpc.upsample_nearest2d %arg0
// CHECK-NEXT: %[[H:.*]] = mpc.cast %arg1
// CHECK-NEXT: %[[R:.*]] = mpc.relu %[[U]]
// CHECK-NEXT: %[[N:.*]] = mpc.neg %[[H]]
// CHECK-NEXT: mpc.exp %arg2
// CHECK-NEXT: mpc.reduce_sum
// CHECK-NEXT: %[[U2:.*]] = mpc.upsample_nearest2d %arg0 {mpc.recomputed, scale = array<i64: 2, 2>}
// CHECK-NEXT: mpc.add %[[U2]], %[[R]]
// CHECK-NEXT: %[[H2:.*]] = mpc.cast %arg1 {mpc.recomputed}
// CHECK-NEXT: mpc.add %[[H2]], %[[N]]
// REMARK: remark: recomputed: mpc.upsample_nearest2d before mpc.add
// REMARK: remark: recomputed: mpc.cast before mpc.add
// REPORT: "function": "upsample_and_cast"
// REPORT: "mpc.cast recomputed": 1,
// REPORT-NEXT: "mpc.upsample_nearest2d recomputed": 1
func.func @upsample_and_cast(%a: tensor<2x4x4x8xf32>, %h: tensor<2x8x8x8xf32>, %big: tensor<64x64xf32>) -> (tensor<2x8x8x8xf32>, tensor<2x8x8x8xf16>, tensor<64xf32>) {
  %u = mpc.upsample_nearest2d %a {scale = array<i64: 2, 2>} : tensor<2x4x4x8xf32>
  %c = mpc.cast %h : tensor<2x8x8x8xf32> -> tensor<2x8x8x8xf16>
  %r = mpc.relu %u : tensor<2x8x8x8xf32>
  %n = mpc.neg %c : tensor<2x8x8x8xf16>
  %e = mpc.exp %big : tensor<64x64xf32>
  %s = mpc.reduce_sum %e {dims = array<i64: 1>} : tensor<64x64xf32>
  %m = mpc.add %u, %r : tensor<2x8x8x8xf32>, tensor<2x8x8x8xf32>
  %k = mpc.add %c, %n : tensor<2x8x8x8xf16>, tensor<2x8x8x8xf16>
  return %m, %k, %s : tensor<2x8x8x8xf32>, tensor<2x8x8x8xf16>, tensor<64xf32>
}
