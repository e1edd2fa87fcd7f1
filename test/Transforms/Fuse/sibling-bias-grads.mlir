// RUN: mpc-opt %s -split-input-file --mpc-fuse=recompute-moves=false | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="remarks=true recompute-moves=false" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse="sibling-bias-grads=false recompute-moves=false" | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse=recompute-moves=false --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// An attention's query, key and value projections read one input x; their
// O2 backward sums each output gradient widened to f32 (the bias
// gradients) and multiplies x^T by it (the weight gradients). The three
// sums become one mpc.column_sums just before the last product; each
// product stays where it was, a plain mpc.matmul.
// CHECK-LABEL: func @query_key_value
// CHECK-NEXT: %[[WQ:.*]] = mpc.matmul %arg0, %arg1 {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
// CHECK-NEXT: %[[WK:.*]] = mpc.matmul %arg0, %arg2 {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
// CHECK-NEXT: %[[B:.*]]:3 = mpc.column_sums %arg1, %arg2, %arg3 : tensor<64x16xf16>, tensor<64x16xf16>, tensor<64x16xf16>
// CHECK-NEXT: %[[WV:.*]] = mpc.matmul %arg0, %arg3 {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
// CHECK-NEXT: return %[[WQ]], %[[B]]#0, %[[WK]], %[[B]]#1, %[[WV]], %[[B]]#2
// CHECK-NOT: mpc.matmul_bias_grad
// REMARK: remark: fused: mpc.cast + mpc.reduce_sum + mpc.cast + mpc.reduce_sum + mpc.cast + mpc.reduce_sum -> mpc.column_sums
// OFF-LABEL: func @query_key_value
// OFF-COUNT-3: mpc.matmul_bias_grad
// OFF-NOT: mpc.column_sums
func.func @query_key_value(%x: tensor<64x32xf16>, %dq: tensor<64x16xf16>, %dk: tensor<64x16xf16>, %dv: tensor<64x16xf16>) -> (tensor<32x16xf16>, tensor<16xf32>, tensor<32x16xf16>, tensor<16xf32>, tensor<32x16xf16>, tensor<16xf32>) {
  %0 = mpc.cast %dq : tensor<64x16xf16> -> tensor<64x16xf32>
  %1 = mpc.reduce_sum %0 {dims = array<i64: 0>} : tensor<64x16xf32>
  %2 = mpc.matmul %x, %dq {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  %3 = mpc.cast %dk : tensor<64x16xf16> -> tensor<64x16xf32>
  %4 = mpc.reduce_sum %3 {dims = array<i64: 0>} : tensor<64x16xf32>
  %5 = mpc.matmul %x, %dk {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  %6 = mpc.cast %dv : tensor<64x16xf16> -> tensor<64x16xf32>
  %7 = mpc.reduce_sum %6 {dims = array<i64: 0>} : tensor<64x16xf32>
  %8 = mpc.matmul %x, %dv {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  return %2, %1, %5, %4, %8, %7 : tensor<32x16xf16>, tensor<16xf32>, tensor<32x16xf16>, tensor<16xf32>, tensor<32x16xf16>, tensor<16xf32>
}

// -----

// The column sums take the products' places, not their own: each product
// keeps its location, the sums the casts' and reductions'.
// LOC-LABEL: func @locations
// LOC: mpc.matmul {{.*}} loc(#[[P1:loc[0-9]*]])
// LOC: mpc.column_sums {{.*}} loc(#[[S:loc[0-9]*]])
// LOC: mpc.matmul {{.*}} loc(#[[P2:loc[0-9]*]])
// LOC-DAG: #[[C1:loc[0-9]*]] = loc("qkv.py":1:1)
// LOC-DAG: #[[R1:loc[0-9]*]] = loc("qkv.py":2:1)
// LOC-DAG: #[[P1]] = loc("qkv.py":3:1)
// LOC-DAG: #[[C2:loc[0-9]*]] = loc("qkv.py":4:1)
// LOC-DAG: #[[R2:loc[0-9]*]] = loc("qkv.py":5:1)
// LOC-DAG: #[[P2]] = loc("qkv.py":6:1)
// LOC-DAG: #[[S]] = loc(fused<["mpc.cast", "mpc.reduce_sum", "mpc.cast", "mpc.reduce_sum"]>[#[[C1]], #[[R1]], #[[C2]], #[[R2]]])
func.func @locations(%x: tensor<64x32xbf16>, %dq: tensor<64x16xbf16>, %dk: tensor<64x16xbf16>) -> (tensor<32x16xbf16>, tensor<16xf32>, tensor<32x16xbf16>, tensor<16xf32>) {
  %0 = mpc.cast %dq : tensor<64x16xbf16> -> tensor<64x16xf32> loc("qkv.py":1:1)
  %1 = mpc.reduce_sum %0 {dims = array<i64: 0>} : tensor<64x16xf32> loc("qkv.py":2:1)
  %2 = mpc.matmul %x, %dq {transpose_a} : tensor<64x32xbf16>, tensor<64x16xbf16> loc("qkv.py":3:1)
  %3 = mpc.cast %dk : tensor<64x16xbf16> -> tensor<64x16xf32> loc("qkv.py":4:1)
  %4 = mpc.reduce_sum %3 {dims = array<i64: 0>} : tensor<64x16xf32> loc("qkv.py":5:1)
  %5 = mpc.matmul %x, %dk {transpose_a} : tensor<64x32xbf16>, tensor<64x16xbf16> loc("qkv.py":6:1)
  return %2, %1, %5, %4 : tensor<32x16xbf16>, tensor<16xf32>, tensor<32x16xbf16>, tensor<16xf32>
}

// -----

// A sum read before the last sibling's place stays with its op; the
// others are taken together.
// CHECK-LABEL: func @read_early
// CHECK-NEXT: %{{.*}}, %[[BQ:.*]] = mpc.matmul_bias_grad %arg0, %arg1 {transpose_a}
// CHECK-NEXT: %[[Q:.*]] = mpc.mul %[[BQ]], %[[BQ]]
// CHECK-NEXT: mpc.matmul %arg0, %arg2 {transpose_a}
// CHECK-NEXT: %[[B:.*]]:2 = mpc.column_sums %arg2, %arg3
// CHECK-NEXT: mpc.matmul %arg0, %arg3 {transpose_a}
func.func @read_early(%x: tensor<64x32xf16>, %dq: tensor<64x16xf16>, %dk: tensor<64x16xf16>, %dv: tensor<64x16xf16>) -> (tensor<32x16xf16>, tensor<16xf32>, tensor<32x16xf16>, tensor<16xf32>, tensor<32x16xf16>, tensor<16xf32>) {
  %q:2 = mpc.matmul_bias_grad %x, %dq {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  %sq = mpc.mul %q#1, %q#1 : tensor<16xf32>, tensor<16xf32>
  %k:2 = mpc.matmul_bias_grad %x, %dk {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  %v:2 = mpc.matmul_bias_grad %x, %dv {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  return %q#0, %sq, %k#0, %k#1, %v#0, %v#1 : tensor<32x16xf16>, tensor<16xf32>, tensor<32x16xf16>, tensor<16xf32>, tensor<32x16xf16>, tensor<16xf32>
}

// -----

// Weight gradients summed into f32 accumulators (gradient accumulation)
// keep their addends, as mpc.matmul_add.
// CHECK-LABEL: func @addends
// CHECK-NEXT: %[[WQ:.*]] = mpc.matmul_add %arg0, %arg1, %arg3 {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>, tensor<32x16xf32> -> tensor<32x16xf32>
// CHECK-NEXT: %[[B:.*]]:2 = mpc.column_sums %arg1, %arg2 : tensor<64x16xf16>, tensor<64x16xf16>
// CHECK-NEXT: %[[WK:.*]] = mpc.matmul_add %arg0, %arg2, %arg4 {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>, tensor<32x16xf32> -> tensor<32x16xf32>
// CHECK-NEXT: return %[[WQ]], %[[B]]#0, %[[WK]], %[[B]]#1
func.func @addends(%x: tensor<64x32xf16>, %dq: tensor<64x16xf16>, %dk: tensor<64x16xf16>, %aq: tensor<32x16xf32>, %ak: tensor<32x16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>, tensor<32x16xf32>, tensor<16xf32>) {
  %q:2 = mpc.matmul_bias_grad %x, %dq, %aq {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>, tensor<32x16xf32>
  %k:2 = mpc.matmul_bias_grad %x, %dk, %ak {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>, tensor<32x16xf32>
  return %q#0, %q#1, %k#0, %k#1 : tensor<32x16xf32>, tensor<16xf32>, tensor<32x16xf32>, tensor<16xf32>
}

// -----

// Layers stored [out, in] (x @ W^T) sum a, the output's gradient
// (bias_of_a); with layers stored [in, out] reading the same input, they
// are siblings too, and a gradient read both ways is summed once.
// CHECK-LABEL: func @sums_of_a
// CHECK-NEXT: %[[TQ:.*]] = mpc.matmul %arg1, %arg0 {transpose_a} : tensor<64x16xf16>, tensor<64x32xf16>
// CHECK-NEXT: %[[TK:.*]] = mpc.matmul %arg2, %arg0 {transpose_a} : tensor<64x16xf16>, tensor<64x32xf16>
// CHECK-NEXT: %[[B:.*]]:2 = mpc.column_sums %arg1, %arg2 : tensor<64x16xf16>, tensor<64x16xf16>
// CHECK-NEXT: %[[WQ:.*]] = mpc.matmul %arg0, %arg1 {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
// CHECK-NEXT: return %[[TQ]], %[[B]]#0, %[[TK]], %[[B]]#1, %[[WQ]], %[[B]]#0
func.func @sums_of_a(%x: tensor<64x32xf16>, %dq: tensor<64x16xf16>, %dk: tensor<64x16xf16>) -> (tensor<16x32xf16>, tensor<16xf32>, tensor<16x32xf16>, tensor<16xf32>, tensor<32x16xf16>, tensor<16xf32>) {
  %tq:2 = mpc.matmul_bias_grad %dq, %x {bias_of_a, transpose_a} : tensor<64x16xf16>, tensor<64x32xf16>
  %tk:2 = mpc.matmul_bias_grad %dk, %x {bias_of_a, transpose_a} : tensor<64x16xf16>, tensor<64x32xf16>
  %q:2 = mpc.matmul_bias_grad %x, %dq {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  return %tq#0, %tq#1, %tk#0, %tk#1, %q#0, %q#1 : tensor<16x32xf16>, tensor<16xf32>, tensor<16x32xf16>, tensor<16xf32>, tensor<32x16xf16>, tensor<16xf32>
}

// -----

// Not siblings: other inputs, other shapes of gradient, f32 operands
// (whose sums cuBLASLt's epilogue takes with the product), and a sum
// added to a bias accumulator beside one that is not: each keeps its op.
// CHECK-LABEL: func @apart
// CHECK-COUNT-6: mpc.matmul_bias_grad
// CHECK-NOT: mpc.column_sums
func.func @apart(%x: tensor<64x32xf16>, %y: tensor<64x32xf16>, %dq: tensor<64x16xf16>, %dk: tensor<64x16xf16>, %dw: tensor<64x8xf16>, %x32: tensor<64x32xf32>, %d32: tensor<64x16xf32>, %e32: tensor<64x16xf32>, %bacc: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %a:2 = mpc.matmul_bias_grad %x, %dq {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  %b:2 = mpc.matmul_bias_grad %y, %dk {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>
  %c:2 = mpc.matmul_bias_grad %y, %dw {transpose_a} : tensor<64x32xf16>, tensor<64x8xf16>
  %d:2 = mpc.matmul_bias_grad %x32, %d32 {transpose_a} : tensor<64x32xf32>, tensor<64x16xf32>
  %e:2 = mpc.matmul_bias_grad %x32, %e32 {transpose_a} : tensor<64x32xf32>, tensor<64x16xf32>
  %f:2 = mpc.matmul_bias_grad %x, %dk bias(%bacc) {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16> bias(tensor<16xf32>)
  return %a#1, %b#1, %c#1, %d#1, %e#1, %f#1 : tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// Gradient accumulation's micro-batch step: each bias gradient summed
// into its accumulator (a bias addend) becomes one of the column sums'
// addends, each its own even where two ops sum one gradient.
// CHECK-LABEL: func @accumulated
// CHECK-NEXT: %[[WQ:.*]] = mpc.matmul_add %arg0, %arg1, %arg2 {transpose_a}
// CHECK-NEXT: %[[WK:.*]] = mpc.matmul %arg0, %arg1 {transpose_a}
// CHECK-NEXT: %[[B:.*]]:3 = mpc.column_sums %arg1, %arg1, %arg1 addends(%arg3, %arg4, %arg5) : tensor<64x16xf16>, tensor<64x16xf16>, tensor<64x16xf16> addends(tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
// CHECK-NEXT: %[[WT:.*]] = mpc.matmul %arg1, %arg0 {transpose_a}
// CHECK-NEXT: return %[[WQ]], %[[B]]#0, %[[WK]], %[[B]]#1, %[[WT]], %[[B]]#2
// OFF-LABEL: func @accumulated
// OFF-COUNT-3: mpc.matmul_bias_grad
func.func @accumulated(%x: tensor<64x32xf16>, %dq: tensor<64x16xf16>, %aw: tensor<32x16xf32>, %b1: tensor<16xf32>, %b2: tensor<16xf32>, %b3: tensor<16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>, tensor<32x16xf16>, tensor<16xf32>, tensor<16x32xf16>, tensor<16xf32>) {
  %q:2 = mpc.matmul_bias_grad %x, %dq, %aw bias(%b1) {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>, tensor<32x16xf32> bias(tensor<16xf32>)
  %k:2 = mpc.matmul_bias_grad %x, %dq bias(%b2) {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16> bias(tensor<16xf32>)
  %t:2 = mpc.matmul_bias_grad %dq, %x bias(%b3) {bias_of_a, transpose_a} : tensor<64x16xf16>, tensor<64x32xf16> bias(tensor<16xf32>)
  return %q#0, %q#1, %k#0, %k#1, %t#0, %t#1 : tensor<32x16xf32>, tensor<16xf32>, tensor<32x16xf16>, tensor<16xf32>, tensor<16x32xf16>, tensor<16xf32>
}
