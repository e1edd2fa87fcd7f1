// A training step (forward, backward, SGD with momentum) at every level and
// both low-precision types.
// RUN: mpc-opt %s --mpc-assign-precision="level=O0" | FileCheck %s --check-prefix=O0
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 alignment-remarks=false" | FileCheck %s --check-prefixes=O1,O1-F16 -DT=f16
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 dtype=bf16 alignment-remarks=false" | FileCheck %s --check-prefixes=O1 -DT=bf16
// RUN: mpc-opt %s --mpc-assign-precision="level=O2 alignment-remarks=false" | FileCheck %s --check-prefix=O2 -DT=f16
// RUN: mpc-opt %s --mpc-assign-precision="level=O2 dtype=bf16 alignment-remarks=false" | FileCheck %s --check-prefix=O2 -DT=bf16
// RUN: mpc-opt %s --mpc-assign-precision="level=O3 alignment-remarks=false" 2>&1 | FileCheck %s --check-prefix=O3 -DT=f16
// RUN: mpc-opt %s --mpc-assign-precision="level=O3 dtype=bf16 alignment-remarks=false" 2>&1 | FileCheck %s --check-prefix=O3 -DT=bf16

ml_program.global private mutable @w(#mpc.init<xavier_uniform, seed = 1>) : tensor<16x8xf32>
ml_program.global private mutable @w_m(#mpc.init<zeros>) : tensor<16x8xf32>
ml_program.global private mutable @lr(dense<0.1> : tensor<f32>) : tensor<f32>

// O0: module attributes {mpc.precision = {dtype = "f16", level = "O0"}}
// O0-NOT: mpc.cast

// O1: module attributes {mpc.precision = {dtype = "[[T]]", level = "O1"}}
// O1-NOT: ml_program.global {{.*}}[[T]]
// O1-LABEL: func @train_step
// The weight is cast once, right after its load, for forward and backward.
// O1: %[[W:.*]] = ml_program.global_load @w : tensor<16x8xf32>
// O1-NEXT: %[[W16:.*]] = mpc.cast %[[W]] : tensor<16x8xf32> -> tensor<16x8x[[T]]>
// O1: %[[Y:.*]] = mpc.matmul %{{.*}}, %[[W16]] : tensor<4x16x[[T]]>, tensor<16x8x[[T]]>
// O1: %[[Y32:.*]] = mpc.cast %[[Y]] : tensor<4x8x[[T]]> -> tensor<4x8xf32>
// O1: mpc.cross_entropy %[[Y32]], %{{.*}} : tensor<4x8xf32>, tensor<4xi32>
// O1: mpc.cross_entropy_backward {{.*}} : tensor<f32>, tensor<4x8xf32>, tensor<4xi32>
// O1: %[[DW:.*]] = mpc.matmul {{.*}} {transpose_a} : tensor<4x16x[[T]]>, tensor<4x8x[[T]]>
// The backward pass reuses the forward's cast of the weight.
// O1: mpc.matmul %{{.*}}, %[[W16]] {transpose_b} : tensor<4x8x[[T]]>, tensor<16x8x[[T]]>
// O1-NOT: mpc.cast %[[W]] :
// The low-precision gradient goes straight into the f32-master update.
// O1: mpc.sgd_update %[[W]], %[[DW]] lr(%{{.*}}) momentum_buffer(%{{.*}}) {{.*}} : tensor<16x8xf32>, tensor<16x8x[[T]]>
// O1-F16-NOT: bf16

// O2: module attributes {mpc.precision = {dtype = "[[T]]", level = "O2"}}
// O2: ml_program.global private mutable @w(#mpc.init<xavier_uniform, seed = 1>) : tensor<16x8xf32>
// O2-NEXT: ml_program.global private mutable @w_[[T]] : tensor<16x8x[[T]]> {mpc.master = @w}
// The momentum buffer only feeds the optimizer: no copy.
// O2-NOT: @w_m_[[T]]
// O2-LABEL: func @train_step
// O2: %[[W:.*]] = ml_program.global_load @w : tensor<16x8xf32>
// O2-NEXT: %[[WL:.*]] = ml_program.global_load @w_[[T]] : tensor<16x8x[[T]]>
// O2: mpc.matmul %{{.*}}, %[[WL]] : tensor<4x16x[[T]]>, tensor<16x8x[[T]]>
// O2: %{{.*}}, %{{.*}}, %[[COPY:.*]] = mpc.sgd_update %[[W]], {{.*}} copy([[T]]) {{.*}} : tensor<16x8xf32>, tensor<16x8x[[T]]>
// O2-NEXT: ml_program.global_store @w_[[T]] = %[[COPY]] : tensor<16x8x[[T]]>

// O3: warning: level O3 runs every op in [[T]] without f32 master weights
// O3: ml_program.global private mutable @w(#mpc.init<xavier_uniform, seed = 1>) : tensor<16x8x[[T]]>
// O3: ml_program.global private mutable @w_m(#mpc.init<zeros>) : tensor<16x8x[[T]]>
// Scalars (the learning rate) are not weights: they stay f32.
// O3: ml_program.global private mutable @lr(dense<1.000000e-01> : tensor<f32>) : tensor<f32>
// O3-LABEL: func @train_step
// O3: %[[LOSS:.*]] = mpc.cross_entropy %{{.*}}, %{{.*}} : tensor<4x8x[[T]]>, tensor<4xi32>
// The step keeps its signature: the loss is returned as f32.
// O3-NEXT: %[[L:.*]] = mpc.cast %[[LOSS]] : tensor<[[T]]> -> tensor<f32>
// O3: mpc.sgd_update {{.*}} : tensor<16x8x[[T]]>, tensor<16x8x[[T]]>
// O3: return %[[L]], %{{.*}} : tensor<f32>, tensor<4x16xf32>
func.func @train_step(%x: tensor<4x16xf32>, %y: tensor<4xi32>) -> (tensor<f32>, tensor<4x16xf32>) {
  %w = ml_program.global_load @w : tensor<16x8xf32>
  %logits = mpc.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32>
  %loss = mpc.cross_entropy %logits, %y : tensor<4x8xf32>, tensor<4xi32>
  %one = mpc.constant dense<1.0> : tensor<f32>
  %dlogits = mpc.cross_entropy_backward %one, %logits, %y : tensor<f32>, tensor<4x8xf32>, tensor<4xi32>
  %dw = mpc.matmul %x, %dlogits {transpose_a} : tensor<4x16xf32>, tensor<4x8xf32>
  %dx = mpc.matmul %dlogits, %w {transpose_b} : tensor<4x8xf32>, tensor<16x8xf32>
  %m = ml_program.global_load @w_m : tensor<16x8xf32>
  %lr = ml_program.global_load @lr : tensor<f32>
  %nw, %nm = mpc.sgd_update %w, %dw lr(%lr) momentum_buffer(%m) {momentum = 0.9} : tensor<16x8xf32>, tensor<16x8xf32>
  ml_program.global_store @w = %nw : tensor<16x8xf32>
  ml_program.global_store @w_m = %nm : tensor<16x8xf32>
  return %loss, %dx : tensor<f32>, tensor<4x16xf32>
}
