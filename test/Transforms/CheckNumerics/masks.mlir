// Values that hold infinities by design are not checked: a constant with
// an infinity, a global whose initial value holds one (a registered mask
// buffer), and what carries their infinities on (a where choosing one, a
// sum with one, a move or cast of one): the masked scores of an
// attention. Each would otherwise be the step's first non-finite value at
// every step (nn.Transformer's causal mask is torch.triu of -inf;
// nn.MultiheadAttention turns a key padding mask into a where of -inf).
// The products before them and the softmax after them are checked, so an
// overflow in the scores is still named at its product, and a NaN at the
// softmax (a row masked whole, a NaN in the scores).
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-check-numerics | FileCheck %s
// RUN: mpc-opt %s --mpc-autodiff --mpc-optimizer --mpc-assign-precision="level=O2 alignment-remarks=false" --mpc-loss-scaling --canonicalize --cse --mpc-check-numerics | FileCheck %s --check-prefix=O2

// The weight, the query's product, its bias add (a finite constant is no
// reason to skip), the scores' product, then the softmax: not the where,
// the frozen mask's load or the adds of the masks.
// CHECK-LABEL: mpc.numerics_ops = [
// CHECK-SAME: loc = "{{[^"]*}}masks.mlir:[[#@LINE+26]]:8", op = "ml_program.global_load", phase = "state"
// CHECK-SAME: loc = "{{[^"]*}}masks.mlir:[[#@LINE+26]]:8", op = "mpc.matmul", phase = "forward"
// CHECK-SAME: loc = "{{[^"]*}}masks.mlir:[[#@LINE+27]]:9", op = "mpc.add", phase = "forward"
// CHECK-SAME: loc = "{{[^"]*}}masks.mlir:[[#@LINE+27]]:8", op = "mpc.matmul", phase = "forward"
// CHECK-NOT: op = "mpc.where"
// CHECK-NOT: op = "mpc.add"
// CHECK-SAME: loc = "{{[^"]*}}masks.mlir:[[#@LINE+31]]:8", op = "mpc.softmax", phase = "forward"
// CHECK-SAME: ]

// At O2 the masks' casts to f16 carry their infinities too: the step's
// forward checks are the same ops.
// O2-LABEL: mpc.numerics_ops = [
// O2-NOT: op = "mpc.where"
// O2-NOT: masks.mlir:[[#@LINE+23]]:8", op = "mpc.add"
// O2-NOT: masks.mlir:[[#@LINE+22]]:8", op = "mpc.add"
// O2: op = "mpc.softmax", phase = "forward"

// Without the infinities, the same masks are checked.
// RUN: sed 's/0xFF800000/-1.0e+04/g' %s | mpc-opt --mpc-autodiff --mpc-optimizer --mpc-check-numerics | FileCheck %s --check-prefix=FINITE
// FINITE: op = "mpc.where", phase = "forward"
// FINITE-SAME: op = "mpc.add", phase = "forward"

ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<8x8xf32>
ml_program.global private mutable @causal(dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>) : tensor<4x4xf32> {mpc.frozen}

func.func @loss(%x: tensor<4x8xf32>, %pad: tensor<4x4xi1>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<8x8xf32>
  %q = mpc.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %bias = mpc.constant dense<0.5> : tensor<8xf32>
  %qb = mpc.add %q, %bias : tensor<4x8xf32>, tensor<8xf32>
  %s = mpc.matmul %qb, %x {transpose_b} : tensor<4x8xf32>, tensor<4x8xf32>
  %ninf = mpc.constant dense<0xFF800000> : tensor<f32>
  %zero = mpc.constant dense<0.0> : tensor<f32>
  %padmask = mpc.where %pad, %ninf, %zero : tensor<4x4xi1>, tensor<f32>, tensor<f32>
  %causal = ml_program.global_load @causal : tensor<4x4xf32>
  %m = mpc.add %padmask, %causal : tensor<4x4xf32>, tensor<4x4xf32>
  %a = mpc.add %s, %m : tensor<4x4xf32>, tensor<4x4xf32>
  %p = mpc.softmax %a : tensor<4x4xf32>
  %l = mpc.reduce_mean %p {dims = array<i64: 0, 1>} : tensor<4x4xf32>
  return %l : tensor<f32>
}
