// The data-movement family: every layout change is one strided copy
// (input offset and strides in elements, output dense over the result
// shape) or scatter; a reshape is a view of its operand's buffer (no call),
// except of an argument, which it copies into its own planned buffer;
// constants become read-only globals.
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory --mpc-lower-to-runtime | FileCheck %s

// Transpose (0, 2, 1) of 2x4x8 reads strides (32, 1, 8) over 2x8x4.
// CHECK-DAG: llvm.mlir.global internal constant @[[TS:.*]](dense<[32, 1, 8]> : tensor<3xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @[[TSHAPE:.*]](dense<[2, 8, 4]> : tensor<3xi64>)
// Slice at (0, 1, 0) with steps (1, 2, 2): offset 8, strides (32, 16, 2).
// CHECK-DAG: llvm.mlir.global internal constant @[[SS:.*]](dense<[32, 16, 2]> : tensor<3xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @[[SSHAPE:.*]](dense<[2, 2, 4]> : tensor<3xi64>)
// Broadcast of 4x1 to 2x4x8: strides (0, 1, 0).
// CHECK-DAG: llvm.mlir.global internal constant @[[BS:.*]](dense<[0, 1, 0]> : tensor<3xi64>)
// Concat along the last axis writes each 2x4x8 input at offsets 0 and 8 of
// a 2x4x16 result (strides 64, 16, 1).
// CHECK-DAG: llvm.mlir.global internal constant @[[CS:.*]](dense<[64, 16, 1]> : tensor<3xi64>)
// CHECK-LABEL: func.func @layout(
// CHECK: call @mpcrt_copy(%{{.*}}, %[[X:.*]], %c256_i64)
// CHECK: %[[A:.*]] = llvm.mlir.addressof @[[TS]]
// CHECK: %[[B:.*]] = llvm.mlir.addressof @[[TSHAPE]]
// CHECK: call @mpcrt_strided_copy(%[[X]], %c0_i64{{(_[0-9]+)?}}, %[[A]], %{{.*}}, %[[B]], %c3_i32, %c4_i32)
// CHECK: call @mpcrt_strided_scatter(%[[X]], %[[CAT:.*]], %c0_i64{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %c3_i32{{(_[0-9]+)?}}, %c4_i32{{(_[0-9]+)?}})
// CHECK: call @mpcrt_strided_scatter(%[[X]], %[[CAT]], %c8_i64, %{{.*}}, %{{.*}}, %c3_i32{{(_[0-9]+)?}}, %c4_i32{{(_[0-9]+)?}})
// CHECK: %[[C:.*]] = llvm.mlir.addressof @[[SS]]
// CHECK: call @mpcrt_strided_copy(%[[X]], %c8_i64{{(_[0-9]+)?}}, %[[C]], %[[SL:.*]], %{{.*}}, %c3_i32{{(_[0-9]+)?}}, %c4_i32{{(_[0-9]+)?}})
// The backward zero-fills, then scatters into the same window:
// CHECK: call @mpcrt_zero(%[[DX:.*]], %c256_i64{{(_[0-9]+)?}})
// CHECK: %[[D:.*]] = llvm.mlir.addressof @[[SS]]
// CHECK: %[[E:.*]] = llvm.mlir.addressof @[[SSHAPE]]
// CHECK: call @mpcrt_strided_scatter(%[[SL]], %[[DX]], %c8_i64{{(_[0-9]+)?}}, %[[D]], %[[E]], %c3_i32{{(_[0-9]+)?}}, %c4_i32{{(_[0-9]+)?}})
// CHECK: %[[F:.*]] = llvm.mlir.addressof @[[BS]]
// CHECK: call @mpcrt_strided_copy(%{{.*}}, %c0_i64{{(_[0-9]+)?}}, %[[F]], {{.*}}, %c3_i32{{(_[0-9]+)?}}, %c4_i32{{(_[0-9]+)?}})
func.func @layout(%x: tensor<2x4x8xf32>, %c: tensor<4x1xf32>) -> (tensor<8x8xf32>, tensor<2x8x4xf32>, tensor<2x4x16xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %0 = mpc.reshape %x : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %1 = mpc.transpose %x {permutation = array<i64: 0, 2, 1>} : tensor<2x4x8xf32>
  %2 = mpc.concat %x, %x {axis = -1} : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %3 = mpc.slice %x {offsets = array<i64: 0, 1, 0>, sizes = array<i64: 2, 2, 4>, strides = array<i64: 1, 2, 2>} : tensor<2x4x8xf32>
  %4 = mpc.slice_backward %3 {offsets = array<i64: 0, 1, 0>, strides = array<i64: 1, 2, 2>} : tensor<2x2x4xf32> -> tensor<2x4x8xf32>
  %5 = mpc.broadcast_to %c : tensor<4x1xf32> -> tensor<2x4x8xf32>
  return %0, %1, %2, %4, %5 : tensor<8x8xf32>, tensor<2x8x4xf32>, tensor<2x4x16xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// Constants are stored expanded (kernels read every element); i1 as bytes.
// CHECK-DAG: llvm.mlir.global internal constant @[[HALF:.*]](dense<5.000000e-01> : tensor<3xf16>) {{.*}} : !llvm.array<3 x f16>
// CHECK-DAG: llvm.mlir.global internal constant @[[MASK:.*]](dense<[1, 0]> : tensor<2xi8>) {{.*}} : !llvm.array<2 x i8>
// CHECK-LABEL: func.func @constants(
// CHECK: %[[H:.*]] = llvm.mlir.addressof @[[HALF]]
// CHECK: %[[M:.*]] = llvm.mlir.addressof @[[MASK]]
// CHECK: call @mpcrt_copy(%{{.*}}, %[[H]], %c6_i64)
// CHECK: call @mpcrt_copy(%{{.*}}, %[[M]], %c2_i64)
func.func @constants() -> (tensor<3xf16>, tensor<2xi1>) {
  %0 = mpc.constant dense<0.5> : tensor<3xf16>
  %1 = mpc.constant dense<[true, false]> : tensor<2xi1>
  return %0, %1 : tensor<3xf16>, tensor<2xi1>
}

// -----

// The reshape of the product is a view: the exp reads the product's buffer,
// and nothing is copied.
// CHECK-LABEL: func.func @view(
// CHECK: call @mpcrt_matmul_f32(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[P:[^,]*]],
// CHECK-NOT: mpcrt_copy
// CHECK: call @mpcrt_unary_f32(%c1_i32{{(_[0-9]+)?}}, %[[P]], %[[P]], %c64_i64{{(_[0-9]+)?}})
func.func @view(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> tensor<64xf32> {
  %0 = mpc.matmul %x, %w : tensor<8x8xf32>, tensor<8x8xf32>
  %1 = mpc.reshape %0 : tensor<8x8xf32> -> tensor<64xf32>
  %2 = mpc.exp %1 : tensor<64xf32>
  return %2 : tensor<64xf32>
}

// -----

// A load whose global is stored to before its last reader is copied into
// its planned buffer at the load; the readers after the store read that
// copy, not the global. A load read only before any store is the global.
// CHECK-LABEL: func.func @snapshot(
// CHECK-SAME: %[[ARENA:[^:]*]]: !llvm.ptr, %[[STATE:[^:]*]]: !llvm.ptr
// CHECK: call @mpcrt_copy(%[[ARENA]], %[[STATE]], %c16_i64)
// CHECK: call @mpcrt_copy(%[[STATE]], %{{.*}}, %c16_i64
// CHECK: call @mpcrt_binary_f32(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[ARENA]],
ml_program.global private mutable @g(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
func.func @snapshot(%x: tensor<4xf32>) -> tensor<4xf32> {
  %p = ml_program.global_load @g : tensor<4xf32>
  ml_program.global_store @g = %x : tensor<4xf32>
  %d = mpc.sub %x, %p : tensor<4xf32>, tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

// Slices read only by broadcasting elementwise ops are views of the
// product's buffer (at 0): no copy; each reader gets the product's pointer
// at the slice's offset in bytes with the slice's strides over its result
// (a right half: 8 elements in, strides 16, 1; row 3 from column 1 in
// steps of 2, broadcast over the rows: 49 elements in, strides 0, 2).
// CHECK-DAG: llvm.mlir.global internal constant @[[HALF:.*]](dense<[16, 1]> : tensor<2xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @[[ROW:.*]](dense<[0, 2]> : tensor<2xi64>)
// CHECK-LABEL: func.func @slice_views(
// CHECK: call @mpcrt_matmul_f32(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %arg0,
// CHECK-NOT: mpcrt_strided_copy
// CHECK: %[[R:.*]] = llvm.getelementptr %arg0[%c32_i64] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: %[[RS:.*]] = llvm.mlir.addressof @[[HALF]]
// CHECK: call @mpcrt_binary_f32(%c0_i32{{(_[0-9]+)?}}, %[[R]], %[[RS]],
// CHECK: %[[W:.*]] = llvm.getelementptr %arg0[%c196_i64] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: %[[WS:.*]] = llvm.mlir.addressof @[[ROW]]
// CHECK: call @mpcrt_binary_f32(%c2_i32{{(_[0-9]+)?}}, %{{[^,]*}}, %{{[^,]*}}, %[[W]], %[[WS]],
// CHECK-NOT: mpcrt_strided_copy
// CHECK: return
func.func @slice_views(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>, %y: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %0 = mpc.matmul %x, %w : tensor<8x16xf32>, tensor<16x16xf32>
  %1 = mpc.slice %0 {offsets = array<i64: 0, 8>, sizes = array<i64: 8, 8>} : tensor<8x16xf32>
  %2 = mpc.add %1, %y : tensor<8x8xf32>, tensor<8x8xf32>
  %3 = mpc.slice %0 {offsets = array<i64: 3, 1>, sizes = array<i64: 1, 8>, strides = array<i64: 1, 2>} : tensor<8x16xf32>
  %4 = mpc.mul %y, %3 : tensor<8x8xf32>, tensor<1x8xf32>
  return %2, %4 : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// A packed projection's middle third, split into heads and transposed:
// the slice and its reshape are views of the product's buffer, and the
// transpose is the one strided copy, reading the product 16 elements in
// (64 bytes) with the window's strides split and permuted: the slice's
// (48, 1) over 4x16, reshaped to 4x2x8 (48, 8, 1), transposed (1, 0, 2) to
// 2x4x8: (8, 48, 1). A slice of that view read by a broadcast: its
// strides again (0 for the broadcast rows, then 1), from the view's third
// element (72 bytes in).
// CHECK-DAG: llvm.mlir.global internal constant @[[HEADS:.*]](dense<[8, 48, 1]> : tensor<3xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @[[HSHAPE:.*]](dense<[2, 4, 8]> : tensor<3xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @[[ROWS:.*]](dense<[0, 1]> : tensor<2xi64>)
// CHECK-LABEL: func.func @heads_of_a_packed_projection(
// CHECK: call @mpcrt_matmul_f32(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %arg0,
// CHECK-NOT: mpcrt_strided_copy
// CHECK: %[[K:.*]] = llvm.getelementptr %arg0[%c64_i64] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: %[[HS:.*]] = llvm.mlir.addressof @[[HEADS]]
// CHECK: call @mpcrt_strided_copy(%[[K]], %c0_i64{{(_[0-9]+)?}}, %[[HS]], %{{[^,]*}}, %{{[^,]*}}, %c3_i32
// CHECK: %[[E:.*]] = llvm.getelementptr %arg0[%c72_i64] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: %[[RS:.*]] = llvm.mlir.addressof @[[ROWS]]
// CHECK: call @mpcrt_strided_copy(%[[E]], %c0_i64{{(_[0-9]+)?}}, %[[RS]],
// CHECK-NOT: mpcrt_strided_copy
// CHECK: return
func.func @heads_of_a_packed_projection(%x: tensor<4x8xf32>, %w: tensor<8x48xf32>) -> (tensor<2x4x8xf32>, tensor<3x4xf32>) {
  %0 = mpc.matmul %x, %w : tensor<4x8xf32>, tensor<8x48xf32>
  %1 = mpc.slice %0 {offsets = array<i64: 0, 16>, sizes = array<i64: 4, 16>} : tensor<4x48xf32>
  %2 = mpc.reshape %1 : tensor<4x16xf32> -> tensor<4x2x8xf32>
  %3 = mpc.transpose %2 {permutation = array<i64: 1, 0, 2>} : tensor<4x2x8xf32>
  %4 = mpc.slice %1 {offsets = array<i64: 0, 2>, sizes = array<i64: 1, 4>} : tensor<4x16xf32>
  %5 = mpc.broadcast_to %4 : tensor<1x4xf32> -> tensor<3x4xf32>
  return %3, %5 : tensor<2x4x8xf32>, tensor<3x4xf32>
}

// -----

// Transposes written into their concatenation's window: each scatters its
// input into the concatenation's buffer at its window (a packed
// gradient's first 16 columns: offset 0, the 4x16 window's strides (48, 1)
// permuted to (1, 48) over the 16x4 input; the second, through a reshape:
// offset 16, (48, 8, 1) over 4x2x8, permuted to (8, 48, 1)), and the
// concat scatters only its third operand (offset 32, strides 48, 1).
// CHECK-DAG: llvm.mlir.global internal constant @[[Q:.*]](dense<[1, 48]> : tensor<2xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @[[K:.*]](dense<[8, 48, 1]> : tensor<3xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @[[V:.*]](dense<[48, 1]> : tensor<2xi64>)
// CHECK-LABEL: func.func @transposes_into_their_window(
// CHECK: %[[QS:.*]] = llvm.mlir.addressof @[[Q]]
// CHECK: call @mpcrt_strided_scatter(%{{[^,]*}}, %[[OUT:[^,]*]], %c0_i64{{(_[0-9]+)?}}, %[[QS]],
// CHECK: %[[KS:.*]] = llvm.mlir.addressof @[[K]]
// CHECK: call @mpcrt_strided_scatter(%{{[^,]*}}, %[[OUT]], %c16_i64{{(_[0-9]+)?}}, %[[KS]],
// CHECK: %[[VS:.*]] = llvm.mlir.addressof @[[V]]
// CHECK: call @mpcrt_strided_scatter(%{{[^,]*}}, %[[OUT]], %c32_i64{{(_[0-9]+)?}}, %[[VS]],
// CHECK-NOT: mpcrt_strided
// CHECK: return
func.func @transposes_into_their_window(%dq: tensor<16x4xf32>, %dk: tensor<2x4x8xf32>, %v: tensor<4x16xf32>) -> tensor<4x48xf32> {
  %0 = mpc.transpose %dq {permutation = array<i64: 1, 0>} : tensor<16x4xf32>
  %1 = mpc.transpose %dk {permutation = array<i64: 1, 0, 2>} : tensor<2x4x8xf32>
  %2 = mpc.reshape %1 : tensor<4x2x8xf32> -> tensor<4x16xf32>
  %3 = mpc.concat %0, %2, %v {axis = 1 : i64} : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  return %3 : tensor<4x48xf32>
}

// -----

// nn.MultiheadAttention's layout: a packed projection [S, B, 3 E] = [4, 2,
// 24], its middle third viewed as [S, B H, D] = [4, 4, 4] (the batch and
// the heads merged: no strides of its own) and transposed to [B H, S, D].
// The transpose reads the projection as one loop over [B, H, S, D] =
// [2, 2, 4, 4] at strides (24, 4, 48, 1), 8 elements (32 bytes) in. The
// gradient goes back the same way into its concatenation: its scatter is
// the same loop at the same offset.
// CHECK-DAG: llvm.mlir.global internal constant @[[LS:.*]](dense<[24, 4, 48, 1]> : tensor<4xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @[[LSHAPE:.*]](dense<[2, 2, 4, 4]> : tensor<4xi64>)
// CHECK-LABEL: func.func @heads_merged_with_the_batch(
// CHECK: %[[K:.*]] = llvm.getelementptr %arg0[%c32_i64] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: %[[S:.*]] = llvm.mlir.addressof @[[LS]]
// CHECK: %[[SH:.*]] = llvm.mlir.addressof @[[LSHAPE]]
// CHECK: call @mpcrt_strided_copy(%[[K]], %c0_i64{{(_[0-9]+)?}}, %[[S]], %{{[^,]*}}, %[[SH]], %c4_i32
// CHECK: %[[S2:.*]] = llvm.mlir.addressof @[[LS]]
// CHECK: %[[SH2:.*]] = llvm.mlir.addressof @[[LSHAPE]]
// CHECK: call @mpcrt_strided_scatter(%{{[^,]*}}, %{{[^,]*}}, %c8_i64{{(_[0-9]+)?}}, %[[S2]], %[[SH2]], %c4_i32
// CHECK-COUNT-2: call @mpcrt_strided_scatter(
// CHECK-NOT: mpcrt_strided
// CHECK: return
func.func @heads_merged_with_the_batch(%x: tensor<8x8xf32>, %w: tensor<8x24xf32>, %dk: tensor<4x4x4xf32>, %dq: tensor<4x2x8xf32>, %dv: tensor<4x2x8xf32>) -> (tensor<4x4x4xf32>, tensor<4x2x24xf32>) {
  %0 = mpc.matmul %x, %w : tensor<8x8xf32>, tensor<8x24xf32>
  %1 = mpc.reshape %0 : tensor<8x24xf32> -> tensor<4x2x24xf32>
  %2 = mpc.slice %1 {offsets = array<i64: 0, 0, 8>, sizes = array<i64: 4, 2, 8>} : tensor<4x2x24xf32>
  %3 = mpc.reshape %2 : tensor<4x2x8xf32> -> tensor<4x4x4xf32>
  %4 = mpc.transpose %3 {permutation = array<i64: 1, 0, 2>} : tensor<4x4x4xf32>
  %5 = mpc.transpose %dk {permutation = array<i64: 1, 0, 2>} : tensor<4x4x4xf32>
  %6 = mpc.reshape %5 : tensor<4x4x4xf32> -> tensor<4x2x8xf32>
  %7 = mpc.concat %dq, %6, %dv {axis = 2 : i64} : tensor<4x2x8xf32>, tensor<4x2x8xf32>, tensor<4x2x8xf32>
  return %4, %7 : tensor<4x4x4xf32>, tensor<4x2x24xf32>
}
