// An optimizer update takes its gradient as it comes where the runtime has
// a kernel for the pair (the same type; f32 parameters with f16 or bf16
// gradients; f16 or bf16 parameters with f32 gradients). Otherwise the
// gradient is widened first, as autograd casts a gradient back to its
// parameter's type: to f32 for a 16-bit parameter of the other 16-bit
// type (a f16 model trained under bf16), to f64 for an f64 parameter.
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 dtype=bf16 alignment-remarks=false" | FileCheck %s
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 dtype=bf16 alignment-remarks=false" --mpc-plan-memory --mpc-lower-to-runtime="entry=step" | FileCheck %s --check-prefix=LOWERED

ml_program.global private mutable @w16(#mpc.init<zeros>) : tensor<8xf16>
ml_program.global private mutable @wbf(#mpc.init<zeros>) : tensor<8xbf16>
ml_program.global private mutable @mbf(#mpc.init<zeros>) : tensor<8xbf16>
ml_program.global private mutable @vbf(#mpc.init<zeros>) : tensor<8xbf16>
ml_program.global private mutable @w32(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @w64(#mpc.init<zeros>) : tensor<8xf64>

// CHECK-LABEL: func.func @step
// CHECK-DAG: %[[G16:.*]] = mpc.cast %arg0 : tensor<8xbf16> -> tensor<8xf32>
// CHECK-DAG: %[[GBF:.*]] = mpc.cast %arg1 : tensor<8xf16> -> tensor<8xf32>
// CHECK-DAG: %[[G64:.*]] = mpc.cast %arg1 : tensor<8xf16> -> tensor<8xf64>
// CHECK-DAG: mpc.sgd_update %{{.*}}, %[[G16]] lr(%arg2) : tensor<8xf16>, tensor<8xf32>
// CHECK-DAG: mpc.adam_update %{{.*}}, %[[GBF]], {{.*}} : tensor<8xbf16>, tensor<8xf32>
// CHECK-DAG: mpc.sgd_update %{{.*}}, %arg1 lr(%arg2) : tensor<8xf32>, tensor<8xf16>
// CHECK-DAG: mpc.sgd_update %{{.*}}, %[[G64]] lr(%arg2) : tensor<8xf64>, tensor<8xf64>
// Each lowers to a kernel (the SGD updates to one multi-tensor launch).
// LOWERED: call @mpcrt_sgd_update_multi(
// LOWERED: call @mpcrt_adam_update_bf16_f32(
func.func @step(%gbf: tensor<8xbf16>, %g16: tensor<8xf16>, %lr: tensor<f32>, %t: tensor<i32>) -> tensor<f32> {
  %w16 = ml_program.global_load @w16 : tensor<8xf16>
  %n16 = mpc.sgd_update %w16, %gbf lr(%lr) : tensor<8xf16>, tensor<8xbf16>
  ml_program.global_store @w16 = %n16 : tensor<8xf16>
  %wbf = ml_program.global_load @wbf : tensor<8xbf16>
  %m = ml_program.global_load @mbf : tensor<8xbf16>
  %v = ml_program.global_load @vbf : tensor<8xbf16>
  %nbf, %m2, %v2 = mpc.adam_update %wbf, %g16, %m, %v lr(%lr) step(%t) : tensor<8xbf16>, tensor<8xf16>
  ml_program.global_store @wbf = %nbf : tensor<8xbf16>
  ml_program.global_store @mbf = %m2 : tensor<8xbf16>
  ml_program.global_store @vbf = %v2 : tensor<8xbf16>
  %w32 = ml_program.global_load @w32 : tensor<8xf32>
  %n32 = mpc.sgd_update %w32, %g16 lr(%lr) : tensor<8xf32>, tensor<8xf16>
  ml_program.global_store @w32 = %n32 : tensor<8xf32>
  %w64 = ml_program.global_load @w64 : tensor<8xf64>
  %n64 = mpc.sgd_update %w64, %g16 lr(%lr) : tensor<8xf64>, tensor<8xf16>
  ml_program.global_store @w64 = %n64 : tensor<8xf64>
  %zero = mpc.constant dense<0.0> : tensor<f32>
  return %zero : tensor<f32>
}
