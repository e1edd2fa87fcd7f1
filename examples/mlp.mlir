// A feed-forward MLP classifier, written as a forward pass and loss over
// parameter globals: 784 -> 512 -> 256 -> 10 with ReLU, trained with softmax
// cross-entropy on integer labels (an MNIST-sized problem). Batch 64.
// Weights are [in, out], the right operand of `x @ W`.
//
// @train_step is the same network's training step written by hand (forward,
// backward, SGD with momentum 0.9 and learning rate @lr), the graph
// `mpc-compile` turns into a training executable:
//
//   mpc-opt examples/mlp.mlir --mpc-verify-graph --mpc-graph-summary
//   mpc-compile examples/mlp.mlir -o mlp-train

ml_program.global private mutable @fc1_w(#mpc.init<kaiming_uniform, seed = 1>) : tensor<784x512xf32>
ml_program.global private mutable @fc1_b(#mpc.init<zeros>) : tensor<512xf32>
ml_program.global private mutable @fc2_w(#mpc.init<kaiming_uniform, seed = 2>) : tensor<512x256xf32>
ml_program.global private mutable @fc2_b(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @fc3_w(#mpc.init<xavier_uniform, seed = 3>) : tensor<256x10xf32>
ml_program.global private mutable @fc3_b(#mpc.init<zeros>) : tensor<10xf32>

// Optimizer state and hyper-parameters.
ml_program.global private mutable @fc1_w_mom(#mpc.init<zeros>) : tensor<784x512xf32>
ml_program.global private mutable @fc1_b_mom(#mpc.init<zeros>) : tensor<512xf32>
ml_program.global private mutable @fc2_w_mom(#mpc.init<zeros>) : tensor<512x256xf32>
ml_program.global private mutable @fc2_b_mom(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @fc3_w_mom(#mpc.init<zeros>) : tensor<256x10xf32>
ml_program.global private mutable @fc3_b_mom(#mpc.init<zeros>) : tensor<10xf32>
ml_program.global private @lr(dense<0.01> : tensor<f32>) : tensor<f32>

func.func @loss(%x: tensor<64x784xf32>, %labels: tensor<64xi32>) -> tensor<f32> {
  %fc1_w = ml_program.global_load @fc1_w : tensor<784x512xf32>
  %fc1_b = ml_program.global_load @fc1_b : tensor<512xf32>
  %0 = mpc.matmul %x, %fc1_w : tensor<64x784xf32>, tensor<784x512xf32>
  %1 = mpc.add %0, %fc1_b : tensor<64x512xf32>, tensor<512xf32>
  %2 = mpc.relu %1 : tensor<64x512xf32>

  %fc2_w = ml_program.global_load @fc2_w : tensor<512x256xf32>
  %fc2_b = ml_program.global_load @fc2_b : tensor<256xf32>
  %3 = mpc.matmul %2, %fc2_w : tensor<64x512xf32>, tensor<512x256xf32>
  %4 = mpc.add %3, %fc2_b : tensor<64x256xf32>, tensor<256xf32>
  %5 = mpc.relu %4 : tensor<64x256xf32>

  %fc3_w = ml_program.global_load @fc3_w : tensor<256x10xf32>
  %fc3_b = ml_program.global_load @fc3_b : tensor<10xf32>
  %6 = mpc.matmul %5, %fc3_w : tensor<64x256xf32>, tensor<256x10xf32>
  %logits = mpc.add %6, %fc3_b : tensor<64x10xf32>, tensor<10xf32>

  %loss = mpc.cross_entropy %logits, %labels : tensor<64x10xf32>, tensor<64xi32>
  return %loss : tensor<f32>
}

func.func @train_step(%x: tensor<64x784xf32>, %labels: tensor<64xi32>) -> tensor<f32> {
  // Forward, keeping what the backward pass reads.
  %fc1_w = ml_program.global_load @fc1_w : tensor<784x512xf32>
  %fc1_b = ml_program.global_load @fc1_b : tensor<512xf32>
  %fc2_w = ml_program.global_load @fc2_w : tensor<512x256xf32>
  %fc2_b = ml_program.global_load @fc2_b : tensor<256xf32>
  %fc3_w = ml_program.global_load @fc3_w : tensor<256x10xf32>
  %fc3_b = ml_program.global_load @fc3_b : tensor<10xf32>
  %0 = mpc.matmul %x, %fc1_w : tensor<64x784xf32>, tensor<784x512xf32>
  %a1 = mpc.add %0, %fc1_b : tensor<64x512xf32>, tensor<512xf32>
  %h1 = mpc.relu %a1 : tensor<64x512xf32>
  %1 = mpc.matmul %h1, %fc2_w : tensor<64x512xf32>, tensor<512x256xf32>
  %a2 = mpc.add %1, %fc2_b : tensor<64x256xf32>, tensor<256xf32>
  %h2 = mpc.relu %a2 : tensor<64x256xf32>
  %2 = mpc.matmul %h2, %fc3_w : tensor<64x256xf32>, tensor<256x10xf32>
  %logits = mpc.add %2, %fc3_b : tensor<64x10xf32>, tensor<10xf32>
  %loss = mpc.cross_entropy %logits, %labels : tensor<64x10xf32>, tensor<64xi32>

  // Backward.
  %one = mpc.constant dense<1.0> : tensor<f32>
  %dlogits = mpc.cross_entropy_backward %one, %logits, %labels : tensor<f32>, tensor<64x10xf32>, tensor<64xi32>
  %d_fc3_b = mpc.reduce_sum %dlogits {dims = array<i64: 0>} : tensor<64x10xf32>
  %d_fc3_w = mpc.matmul %h2, %dlogits {transpose_a} : tensor<64x256xf32>, tensor<64x10xf32>
  %dh2 = mpc.matmul %dlogits, %fc3_w {transpose_b} : tensor<64x10xf32>, tensor<256x10xf32>
  %da2 = mpc.relu_grad %dh2, %a2 : tensor<64x256xf32>
  %d_fc2_b = mpc.reduce_sum %da2 {dims = array<i64: 0>} : tensor<64x256xf32>
  %d_fc2_w = mpc.matmul %h1, %da2 {transpose_a} : tensor<64x512xf32>, tensor<64x256xf32>
  %dh1 = mpc.matmul %da2, %fc2_w {transpose_b} : tensor<64x256xf32>, tensor<512x256xf32>
  %da1 = mpc.relu_grad %dh1, %a1 : tensor<64x512xf32>
  %d_fc1_b = mpc.reduce_sum %da1 {dims = array<i64: 0>} : tensor<64x512xf32>
  %d_fc1_w = mpc.matmul %x, %da1 {transpose_a} : tensor<64x784xf32>, tensor<64x512xf32>

  // SGD with momentum, in place on the parameters and their buffers.
  %lr = ml_program.global_load @lr : tensor<f32>
  %m1w = ml_program.global_load @fc1_w_mom : tensor<784x512xf32>
  %n1w:2 = mpc.sgd_update %fc1_w, %d_fc1_w lr(%lr) momentum_buffer(%m1w) {momentum = 0.9} : tensor<784x512xf32>, tensor<784x512xf32>
  ml_program.global_store @fc1_w = %n1w#0 : tensor<784x512xf32>
  ml_program.global_store @fc1_w_mom = %n1w#1 : tensor<784x512xf32>
  %m1b = ml_program.global_load @fc1_b_mom : tensor<512xf32>
  %n1b:2 = mpc.sgd_update %fc1_b, %d_fc1_b lr(%lr) momentum_buffer(%m1b) {momentum = 0.9} : tensor<512xf32>, tensor<512xf32>
  ml_program.global_store @fc1_b = %n1b#0 : tensor<512xf32>
  ml_program.global_store @fc1_b_mom = %n1b#1 : tensor<512xf32>
  %m2w = ml_program.global_load @fc2_w_mom : tensor<512x256xf32>
  %n2w:2 = mpc.sgd_update %fc2_w, %d_fc2_w lr(%lr) momentum_buffer(%m2w) {momentum = 0.9} : tensor<512x256xf32>, tensor<512x256xf32>
  ml_program.global_store @fc2_w = %n2w#0 : tensor<512x256xf32>
  ml_program.global_store @fc2_w_mom = %n2w#1 : tensor<512x256xf32>
  %m2b = ml_program.global_load @fc2_b_mom : tensor<256xf32>
  %n2b:2 = mpc.sgd_update %fc2_b, %d_fc2_b lr(%lr) momentum_buffer(%m2b) {momentum = 0.9} : tensor<256xf32>, tensor<256xf32>
  ml_program.global_store @fc2_b = %n2b#0 : tensor<256xf32>
  ml_program.global_store @fc2_b_mom = %n2b#1 : tensor<256xf32>
  %m3w = ml_program.global_load @fc3_w_mom : tensor<256x10xf32>
  %n3w:2 = mpc.sgd_update %fc3_w, %d_fc3_w lr(%lr) momentum_buffer(%m3w) {momentum = 0.9} : tensor<256x10xf32>, tensor<256x10xf32>
  ml_program.global_store @fc3_w = %n3w#0 : tensor<256x10xf32>
  ml_program.global_store @fc3_w_mom = %n3w#1 : tensor<256x10xf32>
  %m3b = ml_program.global_load @fc3_b_mom : tensor<10xf32>
  %n3b:2 = mpc.sgd_update %fc3_b, %d_fc3_b lr(%lr) momentum_buffer(%m3b) {momentum = 0.9} : tensor<10xf32>, tensor<10xf32>
  ml_program.global_store @fc3_b = %n3b#0 : tensor<10xf32>
  ml_program.global_store @fc3_b_mom = %n3b#1 : tensor<10xf32>
  return %loss : tensor<f32>
}
