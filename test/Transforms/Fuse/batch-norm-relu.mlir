// RUN: mpc-opt %s -split-input-file --mpc-fuse | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse=norms=false | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse="report=-" -o /dev/null | FileCheck %s --check-prefix=REPORT

// A forward graph (before autodiff): the ReLU joins the batch norm, whose
// result replaces the ReLU's.
// CHECK-LABEL: func @forward
// CHECK-NEXT: %[[Y:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = mpc.batch_norm %arg0, %arg1, %arg2, %arg3, %arg4 {activation = "relu", momentum = 2.000000e-01 : f64} : tensor<2x4x4x8xf16>, tensor<8xf32>
// CHECK-NEXT: return %[[Y]]
// REMARK: remark: fused: mpc.batch_norm + mpc.relu -> mpc.batch_norm (activation relu)
// OFF-LABEL: func @forward
// OFF: mpc.batch_norm
// OFF-NOT: activation
// OFF: mpc.relu
// REPORT: "op": "mpc.batch_norm"
// REPORT-NEXT: "activation": "relu"
// REPORT: "from": [
// REPORT-NEXT: "mpc.batch_norm",
// REPORT-NEXT: "mpc.relu"
func.func @forward(%x: tensor<2x4x4x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>) -> tensor<2x4x4x8xf16> {
  %y:5 = mpc.batch_norm %x, %g, %b, %m, %v {momentum = 0.2} : tensor<2x4x4x8xf16>, tensor<8xf32>
  %z = mpc.relu %y#0 : tensor<2x4x4x8xf16>
  return %z : tensor<2x4x4x8xf16>
}

// -----

// A training step after autodiff: the ReLU's gradient, read only by the
// batch norm's backward, joins the backward, which reads the fused output
// for the mask.
// CHECK-LABEL: func @step
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}}, %[[M:.*]], %[[S:.*]] = mpc.batch_norm %arg0, %arg1, %arg2, %arg3, %arg4 {activation = "relu"}
// CHECK-NOT: mpc.relu_grad
// CHECK: mpc.batch_norm_backward %arg5, %arg0, %arg1, %[[M]], %[[S]] result(%[[Y]] : tensor<4x8xf32>) {activation = "relu"} : tensor<4x8xf32>, tensor<8xf32>
// REMARK: remark: fused: mpc.relu_grad + mpc.batch_norm_backward -> mpc.batch_norm_backward (activation relu)
// REPORT: "op": "mpc.batch_norm_backward"
// REPORT-NEXT: "activation": "relu"
func.func @step(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %dz: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) {
  %y:5 = mpc.batch_norm %x, %g, %b, %m, %v : tensor<4x8xf32>, tensor<8xf32>
  %z = mpc.relu %y#0 : tensor<4x8xf32>
  %dy = mpc.relu_grad %dz, %y#0 : tensor<4x8xf32>
  %dx:3 = mpc.batch_norm_backward %dy, %x, %g, %y#3, %y#4 : tensor<4x8xf32>, tensor<8xf32>
  return %z, %dx#0, %dx#1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>
}

// -----

