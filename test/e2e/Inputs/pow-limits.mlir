// sum(x ^ y) at the points where the derivative formulas give 0 * inf:
// 0^0, 0^y for y > 0, and regular points beside them (x^0, a negative
// exponent, a fractional one).
ml_program.global private mutable @x(dense<[0.0, 0.0, 2.0, 3.0, 0.5, 0.0, 1.5, 0.0]> : tensor<8xf32>) : tensor<8xf32>
ml_program.global private mutable @y(dense<[2.0, 0.0, 0.0, 2.0, -1.0, 3.0, 0.5, 1.0]> : tensor<8xf32>) : tensor<8xf32>
func.func @loss(%d: tensor<1xf32>) -> tensor<f32> {
  %x = ml_program.global_load @x : tensor<8xf32>
  %y = ml_program.global_load @y : tensor<8xf32>
  %p = mpc.pow %x, %y : tensor<8xf32>, tensor<8xf32>
  %l = mpc.reduce_sum %p {dims = array<i64: 0>} : tensor<8xf32>
  return %l : tensor<f32>
}
