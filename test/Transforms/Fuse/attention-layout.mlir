// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false" | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false attention-layout=false" | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false scales=false" | FileCheck %s --check-prefix=NOSCALE

// A multi-head attention as a model writes it: the projections' [B, S, E]
// reshaped to [B, S, H, D], the heads transposed to [B, H, S, D] for the
// products and back after. The fused op reads the reshaped projections
// (layout "bshd") and its result is the transposed-back one's.
// CHECK-LABEL: func @heads
// CHECK-NEXT: %[[Q:.*]] = mpc.reshape %arg0 : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
// CHECK-NEXT: %[[K:.*]] = mpc.reshape %arg1 : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
// CHECK-NEXT: %[[V:.*]] = mpc.reshape %arg2 : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
// CHECK-NEXT: %[[O:.*]], %{{.*}} = mpc.attention %[[Q]], %[[K]], %[[V]] {dropout_p = 1.000000e-01 : f64, layout = "bshd", scale = 0.35355338454246521 : f64, seed = 3 : i64} : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>
// CHECK-NEXT: %[[R:.*]] = mpc.reshape %[[O]] : tensor<2x16x4x8xf32> -> tensor<2x16x32xf32>
// CHECK-NEXT: return %[[R]]
// REMARK: remark: fused: mpc.matmul + mpc.mul + mpc.softmax + mpc.dropout + mpc.matmul -> mpc.attention
// REMARK: attention-layout.mlir:[[#@LINE+13]]:8: remark: fused: mpc.matmul + mpc.mul + mpc.softmax + mpc.dropout + mpc.matmul + mpc.transpose + mpc.transpose + mpc.transpose + mpc.transpose -> mpc.attention (layout "bshd")
// OFF-LABEL: func @heads
// OFF-COUNT-3: mpc.transpose %{{.*}} {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x16x4x8xf32>
// OFF: mpc.attention %{{.*}}, %{{.*}}, %{{.*}} {dropout_p = 1.000000e-01 : f64, scale = 0.35355338454246521 : f64, seed = 3 : i64} : tensor<2x4x16x8xf32>
// OFF-NEXT: mpc.transpose %{{.*}} {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x16x8xf32>
func.func @heads(%xq: tensor<2x16x32xf32>, %xk: tensor<2x16x32xf32>, %xv: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  %q4 = mpc.reshape %xq : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
  %q = mpc.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x16x4x8xf32>
  %k4 = mpc.reshape %xk : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
  %k = mpc.transpose %k4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x16x4x8xf32>
  %v4 = mpc.reshape %xv : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
  %v = mpc.transpose %v4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x16x4x8xf32>
  %c = mpc.constant dense<0.353553390593273786> : tensor<f32>
  %s = mpc.matmul %q, %k {transpose_b} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  %t = mpc.mul %s, %c : tensor<2x4x16x16xf32>, tensor<f32>
  %p = mpc.softmax %t : tensor<2x4x16x16xf32>
  %pd, %mask = mpc.dropout %p {p = 0.1, seed = 3} : tensor<2x4x16x16xf32>
  %o = mpc.matmul %pd, %v : tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>
  %ot = mpc.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x16x8xf32>
  %r = mpc.reshape %ot : tensor<2x16x4x8xf32> -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}

// -----

