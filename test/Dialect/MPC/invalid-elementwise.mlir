// RUN: mpc-opt %s -split-input-file -verify-diagnostics

func.func @dynamic_shape(%x: tensor<?x4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.add' op expects lhs to have a static shape (dynamic shapes are not supported), got 'tensor<?x4xf32>'}}
  %0 = mpc.add %x, %y : tensor<?x4xf32>, tensor<4xf32>
  return
}

// -----

func.func @unranked(%x: tensor<*xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.mul' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values with no zero-sized dimension and at most 2^48 bytes, but got 'tensor<*xf32>'}}
  %0 = "mpc.mul"(%x, %y) : (tensor<*xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @element_types(%x: tensor<4xf16>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.add' op expects lhs and rhs of the same element type, got 'f16' and 'f32'}}
  %0 = mpc.add %x, %y : tensor<4xf16>, tensor<4xf32>
  return
}

// -----

func.func @broadcast(%x: tensor<4x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.sub' op expects broadcast-compatible shapes, got [4, 3] and [4]}}
  %0 = mpc.sub %x, %y : tensor<4x3xf32>, tensor<4xf32>
  return
}

// -----

func.func @integer_unary(%x: tensor<4xi32>) {
  // expected-error @+1 {{'mpc.exp' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = mpc.exp %x : tensor<4xi32>
  return
}

// -----

func.func @integer_sin(%x: tensor<4xi32>) {
  // expected-error @+1 {{'mpc.sin' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = mpc.sin %x : tensor<4xi32>
  return
}

// -----

func.func @cos_result_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.cos' op}}
  %0 = "mpc.cos"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @dynamic_unary(%x: tensor<?xf32>) {
  // expected-error @+1 {{'mpc.relu' op operand #0 must be statically shaped tensor}}
  %0 = mpc.relu %x : tensor<?xf32>
  return
}

// -----

func.func @grad_types(%g: tensor<4xf32>, %x: tensor<4xf16>) {
  // expected-error @+1 {{'mpc.relu_grad' op requires the same type for all operands and results}}
  %0 = "mpc.relu_grad"(%g, %x) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_from_i64(%x: tensor<4xi64>) {
  // expected-error @+1 {{'mpc.cast' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer values with no zero-sized dimension and at most 2^48 bytes, but got 'tensor<4xi64>'}}
  %0 = mpc.cast %x : tensor<4xi64> -> tensor<4xf32>
  return
}

// -----

func.func @cast_to_integers(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.cast' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values with no zero-sized dimension and at most 2^48 bytes, but got 'tensor<4xi32>'}}
  %0 = mpc.cast %x : tensor<4xf32> -> tensor<4xi32>
  return
}

// -----

func.func @cast_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.cast' op requires the same shape for all operands and results}}
  %0 = mpc.cast %x : tensor<4xf32> -> tensor<8xf16>
  return
}

// -----

func.func @constant_type() {
  // expected-error @+1 {{'mpc.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "mpc.constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf16>
  return
}

// -----

func.func @compare_predicate(%x: tensor<4xf32>) {
  // expected-error @+2 {{'mpc.compare' op unknown predicate 'gte' (expected eq, ne, lt, le, gt or ge)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "mpc.compare"(%x, %x) {predicate = "gte"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

func.func @compare_types(%x: tensor<4xi64>, %y: tensor<4xi32>) {
  // expected-error @+1 {{'mpc.compare' op expects lhs and rhs of the same element type, got 'i64' and 'i32'}}
  %0 = mpc.compare "eq", %x, %y : tensor<4xi64>, tensor<4xi32>
  return
}

// -----

func.func @where_condition_shape(%c: tensor<3xi1>, %x: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.where' op expects a condition broadcast-compatible with the values, got [3] and [4]}}
  %0 = mpc.where %c, %x, %x : tensor<3xi1>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @where_condition_type(%c: tensor<4xf32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.where' op operand #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = "mpc.where"(%c, %x, %x) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}
