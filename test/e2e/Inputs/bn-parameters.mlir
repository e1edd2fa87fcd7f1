// A batch norm of 128 channels with parameters of type PARAM (sed
// replaces it): gamma 1 and beta 0, exact in every float type, so the
// step's values do not depend on PARAM. The statistics, computed and saved
// in f32, are 512 bytes each; as buffers of f16 parameters' type they
// were 256, and the backward read another op's bytes for half the
// channels' inverse standard deviations.
ml_program.global private mutable @x(#mpc.init<uniform, seed = 3, low = -1.0, high = 1.0>) : tensor<16x128xf32>
ml_program.global private @r(#mpc.init<uniform, seed = 4, low = -1.0, high = 1.0>) : tensor<16x128xf32>
func.func @loss(%d: tensor<1xf32>) -> tensor<f32> {
  %x = ml_program.global_load @x : tensor<16x128xf32>
  %r = ml_program.global_load @r : tensor<16x128xf32>
  %h = mpc.cast %x : tensor<16x128xf32> -> tensor<16x128xf16>
  %g = mpc.constant dense<1.0> : tensor<128xPARAM>
  %b = mpc.constant dense<0.0> : tensor<128xPARAM>
  %y, %nm, %nv, %sm, %si = mpc.batch_norm %h, %g, %b, %b, %g : tensor<16x128xf16>, tensor<128xPARAM>
  %a = mpc.relu %y : tensor<16x128xf16>
  %z = mpc.cast %a : tensor<16x128xf16> -> tensor<16x128xf32>
  %w = mpc.mul %z, %r : tensor<16x128xf32>, tensor<16x128xf32>
  %l = mpc.reduce_sum %w {dims = array<i64: 0, 1>} : tensor<16x128xf32>
  return %l : tensor<f32>
}
