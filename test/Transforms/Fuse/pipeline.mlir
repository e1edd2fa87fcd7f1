// Attention fuses in the forward graph, before autodiff: the training step
// gets mpc.attention and its VJP mpc.attention_backward. Under O2 both run
// in f16 and the log-sum-exp statistics stay f32 (they are not cast with
// the other operands); the evaluation step turns the fused op's dropout
// off; the linear head's bias joins its GEMM after precision assignment.
// RUN: mpc-opt %s --mpc-amp-pipeline="level=O2" | FileCheck %s
// RUN: mpc-opt %s --mpc-amp-pipeline="level=O2 fuse=false" | FileCheck %s --check-prefix=NOFUSE
// RUN: mpc-opt %s --mpc-fuse=epilogues=false --mpc-autodiff --mpc-eval-step | FileCheck %s --check-prefix=EVAL

// CHECK-LABEL: func.func @train_step
// CHECK: %[[O:.*]], %[[LSE:.*]] = mpc.attention %{{.*}}, %{{.*}}, %{{.*}} {dropout_p = 1.000000e-01 : f64, scale = 2.500000e-01 : f64, seed = 5 : i64} : tensor<2x8x16xf16>, tensor<2x8x16xf16>, tensor<2x8x16xf16>
// CHECK: mpc.fused_matmul %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x16xf16>, tensor<16x4xf16>, tensor<4xf16> -> tensor<2x4xf16>
// CHECK: mpc.attention_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[O]], %[[LSE]] {dropout_p = 1.000000e-01 : f64, scale = 2.500000e-01 : f64, seed = 5 : i64} : tensor<2x8x16xf16>, tensor<2x8x16xf16>, tensor<2x8x16xf16>, tensor<2x8x16xf16>, tensor<2x8x16xf16>, tensor<2x8xf32>
// NOFUSE-NOT: mpc.attention
// NOFUSE-NOT: mpc.fused_matmul

// EVAL-LABEL: func.func @eval_step
// EVAL: mpc.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f64, seed = 5 : i64}
// EVAL-LABEL: func.func @train_step
// EVAL: mpc.attention %{{.*}}, %{{.*}}, %{{.*}} {dropout_p = 1.000000e-01 : f64, scale = 2.500000e-01 : f64, seed = 5 : i64}
// EVAL: mpc.attention_backward

ml_program.global private mutable @wq(#mpc.init<xavier_uniform, seed = 1>) : tensor<16x16xf32>
ml_program.global private mutable @wo(#mpc.init<xavier_uniform, seed = 2>) : tensor<16x4xf32>
ml_program.global private mutable @bo(#mpc.init<zeros>) : tensor<4xf32>

func.func @loss(%x: tensor<2x8x16xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
  %wq = ml_program.global_load @wq : tensor<16x16xf32>
  %q = mpc.matmul %x, %wq : tensor<2x8x16xf32>, tensor<16x16xf32>
  %c = mpc.constant dense<0.25> : tensor<f32>
  %s = mpc.matmul %q, %x {transpose_b} : tensor<2x8x16xf32>, tensor<2x8x16xf32>
  %t = mpc.mul %s, %c : tensor<2x8x8xf32>, tensor<f32>
  %p = mpc.softmax %t : tensor<2x8x8xf32>
  %pd, %mask = mpc.dropout %p {p = 0.1, seed = 5} : tensor<2x8x8xf32>
  %o = mpc.matmul %pd, %x : tensor<2x8x8xf32>, tensor<2x8x16xf32>
  %pooled = mpc.reduce_mean %o {dims = array<i64: 1>} : tensor<2x8x16xf32>
  %wo = ml_program.global_load @wo : tensor<16x4xf32>
  %bo = ml_program.global_load @bo : tensor<4xf32>
  %l = mpc.matmul %pooled, %wo : tensor<2x16xf32>, tensor<16x4xf32>
  %logits = mpc.add %l, %bo : tensor<2x4xf32>, tensor<4xf32>
  %loss = mpc.cross_entropy %logits, %labels : tensor<2x4xf32>, tensor<2xi32>
  return %loss : tensor<f32>
}
