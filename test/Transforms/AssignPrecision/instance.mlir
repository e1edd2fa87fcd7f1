// Per-op precision: an mpc.precision attribute on one op instance, and
// policy-file entries that match ops by their location names. Both hold
// at every level (O3 too) and name themselves as the deciding rule.
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 alignment-remarks=false" | FileCheck %s --check-prefix=ATTR
// RUN: mpc-opt %s --mpc-assign-precision="level=O3 alignment-remarks=false" | FileCheck %s --check-prefix=O3
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 alignment-remarks=false report=- report-format=json" | FileCheck %s --check-prefix=REPORT
// RUN: not mpc-opt %s --mpc-assign-precision="level=O1 policy=%S/Inputs/bad-name-entry.json" 2>&1 | FileCheck %s --check-prefix=BADENTRY

// Two matmuls; the attribute keeps the second in f32, the first goes low.
// ATTR-LABEL: func @attribute
// ATTR: mpc.matmul %{{.*}}, %{{.*}} : tensor<4x16xf16>, tensor<16x16xf16>
// ATTR: mpc.matmul %{{.*}}, %{{.*}} {mpc.precision = "fp32"} : tensor<4x16xf32>, tensor<16x8xf32>
// O3-LABEL: func @attribute
// O3: mpc.matmul %{{.*}}, %{{.*}} : tensor<4x16xf16>, tensor<16x16xf16>
// O3: mpc.matmul %{{.*}}, %{{.*}} {mpc.precision = "fp32"} : tensor<4x16xf32>, tensor<16x8xf32>
// REPORT: "rule": "fp32: numerically sensitive (attribute mpc.precision)"
func.func @attribute(%x: tensor<4x16xf32>, %w1: tensor<16x16xf32>, %w2: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %0 = mpc.matmul %x, %w1 : tensor<4x16xf32>, tensor<16x16xf32>
  %1 = mpc.matmul %0, %w2 {mpc.precision = "fp32"} : tensor<4x16xf32>, tensor<16x8xf32>
  return %1 : tensor<4x8xf32>
}

// BADENTRY: error: {{.*}}bad-name-entry.json:1:11: unknown field 'module' in a name entry (expected name and op)