// A ReLU gradient read elsewhere too stays, reading the fused output (the
// same mask); the backward keeps reading it.
// CHECK-LABEL: func @gradient_read_twice
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = mpc.batch_norm {{.*}} {activation = "relu"}
// CHECK: %[[DY:.*]] = mpc.relu_grad %arg5, %[[Y]]
// CHECK: mpc.batch_norm_backward %[[DY]], %arg0, {{.*}} : tensor<4x8xf32>, tensor<8xf32>
// CHECK-NOT: result(
func.func @gradient_read_twice(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %dz: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %y:5 = mpc.batch_norm %x, %g, %b, %m, %v : tensor<4x8xf32>, tensor<8xf32>
  %z = mpc.relu %y#0 : tensor<4x8xf32>
  %dy = mpc.relu_grad %dz, %y#0 : tensor<4x8xf32>
  %dx:3 = mpc.batch_norm_backward %dy, %x, %g, %y#3, %y#4 : tensor<4x8xf32>, tensor<8xf32>
  return %z, %dx#0, %dy : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// What does not fuse: a result read by something else than the ReLU (here
// a residual add), two ReLUs, a ReLU in another block, and no ReLU at all.
// CHECK-LABEL: func @read_elsewhere
// CHECK-NOT: activation
// CHECK: mpc.relu
// CHECK-LABEL: func @two_relus
// CHECK-NOT: activation
// CHECK-LABEL: func @other_block
// CHECK-NOT: activation
// CHECK-LABEL: func @no_relu
// CHECK-NOT: activation
// CHECK: mpc.tanh
func.func @read_elsewhere(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %y:5 = mpc.batch_norm %x, %g, %b, %m, %v : tensor<4x8xf32>, tensor<8xf32>
  %z = mpc.relu %y#0 : tensor<4x8xf32>
  %s = mpc.add %y#0, %x : tensor<4x8xf32>, tensor<4x8xf32>
  return %z, %s : tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @two_relus(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %y:5 = mpc.batch_norm %x, %g, %b, %m, %v : tensor<4x8xf32>, tensor<8xf32>
  %z = mpc.relu %y#0 : tensor<4x8xf32>
  %w = mpc.relu %y#0 : tensor<4x8xf32>
  return %z, %w : tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @other_block(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %c: i1) -> tensor<4x8xf32> {
  %y:5 = mpc.batch_norm %x, %g, %b, %m, %v : tensor<4x8xf32>, tensor<8xf32>
  %r = scf.if %c -> tensor<4x8xf32> {
    %z = mpc.relu %y#0 : tensor<4x8xf32>
    scf.yield %z : tensor<4x8xf32>
  } else {
    scf.yield %x : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}
func.func @no_relu(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>) -> tensor<4x8xf32> {
  %y:5 = mpc.batch_norm %x, %g, %b, %m, %v : tensor<4x8xf32>, tensor<8xf32>
  %z = mpc.tanh %y#0 : tensor<4x8xf32>
  return %z : tensor<4x8xf32>
}

// -----

// Inference mode (a hand-written graph, or an evaluation step built
// without fusion): the ReLU joins mpc.batch_norm_inference.
// CHECK-LABEL: func @inference
// CHECK-NEXT: %[[Y:.*]] = mpc.batch_norm_inference %arg0, %arg1, %arg2, %arg3, %arg4 {activation = "relu"} : tensor<2x8xf16>, tensor<8xf32>
// CHECK-NEXT: return %[[Y]]
// REMARK: remark: fused: mpc.batch_norm_inference + mpc.relu -> mpc.batch_norm_inference (activation relu)
// OFF-LABEL: func @inference
// OFF: mpc.batch_norm_inference
// OFF-NOT: activation
// OFF: mpc.relu
// REPORT: "op": "mpc.batch_norm_inference"
// REPORT-NEXT: "activation": "relu"
func.func @inference(%x: tensor<2x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>) -> tensor<2x8xf16> {
  %y = mpc.batch_norm_inference %x, %g, %b, %m, %v : tensor<2x8xf16>, tensor<8xf32>
  %z = mpc.relu %y : tensor<2x8xf16>
  return %z : tensor<2x8xf16>
}

// -----

// Its result read elsewhere too: not fused.
// CHECK-LABEL: func @inference_result_read_twice
// CHECK-NEXT: %[[Y:.*]] = mpc.batch_norm_inference
// CHECK-NOT: activation
// CHECK-NEXT: %[[Z:.*]] = mpc.relu %[[Y]]
// CHECK-NEXT: return %[[Y]], %[[Z]]
func.func @inference_result_read_twice(%x: tensor<2x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>) -> (tensor<2x8xf16>, tensor<2x8xf16>) {
  %y = mpc.batch_norm_inference %x, %g, %b, %m, %v : tensor<2x8xf16>, tensor<8xf32>
  %z = mpc.relu %y : tensor<2x8xf16>
  return %y, %z : tensor<2x8xf16>, tensor<2x8xf16>
}
