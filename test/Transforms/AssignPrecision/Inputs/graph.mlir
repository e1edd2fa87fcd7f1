func.func @f(%x: tensor<8x16xf32>, %w: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %0 = mpc.matmul %x, %w : tensor<8x16xf32>, tensor<16x8xf32>
  return %0 : tensor<8x8xf32>
}
