// A slice that every reader takes through strides (the broadcasting
// elementwise ops) is a view: it shares its operand's buffer (the same
// offset), which then lives until the slice's last reader, and nothing is
// written in place into it. Any other reader, an operand outside the
// arena, or reuse=false gives the slice a buffer of its own (a copy).
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory="reuse=false" | FileCheck %s --check-prefix=NOREUSE
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory="report=-" -o /dev/null | FileCheck %s --check-prefix=REPORT

// The product's right half read by an add: the slice is the product's
// buffer at 0. The product lives to the add, so the second product (which
// would take offset 0 once a copy had ended the first's life) is placed
// after it, and the add writes in place into the second product, never
// into the view.
// CHECK-LABEL: func @slice_view
// CHECK-SAME: attributes {mpc.arena_bytes = 24576 : i64}
// CHECK: %[[P:.*]] = mpc.matmul %arg0, %arg1 {mpc.offsets = array<i64: 0>}
// CHECK: %[[S:.*]] = mpc.slice %[[P]] {mpc.offsets = array<i64: 0>,
// CHECK: %[[Q:.*]] = mpc.matmul %arg0, %arg2 {mpc.offsets = array<i64: 16384>}
// CHECK: mpc.add %[[S]], %[[Q]] {mpc.offsets = array<i64: 16384>}
// NOREUSE-LABEL: func @slice_view
// NOREUSE: mpc.slice {{.*}}{mpc.offsets = array<i64: 16384>,
// REPORT: "function": "slice_view",
// REPORT: "slice_views": 1,
func.func @slice_view(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>, %w2: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %0 = mpc.matmul %x, %w : tensor<64x64xf32>, tensor<64x64xf32>
  %1 = mpc.slice %0 {offsets = array<i64: 0, 32>, sizes = array<i64: 64, 32>} : tensor<64x64xf32>
  %2 = mpc.matmul %x, %w2 : tensor<64x64xf32>, tensor<64x32xf32>
  %3 = mpc.add %1, %2 : tensor<64x32xf32>, tensor<64x32xf32>
  return %3 : tensor<64x32xf32>
}

// -----

// Strided windows read by compare, where, mul and scale_loss are views
// too, however many readers they have; an identity-sized window (all of
// a 1x64 row) is not written in place either: the mul's result takes a
// buffer of its own.
// CHECK-LABEL: func @strided_readers
// CHECK: %[[P:.*]] = mpc.matmul {{.*}}{mpc.offsets = array<i64: 0>}
// CHECK: %[[E:.*]] = mpc.slice %[[P]] {mpc.offsets = array<i64: 0>,
// CHECK: %[[C:.*]] = mpc.compare "gt", %[[E]], %[[E]]
// CHECK: mpc.where %[[C]], %[[E]], %[[E]]
// CHECK: %[[R:.*]] = mpc.slice %[[P]] {mpc.offsets = array<i64: 0>,
// CHECK: mpc.mul %[[R]], %[[R]] {mpc.offsets = array<i64: 256>}
// REPORT: "function": "strided_readers",
// REPORT: "slice_views": 2,
func.func @strided_readers(%x: tensor<1x64xf32>, %w: tensor<64x64xf32>) -> (tensor<1x32xf32>, tensor<1x64xf32>) {
  %0 = mpc.matmul %x, %w : tensor<1x64xf32>, tensor<64x64xf32>
  %1 = mpc.slice %0 {offsets = array<i64: 0, 0>, sizes = array<i64: 1, 32>, strides = array<i64: 1, 2>} : tensor<1x64xf32>
  %2 = mpc.compare "gt", %1, %1 : tensor<1x32xf32>, tensor<1x32xf32>
  %3 = mpc.where %2, %1, %1 : tensor<1x32xi1>, tensor<1x32xf32>, tensor<1x32xf32>
  %4 = mpc.slice %0 {offsets = array<i64: 0, 0>, sizes = array<i64: 1, 64>} : tensor<1x64xf32>
  %5 = mpc.mul %4, %4 : tensor<1x64xf32>, tensor<1x64xf32>
  return %3, %5 : tensor<1x32xf32>, tensor<1x64xf32>
}

// -----

