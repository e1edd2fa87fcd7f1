// A UNet-style convolutional network for binary segmentation, written as a
// forward pass and loss over parameter globals. NHWC activations, OHWI
// filters. Two down stages (two 3x3 conv + BatchNorm + ReLU, then 2x2 max
// pooling; 16 and 32 channels), a 64-channel bottleneck, and two up stages:
// a stride-2 transposed convolution, then nearest upsampling + 3x3 conv, each
// concatenated with the matching encoder output. A 1x1 convolution gives one
// logit per pixel, trained with BCE-with-logits against a {0, 1} mask.
// BatchNorm runs in training mode and writes its running statistics back.
// Batch 8, 64x64 RGB images.
//
//   mpc-opt examples/unet.mlir --mpc-verify-graph --mpc-graph-summary

ml_program.global private mutable @down1_conv1_w(#mpc.init<kaiming_uniform, seed = 1>) : tensor<16x3x3x3xf32>
ml_program.global private mutable @down1_conv1_bn_gamma(#mpc.init<ones>) : tensor<16xf32>
ml_program.global private mutable @down1_conv1_bn_beta(#mpc.init<zeros>) : tensor<16xf32>
ml_program.global private mutable @down1_conv1_bn_running_mean(#mpc.init<zeros>) : tensor<16xf32>
ml_program.global private mutable @down1_conv1_bn_running_var(#mpc.init<ones>) : tensor<16xf32>
ml_program.global private mutable @down1_conv2_w(#mpc.init<kaiming_uniform, seed = 4>) : tensor<16x3x3x16xf32>
ml_program.global private mutable @down1_conv2_bn_gamma(#mpc.init<ones>) : tensor<16xf32>
ml_program.global private mutable @down1_conv2_bn_beta(#mpc.init<zeros>) : tensor<16xf32>
ml_program.global private mutable @down1_conv2_bn_running_mean(#mpc.init<zeros>) : tensor<16xf32>
ml_program.global private mutable @down1_conv2_bn_running_var(#mpc.init<ones>) : tensor<16xf32>
ml_program.global private mutable @down2_conv1_w(#mpc.init<kaiming_uniform, seed = 7>) : tensor<32x3x3x16xf32>
ml_program.global private mutable @down2_conv1_bn_gamma(#mpc.init<ones>) : tensor<32xf32>
ml_program.global private mutable @down2_conv1_bn_beta(#mpc.init<zeros>) : tensor<32xf32>
ml_program.global private mutable @down2_conv1_bn_running_mean(#mpc.init<zeros>) : tensor<32xf32>
ml_program.global private mutable @down2_conv1_bn_running_var(#mpc.init<ones>) : tensor<32xf32>
ml_program.global private mutable @down2_conv2_w(#mpc.init<kaiming_uniform, seed = 10>) : tensor<32x3x3x32xf32>
ml_program.global private mutable @down2_conv2_bn_gamma(#mpc.init<ones>) : tensor<32xf32>
ml_program.global private mutable @down2_conv2_bn_beta(#mpc.init<zeros>) : tensor<32xf32>
ml_program.global private mutable @down2_conv2_bn_running_mean(#mpc.init<zeros>) : tensor<32xf32>
ml_program.global private mutable @down2_conv2_bn_running_var(#mpc.init<ones>) : tensor<32xf32>
ml_program.global private mutable @bottleneck_conv1_w(#mpc.init<kaiming_uniform, seed = 13>) : tensor<64x3x3x32xf32>
ml_program.global private mutable @bottleneck_conv1_bn_gamma(#mpc.init<ones>) : tensor<64xf32>
ml_program.global private mutable @bottleneck_conv1_bn_beta(#mpc.init<zeros>) : tensor<64xf32>
ml_program.global private mutable @bottleneck_conv1_bn_running_mean(#mpc.init<zeros>) : tensor<64xf32>
ml_program.global private mutable @bottleneck_conv1_bn_running_var(#mpc.init<ones>) : tensor<64xf32>
ml_program.global private mutable @bottleneck_conv2_w(#mpc.init<kaiming_uniform, seed = 16>) : tensor<64x3x3x64xf32>
ml_program.global private mutable @bottleneck_conv2_bn_gamma(#mpc.init<ones>) : tensor<64xf32>
ml_program.global private mutable @bottleneck_conv2_bn_beta(#mpc.init<zeros>) : tensor<64xf32>
ml_program.global private mutable @bottleneck_conv2_bn_running_mean(#mpc.init<zeros>) : tensor<64xf32>
ml_program.global private mutable @bottleneck_conv2_bn_running_var(#mpc.init<ones>) : tensor<64xf32>
ml_program.global private mutable @up1_w(#mpc.init<kaiming_uniform, seed = 19>) : tensor<64x2x2x32xf32>
ml_program.global private mutable @up1_conv1_w(#mpc.init<kaiming_uniform, seed = 20>) : tensor<32x3x3x64xf32>
ml_program.global private mutable @up1_conv1_bn_gamma(#mpc.init<ones>) : tensor<32xf32>
ml_program.global private mutable @up1_conv1_bn_beta(#mpc.init<zeros>) : tensor<32xf32>
ml_program.global private mutable @up1_conv1_bn_running_mean(#mpc.init<zeros>) : tensor<32xf32>
ml_program.global private mutable @up1_conv1_bn_running_var(#mpc.init<ones>) : tensor<32xf32>
ml_program.global private mutable @up1_conv2_w(#mpc.init<kaiming_uniform, seed = 23>) : tensor<32x3x3x32xf32>
ml_program.global private mutable @up1_conv2_bn_gamma(#mpc.init<ones>) : tensor<32xf32>
ml_program.global private mutable @up1_conv2_bn_beta(#mpc.init<zeros>) : tensor<32xf32>
ml_program.global private mutable @up1_conv2_bn_running_mean(#mpc.init<zeros>) : tensor<32xf32>
ml_program.global private mutable @up1_conv2_bn_running_var(#mpc.init<ones>) : tensor<32xf32>
ml_program.global private mutable @up2_reduce_w(#mpc.init<kaiming_uniform, seed = 26>) : tensor<16x3x3x32xf32>
ml_program.global private mutable @up2_reduce_bn_gamma(#mpc.init<ones>) : tensor<16xf32>
ml_program.global private mutable @up2_reduce_bn_beta(#mpc.init<zeros>) : tensor<16xf32>
ml_program.global private mutable @up2_reduce_bn_running_mean(#mpc.init<zeros>) : tensor<16xf32>
ml_program.global private mutable @up2_reduce_bn_running_var(#mpc.init<ones>) : tensor<16xf32>
ml_program.global private mutable @up2_conv1_w(#mpc.init<kaiming_uniform, seed = 29>) : tensor<16x3x3x32xf32>
ml_program.global private mutable @up2_conv1_bn_gamma(#mpc.init<ones>) : tensor<16xf32>
ml_program.global private mutable @up2_conv1_bn_beta(#mpc.init<zeros>) : tensor<16xf32>
ml_program.global private mutable @up2_conv1_bn_running_mean(#mpc.init<zeros>) : tensor<16xf32>
ml_program.global private mutable @up2_conv1_bn_running_var(#mpc.init<ones>) : tensor<16xf32>
ml_program.global private mutable @up2_conv2_w(#mpc.init<kaiming_uniform, seed = 32>) : tensor<16x3x3x16xf32>
ml_program.global private mutable @up2_conv2_bn_gamma(#mpc.init<ones>) : tensor<16xf32>
ml_program.global private mutable @up2_conv2_bn_beta(#mpc.init<zeros>) : tensor<16xf32>
ml_program.global private mutable @up2_conv2_bn_running_mean(#mpc.init<zeros>) : tensor<16xf32>
ml_program.global private mutable @up2_conv2_bn_running_var(#mpc.init<ones>) : tensor<16xf32>
ml_program.global private mutable @head_w(#mpc.init<xavier_uniform, seed = 35>) : tensor<1x1x1x16xf32>
ml_program.global private mutable @head_b(#mpc.init<zeros>) : tensor<1xf32>

func.func @loss(%image: tensor<8x64x64x3xf32>, %mask: tensor<8x64x64x1xf32>) -> tensor<f32> {
  // Encoder: two down stages.
  %down1_conv1_w = ml_program.global_load @down1_conv1_w : tensor<16x3x3x3xf32>
  %1 = mpc.conv2d %image, %down1_conv1_w {padding = array<i64: 1, 1>} : tensor<8x64x64x3xf32>, tensor<16x3x3x3xf32>
  %down1_conv1_bn_gamma = ml_program.global_load @down1_conv1_bn_gamma : tensor<16xf32>
  %down1_conv1_bn_beta = ml_program.global_load @down1_conv1_bn_beta : tensor<16xf32>
  %down1_conv1_bn_running_mean = ml_program.global_load @down1_conv1_bn_running_mean : tensor<16xf32>
  %down1_conv1_bn_running_var = ml_program.global_load @down1_conv1_bn_running_var : tensor<16xf32>
  %2:5 = mpc.batch_norm %1, %down1_conv1_bn_gamma, %down1_conv1_bn_beta, %down1_conv1_bn_running_mean, %down1_conv1_bn_running_var : tensor<8x64x64x16xf32>, tensor<16xf32>
  ml_program.global_store @down1_conv1_bn_running_mean = %2#1 : tensor<16xf32>
  ml_program.global_store @down1_conv1_bn_running_var = %2#2 : tensor<16xf32>
  %3 = mpc.relu %2#0 : tensor<8x64x64x16xf32>
  %down1_conv2_w = ml_program.global_load @down1_conv2_w : tensor<16x3x3x16xf32>
  %4 = mpc.conv2d %3, %down1_conv2_w {padding = array<i64: 1, 1>} : tensor<8x64x64x16xf32>, tensor<16x3x3x16xf32>
  %down1_conv2_bn_gamma = ml_program.global_load @down1_conv2_bn_gamma : tensor<16xf32>
  %down1_conv2_bn_beta = ml_program.global_load @down1_conv2_bn_beta : tensor<16xf32>
  %down1_conv2_bn_running_mean = ml_program.global_load @down1_conv2_bn_running_mean : tensor<16xf32>
  %down1_conv2_bn_running_var = ml_program.global_load @down1_conv2_bn_running_var : tensor<16xf32>
  %5:5 = mpc.batch_norm %4, %down1_conv2_bn_gamma, %down1_conv2_bn_beta, %down1_conv2_bn_running_mean, %down1_conv2_bn_running_var : tensor<8x64x64x16xf32>, tensor<16xf32>
  ml_program.global_store @down1_conv2_bn_running_mean = %5#1 : tensor<16xf32>
  ml_program.global_store @down1_conv2_bn_running_var = %5#2 : tensor<16xf32>
  %6 = mpc.relu %5#0 : tensor<8x64x64x16xf32>
  %7 = mpc.max_pool2d %6 {kernel = array<i64: 2, 2>} : tensor<8x64x64x16xf32>
  %down2_conv1_w = ml_program.global_load @down2_conv1_w : tensor<32x3x3x16xf32>
  %8 = mpc.conv2d %7, %down2_conv1_w {padding = array<i64: 1, 1>} : tensor<8x32x32x16xf32>, tensor<32x3x3x16xf32>
  %down2_conv1_bn_gamma = ml_program.global_load @down2_conv1_bn_gamma : tensor<32xf32>
  %down2_conv1_bn_beta = ml_program.global_load @down2_conv1_bn_beta : tensor<32xf32>
  %down2_conv1_bn_running_mean = ml_program.global_load @down2_conv1_bn_running_mean : tensor<32xf32>
  %down2_conv1_bn_running_var = ml_program.global_load @down2_conv1_bn_running_var : tensor<32xf32>
  %9:5 = mpc.batch_norm %8, %down2_conv1_bn_gamma, %down2_conv1_bn_beta, %down2_conv1_bn_running_mean, %down2_conv1_bn_running_var : tensor<8x32x32x32xf32>, tensor<32xf32>
  ml_program.global_store @down2_conv1_bn_running_mean = %9#1 : tensor<32xf32>
  ml_program.global_store @down2_conv1_bn_running_var = %9#2 : tensor<32xf32>
  %10 = mpc.relu %9#0 : tensor<8x32x32x32xf32>
  %down2_conv2_w = ml_program.global_load @down2_conv2_w : tensor<32x3x3x32xf32>
  %11 = mpc.conv2d %10, %down2_conv2_w {padding = array<i64: 1, 1>} : tensor<8x32x32x32xf32>, tensor<32x3x3x32xf32>
  %down2_conv2_bn_gamma = ml_program.global_load @down2_conv2_bn_gamma : tensor<32xf32>
  %down2_conv2_bn_beta = ml_program.global_load @down2_conv2_bn_beta : tensor<32xf32>
  %down2_conv2_bn_running_mean = ml_program.global_load @down2_conv2_bn_running_mean : tensor<32xf32>
  %down2_conv2_bn_running_var = ml_program.global_load @down2_conv2_bn_running_var : tensor<32xf32>
  %12:5 = mpc.batch_norm %11, %down2_conv2_bn_gamma, %down2_conv2_bn_beta, %down2_conv2_bn_running_mean, %down2_conv2_bn_running_var : tensor<8x32x32x32xf32>, tensor<32xf32>
  ml_program.global_store @down2_conv2_bn_running_mean = %12#1 : tensor<32xf32>
  ml_program.global_store @down2_conv2_bn_running_var = %12#2 : tensor<32xf32>
  %13 = mpc.relu %12#0 : tensor<8x32x32x32xf32>
  %14 = mpc.max_pool2d %13 {kernel = array<i64: 2, 2>} : tensor<8x32x32x32xf32>
  // Bottleneck.
  %bottleneck_conv1_w = ml_program.global_load @bottleneck_conv1_w : tensor<64x3x3x32xf32>
  %15 = mpc.conv2d %14, %bottleneck_conv1_w {padding = array<i64: 1, 1>} : tensor<8x16x16x32xf32>, tensor<64x3x3x32xf32>
  %bottleneck_conv1_bn_gamma = ml_program.global_load @bottleneck_conv1_bn_gamma : tensor<64xf32>
  %bottleneck_conv1_bn_beta = ml_program.global_load @bottleneck_conv1_bn_beta : tensor<64xf32>
  %bottleneck_conv1_bn_running_mean = ml_program.global_load @bottleneck_conv1_bn_running_mean : tensor<64xf32>
  %bottleneck_conv1_bn_running_var = ml_program.global_load @bottleneck_conv1_bn_running_var : tensor<64xf32>
  %16:5 = mpc.batch_norm %15, %bottleneck_conv1_bn_gamma, %bottleneck_conv1_bn_beta, %bottleneck_conv1_bn_running_mean, %bottleneck_conv1_bn_running_var : tensor<8x16x16x64xf32>, tensor<64xf32>
  ml_program.global_store @bottleneck_conv1_bn_running_mean = %16#1 : tensor<64xf32>
  ml_program.global_store @bottleneck_conv1_bn_running_var = %16#2 : tensor<64xf32>
  %17 = mpc.relu %16#0 : tensor<8x16x16x64xf32>
  %bottleneck_conv2_w = ml_program.global_load @bottleneck_conv2_w : tensor<64x3x3x64xf32>
  %18 = mpc.conv2d %17, %bottleneck_conv2_w {padding = array<i64: 1, 1>} : tensor<8x16x16x64xf32>, tensor<64x3x3x64xf32>
  %bottleneck_conv2_bn_gamma = ml_program.global_load @bottleneck_conv2_bn_gamma : tensor<64xf32>
  %bottleneck_conv2_bn_beta = ml_program.global_load @bottleneck_conv2_bn_beta : tensor<64xf32>
  %bottleneck_conv2_bn_running_mean = ml_program.global_load @bottleneck_conv2_bn_running_mean : tensor<64xf32>
  %bottleneck_conv2_bn_running_var = ml_program.global_load @bottleneck_conv2_bn_running_var : tensor<64xf32>
  %19:5 = mpc.batch_norm %18, %bottleneck_conv2_bn_gamma, %bottleneck_conv2_bn_beta, %bottleneck_conv2_bn_running_mean, %bottleneck_conv2_bn_running_var : tensor<8x16x16x64xf32>, tensor<64xf32>
  ml_program.global_store @bottleneck_conv2_bn_running_mean = %19#1 : tensor<64xf32>
  ml_program.global_store @bottleneck_conv2_bn_running_var = %19#2 : tensor<64xf32>
  %20 = mpc.relu %19#0 : tensor<8x16x16x64xf32>
  // Decoder stage 1: transposed convolution, skip connection.
  %up1_w = ml_program.global_load @up1_w : tensor<64x2x2x32xf32>
  %21 = mpc.conv_transpose2d %20, %up1_w {stride = array<i64: 2, 2>} : tensor<8x16x16x64xf32>, tensor<64x2x2x32xf32>
  %22 = mpc.concat %21, %13 {axis = 3} : tensor<8x32x32x32xf32>, tensor<8x32x32x32xf32>
  %up1_conv1_w = ml_program.global_load @up1_conv1_w : tensor<32x3x3x64xf32>
  %23 = mpc.conv2d %22, %up1_conv1_w {padding = array<i64: 1, 1>} : tensor<8x32x32x64xf32>, tensor<32x3x3x64xf32>
  %up1_conv1_bn_gamma = ml_program.global_load @up1_conv1_bn_gamma : tensor<32xf32>
  %up1_conv1_bn_beta = ml_program.global_load @up1_conv1_bn_beta : tensor<32xf32>
  %up1_conv1_bn_running_mean = ml_program.global_load @up1_conv1_bn_running_mean : tensor<32xf32>
  %up1_conv1_bn_running_var = ml_program.global_load @up1_conv1_bn_running_var : tensor<32xf32>
  %24:5 = mpc.batch_norm %23, %up1_conv1_bn_gamma, %up1_conv1_bn_beta, %up1_conv1_bn_running_mean, %up1_conv1_bn_running_var : tensor<8x32x32x32xf32>, tensor<32xf32>
  ml_program.global_store @up1_conv1_bn_running_mean = %24#1 : tensor<32xf32>
  ml_program.global_store @up1_conv1_bn_running_var = %24#2 : tensor<32xf32>
  %25 = mpc.relu %24#0 : tensor<8x32x32x32xf32>
  %up1_conv2_w = ml_program.global_load @up1_conv2_w : tensor<32x3x3x32xf32>
  %26 = mpc.conv2d %25, %up1_conv2_w {padding = array<i64: 1, 1>} : tensor<8x32x32x32xf32>, tensor<32x3x3x32xf32>
  %up1_conv2_bn_gamma = ml_program.global_load @up1_conv2_bn_gamma : tensor<32xf32>
  %up1_conv2_bn_beta = ml_program.global_load @up1_conv2_bn_beta : tensor<32xf32>
  %up1_conv2_bn_running_mean = ml_program.global_load @up1_conv2_bn_running_mean : tensor<32xf32>
  %up1_conv2_bn_running_var = ml_program.global_load @up1_conv2_bn_running_var : tensor<32xf32>
  %27:5 = mpc.batch_norm %26, %up1_conv2_bn_gamma, %up1_conv2_bn_beta, %up1_conv2_bn_running_mean, %up1_conv2_bn_running_var : tensor<8x32x32x32xf32>, tensor<32xf32>
  ml_program.global_store @up1_conv2_bn_running_mean = %27#1 : tensor<32xf32>
  ml_program.global_store @up1_conv2_bn_running_var = %27#2 : tensor<32xf32>
  %28 = mpc.relu %27#0 : tensor<8x32x32x32xf32>
  // Decoder stage 2: nearest upsampling, skip connection.
  %29 = mpc.upsample_nearest2d %28 {scale = array<i64: 2, 2>} : tensor<8x32x32x32xf32>
  %up2_reduce_w = ml_program.global_load @up2_reduce_w : tensor<16x3x3x32xf32>
  %30 = mpc.conv2d %29, %up2_reduce_w {padding = array<i64: 1, 1>} : tensor<8x64x64x32xf32>, tensor<16x3x3x32xf32>
  %up2_reduce_bn_gamma = ml_program.global_load @up2_reduce_bn_gamma : tensor<16xf32>
  %up2_reduce_bn_beta = ml_program.global_load @up2_reduce_bn_beta : tensor<16xf32>
  %up2_reduce_bn_running_mean = ml_program.global_load @up2_reduce_bn_running_mean : tensor<16xf32>
  %up2_reduce_bn_running_var = ml_program.global_load @up2_reduce_bn_running_var : tensor<16xf32>
  %31:5 = mpc.batch_norm %30, %up2_reduce_bn_gamma, %up2_reduce_bn_beta, %up2_reduce_bn_running_mean, %up2_reduce_bn_running_var : tensor<8x64x64x16xf32>, tensor<16xf32>
  ml_program.global_store @up2_reduce_bn_running_mean = %31#1 : tensor<16xf32>
  ml_program.global_store @up2_reduce_bn_running_var = %31#2 : tensor<16xf32>
  %32 = mpc.relu %31#0 : tensor<8x64x64x16xf32>
  %33 = mpc.concat %32, %6 {axis = 3} : tensor<8x64x64x16xf32>, tensor<8x64x64x16xf32>
  %up2_conv1_w = ml_program.global_load @up2_conv1_w : tensor<16x3x3x32xf32>
  %34 = mpc.conv2d %33, %up2_conv1_w {padding = array<i64: 1, 1>} : tensor<8x64x64x32xf32>, tensor<16x3x3x32xf32>
  %up2_conv1_bn_gamma = ml_program.global_load @up2_conv1_bn_gamma : tensor<16xf32>
  %up2_conv1_bn_beta = ml_program.global_load @up2_conv1_bn_beta : tensor<16xf32>
  %up2_conv1_bn_running_mean = ml_program.global_load @up2_conv1_bn_running_mean : tensor<16xf32>
  %up2_conv1_bn_running_var = ml_program.global_load @up2_conv1_bn_running_var : tensor<16xf32>
  %35:5 = mpc.batch_norm %34, %up2_conv1_bn_gamma, %up2_conv1_bn_beta, %up2_conv1_bn_running_mean, %up2_conv1_bn_running_var : tensor<8x64x64x16xf32>, tensor<16xf32>
  ml_program.global_store @up2_conv1_bn_running_mean = %35#1 : tensor<16xf32>
  ml_program.global_store @up2_conv1_bn_running_var = %35#2 : tensor<16xf32>
  %36 = mpc.relu %35#0 : tensor<8x64x64x16xf32>
  %up2_conv2_w = ml_program.global_load @up2_conv2_w : tensor<16x3x3x16xf32>
  %37 = mpc.conv2d %36, %up2_conv2_w {padding = array<i64: 1, 1>} : tensor<8x64x64x16xf32>, tensor<16x3x3x16xf32>
  %up2_conv2_bn_gamma = ml_program.global_load @up2_conv2_bn_gamma : tensor<16xf32>
  %up2_conv2_bn_beta = ml_program.global_load @up2_conv2_bn_beta : tensor<16xf32>
  %up2_conv2_bn_running_mean = ml_program.global_load @up2_conv2_bn_running_mean : tensor<16xf32>
  %up2_conv2_bn_running_var = ml_program.global_load @up2_conv2_bn_running_var : tensor<16xf32>
  %38:5 = mpc.batch_norm %37, %up2_conv2_bn_gamma, %up2_conv2_bn_beta, %up2_conv2_bn_running_mean, %up2_conv2_bn_running_var : tensor<8x64x64x16xf32>, tensor<16xf32>
  ml_program.global_store @up2_conv2_bn_running_mean = %38#1 : tensor<16xf32>
  ml_program.global_store @up2_conv2_bn_running_var = %38#2 : tensor<16xf32>
  %39 = mpc.relu %38#0 : tensor<8x64x64x16xf32>
  // Head: 1x1 convolution to one logit per pixel, BCE with logits.
  %head_w = ml_program.global_load @head_w : tensor<1x1x1x16xf32>
  %head_b = ml_program.global_load @head_b : tensor<1xf32>
  %40 = mpc.conv2d %39, %head_w : tensor<8x64x64x16xf32>, tensor<1x1x1x16xf32>
  %41 = mpc.add %40, %head_b : tensor<8x64x64x1xf32>, tensor<1xf32>
  %42 = mpc.bce_with_logits %41, %mask : tensor<8x64x64x1xf32>, tensor<8x64x64x1xf32>
  return %42 : tensor<f32>
}
