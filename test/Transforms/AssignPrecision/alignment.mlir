// A remark for every low-precision GEMM/conv dimension that is not a
// multiple of 8, with the padded size; none when aligned or disabled.
// RUN: mpc-opt %s -split-input-file -verify-diagnostics --mpc-assign-precision="level=O1"

func.func @matmul(%a: tensor<30x64xf32>, %b: tensor<64x10xf32>) -> tensor<30x10xf32> {
  // expected-remark @+1 {{'mpc.matmul': Tensor Cores need f16 GEMM dimensions that are multiples of 8: M = 30 (pad to 32), N = 10 (pad to 16)}}
  %0 = mpc.matmul %a, %b : tensor<30x64xf32>, tensor<64x10xf32>
  return %0 : tensor<30x10xf32>
}

// -----

func.func @matmul_transposed(%a: tensor<12x64xf32>, %b: tensor<12x64xf32>) -> tensor<64x64xf32> {
  // expected-remark @+1 {{'mpc.matmul': Tensor Cores need f16 GEMM dimensions that are multiples of 8: K = 12 (pad to 16)}}
  %0 = mpc.matmul %a, %b {transpose_a} : tensor<12x64xf32>, tensor<12x64xf32>
  return %0 : tensor<64x64xf32>
}

// -----

func.func @conv(%x: tensor<2x8x8x3xf32>, %w: tensor<16x3x3x3xf32>) -> tensor<2x6x6x16xf32> {
  // expected-remark @+1 {{'mpc.conv2d': Tensor Cores need f16 GEMM dimensions that are multiples of 8: input channels = 3 (pad to 8)}}
  %0 = mpc.conv2d %x, %w : tensor<2x8x8x3xf32>, tensor<16x3x3x3xf32>
  return %0 : tensor<2x6x6x16xf32>
}

// -----

func.func @conv_backward(%dy: tensor<2x6x6x12xf32>, %x: tensor<2x8x8x16xf32>) -> tensor<12x3x3x16xf32> {
  // expected-remark @+1 {{'mpc.conv2d_backward_filter': Tensor Cores need f16 GEMM dimensions that are multiples of 8: output channels = 12 (pad to 16)}}
  %0 = mpc.conv2d_backward_filter %dy, %x : tensor<2x6x6x12xf32>, tensor<2x8x8x16xf32> -> tensor<12x3x3x16xf32>
  return %0 : tensor<12x3x3x16xf32>
}

// -----

// Aligned: no remark.
func.func @aligned(%a: tensor<32x64xf32>, %b: tensor<64x16xf32>) -> tensor<32x16xf32> {
  %0 = mpc.matmul %a, %b : tensor<32x64xf32>, tensor<64x16xf32>
  return %0 : tensor<32x16xf32>
}
