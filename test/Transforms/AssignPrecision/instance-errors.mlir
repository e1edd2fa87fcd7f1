// A bad mpc.precision attribute is an error at the op.
// RUN: mpc-opt %s -split-input-file --mpc-assign-precision="level=O1 alignment-remarks=false" -verify-diagnostics

func.func @bad_value(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{mpc.precision must be "lowp", "fp32", "promote" or "follow", got "f32"}}
  %0 = mpc.matmul %x, %w {mpc.precision = "f32"} : tensor<4x16xf32>, tensor<16x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @not_a_string(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{mpc.precision must be "lowp", "fp32", "promote" or "follow", got 1 : i64}}
  %0 = mpc.matmul %x, %w {mpc.precision = 1} : tensor<4x16xf32>, tensor<16x8xf32>
  return %0 : tensor<4x8xf32>
}
