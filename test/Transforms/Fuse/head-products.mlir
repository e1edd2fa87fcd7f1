// RUN: mpc-opt %s -split-input-file --mpc-fuse="attention=false" | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="attention=false head-products=false" | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse="attention=false remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// An unfused attention's forward, its heads as a BERT-style model writes
// them: the queries', keys' and values' transposes to [B, H, S, D] are
// read by the products in place (a_bshd, b_bshd), and the context's
// transpose back is written by its product (result_bshd). No transpose
// is left.
// CHECK-LABEL: func @forward
// CHECK-NOT: mpc.transpose
// CHECK: %[[S:.*]] = mpc.heads_matmul %arg0, %arg1 {a_bshd, b_bshd, transpose_b} : tensor<2x6x3x4xf16>, tensor<2x6x3x4xf16> -> tensor<2x3x6x6xf16>
// CHECK: %[[P:.*]] = mpc.softmax %[[S]]
// CHECK: %[[O:.*]] = mpc.heads_matmul %[[P]], %arg2 {b_bshd, result_bshd} : tensor<2x3x6x6xf16>, tensor<2x6x3x4xf16> -> tensor<2x6x3x4xf16>
// CHECK-NOT: mpc.transpose
// CHECK: return %[[O]]
// OFF-LABEL: func @forward
// OFF-COUNT-4: mpc.transpose
// OFF-NOT: mpc.heads_matmul
// REMARK-COUNT-2: remark: folded: mpc.transpose [0, 2, 1, 3] into the product's a (mpc.heads_matmul)
// REMARK-COUNT-1: remark: folded: mpc.transpose [0, 2, 1, 3] into the product's b (mpc.heads_matmul)
// REMARK: remark: folded: mpc.transpose [0, 2, 1, 3] into the product's result (mpc.heads_matmul)
func.func @forward(%q: tensor<2x6x3x4xf16>, %k: tensor<2x6x3x4xf16>, %v: tensor<2x6x3x4xf16>) -> tensor<2x6x3x4xf16> {
  %qt = mpc.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x3x4xf16>
  %kt = mpc.transpose %k {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x3x4xf16>
  %vt = mpc.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x3x4xf16>
  %s = mpc.matmul %qt, %kt {transpose_b} : tensor<2x3x6x4xf16>, tensor<2x3x6x4xf16>
  %p = mpc.softmax %s {axis = 3 : i64} : tensor<2x3x6x6xf16>
  %o = mpc.matmul %p, %vt : tensor<2x3x6x6xf16>, tensor<2x3x6x4xf16>
  %ot = mpc.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x6x4xf16>
  return %ot : tensor<2x6x3x4xf16>
}

// -----

// A transpose read by two products (the backward's output gradient, read
// by the scores' and the values' gradients) is read in place by both; a
// heads product's operand read heads-second and transposed again is read
// as stored (its flag cleared); a product read only by a transpose is
// written heads-second, and one written heads-second whose transpose is
// taken again writes in order.
// CHECK-LABEL: func @backward
// CHECK-NOT: mpc.transpose
// CHECK: %[[DS:.*]] = mpc.heads_matmul %arg0, %arg1 {a_bshd, b_bshd, transpose_b}
// CHECK: %[[DV:.*]] = mpc.heads_matmul %arg2, %arg0 {b_bshd, result_bshd, transpose_a} : tensor<2x3x6x6xf16>, tensor<2x6x3x4xf16> -> tensor<2x6x3x4xf16>
// CHECK: %[[X:.*]] = mpc.heads_matmul %arg3, %arg2 {transpose_a} : tensor<2x3x6x4xf16>, tensor<2x3x6x6xf16> -> tensor<2x3x4x6xf16>
// CHECK: %[[Y:.*]] = mpc.heads_matmul %arg2, %arg1 {b_bshd} : tensor<2x3x6x6xf16>, tensor<2x6x3x4xf16> -> tensor<2x3x6x4xf16>
// CHECK-NOT: mpc.transpose
// CHECK: return %[[DS]], %[[DV]], %[[X]], %[[Y]]
// OFF-LABEL: func @backward
// OFF: mpc.heads_matmul %{{.*}}, %arg2 {a_bshd, transpose_a}
func.func @backward(%dy: tensor<2x6x3x4xf16>, %v: tensor<2x6x3x4xf16>, %p: tensor<2x3x6x6xf16>, %h: tensor<2x3x6x4xf16>) -> (tensor<2x3x6x6xf16>, tensor<2x6x3x4xf16>, tensor<2x3x4x6xf16>, tensor<2x3x6x4xf16>) {
  %dyt = mpc.transpose %dy {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x3x4xf16>
  %vt = mpc.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x3x4xf16>
  %ds = mpc.matmul %dyt, %vt {transpose_b} : tensor<2x3x6x4xf16>, tensor<2x3x6x4xf16>
  %dv = mpc.matmul %p, %dyt {transpose_a} : tensor<2x3x6x6xf16>, tensor<2x3x6x4xf16>
  %dvt = mpc.transpose %dv {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x6x4xf16>
  %ht = mpc.transpose %h {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x6x4xf16>
  %x = mpc.heads_matmul %ht, %p {a_bshd, transpose_a} : tensor<2x6x3x4xf16>, tensor<2x3x6x6xf16> -> tensor<2x3x4x6xf16>
  // Written heads-second (the inner transpose), then in order again.
  %y0 = mpc.matmul %p, %vt : tensor<2x3x6x6xf16>, tensor<2x3x6x4xf16>
  %y1 = mpc.transpose %y0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x6x4xf16>
  %y2 = mpc.transpose %y1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x3x4xf16>
  return %ds, %dvt, %x, %y2 : tensor<2x3x6x6xf16>, tensor<2x6x3x4xf16>, tensor<2x3x4x6xf16>, tensor<2x3x6x4xf16>
}

// -----

// Left as they are: a transpose read by something else besides a product
// (and whose input has another reader), a product that broadcasts a
// batch dimension, another permutation, and rank 3.
// CHECK-LABEL: func @kept
// CHECK: %[[T:.*]] = mpc.transpose %arg0 {permutation = array<i64: 0, 2, 1, 3>}
// CHECK: mpc.matmul %[[T]], %[[T]] {transpose_b}
// CHECK: mpc.relu %[[T]]
// CHECK: %[[B:.*]] = mpc.transpose %arg1 {permutation = array<i64: 0, 2, 1, 3>}
// CHECK: mpc.matmul %[[B]], %arg2
// CHECK: %[[O:.*]] = mpc.transpose %arg0 {permutation = array<i64: 2, 1, 0, 3>}
// CHECK: mpc.matmul %[[O]], %[[O]] {transpose_b}
// CHECK: %[[R:.*]] = mpc.transpose %arg3 {permutation = array<i64: 1, 0, 2>}
// CHECK: mpc.matmul %[[R]], %[[R]] {transpose_b}
// CHECK-NOT: mpc.heads_matmul
func.func @kept(%x: tensor<2x6x3x4xf16>, %y: tensor<2x6x1x4xf16>, %w: tensor<2x3x4x5xf16>, %z: tensor<6x3x4xf16>) -> (tensor<2x3x6x6xf16>, tensor<2x3x6x4xf16>, tensor<2x3x6x5xf16>, tensor<3x6x2x2xf16>, tensor<3x6x6xf16>) {
  %t = mpc.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x3x4xf16>
  %s = mpc.matmul %t, %t {transpose_b} : tensor<2x3x6x4xf16>, tensor<2x3x6x4xf16>
  %r = mpc.relu %t : tensor<2x3x6x4xf16>
  %b = mpc.transpose %y {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x1x4xf16>
  %bw = mpc.matmul %b, %w : tensor<2x1x6x4xf16>, tensor<2x3x4x5xf16>
  %o = mpc.transpose %x {permutation = array<i64: 2, 1, 0, 3>} : tensor<2x6x3x4xf16>
  %os = mpc.matmul %o, %o {transpose_b} : tensor<3x6x2x4xf16>, tensor<3x6x2x4xf16>
  %rt = mpc.transpose %z {permutation = array<i64: 1, 0, 2>} : tensor<6x3x4xf16>
  %rs = mpc.matmul %rt, %rt {transpose_b} : tensor<3x6x4xf16>, tensor<3x6x4xf16>
  return %s, %r, %bw, %os, %rs : tensor<2x3x6x6xf16>, tensor<2x3x6x4xf16>, tensor<2x3x6x5xf16>, tensor<3x6x2x2xf16>, tensor<3x6x6xf16>
}

// -----

// A packed projection's thirds (slices, split into heads by reshapes)
// are read in place by the products too (the memory plan then reads them
// as views of the projection, their rows 3 E apart), and a transpose
// read only by a concatenation (the thirds' gradients) is written by its
// product (the plan puts it in the concatenation's window).
// CHECK-LABEL: func @packed
// CHECK: %[[Q:.*]] = mpc.reshape %{{.*}} : tensor<2x6x12xf16> -> tensor<2x6x3x4xf16>
// CHECK: %[[K:.*]] = mpc.reshape %{{.*}} : tensor<2x6x12xf16> -> tensor<2x6x3x4xf16>
// CHECK: %[[S:.*]] = mpc.heads_matmul %[[Q]], %[[K]] {a_bshd, b_bshd, transpose_b}
// CHECK: %[[G:.*]] = mpc.heads_matmul %[[S]], %[[K]] {b_bshd, result_bshd} : tensor<2x3x6x6xf16>, tensor<2x6x3x4xf16> -> tensor<2x6x3x4xf16>
// CHECK: %[[R:.*]] = mpc.reshape %[[G]] : tensor<2x6x3x4xf16> -> tensor<2x6x12xf16>
// CHECK: mpc.concat %[[R]], %arg1
// CHECK-NOT: mpc.transpose
func.func @packed(%p: tensor<2x6x24xf16>, %x: tensor<2x6x12xf16>) -> (tensor<2x3x6x6xf16>, tensor<2x6x24xf16>) {
  %q0 = mpc.slice %p {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 6, 12>} : tensor<2x6x24xf16>
  %k0 = mpc.slice %p {offsets = array<i64: 0, 0, 12>, sizes = array<i64: 2, 6, 12>} : tensor<2x6x24xf16>
  %q1 = mpc.reshape %q0 : tensor<2x6x12xf16> -> tensor<2x6x3x4xf16>
  %k1 = mpc.reshape %k0 : tensor<2x6x12xf16> -> tensor<2x6x3x4xf16>
  %q = mpc.transpose %q1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x3x4xf16>
  %k = mpc.transpose %k1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x3x4xf16>
  %s = mpc.matmul %q, %k {transpose_b} : tensor<2x3x6x4xf16>, tensor<2x3x6x4xf16>
  %g = mpc.matmul %s, %k : tensor<2x3x6x6xf16>, tensor<2x3x6x4xf16>
  %gt = mpc.transpose %g {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x6x4xf16>
  %gr = mpc.reshape %gt : tensor<2x6x3x4xf16> -> tensor<2x6x12xf16>
  %c = mpc.concat %gr, %x {axis = 2} : tensor<2x6x12xf16>, tensor<2x6x12xf16>
  return %s, %c : tensor<2x3x6x6xf16>, tensor<2x6x24xf16>
}


// -----

// nn.MultiheadAttention's heads, merged with the batch: [B, S, H, D]
// transposed to [B, H, S, D] and viewed as [B H, S, D] for rank-3
// products, the context viewed back as [B, H, S, D] and transposed. Each
// product is split into the heads' [B, H] (its other operands viewed so,
// its result viewed back for its other readers), and the transposes are
// then read and written in place as for rank-4 products. Left rank 3: a
// product whose batch no heads' transpose splits, and one that
// broadcasts a batch dimension.
// CHECK-LABEL: func @merged
// CHECK-NOT: mpc.transpose
// CHECK: %[[S:.*]] = mpc.heads_matmul %arg0, %arg1 {a_bshd, b_bshd, transpose_b} : tensor<2x6x3x4xf16>, tensor<2x6x3x4xf16> -> tensor<2x3x6x6xf16>
// CHECK: %[[SM:.*]] = mpc.reshape %[[S]] : tensor<2x3x6x6xf16> -> tensor<6x6x6xf16>
// CHECK: %[[P:.*]] = mpc.softmax %[[SM]]
// CHECK: %[[PS:.*]] = mpc.reshape %[[P]] : tensor<6x6x6xf16> -> tensor<2x3x6x6xf16>
// CHECK: %[[O:.*]] = mpc.heads_matmul %[[PS]], %arg2 {b_bshd, result_bshd} : tensor<2x3x6x6xf16>, tensor<2x6x3x4xf16> -> tensor<2x6x3x4xf16>
// CHECK: mpc.matmul %[[P]], %arg3 : tensor<6x6x6xf16>, tensor<6x6x4xf16>
// CHECK: mpc.matmul %[[P]], %arg4 : tensor<6x6x6xf16>, tensor<1x6x4xf16>
// CHECK-NOT: mpc.transpose
// CHECK: return %[[O]]
// OFF-LABEL: func @merged
// OFF-COUNT-4: mpc.transpose
// OFF-NOT: mpc.heads_matmul
// REMARK: remark: split: the batch of a rank-3 product into the heads' [2, 3]
func.func @merged(%q: tensor<2x6x3x4xf16>, %k: tensor<2x6x3x4xf16>, %v: tensor<2x6x3x4xf16>, %w: tensor<6x6x4xf16>, %u: tensor<1x6x4xf16>) -> (tensor<2x6x3x4xf16>, tensor<6x6x4xf16>, tensor<6x6x4xf16>) {
  %qt = mpc.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x3x4xf16>
  %qm = mpc.reshape %qt : tensor<2x3x6x4xf16> -> tensor<6x6x4xf16>
  %kt = mpc.transpose %k {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x3x4xf16>
  %km = mpc.reshape %kt : tensor<2x3x6x4xf16> -> tensor<6x6x4xf16>
  %vt = mpc.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x3x4xf16>
  %vm = mpc.reshape %vt : tensor<2x3x6x4xf16> -> tensor<6x6x4xf16>
  %s = mpc.matmul %qm, %km {transpose_b} : tensor<6x6x4xf16>, tensor<6x6x4xf16>
  %p = mpc.softmax %s {axis = 2 : i64} : tensor<6x6x6xf16>
  %o = mpc.matmul %p, %vm : tensor<6x6x6xf16>, tensor<6x6x4xf16>
  %os = mpc.reshape %o : tensor<6x6x4xf16> -> tensor<2x3x6x4xf16>
  %ot = mpc.transpose %os {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x6x4xf16>
  %x = mpc.matmul %p, %w : tensor<6x6x6xf16>, tensor<6x6x4xf16>
  %y = mpc.matmul %p, %u : tensor<6x6x6xf16>, tensor<1x6x4xf16>
  return %ot, %x, %y : tensor<2x6x3x4xf16>, tensor<6x6x4xf16>, tensor<6x6x4xf16>
}
