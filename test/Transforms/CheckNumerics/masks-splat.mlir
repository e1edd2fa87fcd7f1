// A mask that is a splat is judged by its one value: a 16 GiB splat of
// -inf (4.3e9 elements) is marked at once, where reading it element by
// element took minutes (the pipeline fuzzer's seed sweep timed out on the
// splat-constant tests). The masked sum is not checked, the softmax is.
// RUN: timeout 60 mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-check-numerics | FileCheck %s

// CHECK-LABEL: mpc.numerics_ops = [
// CHECK-SAME: op = "mpc.matmul", phase = "forward"
// CHECK-NOT: op = "mpc.add", phase = "forward"
// CHECK-SAME: op = "mpc.softmax", phase = "forward"

ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<8x65536xf32>

func.func @loss(%x: tensor<65536x8xf32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<8x65536xf32>
  %s = mpc.matmul %x, %w : tensor<65536x8xf32>, tensor<8x65536xf32>
  %big = mpc.constant dense<0xFF800000> : tensor<65536x65536xf32>
  %a = mpc.add %s, %big : tensor<65536x65536xf32>, tensor<65536x65536xf32>
  %p = mpc.softmax %a : tensor<65536x65536xf32>
  %l = mpc.reduce_mean %p {dims = array<i64: 0, 1>} : tensor<65536x65536xf32>
  return %l : tensor<f32>
}
