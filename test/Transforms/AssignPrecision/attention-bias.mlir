// Attention's additive bias is f32 whatever the op computes in: under O2
// the bias's producers run in f16 and the bias is cast back to f32 for the
// fused op (and its backward); the query, key and value are cast to f16.
// RUN: mpc-opt %s --mpc-assign-precision="level=O2" | FileCheck %s
// RUN: mpc-opt %s --mpc-assign-precision="level=O1" | FileCheck %s --check-prefix=O1

// CHECK-LABEL: func.func @f
// CHECK: %[[B:.*]] = mpc.mul %{{.*}}, %{{.*}} : tensor<2x1x8xf16>, tensor<f16>
// CHECK: %[[B32:.*]] = mpc.cast %[[B]] : tensor<2x1x8xf16> -> tensor<2x1x8xf32>
// CHECK: mpc.attention %{{.*}}, %{{.*}}, %{{.*}} bias(%[[B32]] : tensor<2x1x8xf32>) {scale = 2.500000e-01 : f64} : tensor<2x8x16xf16>, tensor<2x8x16xf16>, tensor<2x8x16xf16>
// O1-LABEL: func.func @f
// O1: mpc.attention %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<2x1x8xf32>) {scale = 2.500000e-01 : f64} : tensor<2x8x16xf16>, tensor<2x8x16xf16>, tensor<2x8x16xf16>
func.func @f(%x: tensor<2x8x16xf32>, %m: tensor<2x1x8xf32>) -> tensor<2x8x16xf32> {
  %big = mpc.constant dense<-10000.0> : tensor<f32>
  %b = mpc.mul %m, %big : tensor<2x1x8xf32>, tensor<f32>
  %o, %l = mpc.attention %x, %x, %x bias(%b : tensor<2x1x8xf32>) {scale = 0.25 : f64} : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}
