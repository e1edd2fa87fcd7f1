// Policy-file entries that match ops by their location names (an
// imported model's layer names), optionally restricted to one op; they
// hold at every level, and an entry that matches nothing is a warning.
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 alignment-remarks=false policy=%S/Inputs/names.json" 2>&1 | FileCheck %s --check-prefix=NAMES
// RUN: mpc-opt %s --mpc-assign-precision="level=O3 alignment-remarks=false policy=%S/Inputs/names.json" 2>&1 | FileCheck %s --check-prefix=O3
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 alignment-remarks=false policy=%S/Inputs/names.json report=- report-format=json" 2>&1 | FileCheck %s --check-prefix=REPORT
// Location names: the classifier's matmul in f32 (any op under
// classifier/), the encoder's softmax low (only softmax ops), the encoder's
// matmul by its default. decoder/* matches nothing: a warning.
// NAMES: warning: mpc-assign-precision: policy {{.*}}names.json:3:56 name 'decoder/*' matched no op
// NAMES-NOT: warning
// NAMES-LABEL: func @names
// NAMES: mpc.matmul {{.*}} : tensor<4x16xf16>, tensor<16x16xf16>
// NAMES: mpc.softmax {{.*}} : tensor<4x16xf16>
// NAMES: mpc.matmul {{.*}} : tensor<4x16xf32>, tensor<16x8xf32>
func.func @names(%x: tensor<4x16xf32>, %w1: tensor<16x16xf32>, %w2: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %0 = mpc.matmul %x, %w1 : tensor<4x16xf32>, tensor<16x16xf32> loc("encoder/0/query")
  %1 = mpc.softmax %0 {axis = 1 : i64} : tensor<4x16xf32> loc("encoder/0/attention_probs")
  %2 = mpc.matmul %1, %w2 : tensor<4x16xf32>, tensor<16x8xf32> loc(fused["model.mlir":30:7, "classifier/dense"])
  return %2 : tensor<4x8xf32>
}

// At O3 the classifier's matmul still runs in f32.
// O3: mpc.matmul {{.*}} : tensor<4x16xf16>, tensor<16x16xf16>
// O3: mpc.softmax {{.*}} : tensor<4x16xf16>
// O3: mpc.matmul {{.*}} : tensor<4x16xf32>, tensor<16x8xf32>
// REPORT: "rule": "lowp: low precision, f32 accumulation (policy {{.*}}names.json:3:12 name 'encoder/*')"
// REPORT: "rule": "fp32: numerically sensitive (policy {{.*}}names.json:2:12 name 'classifier/*')"
