// RUN: mpc-opt %s -split-input-file --mpc-fuse | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mpc-opt %s -split-input-file --mpc-fuse=norms=false | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse="report=-" -o /dev/null | FileCheck %s --check-prefix=REPORT
// RUN: mpc-opt %s -split-input-file --mpc-fuse=relu-mask-from-input=false | FileCheck %s --check-prefix=READ

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
// batch norm's backward, joins the backward, which forms the ReLU's mask
// from the input and the forward's beta (relu-mask-from-input), or
// without that option reads the fused output for it.
// CHECK-LABEL: func @step
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}}, %[[M:.*]], %[[S:.*]] = mpc.batch_norm %arg0, %arg1, %arg2, %arg3, %arg4 {activation = "relu"}
// CHECK-NOT: mpc.relu_grad
// CHECK: mpc.batch_norm_backward %arg5, %arg0, %arg1, %[[M]], %[[S]] beta(%arg2 : tensor<8xf32>) {activation = "relu"} : tensor<4x8xf32>, tensor<8xf32>
// READ-LABEL: func @step
// READ: %[[Y:.*]], %{{.*}}, %{{.*}}, %[[M:.*]], %[[S:.*]] = mpc.batch_norm %arg0, %arg1, %arg2, %arg3, %arg4 {activation = "relu"}
// READ: mpc.batch_norm_backward %arg5, %arg0, %arg1, %[[M]], %[[S]] result(%[[Y]] : tensor<4x8xf32>) {activation = "relu"} : tensor<4x8xf32>, tensor<8xf32>
// REMARK: remark: fused: mpc.relu_grad + mpc.batch_norm_backward -> mpc.batch_norm_backward (activation relu)
// REMARK: remark: mpc.batch_norm_backward forms the ReLU's mask from its input (reads no output)
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

// -----

// A backward fused by hand (or by autodiff of a fused batch norm) takes
// the forward's beta too, at f16 with f32 parameters as AMP's O2 has it;
// an f64 one keeps reading the output (its forward applied f64
// statistics, saved as f32), and so does one whose output is another
// batch norm's, or of a forward with another input.
// CHECK-LABEL: func @written_fused
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[M:.*]], %[[S:.*]] = mpc.batch_norm %arg0, %arg1, %arg2, %arg3, %arg4 {activation = "relu"}
// CHECK: mpc.batch_norm_backward %arg5, %arg0, %arg1, %[[M]], %[[S]] beta(%arg2 : tensor<8xf32>) {activation = "relu"} : tensor<4x8xf16>, tensor<8xf32>
// READ-LABEL: func @written_fused
// READ: result(
// CHECK-LABEL: func @f64
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = mpc.batch_norm
// CHECK: mpc.batch_norm_backward {{.*}} result(%[[Y]] : tensor<4x8xf64>)
// CHECK-LABEL: func @another_input
// CHECK: mpc.batch_norm_backward {{.*}} result(%{{.*}} : tensor<4x8xf32>)
// CHECK-NOT: beta(
// CHECK-LABEL: func @unfused_forward
// CHECK: mpc.batch_norm_backward {{.*}} result(%{{.*}} : tensor<4x8xf32>)
func.func @written_fused(%x: tensor<4x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %dz: tensor<4x8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>) {
  %y:5 = mpc.batch_norm %x, %g, %b, %m, %v {activation = "relu"} : tensor<4x8xf16>, tensor<8xf32>
  %dx:3 = mpc.batch_norm_backward %dz, %x, %g, %y#3, %y#4 result(%y#0 : tensor<4x8xf16>) {activation = "relu"} : tensor<4x8xf16>, tensor<8xf32>
  return %y#0, %dx#0 : tensor<4x8xf16>, tensor<4x8xf16>
}
func.func @f64(%x: tensor<4x8xf64>, %g: tensor<8xf64>, %b: tensor<8xf64>, %dz: tensor<4x8xf64>) -> (tensor<4x8xf64>, tensor<4x8xf64>) {
  %y:5 = mpc.batch_norm %x, %g, %b, %b, %g {activation = "relu"} : tensor<4x8xf64>, tensor<8xf64>
  %dx:3 = mpc.batch_norm_backward %dz, %x, %g, %y#3, %y#4 result(%y#0 : tensor<4x8xf64>) {activation = "relu"} : tensor<4x8xf64>, tensor<8xf64>
  return %y#0, %dx#0 : tensor<4x8xf64>, tensor<4x8xf64>
}
func.func @another_input(%x: tensor<4x8xf32>, %x2: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %dz: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %y:5 = mpc.batch_norm %x, %g, %b, %b, %g {activation = "relu"} : tensor<4x8xf32>, tensor<8xf32>
  %dx:3 = mpc.batch_norm_backward %dz, %x2, %g, %y#3, %y#4 result(%y#0 : tensor<4x8xf32>) {activation = "relu"} : tensor<4x8xf32>, tensor<8xf32>
  return %y#0, %dx#0 : tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @unfused_forward(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %dz: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %y:5 = mpc.batch_norm %x, %g, %b, %b, %g : tensor<4x8xf32>, tensor<8xf32>
  %dx:3 = mpc.batch_norm_backward %dz, %x, %g, %y#3, %y#4 result(%z : tensor<4x8xf32>) {activation = "relu"} : tensor<4x8xf32>, tensor<8xf32>
  return %y#0, %dx#0 : tensor<4x8xf32>, tensor<4x8xf32>
}
