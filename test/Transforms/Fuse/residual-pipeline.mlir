// A residual connection with dropout and no norm after it, fused in the
// forward graph before autodiff: the training step gets mpc.dropout_add,
// and its VJP draws the same bits again for the input's gradient
// (mpc.dropout_add without a residual); no mask is kept. Under O2 both run
// in f16; the evaluation step turns the fused op's dropout off.
// RUN: mpc-opt %s --mpc-amp-pipeline="level=O2" | FileCheck %s
// RUN: mpc-opt %s --mpc-amp-pipeline="level=O2 fuse=false" | FileCheck %s --check-prefix=NOFUSE
// RUN: mpc-opt %s --mpc-fuse=epilogues=false --mpc-autodiff --mpc-eval-step | FileCheck %s --check-prefix=EVAL

// CHECK-LABEL: func.func @train_step
// CHECK: %[[S:.*]] = mpc.dropout_add %{{.*}}, %{{.*}} {p = 1.000000e-01 : f64, seed = 3 : i64} : tensor<2x8x16xf16>, tensor<2x8x16xf16>
// CHECK: mpc.dropout_add %{{.*}} {p = 1.000000e-01 : f64, seed = 3 : i64} : tensor<2x8x16xf16>
// CHECK-NOT: mpc.dropout_backward
// CHECK-NOT: xi1>
// NOFUSE-LABEL: func.func @train_step
// NOFUSE: mpc.dropout {{.*}}
// NOFUSE: mpc.dropout_backward
// NOFUSE-NOT: mpc.dropout_add

// EVAL-LABEL: func.func @eval_step
// EVAL: mpc.dropout_add %{{.*}}, %{{.*}} {p = 0.000000e+00 : f64, seed = 3 : i64}
// EVAL-LABEL: func.func @train_step
// EVAL: mpc.dropout_add %{{.*}}, %{{.*}} {p = 1.000000e-01 : f64, seed = 3 : i64}

ml_program.global private mutable @w(#mpc.init<xavier_uniform, seed = 1>) : tensor<16x16xf32>
ml_program.global private mutable @wo(#mpc.init<xavier_uniform, seed = 2>) : tensor<16x4xf32>

func.func @loss(%x: tensor<2x8x16xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<16x16xf32>
  %h = mpc.matmul %x, %w : tensor<2x8x16xf32>, tensor<16x16xf32>
  %d, %mask = mpc.dropout %h {p = 0.1, seed = 3} : tensor<2x8x16xf32>
  %s = mpc.add %x, %d : tensor<2x8x16xf32>, tensor<2x8x16xf32>
  %pooled = mpc.reduce_mean %s {dims = array<i64: 1>} : tensor<2x8x16xf32>
  %wo = ml_program.global_load @wo : tensor<16x4xf32>
  %logits = mpc.matmul %pooled, %wo : tensor<2x16xf32>, tensor<16x4xf32>
  %l = mpc.cross_entropy %logits, %labels : tensor<2x4xf32>, tensor<2xi32>
  return %l : tensor<f32>
}
