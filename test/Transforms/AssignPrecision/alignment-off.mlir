// alignment-remarks=false silences the Tensor Core alignment remark.
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 alignment-remarks=false" 2>&1 | FileCheck %s
// RUN: mpc-opt %s --mpc-assign-precision="level=O1" 2>&1 | FileCheck %s --check-prefix=ON
// CHECK-NOT: remark
// ON: remark: 'mpc.matmul': Tensor Cores need f16 GEMM dimensions
func.func @matmul(%a: tensor<30x64xf32>, %b: tensor<64x10xf32>) -> tensor<30x10xf32> {
  %0 = mpc.matmul %a, %b : tensor<30x64xf32>, tensor<64x10xf32>
  return %0 : tensor<30x10xf32>
}
