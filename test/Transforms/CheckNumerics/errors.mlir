// What --mpc-check-numerics refuses.
// RUN: not mpc-opt %s --mpc-check-numerics=phases=sideways 2>&1 | FileCheck %s --check-prefix=PHASE
// PHASE: mpc-check-numerics: unknown phase 'sideways' (expected state, forward, backward, optimizer or eval)
// RUN: not mpc-opt %s "--mpc-check-numerics=phases=," 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: mpc-check-numerics: no phase to check (phases=)
// RUN: not mpc-opt %s --mpc-check-numerics=func=nope 2>&1 | FileCheck %s --check-prefix=NOSTEP
// NOSTEP: mpc-check-numerics: no training step @nope
// RUN: not mpc-opt %s --mpc-check-numerics --mpc-check-numerics 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: mpc-check-numerics: the module is already instrumented
// RUN: not mpc-opt %s --mpc-check-numerics=phases=optimizer 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: mpc-check-numerics: no floating-point result to check
// RUN: not mpc-opt %S/Inputs/two-blocks.mlir --mpc-check-numerics 2>&1 | FileCheck %s --check-prefix=TWOBLOCKS
// TWOBLOCKS: two-blocks.mlir:2:1: error: 'func.func' op mpc-check-numerics: the step must have a single block
// The lowering needs the records the pass makes.
// RUN: not mpc-opt %s --mpc-plan-memory --mpc-lower-to-runtime 2>&1 | FileCheck %s --check-prefix=LOWER
// LOWER: 'mpc.numerics_begin' op needs the global @mpc_numerics_first; run --mpc-check-numerics, which makes it

func.func @train_step(%x: tensor<4xf32>) -> tensor<f32> {
  mpc.numerics_begin {count = 1 : i64}
  %0 = mpc.exp %x : tensor<4xf32>
  %l = mpc.reduce_sum %0 {dims = array<i64: 0>} : tensor<4xf32>
  return %l : tensor<f32>
}