// A hand-written attention of rank 3 ([S, H, D] without a batch), masked
// and with a bias: the mask and bias stay, over the scores [H, Sq, Sk];
// the result read by two transposes back, each replaced.
// CHECK-LABEL: func @rank3
// CHECK-NEXT: %[[O:.*]], %{{.*}} = mpc.attention %arg0, %arg1, %arg2 mask(%arg3 : tensor<1x1x6xi1>) bias(%arg4 : tensor<2x1x6xf32>) {layout = "bshd", mask_value = -1.000000e+04 : f64, scale = 5.000000e-01 : f64} : tensor<4x2x8xf16>, tensor<6x2x8xf16>, tensor<6x2x4xf16>
// CHECK-NEXT: return %[[O]], %[[O]]
// REMARK: attention-layout.mlir:[[#@LINE+7]]:14: remark: fused: mpc.attention + mpc.transpose + mpc.transpose + mpc.transpose + mpc.transpose + mpc.transpose -> mpc.attention (layout "bshd")
// OFF-LABEL: func @rank3
// OFF-COUNT-3: mpc.transpose
func.func @rank3(%q: tensor<4x2x8xf16>, %k: tensor<6x2x8xf16>, %v: tensor<6x2x4xf16>, %m: tensor<1x1x6xi1>, %b: tensor<2x1x6xf32>) -> (tensor<4x2x4xf16>, tensor<4x2x4xf16>) {
  %qt = mpc.transpose %q {permutation = array<i64: 1, 0, 2>} : tensor<4x2x8xf16>
  %kt = mpc.transpose %k {permutation = array<i64: 1, 0, 2>} : tensor<6x2x8xf16>
  %vt = mpc.transpose %v {permutation = array<i64: 1, 0, 2>} : tensor<6x2x4xf16>
  %o, %lse = mpc.attention %qt, %kt, %vt mask(%m : tensor<1x1x6xi1>) bias(%b : tensor<2x1x6xf32>) {scale = 0.5 : f64, mask_value = -1.0e4 : f64} : tensor<2x4x8xf16>, tensor<2x6x8xf16>, tensor<2x6x4xf16>
  %a = mpc.transpose %o {permutation = array<i64: 1, 0, 2>} : tensor<2x4x4xf16>
  %b2 = mpc.transpose %o {permutation = array<i64: 1, 0, 2>} : tensor<2x4x4xf16>
  return %a, %b2 : tensor<4x2x4xf16>, tensor<4x2x4xf16>
}

// -----

