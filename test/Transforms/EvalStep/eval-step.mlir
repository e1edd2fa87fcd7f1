// --mpc-eval-step: the loss function as an evaluation step.
// RUN: mpc-opt %s --mpc-eval-step | FileCheck %s
// RUN: mpc-opt %s --mpc-eval-step="name=val precision=amp" | FileCheck %s --check-prefix=AMP
// f32 steps are left alone by the precision pass (the masters are read);
// amp ones run at the level.
// RUN: mpc-opt %s --mpc-eval-step --mpc-assign-precision="level=O2 alignment-remarks=false" | FileCheck %s --check-prefix=O2F32
// RUN: mpc-opt %s --mpc-eval-step=precision=amp --mpc-assign-precision="level=O2 alignment-remarks=false" | FileCheck %s --check-prefix=O2AMP
// At O3 (no masters) the f16 weights are cast up.
// RUN: mpc-opt %s --mpc-eval-step --mpc-assign-precision="level=O3 alignment-remarks=false" 2>/dev/null | FileCheck %s --check-prefix=O3
// The loss function itself is unchanged.
// RUN: mpc-opt %s --mpc-eval-step | FileCheck %s --check-prefix=SOURCE

ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<6x5xf32>
ml_program.global private mutable @g(#mpc.init<ones>) : tensor<5xf32>
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<5xf32>
ml_program.global private mutable @rm(#mpc.init<zeros>) : tensor<5xf32>
ml_program.global private mutable @rv(#mpc.init<ones>) : tensor<5xf32>

func.func @loss(%x: tensor<4x6xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<6x5xf32>
  %g = ml_program.global_load @g : tensor<5xf32>
  %b = ml_program.global_load @b : tensor<5xf32>
  %rm = ml_program.global_load @rm : tensor<5xf32>
  %rv = ml_program.global_load @rv : tensor<5xf32>
  %0 = mpc.matmul %x, %w : tensor<4x6xf32>, tensor<6x5xf32>
  %1:5 = mpc.batch_norm %0, %g, %b, %rm, %rv {epsilon = 1.0e-3 : f64} : tensor<4x5xf32>, tensor<5xf32>
  ml_program.global_store @rm = %1#1 : tensor<5xf32>
  ml_program.global_store @rv = %1#2 : tensor<5xf32>
  %2:2 = mpc.dropout %1#0 {p = 0.5, seed = 3} : tensor<4x5xf32>
  %l = mpc.cross_entropy %2#0, %y : tensor<4x5xf32>, tensor<4xi32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @eval_step(
// CHECK-SAME: -> (tensor<f32> {mpc.name = "loss"}, tensor<f32> {mpc.name = "accuracy"}) attributes {mpc.eval, mpc.keep_f32}
// CHECK-DAG: %[[W:.*]] = ml_program.global_load @w
// CHECK-DAG: %[[G:.*]] = ml_program.global_load @g
// CHECK-DAG: %[[B:.*]] = ml_program.global_load @b
// CHECK-DAG: %[[RM:.*]] = ml_program.global_load @rm
// CHECK-DAG: %[[RV:.*]] = ml_program.global_load @rv
// CHECK: %[[X:.*]] = mpc.matmul %{{.*}}, %[[W]]
// Batch norm on the running statistics: one op, nothing updated or saved.
// CHECK: %[[Y:.*]] = mpc.batch_norm_inference %[[X]], %[[G]], %[[B]], %[[RM]], %[[RV]] {epsilon = 1.000000e-03 : f64} : tensor<4x5xf32>, tensor<5xf32>
// No dropout: the loss reads the normalised values.
// CHECK: %[[L:.*]] = mpc.cross_entropy %[[Y]], %{{.*}}
// CHECK: %[[A:.*]] = mpc.accuracy %[[Y]], %{{.*}} : tensor<4x5xf32>, tensor<4xi32>
// CHECK: return %[[L]], %[[A]]
// No state is written, no batch statistics or masks computed.
// CHECK-NOT: global_store
// CHECK-NOT: mpc.batch_norm %
// CHECK-NOT: mpc.dropout
// CHECK: }

// AMP-LABEL: func.func @val(
// AMP-SAME: attributes {mpc.eval} {

// O2F32-LABEL: func.func @eval_step(
// O2F32-NOT: _f16
// O2F32-NOT: mpc.cast
// O2F32: return
// O2AMP-LABEL: func.func @eval_step(
// O2AMP: %[[W16:.*]] = ml_program.global_load @w_f16 : tensor<6x5xf16>
// O2AMP: mpc.matmul %{{.*}}, %[[W16]] : tensor<4x6xf16>, tensor<6x5xf16>
// keep-batchnorm-fp32: low-precision activations, f32 parameters and
// running statistics.
// O2AMP: mpc.batch_norm_inference %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f64} : tensor<4x5xf16>, tensor<5xf32>

// O3-LABEL: func.func @eval_step(
// O3: %[[W:.*]] = ml_program.global_load @w : tensor<6x5xf16>
// O3: %[[UP:.*]] = mpc.cast %[[W]] : tensor<6x5xf16> -> tensor<6x5xf32>
// O3: mpc.matmul %{{.*}}, %[[UP]] : tensor<4x6xf32>, tensor<6x5xf32>

// SOURCE-LABEL: func.func @loss(
// SOURCE: mpc.batch_norm
// SOURCE: global_store @rm
// SOURCE: mpc.dropout
