// RUN: mpc-opt %s --mpc-assign-precision="level=O3 alignment-remarks=false" 2>/dev/null | FileCheck %s
// RUN: mpc-opt %s --mpc-assign-precision="level=O3 alignment-remarks=false" 2>/dev/null | mpc-opt --mpc-verify-graph -o /dev/null

// At O3 every op runs in f16, but a layer norm's statistics stay f32 (its
// result types): the backward reads the forward's f32 mean and rstd as
// they are. It used to cast them to f16, which its verifier refuses, so
// no model with a layer norm compiled for training at O3.
// CHECK-LABEL: func @layer_norm_backward
// CHECK: %[[Y:.*]], %[[M:.*]], %[[R:.*]] = mpc.layer_norm %{{.*}} : tensor<4x8xf16>, tensor<8xf16>
// CHECK-NOT: mpc.cast %[[M]]
// CHECK-NOT: mpc.cast %[[R]]
// CHECK: mpc.layer_norm_backward %{{.*}}, %{{.*}}, %[[M]], %[[R]], %{{.*}} : tensor<4x8xf16>, tensor<4xf32>, tensor<8xf16>
func.func @layer_norm_backward(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %dy: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %y, %m, %r = mpc.layer_norm %x, %g, %b : tensor<4x8xf32>, tensor<8xf32>
  %dx, %dg, %db = mpc.layer_norm_backward %dy, %x, %m, %r, %g : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>
  return %y, %dx : tensor<4x8xf32>, tensor<4x8xf32>
}
