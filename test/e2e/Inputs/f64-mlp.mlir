// An f64 MLP (8 -> 16 -> 4, ReLU, cross-entropy), for f64-amp.test.
ml_program.global private mutable @w1(#mpc.init<kaiming_uniform, seed = 1>) : tensor<8x16xf64>
ml_program.global private mutable @b1(#mpc.init<zeros>) : tensor<16xf64>
ml_program.global private mutable @w2(#mpc.init<xavier_uniform, seed = 2>) : tensor<16x4xf64>

func.func @loss(%x: tensor<16x8xf64>, %labels: tensor<16xi32>) -> tensor<f64> {
  %w1 = ml_program.global_load @w1 : tensor<8x16xf64>
  %b1 = ml_program.global_load @b1 : tensor<16xf64>
  %w2 = ml_program.global_load @w2 : tensor<16x4xf64>
  %0 = mpc.matmul %x, %w1 : tensor<16x8xf64>, tensor<8x16xf64>
  %1 = mpc.add %0, %b1 : tensor<16x16xf64>, tensor<16xf64>
  %2 = mpc.relu %1 : tensor<16x16xf64>
  %3 = mpc.matmul %2, %w2 : tensor<16x16xf64>, tensor<16x4xf64>
  %l = mpc.cross_entropy %3, %labels : tensor<16x4xf64>, tensor<16xi32>
  return %l : tensor<f64>
}
