// The normalization family: softmax and log-softmax (rows x cols along the
// last axis) and their backward, layer norm over the trailing dimensions
// (f32 parameters with low-precision input), batch norm (running
// statistics copied into the result buffers, then updated there: the op is
// functional), reductions as [outer, reduced, inner].
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory --mpc-lower-to-runtime | FileCheck %s

// CHECK-LABEL: func.func @softmax(
// CHECK: call @mpcrt_softmax_f32(%{{.*}}, %[[Y:.*]], %c24_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}})
// CHECK: call @mpcrt_softmax_backward_f32(%{{.*}}, %[[Y]], %{{.*}}, %c24_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}})
func.func @softmax(%x: tensor<2x12x8xf32>, %g: tensor<2x12x8xf32>) -> tensor<2x12x8xf32> {
  %0 = mpc.log_softmax %x : tensor<2x12x8xf32>
  %1 = mpc.log_softmax_backward %g, %0 : tensor<2x12x8xf32>
  return %1 : tensor<2x12x8xf32>
}

// -----

// Mixed element types: the dtype codes before each pointer (bf16 1, f32 2).
// CHECK-LABEL: func.func @softmax_mixed(
// CHECK: call @mpcrt_softmax_mixed(%c1_i32{{(_[0-9]+)?}}, %{{.*}}, %c2_i32{{(_[0-9]+)?}}, %[[Y:.*]], %c24_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}})
// CHECK: call @mpcrt_softmax_backward_mixed(%c1_i32{{(_[0-9]+)?}}, %{{.*}}, %c2_i32{{(_[0-9]+)?}}, %[[Y]], %c1_i32{{(_[0-9]+)?}}, %{{.*}}, %c24_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}})
func.func @softmax_mixed(%x: tensor<2x12x8xbf16>, %g: tensor<2x12x8xbf16>) -> tensor<2x12x8xbf16> {
  %0 = mpc.softmax %x : tensor<2x12x8xbf16> -> tensor<2x12x8xf32>
  %1 = mpc.softmax_backward %g, %0 : tensor<2x12x8xbf16>, tensor<2x12x8xf32>
  return %1 : tensor<2x12x8xbf16>
}

// -----

// A scale of its own (one type): the mixed entry with the scale.
// CHECK-LABEL: func.func @softmax_scaled(
// CHECK: %[[S:.*]] = arith.constant 1.250000e-01 : f64
// CHECK: call @mpcrt_softmax_mixed(%c2_i32{{(_[0-9]+)?}}, %{{.*}}, %c2_i32{{(_[0-9]+)?}}, %[[Y:.*]], %c24_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}}, %[[S]])
// CHECK: %[[S2:.*]] = arith.constant 1.250000e-01 : f64
// CHECK: call @mpcrt_softmax_backward_mixed(%c2_i32{{(_[0-9]+)?}}, %{{.*}}, %c2_i32{{(_[0-9]+)?}}, %[[Y]], %c2_i32{{(_[0-9]+)?}}, %{{.*}}, %c24_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}}, %[[S2]])
func.func @softmax_scaled(%x: tensor<2x12x8xf32>, %g: tensor<2x12x8xf32>) -> tensor<2x12x8xf32> {
  %0 = mpc.log_softmax %x {scale = 0.125 : f64} : tensor<2x12x8xf32>
  %1 = mpc.log_softmax_backward %g, %0 {scale = 0.125 : f64} : tensor<2x12x8xf32>
  return %1 : tensor<2x12x8xf32>
}

// -----

// Normalised over the last two dimensions (axis 1): 2 rows of 32; the
// parameters are f32 (dtype 2) with an f16 input.
// CHECK-LABEL: func.func @layer_norm(
// CHECK: call @mpcrt_layer_norm_f16(%[[X:.*]], %c2_i32{{(_[0-9]+)?}}, %[[G:.*]], %[[B:.*]], %[[Y:.*]], %[[M:.*]], %[[R:.*]], %c2_i64{{(_[0-9]+)?}}, %c32_i64{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}})
// No addends: two null pointers after the gradients' buffers.
// CHECK: %[[N1:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[N2:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @mpcrt_layer_norm_backward_f16(%[[Y]], %[[X]], %[[M]], %[[R]], %c2_i32{{(_[0-9]+)?}}, %[[G]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[N1]], %[[N2]], %c2_i64{{(_[0-9]+)?}}, %c32_i64{{(_[0-9]+)?}})
func.func @layer_norm(%x: tensor<2x4x8xf16>, %g: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<2x4x8xf16>, tensor<4x8xf32>) {
  %y, %mean, %rstd = mpc.layer_norm %x, %g, %b {axis = 1} : tensor<2x4x8xf16>, tensor<4x8xf32>
  %dx, %dg, %db = mpc.layer_norm_backward %y, %x, %mean, %rstd, %g {axis = 1} : tensor<2x4x8xf16>, tensor<2xf32>, tensor<4x8xf32>
  return %dx, %dg : tensor<2x4x8xf16>, tensor<4x8xf32>
}