// Copied: a slice a product also reads, a slice of an argument (outside
// the arena), and a slice that is returned.
// CHECK-LABEL: func @slice_copied
// CHECK: %[[P:.*]] = mpc.matmul %arg0, %arg1 {mpc.offsets = array<i64: 0>}
// CHECK: mpc.slice %[[P]] {mpc.offsets = array<i64: 1024>,
// CHECK: %[[Q:.*]] = mpc.matmul {{.*}}{mpc.offsets = array<i64: 0>}
// CHECK: mpc.slice %arg0 {mpc.offsets = array<i64: 1024>,
// CHECK: mpc.slice %[[Q]] {mpc.offsets = array<i64: 1536>,
// REPORT: "function": "slice_copied",
// REPORT: "slice_views": 0,
func.func @slice_copied(%x: tensor<16x16xf32>, %w: tensor<16x16xf32>, %w2: tensor<8x16xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) {
  %0 = mpc.matmul %x, %w : tensor<16x16xf32>, tensor<16x16xf32>
  %1 = mpc.slice %0 {offsets = array<i64: 0, 0>, sizes = array<i64: 16, 8>} : tensor<16x16xf32>
  %2 = mpc.add %1, %1 : tensor<16x8xf32>, tensor<16x8xf32>
  %3 = mpc.matmul %1, %w2 : tensor<16x8xf32>, tensor<8x16xf32>
  %4 = mpc.slice %x {offsets = array<i64: 0, 8>, sizes = array<i64: 16, 8>} : tensor<16x16xf32>
  %5 = mpc.add %4, %2 : tensor<16x8xf32>, tensor<16x8xf32>
  %6 = mpc.slice %3 {offsets = array<i64: 0, 8>, sizes = array<i64: 16, 8>} : tensor<16x16xf32>
  %7 = mpc.sub %6, %5 : tensor<16x8xf32>, tensor<16x8xf32>
  return %5, %7, %6 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
}

// -----

// The strided copies (transpose, slice, broadcast_to) take their operand
// through strides too, and so does a reshape whose strides compose: a
// packed projection's third split into heads (4x16 -> 4x2x8, a dimension
// split) and transposed reads the product where it lies, as does a slice
// of that view and the broadcast reading it. The transpose and the
// broadcast are the copies.
// CHECK-LABEL: func @views_through_reshapes
// CHECK: %[[P:.*]] = mpc.matmul {{.*}}{mpc.offsets = array<i64: 0>}
// CHECK: %[[S:.*]] = mpc.slice %[[P]] {mpc.offsets = array<i64: 0>,
// CHECK: %[[R:.*]] = mpc.reshape %[[S]] {mpc.offsets = array<i64: 0>}
// CHECK: mpc.transpose %[[R]] {mpc.offsets = array<i64: 768>,
// CHECK: %[[E:.*]] = mpc.slice %[[S]] {mpc.offsets = array<i64: 0>,
// CHECK: mpc.broadcast_to %[[E]] {mpc.offsets = array<i64: 1024>}
// NOREUSE-LABEL: func @views_through_reshapes
// NOREUSE: mpc.slice {{.*}}{mpc.offsets = array<i64: 768>,
// REPORT: "function": "views_through_reshapes",
// REPORT: "slice_views": 2,
func.func @views_through_reshapes(%x: tensor<4x8xf32>, %w: tensor<8x48xf32>) -> (tensor<2x4x8xf32>, tensor<3x4xf32>) {
  %0 = mpc.matmul %x, %w : tensor<4x8xf32>, tensor<8x48xf32>
  %1 = mpc.slice %0 {offsets = array<i64: 0, 16>, sizes = array<i64: 4, 16>} : tensor<4x48xf32>
  %2 = mpc.reshape %1 : tensor<4x16xf32> -> tensor<4x2x8xf32>
  %3 = mpc.transpose %2 {permutation = array<i64: 1, 0, 2>} : tensor<4x2x8xf32>
  %4 = mpc.slice %1 {offsets = array<i64: 0, 2>, sizes = array<i64: 1, 4>} : tensor<4x16xf32>
  %5 = mpc.broadcast_to %4 : tensor<1x4xf32> -> tensor<3x4xf32>
  return %3, %5 : tensor<2x4x8xf32>, tensor<3x4xf32>
}

// -----

