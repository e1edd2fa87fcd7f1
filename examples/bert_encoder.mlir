// A BERT-style transformer encoder for sequence classification, written as
// a forward pass and loss over parameter globals: token and position
// embeddings, 2 post-LayerNorm encoder layers (hidden 256, 4 heads of 64,
// feed-forward 1024 with GELU, dropout 0.1), a tanh pooler on the first token
// and a 2-class classifier trained with cross-entropy.
// Batch 8, sequence 128, vocabulary 8192. No padding mask: every sequence is
// full length.
//
//   mpc-opt examples/bert_encoder.mlir --mpc-verify-graph --mpc-graph-summary

ml_program.global private mutable @word_embeddings(#mpc.init<normal, seed = 1, std = 0.02>) : tensor<8192x256xf32>
ml_program.global private mutable @position_embeddings(#mpc.init<normal, seed = 2, std = 0.02>) : tensor<128x256xf32>
ml_program.global private mutable @embeddings_ln_gamma(#mpc.init<ones>) : tensor<256xf32>
ml_program.global private mutable @embeddings_ln_beta(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @layer0_query_w(#mpc.init<xavier_uniform, seed = 5>) : tensor<256x256xf32>
ml_program.global private mutable @layer0_query_b(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @layer0_key_w(#mpc.init<xavier_uniform, seed = 7>) : tensor<256x256xf32>
ml_program.global private mutable @layer0_key_b(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @layer0_value_w(#mpc.init<xavier_uniform, seed = 9>) : tensor<256x256xf32>
ml_program.global private mutable @layer0_value_b(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @layer0_attention_out_w(#mpc.init<xavier_uniform, seed = 11>) : tensor<256x256xf32>
ml_program.global private mutable @layer0_attention_out_b(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @layer0_attention_ln_gamma(#mpc.init<ones>) : tensor<256xf32>
ml_program.global private mutable @layer0_attention_ln_beta(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @layer0_intermediate_w(#mpc.init<xavier_uniform, seed = 15>) : tensor<256x1024xf32>
ml_program.global private mutable @layer0_intermediate_b(#mpc.init<zeros>) : tensor<1024xf32>
ml_program.global private mutable @layer0_output_w(#mpc.init<xavier_uniform, seed = 17>) : tensor<1024x256xf32>
ml_program.global private mutable @layer0_output_b(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @layer0_output_ln_gamma(#mpc.init<ones>) : tensor<256xf32>
ml_program.global private mutable @layer0_output_ln_beta(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @layer1_query_w(#mpc.init<xavier_uniform, seed = 21>) : tensor<256x256xf32>
ml_program.global private mutable @layer1_query_b(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @layer1_key_w(#mpc.init<xavier_uniform, seed = 23>) : tensor<256x256xf32>
ml_program.global private mutable @layer1_key_b(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @layer1_value_w(#mpc.init<xavier_uniform, seed = 25>) : tensor<256x256xf32>
ml_program.global private mutable @layer1_value_b(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @layer1_attention_out_w(#mpc.init<xavier_uniform, seed = 27>) : tensor<256x256xf32>
ml_program.global private mutable @layer1_attention_out_b(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @layer1_attention_ln_gamma(#mpc.init<ones>) : tensor<256xf32>
ml_program.global private mutable @layer1_attention_ln_beta(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @layer1_intermediate_w(#mpc.init<xavier_uniform, seed = 31>) : tensor<256x1024xf32>
ml_program.global private mutable @layer1_intermediate_b(#mpc.init<zeros>) : tensor<1024xf32>
ml_program.global private mutable @layer1_output_w(#mpc.init<xavier_uniform, seed = 33>) : tensor<1024x256xf32>
ml_program.global private mutable @layer1_output_b(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @layer1_output_ln_gamma(#mpc.init<ones>) : tensor<256xf32>
ml_program.global private mutable @layer1_output_ln_beta(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @pooler_w(#mpc.init<xavier_uniform, seed = 37>) : tensor<256x256xf32>
ml_program.global private mutable @pooler_b(#mpc.init<zeros>) : tensor<256xf32>
ml_program.global private mutable @classifier_w(#mpc.init<xavier_uniform, seed = 39>) : tensor<256x2xf32>
ml_program.global private mutable @classifier_b(#mpc.init<zeros>) : tensor<2xf32>

func.func @loss(%input_ids: tensor<8x128xi32>, %labels: tensor<8xi32>) -> tensor<f32> {
  // Embeddings: token + learned position, then LayerNorm and dropout.
  %word_embeddings = ml_program.global_load @word_embeddings : tensor<8192x256xf32>
  %position_embeddings = ml_program.global_load @position_embeddings : tensor<128x256xf32>
  %1 = mpc.embedding %word_embeddings, %input_ids : tensor<8192x256xf32>, tensor<8x128xi32>
  %2 = mpc.add %1, %position_embeddings : tensor<8x128x256xf32>, tensor<128x256xf32>
  %embeddings_ln_gamma = ml_program.global_load @embeddings_ln_gamma : tensor<256xf32>
  %embeddings_ln_beta = ml_program.global_load @embeddings_ln_beta : tensor<256xf32>
  %3:3 = mpc.layer_norm %2, %embeddings_ln_gamma, %embeddings_ln_beta {epsilon = 1.0e-12} : tensor<8x128x256xf32>, tensor<256xf32>
  %4:2 = mpc.dropout %3#0 {p = 0.1, seed = 101} : tensor<8x128x256xf32>
  %5 = mpc.constant dense<0.125> : tensor<f32>
  // Encoder layer 0: self-attention.
  %layer0_query_w = ml_program.global_load @layer0_query_w : tensor<256x256xf32>
  %layer0_query_b = ml_program.global_load @layer0_query_b : tensor<256xf32>
  %6 = mpc.matmul %4#0, %layer0_query_w : tensor<8x128x256xf32>, tensor<256x256xf32>
  %7 = mpc.add %6, %layer0_query_b : tensor<8x128x256xf32>, tensor<256xf32>
  %layer0_key_w = ml_program.global_load @layer0_key_w : tensor<256x256xf32>
  %layer0_key_b = ml_program.global_load @layer0_key_b : tensor<256xf32>
  %8 = mpc.matmul %4#0, %layer0_key_w : tensor<8x128x256xf32>, tensor<256x256xf32>
  %9 = mpc.add %8, %layer0_key_b : tensor<8x128x256xf32>, tensor<256xf32>
  %layer0_value_w = ml_program.global_load @layer0_value_w : tensor<256x256xf32>
  %layer0_value_b = ml_program.global_load @layer0_value_b : tensor<256xf32>
  %10 = mpc.matmul %4#0, %layer0_value_w : tensor<8x128x256xf32>, tensor<256x256xf32>
  %11 = mpc.add %10, %layer0_value_b : tensor<8x128x256xf32>, tensor<256xf32>
  %12 = mpc.reshape %7 : tensor<8x128x256xf32> -> tensor<8x128x4x64xf32>
  %13 = mpc.transpose %12 {permutation = array<i64: 0, 2, 1, 3>} : tensor<8x128x4x64xf32>
  %14 = mpc.reshape %9 : tensor<8x128x256xf32> -> tensor<8x128x4x64xf32>
  %15 = mpc.transpose %14 {permutation = array<i64: 0, 2, 1, 3>} : tensor<8x128x4x64xf32>
  %16 = mpc.reshape %11 : tensor<8x128x256xf32> -> tensor<8x128x4x64xf32>
  %17 = mpc.transpose %16 {permutation = array<i64: 0, 2, 1, 3>} : tensor<8x128x4x64xf32>
  %18 = mpc.matmul %13, %15 {transpose_b} : tensor<8x4x128x64xf32>, tensor<8x4x128x64xf32>
  %19 = mpc.mul %18, %5 : tensor<8x4x128x128xf32>, tensor<f32>
  %20 = mpc.softmax %19 : tensor<8x4x128x128xf32>
  %21:2 = mpc.dropout %20 {p = 0.1, seed = 102} : tensor<8x4x128x128xf32>
  %22 = mpc.matmul %21#0, %17 : tensor<8x4x128x128xf32>, tensor<8x4x128x64xf32>
  %23 = mpc.transpose %22 {permutation = array<i64: 0, 2, 1, 3>} : tensor<8x4x128x64xf32>
  %24 = mpc.reshape %23 : tensor<8x128x4x64xf32> -> tensor<8x128x256xf32>
  %layer0_attention_out_w = ml_program.global_load @layer0_attention_out_w : tensor<256x256xf32>
  %layer0_attention_out_b = ml_program.global_load @layer0_attention_out_b : tensor<256xf32>
  %25 = mpc.matmul %24, %layer0_attention_out_w : tensor<8x128x256xf32>, tensor<256x256xf32>
  %26 = mpc.add %25, %layer0_attention_out_b : tensor<8x128x256xf32>, tensor<256xf32>
  %27:2 = mpc.dropout %26 {p = 0.1, seed = 103} : tensor<8x128x256xf32>
  %28 = mpc.add %27#0, %4#0 : tensor<8x128x256xf32>, tensor<8x128x256xf32>
  %layer0_attention_ln_gamma = ml_program.global_load @layer0_attention_ln_gamma : tensor<256xf32>
  %layer0_attention_ln_beta = ml_program.global_load @layer0_attention_ln_beta : tensor<256xf32>
  %29:3 = mpc.layer_norm %28, %layer0_attention_ln_gamma, %layer0_attention_ln_beta {epsilon = 1.0e-12} : tensor<8x128x256xf32>, tensor<256xf32>
  // Encoder layer 0: feed-forward.
  %layer0_intermediate_w = ml_program.global_load @layer0_intermediate_w : tensor<256x1024xf32>
  %layer0_intermediate_b = ml_program.global_load @layer0_intermediate_b : tensor<1024xf32>
  %30 = mpc.matmul %29#0, %layer0_intermediate_w : tensor<8x128x256xf32>, tensor<256x1024xf32>
  %31 = mpc.add %30, %layer0_intermediate_b : tensor<8x128x1024xf32>, tensor<1024xf32>
  %32 = mpc.gelu %31 : tensor<8x128x1024xf32>
  %layer0_output_w = ml_program.global_load @layer0_output_w : tensor<1024x256xf32>
  %layer0_output_b = ml_program.global_load @layer0_output_b : tensor<256xf32>
  %33 = mpc.matmul %32, %layer0_output_w : tensor<8x128x1024xf32>, tensor<1024x256xf32>
  %34 = mpc.add %33, %layer0_output_b : tensor<8x128x256xf32>, tensor<256xf32>
  %35:2 = mpc.dropout %34 {p = 0.1, seed = 104} : tensor<8x128x256xf32>
  %36 = mpc.add %35#0, %29#0 : tensor<8x128x256xf32>, tensor<8x128x256xf32>
  %layer0_output_ln_gamma = ml_program.global_load @layer0_output_ln_gamma : tensor<256xf32>
  %layer0_output_ln_beta = ml_program.global_load @layer0_output_ln_beta : tensor<256xf32>
  %37:3 = mpc.layer_norm %36, %layer0_output_ln_gamma, %layer0_output_ln_beta {epsilon = 1.0e-12} : tensor<8x128x256xf32>, tensor<256xf32>
  // Encoder layer 1: self-attention.
  %layer1_query_w = ml_program.global_load @layer1_query_w : tensor<256x256xf32>
  %layer1_query_b = ml_program.global_load @layer1_query_b : tensor<256xf32>
  %38 = mpc.matmul %37#0, %layer1_query_w : tensor<8x128x256xf32>, tensor<256x256xf32>
  %39 = mpc.add %38, %layer1_query_b : tensor<8x128x256xf32>, tensor<256xf32>
  %layer1_key_w = ml_program.global_load @layer1_key_w : tensor<256x256xf32>
  %layer1_key_b = ml_program.global_load @layer1_key_b : tensor<256xf32>
  %40 = mpc.matmul %37#0, %layer1_key_w : tensor<8x128x256xf32>, tensor<256x256xf32>
  %41 = mpc.add %40, %layer1_key_b : tensor<8x128x256xf32>, tensor<256xf32>
  %layer1_value_w = ml_program.global_load @layer1_value_w : tensor<256x256xf32>
  %layer1_value_b = ml_program.global_load @layer1_value_b : tensor<256xf32>
  %42 = mpc.matmul %37#0, %layer1_value_w : tensor<8x128x256xf32>, tensor<256x256xf32>
  %43 = mpc.add %42, %layer1_value_b : tensor<8x128x256xf32>, tensor<256xf32>
  %44 = mpc.reshape %39 : tensor<8x128x256xf32> -> tensor<8x128x4x64xf32>
  %45 = mpc.transpose %44 {permutation = array<i64: 0, 2, 1, 3>} : tensor<8x128x4x64xf32>
  %46 = mpc.reshape %41 : tensor<8x128x256xf32> -> tensor<8x128x4x64xf32>
  %47 = mpc.transpose %46 {permutation = array<i64: 0, 2, 1, 3>} : tensor<8x128x4x64xf32>
  %48 = mpc.reshape %43 : tensor<8x128x256xf32> -> tensor<8x128x4x64xf32>
  %49 = mpc.transpose %48 {permutation = array<i64: 0, 2, 1, 3>} : tensor<8x128x4x64xf32>
  %50 = mpc.matmul %45, %47 {transpose_b} : tensor<8x4x128x64xf32>, tensor<8x4x128x64xf32>
  %51 = mpc.mul %50, %5 : tensor<8x4x128x128xf32>, tensor<f32>
  %52 = mpc.softmax %51 : tensor<8x4x128x128xf32>
  %53:2 = mpc.dropout %52 {p = 0.1, seed = 105} : tensor<8x4x128x128xf32>
  %54 = mpc.matmul %53#0, %49 : tensor<8x4x128x128xf32>, tensor<8x4x128x64xf32>
  %55 = mpc.transpose %54 {permutation = array<i64: 0, 2, 1, 3>} : tensor<8x4x128x64xf32>
  %56 = mpc.reshape %55 : tensor<8x128x4x64xf32> -> tensor<8x128x256xf32>
  %layer1_attention_out_w = ml_program.global_load @layer1_attention_out_w : tensor<256x256xf32>
  %layer1_attention_out_b = ml_program.global_load @layer1_attention_out_b : tensor<256xf32>
  %57 = mpc.matmul %56, %layer1_attention_out_w : tensor<8x128x256xf32>, tensor<256x256xf32>
  %58 = mpc.add %57, %layer1_attention_out_b : tensor<8x128x256xf32>, tensor<256xf32>
  %59:2 = mpc.dropout %58 {p = 0.1, seed = 106} : tensor<8x128x256xf32>
  %60 = mpc.add %59#0, %37#0 : tensor<8x128x256xf32>, tensor<8x128x256xf32>
  %layer1_attention_ln_gamma = ml_program.global_load @layer1_attention_ln_gamma : tensor<256xf32>
  %layer1_attention_ln_beta = ml_program.global_load @layer1_attention_ln_beta : tensor<256xf32>
  %61:3 = mpc.layer_norm %60, %layer1_attention_ln_gamma, %layer1_attention_ln_beta {epsilon = 1.0e-12} : tensor<8x128x256xf32>, tensor<256xf32>
  // Encoder layer 1: feed-forward.
  %layer1_intermediate_w = ml_program.global_load @layer1_intermediate_w : tensor<256x1024xf32>
  %layer1_intermediate_b = ml_program.global_load @layer1_intermediate_b : tensor<1024xf32>
  %62 = mpc.matmul %61#0, %layer1_intermediate_w : tensor<8x128x256xf32>, tensor<256x1024xf32>
  %63 = mpc.add %62, %layer1_intermediate_b : tensor<8x128x1024xf32>, tensor<1024xf32>
  %64 = mpc.gelu %63 : tensor<8x128x1024xf32>
  %layer1_output_w = ml_program.global_load @layer1_output_w : tensor<1024x256xf32>
  %layer1_output_b = ml_program.global_load @layer1_output_b : tensor<256xf32>
  %65 = mpc.matmul %64, %layer1_output_w : tensor<8x128x1024xf32>, tensor<1024x256xf32>
  %66 = mpc.add %65, %layer1_output_b : tensor<8x128x256xf32>, tensor<256xf32>
  %67:2 = mpc.dropout %66 {p = 0.1, seed = 107} : tensor<8x128x256xf32>
  %68 = mpc.add %67#0, %61#0 : tensor<8x128x256xf32>, tensor<8x128x256xf32>
  %layer1_output_ln_gamma = ml_program.global_load @layer1_output_ln_gamma : tensor<256xf32>
  %layer1_output_ln_beta = ml_program.global_load @layer1_output_ln_beta : tensor<256xf32>
  %69:3 = mpc.layer_norm %68, %layer1_output_ln_gamma, %layer1_output_ln_beta {epsilon = 1.0e-12} : tensor<8x128x256xf32>, tensor<256xf32>
  // Pooler on the first token, classifier, cross-entropy.
  %70 = mpc.slice %69#0 {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 8, 1, 256>} : tensor<8x128x256xf32>
  %71 = mpc.reshape %70 : tensor<8x1x256xf32> -> tensor<8x256xf32>
  %pooler_w = ml_program.global_load @pooler_w : tensor<256x256xf32>
  %pooler_b = ml_program.global_load @pooler_b : tensor<256xf32>
  %72 = mpc.matmul %71, %pooler_w : tensor<8x256xf32>, tensor<256x256xf32>
  %73 = mpc.add %72, %pooler_b : tensor<8x256xf32>, tensor<256xf32>
  %74 = mpc.tanh %73 : tensor<8x256xf32>
  %75:2 = mpc.dropout %74 {p = 0.1, seed = 108} : tensor<8x256xf32>
  %classifier_w = ml_program.global_load @classifier_w : tensor<256x2xf32>
  %classifier_b = ml_program.global_load @classifier_b : tensor<2xf32>
  %76 = mpc.matmul %75#0, %classifier_w : tensor<8x256xf32>, tensor<256x2xf32>
  %77 = mpc.add %76, %classifier_b : tensor<8x2xf32>, tensor<2xf32>
  %78 = mpc.cross_entropy %77, %labels : tensor<8x2xf32>, tensor<8xi32>
  return %78 : tensor<f32>
}
