// keep-batchnorm-fp32: auto keeps BatchNorm's parameters and statistics in
// f32 below O3 while its activations stay low (Apex's O2, cuDNN's mixed
// BatchNorm); true/false force it.
// RUN: mpc-opt %s --mpc-assign-precision="level=O2 alignment-remarks=false" | FileCheck %s --check-prefix=F32
// RUN: mpc-opt %s --mpc-assign-precision="level=O2 keep-batchnorm-fp32=false alignment-remarks=false" | FileCheck %s --check-prefix=LOW
// RUN: mpc-opt %s --mpc-assign-precision="level=O3 alignment-remarks=false" 2>/dev/null | FileCheck %s --check-prefix=LOW
// RUN: mpc-opt %s --mpc-assign-precision="level=O3 keep-batchnorm-fp32=true alignment-remarks=false" 2>/dev/null | FileCheck %s --check-prefix=O3-F32

// F32: %[[Y:.*]] = mpc.conv2d {{.*}} : tensor<2x4x4x8xf16>, tensor<8x1x1x8xf16>
// F32-NOT: mpc.cast %[[Y]]
// F32: mpc.batch_norm %[[Y]], {{.*}} : tensor<2x4x4x8xf16>, tensor<8xf32>
// LOW: mpc.batch_norm {{.*}} : tensor<2x4x4x8xf16>, tensor<8xf16>
// O3-F32: mpc.batch_norm {{.*}} : tensor<2x4x4x8xf16>, tensor<8xf32>
func.func @bn(%x: tensor<2x4x4x8xf32>, %w: tensor<8x1x1x8xf32>, %c: tensor<8xf32>) -> tensor<2x4x4x8xf32> {
  %y = mpc.conv2d %x, %w : tensor<2x4x4x8xf32>, tensor<8x1x1x8xf32>
  %o:5 = mpc.batch_norm %y, %c, %c, %c, %c : tensor<2x4x4x8xf32>, tensor<8xf32>
  return %o#0 : tensor<2x4x4x8xf32>
}

// A batch norm that took its ReLU: the backward's `result` (the fused
// output) is an activation, low precision beside the gradient and input;
// the statistics and parameters stay f32.
// F32-LABEL: func @bn_relu_backward
// F32: %[[Z:.*]], %{{.*}}, %{{.*}}, %[[M:.*]], %[[S:.*]] = mpc.batch_norm %{{.*}} {activation = "relu"} : tensor<2x4x4x8xf16>, tensor<8xf32>
// F32: mpc.batch_norm_backward %{{.*}}, %{{.*}}, %{{.*}}, %[[M]], %[[S]] result(%[[Z]] : tensor<2x4x4x8xf16>) {activation = "relu"} : tensor<2x4x4x8xf16>, tensor<8xf32>
// Below O3's f32 norms too, the saved statistics stay the forward's f32
// ones beside f16 parameters: no cast between the two ops.
// LOW-LABEL: func @bn_relu_backward
// LOW: %{{.*}}, %{{.*}}, %{{.*}}, %[[M:.*]], %[[S:.*]] = mpc.batch_norm %{{.*}} {activation = "relu"} : tensor<2x4x4x8xf16>, tensor<8xf16>
// LOW-NOT: mpc.cast
// LOW: mpc.batch_norm_backward %{{.*}}, %{{.*}}, %{{.*}}, %[[M]], %[[S]] result(%{{.*}} : tensor<2x4x4x8xf16>) {activation = "relu"} : tensor<2x4x4x8xf16>, tensor<8xf16>
func.func @bn_relu_backward(%x: tensor<2x4x4x8xf32>, %w: tensor<8x1x1x8xf32>, %c: tensor<8xf32>, %dz: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %y = mpc.conv2d %x, %w : tensor<2x4x4x8xf32>, tensor<8x1x1x8xf32>
  %o:5 = mpc.batch_norm %y, %c, %c, %c, %c {activation = "relu"} : tensor<2x4x4x8xf32>, tensor<8xf32>
  %d:3 = mpc.batch_norm_backward %dz, %y, %c, %o#3, %o#4 result(%o#0 : tensor<2x4x4x8xf32>) {activation = "relu"} : tensor<2x4x4x8xf32>, tensor<8xf32>
  return %d#0 : tensor<2x4x4x8xf32>
}