// A reshape that merges a window's rows (16 of every 48 elements) has no
// strides: the slice is copied, and the reshape is a view of the copy.
// CHECK-LABEL: func @rows_merged
// CHECK: mpc.matmul {{.*}}{mpc.offsets = array<i64: 0>}
// CHECK: %[[S:.*]] = mpc.slice {{.*}}{mpc.offsets = array<i64: 768>,
// CHECK: mpc.reshape %[[S]] {mpc.offsets = array<i64: 768>}
// REPORT: "function": "rows_merged",
// REPORT: "slice_views": 0,
func.func @rows_merged(%x: tensor<4x8xf32>, %w: tensor<8x48xf32>, %y: tensor<64xf32>) -> tensor<64xf32> {
  %0 = mpc.matmul %x, %w : tensor<4x8xf32>, tensor<8x48xf32>
  %1 = mpc.slice %0 {offsets = array<i64: 0, 16>, sizes = array<i64: 4, 16>} : tensor<4x48xf32>
  %2 = mpc.reshape %1 : tensor<4x16xf32> -> tensor<64xf32>
  %3 = mpc.add %2, %y : tensor<64xf32>, tensor<64xf32>
  return %3 : tensor<64xf32>
}

// -----

// A reshape whose strides do not compose is still read where it lies when
// its only readers are transposes that can take the view as one loop (the
// shapes' common refinement: [4, 2, 8] and [4, 4, 4] split into [4, 2, 2,
// 4]); where the shapes have none ([4, 6] and [6, 4]), or a reader is not
// a transpose, the slice is copied.
// CHECK-LABEL: func @regrouped
// CHECK: %[[P:.*]] = mpc.reshape {{.*}}{mpc.offsets = array<i64: 0>}
// CHECK: %[[S:.*]] = mpc.slice %[[P]] {mpc.offsets = array<i64: 0>,
// CHECK: mpc.reshape %[[S]] {mpc.offsets = array<i64: 0>}
// CHECK: mpc.slice %{{.*}} {mpc.offsets = array<i64: [[C:[1-9][0-9]*]]>,
// CHECK: mpc.reshape %{{.*}} {mpc.offsets = array<i64: [[C]]>}
// CHECK: mpc.slice %[[P]] {mpc.offsets = array<i64: [[D:[1-9][0-9]*]]>,
// CHECK: mpc.reshape %{{.*}} {mpc.offsets = array<i64: [[D]]>}
// REPORT: "function": "regrouped",
// REPORT: "slice_views": 1,
func.func @regrouped(%x: tensor<8x8xf32>, %w: tensor<8x24xf32>, %y: tensor<4x6xf32>) -> (tensor<4x4x4xf32>, tensor<4x6xf32>, tensor<4x4x4xf32>) {
  %0 = mpc.matmul %x, %w : tensor<8x8xf32>, tensor<8x24xf32>
  %1 = mpc.reshape %0 : tensor<8x24xf32> -> tensor<4x2x24xf32>
  %2 = mpc.slice %1 {offsets = array<i64: 0, 0, 8>, sizes = array<i64: 4, 2, 8>} : tensor<4x2x24xf32>
  %3 = mpc.reshape %2 : tensor<4x2x8xf32> -> tensor<4x4x4xf32>
  %4 = mpc.transpose %3 {permutation = array<i64: 1, 0, 2>} : tensor<4x4x4xf32>
  %5 = mpc.slice %0 {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 6>} : tensor<8x24xf32>
  %6 = mpc.reshape %5 : tensor<4x6xf32> -> tensor<6x4xf32>
  %7 = mpc.transpose %6 {permutation = array<i64: 1, 0>} : tensor<6x4xf32>
  %8 = mpc.slice %1 {offsets = array<i64: 0, 0, 16>, sizes = array<i64: 4, 2, 8>} : tensor<4x2x24xf32>
  %9 = mpc.reshape %8 : tensor<4x2x8xf32> -> tensor<4x4x4xf32>
  %10 = mpc.transpose %9 {permutation = array<i64: 1, 0, 2>} : tensor<4x4x4xf32>
  %11 = mpc.exp %9 : tensor<4x4x4xf32>
  %12 = mpc.add %10, %11 : tensor<4x4x4xf32>, tensor<4x4x4xf32>
  return %4, %7, %12 : tensor<4x4x4xf32>, tensor<4x6xf32>, tensor<4x4x4xf32>
}

// -----