// -----

// The parameter gradients' addends: beta's alone (gamma's null), then
// both, in the fused backward (the arguments' pointers: inputs 5 and 6).
// CHECK-LABEL: func.func @layer_norm_addends(
// CHECK: %[[P5:.*]] = llvm.getelementptr %arg2[%c5_i64]
// CHECK-NEXT: %[[GA:.*]] = llvm.load %[[P5]]
// CHECK: %[[P6:.*]] = llvm.getelementptr %arg2[%c6_i64]
// CHECK-NEXT: %[[BA:.*]] = llvm.load %[[P6]]
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @mpcrt_layer_norm_backward_f32({{.*}}, %[[NULL]], %[[BA]], %c4_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}})
// CHECK: call @mpcrt_add_layer_norm_backward({{.*}}, %[[GA]], %[[BA]], %c4_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %cst
func.func @layer_norm_addends(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>, %mean: tensor<4xf32>, %rstd: tensor<4xf32>, %g: tensor<8xf32>, %ga: tensor<8xf32>, %ba: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %dg, %db = mpc.layer_norm_backward %dy, %x, %mean, %rstd, %g beta_addend(%ba : tensor<8xf32>) : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>
  %ex, %er, %eg, %eb = mpc.add_layer_norm_backward %dy, %x, %mean, %rstd, %g gamma_addend(%ga : tensor<8xf32>) beta_addend(%ba : tensor<8xf32>) : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>
  return %dx, %dg, %db, %ex, %eg, %eb : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// The input gradient's sums (input_sums): a null pointer last without
// them, their buffer with. A residual gradient nobody reads has a null
// pointer (not written), and an input gradient nobody reads likewise, but
// for one whose sums the kernel takes (it reads it back).
// CHECK-LABEL: func.func @add_layer_norm_input_sums(
// CHECK: %[[NR:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[NS:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @mpcrt_add_layer_norm_backward({{(%[^,]+, ){8,8}%}}{{[^,]+}}, %[[NR]], {{.*}}, %arg1, %[[NS]]) :
// CHECK: %[[NR2:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[SUMS:.*]] = llvm.getelementptr %arg0[%c1024_i64]
// CHECK: call @mpcrt_add_layer_norm_backward({{(%[^,]+, ){8,8}%}}{{[^,]+}}, %[[NR2]], {{.*}}, %arg1, %[[SUMS]]) :
// CHECK: %[[DX3:.*]] = llvm.getelementptr %arg0[%c512_i64{{(_[0-9]+)?}}]
// CHECK: %[[NR3:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @mpcrt_add_layer_norm_backward({{(%[^,]+, ){8,8}%}}[[DX3]], %[[NR3]], {{.*}}, %arg1, %{{[^,]+}}) :
// CHECK: %[[NX4:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[DR4:.*]] = llvm.getelementptr %arg0[%c512_i64{{(_[0-9]+)?}}]
// CHECK: call @mpcrt_add_layer_norm_backward({{(%[^,]+, ){8,8}%}}[[NX4]], %[[DR4]], {{.*}}, %arg1, %{{[^,]+}}) :
func.func @add_layer_norm_input_sums(%dy: tensor<4x8xf16>, %x: tensor<4x8xf16>, %mean: tensor<4xf32>, %g: tensor<8xf32>) -> (tensor<4x8xf16>, tensor<8xf32>, tensor<4x8xf16>, tensor<8xf32>, tensor<4x8xf16>) {
  %a:4 = mpc.add_layer_norm_backward %dy, %x, %mean, %mean, %g : tensor<4x8xf16>, tensor<4xf32>, tensor<8xf32>
  %b:5 = mpc.add_layer_norm_backward %dy, %x, %mean, %mean, %g {input_sums} : tensor<4x8xf16>, tensor<4xf32>, tensor<8xf32>
  %c:5 = mpc.add_layer_norm_backward %dy, %x, %mean, %mean, %g {input_sums} : tensor<4x8xf16>, tensor<4xf32>, tensor<8xf32>
  %d:4 = mpc.add_layer_norm_backward %dy, %x, %mean, %mean, %g {dropout_p = 0.1 : f64} : tensor<4x8xf16>, tensor<4xf32>, tensor<8xf32>
  return %a#0, %b#4, %b#0, %c#4, %d#1 : tensor<4x8xf16>, tensor<8xf32>, tensor<4x8xf16>, tensor<8xf32>, tensor<4x8xf16>
}

// -----

// CHECK-LABEL: func.func @batch_norm(
// CHECK-DAG: %[[RM:.*]] = llvm.getelementptr %arg0[%c[[RMO:[0-9]+]]_i64]
// CHECK-DAG: %[[RV:.*]] = llvm.getelementptr %arg0[%c[[RVO:[0-9]+]]_i64]
// CHECK: call @mpcrt_copy(%[[RM]], %[[OLDM:.*]], %c32_i64{{(_[0-9]+)?}})
// CHECK: call @mpcrt_copy(%[[RV]], %[[OLDV:.*]], %c32_i64{{(_[0-9]+)?}})
// 32 rows (2x4x4) of 8 channels, momentum 0.2:
// No activation (-1); the backward reads no output and no beta and adds
// to no addend (null).
// CHECK: call @mpcrt_batch_norm_f32(%{{.*}}, %c2_i32{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %[[RM]], %[[RV]], %{{.*}}, %{{.*}}, %{{.*}}, %c32_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}}, %c-1_i32{{(_[0-9]+)?}})
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[NULL2:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @mpcrt_batch_norm_backward_f32({{.*}}, %c32_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %[[NULL]], %[[NULL2]], %{{[^,]*}}, %{{[^,]*}})
func.func @batch_norm(%img: tensor<2x4x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>) -> (tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %o, %rm, %rv, %sm, %si = mpc.batch_norm %img, %g, %b, %m, %v {momentum = 0.2} : tensor<2x4x4x8xf32>, tensor<8xf32>
  %dx, %dg, %db = mpc.batch_norm_backward %o, %img, %g, %sm, %si : tensor<2x4x4x8xf32>, tensor<8xf32>
  return %dx, %rm, %rv, %dg : tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A fused ReLU's backward: with `result(...)` the output's pointer and a
// null beta; with `beta(...)` a null output and beta's pointer (the
// argument's, as `%b`'s is read by the forward too).
// CHECK-LABEL: func.func @batch_norm_relu_backward(
// CHECK: call @mpcrt_batch_norm_f16(%{{[^,]*}}, %c2_i32{{(_[0-9]+)?}}, %{{[^,]*}}, %[[B:[^,]*]], %{{[^,]*}}, %{{[^,]*}}, %[[Y:[^,]*]], {{.*}}, %c7_i32{{(_[0-9]+)?}})
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @mpcrt_batch_norm_backward_f16({{.*}}, %c32_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %[[Y]], %[[NULL]], %{{[^,]*}}, %{{[^,]*}})
// CHECK: %[[NULL2:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @mpcrt_batch_norm_backward_f16({{.*}}, %c32_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %[[NULL2]], %[[B]], %{{[^,]*}}, %{{[^,]*}})
func.func @batch_norm_relu_backward(%img: tensor<2x4x4x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %dz: tensor<2x4x4x8xf16>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>) {
  %o, %rm, %rv, %sm, %si = mpc.batch_norm %img, %g, %b, %m, %v {activation = "relu"} : tensor<2x4x4x8xf16>, tensor<8xf32>
  %dx, %dg, %db = mpc.batch_norm_backward %dz, %img, %g, %sm, %si result(%o : tensor<2x4x4x8xf16>) {activation = "relu"} : tensor<2x4x4x8xf16>, tensor<8xf32>
  %ex, %eg, %eb = mpc.batch_norm_backward %dz, %img, %g, %sm, %si beta(%b : tensor<8xf32>) {activation = "relu"} : tensor<2x4x4x8xf16>, tensor<8xf32>
  return %o, %dx, %ex : tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>
}

// -----

// Inference mode: the running statistics read, not copied or written;
// epsilon and the fused ReLU (7) passed; the result in the input's buffer
// where the input dies there.
// CHECK-LABEL: func.func @batch_norm_inference(
// CHECK: call @mpcrt_binary_f16({{.*}}, %[[X:[^,]*]], %{{[^,]*}}, %c4_i32{{(_[0-9]+)?}})
// CHECK: call @mpcrt_batch_norm_inference_f16(%[[X]], %c2_i32{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[X]], %c32_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}}, %c7_i32{{(_[0-9]+)?}})
func.func @batch_norm_inference(%img: tensor<2x4x4x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>) -> tensor<2x4x4x8xf16> {
  %x = mpc.mul %img, %img : tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>
  %y = mpc.batch_norm_inference %x, %g, %b, %m, %v {activation = "relu"} : tensor<2x4x4x8xf16>, tensor<8xf32>
  return %y : tensor<2x4x4x8xf16>
}

// -----

// A fused ReLU: activation MPCRT_RELU (7), and the backward reads the
// fused op's output, the buffer the forward wrote.
// CHECK-LABEL: func.func @batch_norm_relu(
// CHECK: call @mpcrt_batch_norm_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[OUT:[^,]*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c7_i32{{(_[0-9]+)?}})
// CHECK: call @mpcrt_batch_norm_backward_f32({{.*}}, %c32_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %[[OUT]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}})
func.func @batch_norm_relu(%img: tensor<2x4x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %dz: tensor<2x4x4x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8xf32>) {
  %z, %rm, %rv, %sm, %si = mpc.batch_norm %img, %g, %b, %m, %v {activation = "relu"} : tensor<2x4x4x8xf32>, tensor<8xf32>
  %dx, %dg, %db = mpc.batch_norm_backward %dz, %img, %g, %sm, %si result(%z : tensor<2x4x4x8xf32>) {activation = "relu"} : tensor<2x4x4x8xf32>, tensor<8xf32>
  return %z, %dx, %dg : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @reduce(
// Sum (0) over dimensions 1 and 2 of 4x8x16x2: outer 4, reduced 128, inner 2.
// CHECK: call @mpcrt_reduce_f32(%c0_i32{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %c4_i64{{(_[0-9]+)?}}, %c128_i64{{(_[0-9]+)?}}, %c2_i64{{(_[0-9]+)?}})
// Max (2) over dimension 0 with kept dimensions: outer 1, reduced 4.
// CHECK: call @mpcrt_reduce_f32(%c2_i32{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %c1_i64{{(_[0-9]+)?}}, %c4_i64{{(_[0-9]+)?}}, %c256_i64{{(_[0-9]+)?}})
// Mean (1) over everything:
// CHECK: call @mpcrt_reduce_f32(%c1_i32{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %c1_i64{{(_[0-9]+)?}}, %c1024_i64{{(_[0-9]+)?}}, %c1_i64{{(_[0-9]+)?}})
func.func @reduce(%x: tensor<4x8x16x2xf32>) -> (tensor<4x2xf32>, tensor<1x8x16x2xf32>, tensor<f32>) {
  %0 = mpc.reduce_sum %x {dims = array<i64: 1, 2>} : tensor<4x8x16x2xf32>
  %1 = mpc.reduce_max %x {dims = array<i64: 0>, keep_dims} : tensor<4x8x16x2xf32>
  %2 = mpc.reduce_mean %x {dims = array<i64: 0, 1, 2, 3>} : tensor<4x8x16x2xf32>
  return %0, %1, %2 : tensor<4x2xf32>, tensor<1x8x16x2xf32>, tensor<f32>
}

// -----

// The max's backward reads the gradient, the input and the maximum, laid
// out as [outer 4, reduced 8, inner 2].
// CHECK-LABEL: func.func @reduce_max_backward(
// CHECK: call @mpcrt_reduce_max_backward_f32(%{{.*}}, %{{.*}}, %{{.*}}, %arg0, %c4_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %c2_i64{{(_[0-9]+)?}})
func.func @reduce_max_backward(%g: tensor<4x2xf32>, %x: tensor<4x8x2xf32>, %m: tensor<4x2xf32>) -> tensor<4x8x2xf32> {
  %0 = mpc.reduce_max_backward %g, %x, %m {dims = array<i64: 1>} : tensor<4x2xf32>, tensor<4x8x2xf32>
  return %0 : tensor<4x8x2xf32>
}

// -----

// Running statistics loaded from globals and stored back to them are
// updated in the state buffer itself (mpc.in_globals): no copy into a
// result buffer before the kernel, none back after it.
// The mean is the state buffer's first global (%arg1 itself), the
// variance the next one; the one copy is the result's, into the caller's
// output.
// CHECK-LABEL: func.func @batch_norm_running_in_globals(
// CHECK: %[[RV:.*]] = llvm.getelementptr %arg1[%c256_i64{{(_[0-9]+)?}}]
// CHECK-NOT: mpcrt_copy
// CHECK: call @mpcrt_batch_norm_f32(%{{.*}}, %c2_i32{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %arg1, %[[RV]],
// CHECK: call @mpcrt_copy(%{{.*}}, %arg0, %c1024_i64{{(_[0-9]+)?}})
// CHECK-NOT: mpcrt_copy
// CHECK: return
ml_program.global private mutable @mean(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @var(#mpc.init<ones>) : tensor<8xf32>
func.func @batch_norm_running_in_globals(%img: tensor<2x4x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x4x8xf32> {
  %m = ml_program.global_load @mean : tensor<8xf32>
  %v = ml_program.global_load @var : tensor<8xf32>
  %o, %rm, %rv, %sm, %si = mpc.batch_norm %img, %g, %b, %m, %v : tensor<2x4x4x8xf32>, tensor<8xf32>
  ml_program.global_store @mean = %rm : tensor<8xf32>
  ml_program.global_store @var = %rv : tensor<8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// -----

// The fused residual norm: rows (2x4), columns, then the residual's rows,
// the input's own 8 rows, or 4 where a [4, 8] residual (position
// embeddings) repeats over the leading dimension, before epsilon.
// CHECK-LABEL: func.func @add_layer_norm(
// CHECK: call @mpcrt_add_layer_norm({{.*}}, %c8_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %cst
// CHECK: call @mpcrt_add_layer_norm({{.*}}, %c8_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %c4_i64{{(_[0-9]+)?}}, %cst
func.func @add_layer_norm(%x: tensor<2x4x8xf32>, %pos: tensor<4x8xf32>, %g: tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %y:4 = mpc.add_layer_norm %x, %x, %g, %g : tensor<2x4x8xf32>, tensor<8xf32>
  %z:4 = mpc.add_layer_norm %x, %pos, %g, %g : tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<8xf32>
  return %y#0, %z#0 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// A batch norm backward's parameter gradients added to addends (gradient
// accumulation): beta's alone (gamma's null), then both (the arguments'
// pointers: inputs 5 and 6).
// CHECK-LABEL: func.func @batch_norm_addends(
// CHECK: %[[P5:.*]] = llvm.getelementptr %arg2[%c5_i64]
// CHECK-NEXT: %[[GA:.*]] = llvm.load %[[P5]]
// CHECK: %[[P6:.*]] = llvm.getelementptr %arg2[%c6_i64]
// CHECK-NEXT: %[[BA:.*]] = llvm.load %[[P6]]
// CHECK: %[[N1:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[N2:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[N3:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: call @mpcrt_batch_norm_backward_f16({{.*}}, %c32_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %[[N1]], %[[N2]], %[[N3]], %[[BA]])
// CHECK: call @mpcrt_batch_norm_backward_f16({{.*}}, %c32_i64{{(_[0-9]+)?}}, %c8_i64{{(_[0-9]+)?}}, %{{[^,]*}}, %{{[^,]*}}, %[[GA]], %[[BA]])
func.func @batch_norm_addends(%dy: tensor<2x4x4x8xf16>, %img: tensor<2x4x4x8xf16>, %g: tensor<8xf32>, %sm: tensor<8xf32>, %si: tensor<8xf32>, %ga: tensor<8xf32>, %ba: tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %dg, %db = mpc.batch_norm_backward %dy, %img, %g, %sm, %si beta_addend(%ba : tensor<8xf32>) : tensor<2x4x4x8xf16>, tensor<8xf32>
  %ex, %eg, %eb = mpc.batch_norm_backward %dy, %img, %g, %sm, %si gamma_addend(%ga : tensor<8xf32>) beta_addend(%ba : tensor<8xf32>) : tensor<2x4x4x8xf16>, tensor<8xf32>
  return %dx, %db, %eg, %eb : tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
