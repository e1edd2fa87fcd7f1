// A feed-forward MLP classifier, written as a forward pass and loss over
// parameter globals: 784 -> 512 -> 256 -> 10 with ReLU, trained with softmax
// cross-entropy on integer labels (an MNIST-sized problem). Batch 64.
// Weights are [in, out], the right operand of `x @ W`.
//
//   mpc-opt examples/mlp.mlir --mpc-verify-graph --mpc-graph-summary

ml_program.global private mutable @fc1_w(#mpc.init<kaiming_uniform, seed = 1>) : tensor<784x512xf32>
ml_program.global private mutable @fc1_b(#mpc.init<zeros>) : tensor<512xf32>
ml_program.global private mutable @fc2_w(#mpc.init<kaiming_uniform, seed = 2>) : tensor<512x256xf32>
ml_program.global private mutable @fc2_b(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @fc3_w(#mpc.init<xavier_uniform, seed = 3>) : tensor<256x10xf32>
ml_program.global private mutable @fc3_b(#mpc.init<zeros>) : tensor<10xf32>

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