// A max pool gradient's addend takes strides where the slice's rows lie
// evenly apart, each row contiguous (a channel half of an NHWC tensor):
// the first slice shares the exp's buffer (read 4 floats in). A slice
// taking every other channel (its rows not contiguous) is copied into a
// buffer of its own.
// CHECK-LABEL: func @pool_addend
// CHECK: %[[E:.*]] = mpc.exp %arg2 {mpc.offsets = array<i64: 0>}
// CHECK: mpc.slice %[[E]] {mpc.offsets = array<i64: 0>,
// CHECK: mpc.slice %[[E]] {mpc.offsets = array<i64: 6144>,
// REPORT: "function": "pool_addend",
// REPORT: "slice_views": 1,
func.func @pool_addend(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x8x8x4xf32>, %w: tensor<2x8x8x8xf32>) -> (tensor<2x8x8x4xf32>, tensor<2x8x8x4xf32>) {
  %e = mpc.exp %w : tensor<2x8x8x8xf32>
  %a = mpc.slice %e {offsets = array<i64: 0, 0, 0, 4>, sizes = array<i64: 2, 8, 8, 4>} : tensor<2x8x8x8xf32>
  %0 = mpc.max_pool2d_backward %dy, %x addend(%a : tensor<2x8x8x4xf32>) {kernel = array<i64: 2, 2>} : tensor<2x4x4x4xf32>, tensor<2x8x8x4xf32>
  %b = mpc.slice %e {offsets = array<i64: 0, 0, 0, 0>, sizes = array<i64: 2, 8, 8, 4>, strides = array<i64: 1, 1, 1, 2>} : tensor<2x8x8x8xf32>
  %1 = mpc.max_pool2d_backward %dy, %x addend(%b : tensor<2x8x8x4xf32>) {kernel = array<i64: 2, 2>} : tensor<2x4x4x4xf32>, tensor<2x8x8x4xf32>
  return %0, %1 : tensor<2x8x8x4xf32>, tensor<2x8x8x4xf32>
}

// -----

// A packed projection's thirds, split into heads, read by mpc.heads_matmul
// in place (their matrices row-major, rows 24 elements apart): views of
// the projection. A third taking every other column (its rows not
// contiguous) is copied into a buffer of its own.
// CHECK-LABEL: func @heads_operands
// CHECK: %[[P:.*]] = mpc.matmul {{.*}}{mpc.offsets = array<i64: 0>}
// CHECK: %[[Q:.*]] = mpc.slice %[[P]] {mpc.offsets = array<i64: 0>,
// CHECK: %[[K:.*]] = mpc.slice %[[P]] {mpc.offsets = array<i64: 0>,
// CHECK: mpc.reshape %[[Q]] {mpc.offsets = array<i64: 0>}
// CHECK: mpc.reshape %[[K]] {mpc.offsets = array<i64: 0>}
// CHECK: mpc.heads_matmul {{.*}}{a_bshd, b_bshd, mpc.offsets = array<i64: {{[1-9][0-9]*}}>, transpose_b}
// CHECK: %[[E:.*]] = mpc.slice %[[P]] {mpc.offsets = array<i64: [[C:[1-9][0-9]*]]>,
// CHECK: mpc.reshape %[[E]] {mpc.offsets = array<i64: [[C]]>}
// NOREUSE-LABEL: func @heads_operands
// NOREUSE: mpc.slice {{.*}}{mpc.offsets = array<i64: {{[1-9][0-9]*}}>, offsets = array<i64: 0, 0, 12>
// REPORT: "function": "heads_operands",
// REPORT: "slice_views": 2,
func.func @heads_operands(%x: tensor<2x6x8xf32>, %w: tensor<8x24xf32>) -> (tensor<2x3x6x6xf32>, tensor<2x3x6x6xf32>) {
  %p = mpc.matmul %x, %w : tensor<2x6x8xf32>, tensor<8x24xf32>
  %q0 = mpc.slice %p {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 6, 12>} : tensor<2x6x24xf32>
  %k0 = mpc.slice %p {offsets = array<i64: 0, 0, 12>, sizes = array<i64: 2, 6, 12>} : tensor<2x6x24xf32>
  %q = mpc.reshape %q0 : tensor<2x6x12xf32> -> tensor<2x6x3x4xf32>
  %k = mpc.reshape %k0 : tensor<2x6x12xf32> -> tensor<2x6x3x4xf32>
  %s = mpc.heads_matmul %q, %k {a_bshd, b_bshd, transpose_b} : tensor<2x6x3x4xf32>, tensor<2x6x3x4xf32> -> tensor<2x3x6x6xf32>
  %e0 = mpc.slice %p {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 6, 12>, strides = array<i64: 1, 1, 2>} : tensor<2x6x24xf32>
  %e = mpc.reshape %e0 : tensor<2x6x12xf32> -> tensor<2x6x3x4xf32>
  %t = mpc.heads_matmul %e, %q {a_bshd, b_bshd, transpose_b} : tensor<2x6x3x4xf32>, tensor<2x6x3x4xf32> -> tensor<2x3x6x6xf32>
  return %s, %t : tensor<2x3x6x6xf32>, tensor<2x3x6x6xf32>
}