// Not folded: the query's transpose read elsewhere too.
// CHECK-LABEL: func @query_read_elsewhere
// CHECK-COUNT-3: mpc.transpose %arg
// CHECK: mpc.attention %{{.*}} {scale = 5.000000e-01 : f64} : tensor<2x3x4x8xf32>
// CHECK-NEXT: mpc.transpose
func.func @query_read_elsewhere(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x3x8xf32>, %v: tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4x8xf32>) {
  %qt = mpc.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32>
  %kt = mpc.transpose %k {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32>
  %vt = mpc.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32>
  %o, %lse = mpc.attention %qt, %kt, %vt {scale = 0.5 : f64} : tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>
  %ot = mpc.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x4x8xf32>
  return %ot, %qt : tensor<2x4x3x8xf32>, tensor<2x3x4x8xf32>
}

// -----

// Not folded: the result read untransposed.
// CHECK-LABEL: func @result_untransposed
// CHECK-COUNT-3: mpc.transpose %arg
// CHECK: mpc.attention %{{.*}} {scale = 5.000000e-01 : f64} : tensor<2x3x4x8xf32>
func.func @result_untransposed(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x3x8xf32>, %v: tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4x8xf32>) {
  %qt = mpc.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32>
  %kt = mpc.transpose %k {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32>
  %vt = mpc.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32>
  %o, %lse = mpc.attention %qt, %kt, %vt {scale = 0.5 : f64} : tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>
  %ot = mpc.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x4x8xf32>
  return %ot, %o : tensor<2x4x3x8xf32>, tensor<2x3x4x8xf32>
}

// -----

// Not folded: the value not transposed; another permutation of the key
// (the batch and the heads swapped); the log-sum-exp read (a backward
// pass's operand); the result's transpose another permutation.
// CHECK-LABEL: func @value_untransposed
// CHECK: mpc.attention %{{.*}} {scale = 5.000000e-01 : f64} : tensor<2x3x4x8xf32>
// CHECK-LABEL: func @other_permutation
// CHECK: mpc.attention %{{.*}} {scale = 5.000000e-01 : f64} : tensor<2x3x4x8xf32>
// CHECK-LABEL: func @logsumexp_read
// CHECK: mpc.attention %{{.*}} {scale = 5.000000e-01 : f64} : tensor<2x3x4x8xf32>
// CHECK-LABEL: func @result_other_permutation
// CHECK: mpc.attention %{{.*}} {scale = 5.000000e-01 : f64} : tensor<2x3x4x8xf32>
func.func @value_untransposed(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x3x8xf32>, %v: tensor<2x3x4x8xf32>) -> tensor<2x4x3x8xf32> {
  %qt = mpc.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32>
  %kt = mpc.transpose %k {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32>
  %o, %lse = mpc.attention %qt, %kt, %v {scale = 0.5 : f64} : tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>
  %ot = mpc.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x4x8xf32>
  return %ot : tensor<2x4x3x8xf32>
}
func.func @other_permutation(%q: tensor<2x4x3x8xf32>, %k: tensor<3x2x4x8xf32>, %v: tensor<2x4x3x8xf32>) -> tensor<2x4x3x8xf32> {
  %qt = mpc.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32>
  %kt = mpc.transpose %k {permutation = array<i64: 1, 0, 2, 3>} : tensor<3x2x4x8xf32>
  %vt = mpc.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32>
  %o, %lse = mpc.attention %qt, %kt, %vt {scale = 0.5 : f64} : tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>
  %ot = mpc.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x4x8xf32>
  return %ot : tensor<2x4x3x8xf32>
}
func.func @logsumexp_read(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x3x8xf32>, %v: tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4xf32>) {
  %qt = mpc.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32>
  %kt = mpc.transpose %k {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32>
  %vt = mpc.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32>
  %o, %lse = mpc.attention %qt, %kt, %vt {scale = 0.5 : f64} : tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>
  %ot = mpc.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x4x8xf32>
  return %ot, %lse : tensor<2x4x3x8xf32>, tensor<2x3x4xf32>
}
func.func @result_other_permutation(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x3x8xf32>, %v: tensor<2x4x3x8xf32>) -> tensor<3x2x4x8xf32> {
  %qt = mpc.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32>
  %kt = mpc.transpose %k {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32>
  %vt = mpc.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x8xf32>
  %o, %lse = mpc.attention %qt, %kt, %vt {scale = 0.5 : f64} : tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>
  %ot = mpc.transpose %o {permutation = array<i64: 1, 0, 2, 3>} : tensor<2x3x4x8xf32>
  return %ot : tensor<3x2x4x8xf32>
}

// -----

// A batch-first import's heads after row-transposes: each [B, S, H, D]
// transpose's result viewed as [B H, S, D], the attention's result viewed
// as [B, H, S, D] and transposed back. The fused op takes the unmerged
// [B, S, H, D] operands (layout "bshd"), and its result replaces the
// transpose back; the views go with the transposes.
// CHECK-LABEL: func @merged_heads
// CHECK-NEXT: %[[Q:.*]] = mpc.reshape %arg0 : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
// CHECK-NEXT: %[[K:.*]] = mpc.reshape %arg1 : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
// CHECK-NEXT: %[[V:.*]] = mpc.reshape %arg2 : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
// CHECK-NEXT: %[[O:.*]], %{{.*}} = mpc.attention %[[Q]], %[[K]], %[[V]] {layout = "bshd", scale = 5.000000e-01 : f64} : tensor<2x6x2x4xf32>, tensor<2x6x2x4xf32>, tensor<2x6x2x4xf32>
// CHECK-NEXT: %[[R:.*]] = mpc.reshape %[[O]] : tensor<2x6x2x4xf32> -> tensor<2x6x8xf32>
// CHECK-NEXT: return %[[R]]
// OFF-LABEL: func @merged_heads
// OFF-COUNT-3: mpc.transpose %{{.*}} {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
// OFF: mpc.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 5.000000e-01 : f64} : tensor<4x6x4xf32>
func.func @merged_heads(%xq: tensor<2x6x8xf32>, %xk: tensor<2x6x8xf32>, %xv: tensor<2x6x8xf32>) -> tensor<2x6x8xf32> {
  %q4 = mpc.reshape %xq : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
  %qt = mpc.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
  %q = mpc.reshape %qt : tensor<2x2x6x4xf32> -> tensor<4x6x4xf32>
  %k4 = mpc.reshape %xk : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
  %kt = mpc.transpose %k4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
  %k = mpc.reshape %kt : tensor<2x2x6x4xf32> -> tensor<4x6x4xf32>
  %v4 = mpc.reshape %xv : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
  %vt = mpc.transpose %v4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
  %v = mpc.reshape %vt : tensor<2x2x6x4xf32> -> tensor<4x6x4xf32>
  %o, %lse = mpc.attention %q, %k, %v {scale = 0.5 : f64} : tensor<4x6x4xf32>, tensor<4x6x4xf32>, tensor<4x6x4xf32>
  %o4 = mpc.reshape %o : tensor<4x6x4xf32> -> tensor<2x2x6x4xf32>
  %ot = mpc.transpose %o4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x2x6x4xf32>
  %r = mpc.reshape %ot : tensor<2x6x2x4xf32> -> tensor<2x6x8xf32>
  return %r : tensor<2x6x8xf32>
}

// -----

// Merged heads with a mask (shaped for the merged scores), or a view that
// splits the batch and heads otherwise than the operands: unchanged.
// CHECK-LABEL: func @merged_heads_kept
// CHECK-COUNT-3: mpc.transpose %{{.*}} {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
// CHECK: mpc.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%arg3 : tensor<4x6x6xi1>) {mask_value = -1.000000e+04 : f64, scale = 5.000000e-01 : f64} : tensor<4x6x4xf32>
// CHECK-COUNT-3: mpc.transpose %{{.*}} {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
// CHECK: mpc.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 5.000000e-01 : f64} : tensor<4x6x4xf32>
// CHECK: mpc.transpose %{{.*}} {permutation = array<i64: 0, 2, 1, 3>} : tensor<4x1x6x4xf32>
func.func @merged_heads_kept(%xq: tensor<2x6x8xf32>, %xk: tensor<2x6x8xf32>, %xv: tensor<2x6x8xf32>, %m: tensor<4x6x6xi1>) -> (tensor<2x6x2x4xf32>, tensor<4x6x1x4xf32>) {
  %q4 = mpc.reshape %xq : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
  %qt = mpc.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
  %q = mpc.reshape %qt : tensor<2x2x6x4xf32> -> tensor<4x6x4xf32>
  %k4 = mpc.reshape %xk : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
  %kt = mpc.transpose %k4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
  %k = mpc.reshape %kt : tensor<2x2x6x4xf32> -> tensor<4x6x4xf32>
  %v4 = mpc.reshape %xv : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
  %vt = mpc.transpose %v4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
  %v = mpc.reshape %vt : tensor<2x2x6x4xf32> -> tensor<4x6x4xf32>
  %o, %lse = mpc.attention %q, %k, %v mask(%m : tensor<4x6x6xi1>) {scale = 0.5 : f64, mask_value = -1.0e4 : f64} : tensor<4x6x4xf32>, tensor<4x6x4xf32>, tensor<4x6x4xf32>
  %o4 = mpc.reshape %o : tensor<4x6x4xf32> -> tensor<2x2x6x4xf32>
  %ot = mpc.transpose %o4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x2x6x4xf32>
  %q5 = mpc.reshape %xq : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
  %qt5 = mpc.transpose %q5 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
  %q6 = mpc.reshape %qt5 : tensor<2x2x6x4xf32> -> tensor<4x6x4xf32>
  %k5 = mpc.reshape %xk : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
  %kt5 = mpc.transpose %k5 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
  %k6 = mpc.reshape %kt5 : tensor<2x2x6x4xf32> -> tensor<4x6x4xf32>
  %v5 = mpc.reshape %xv : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
  %vt5 = mpc.transpose %v5 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
  %v6 = mpc.reshape %vt5 : tensor<2x2x6x4xf32> -> tensor<4x6x4xf32>
  %o6, %lse6 = mpc.attention %q6, %k6, %v6 {scale = 0.5 : f64} : tensor<4x6x4xf32>, tensor<4x6x4xf32>, tensor<4x6x4xf32>
  %o7 = mpc.reshape %o6 : tensor<4x6x4xf32> -> tensor<4x1x6x4xf32>
  %ot7 = mpc.transpose %o7 {permutation = array<i64: 0, 2, 1, 3>} : tensor<4x1x6x4xf32>
  return %ot, %ot7 : tensor<2x6x2x4xf32>, tensor<4x6x1x4xf32>
}

// -----

// The queries scaled before the attention (nn.MultiheadAttention divides
// them by sqrt(d)): the scale joins the attention's (0.5 / 2 here), and
// the heads' transposes then fold. A scale read by something else too,
// or of a tensor that is not a constant, stays.
// CHECK-LABEL: func @query_scale
// CHECK-NEXT: %[[O:.*]], %{{.*}} = mpc.attention %arg0, %arg1, %arg2 {layout = "bshd", scale = 2.500000e-01 : f64} : tensor<2x6x2x4xf32>
// CHECK-NEXT: %[[C:.*]] = mpc.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[QS:.*]] = mpc.div %arg3, %[[C]]
// CHECK-NEXT: %[[P:.*]], %{{.*}} = mpc.attention %[[QS]], %arg3, %arg3 {scale = 5.000000e-01 : f64}
// CHECK-NEXT: %[[QM:.*]] = mpc.mul %arg3, %arg4
// CHECK-NEXT: %[[R:.*]], %{{.*}} = mpc.attention %[[QM]], %arg3, %arg3 {scale = 5.000000e-01 : f64}
// CHECK-NEXT: return %[[O]], %[[P]], %[[QS]], %[[R]]
// NOSCALE-LABEL: func @query_scale
// NOSCALE: mpc.div
// NOSCALE: mpc.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 5.000000e-01 : f64} : tensor<2x2x6x4xf32>
// REMARK: remark: folded: the query's scale into mpc.attention's scale
// REMARK-NOT: remark: folded: the query's scale
func.func @query_scale(%xq: tensor<2x6x2x4xf32>, %xk: tensor<2x6x2x4xf32>, %xv: tensor<2x6x2x4xf32>, %y: tensor<2x2x6x4xf32>, %z: tensor<2x2x6x4xf32>) -> (tensor<2x6x2x4xf32>, tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>) {
  %q = mpc.transpose %xq {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
  %k = mpc.transpose %xk {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
  %v = mpc.transpose %xv {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x4xf32>
  %c = mpc.constant dense<2.0> : tensor<f32>
  %qs = mpc.div %q, %c : tensor<2x2x6x4xf32>, tensor<f32>
  %o, %lse = mpc.attention %qs, %k, %v {scale = 0.5 : f64} : tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>
  %ot = mpc.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x2x6x4xf32>
  %c2 = mpc.constant dense<2.0> : tensor<f32>
  %ys = mpc.div %y, %c2 : tensor<2x2x6x4xf32>, tensor<f32>
  %p, %lse2 = mpc.attention %ys, %y, %y {scale = 0.5 : f64} : tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>
  %ym = mpc.mul %y, %z : tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>
  %r, %lse3 = mpc.attention %ym, %y, %y {scale = 0.5 : f64} : tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>
  return %ot, %p, %ys, %r : tensor<2x6x2x4xf32>, tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>
}
