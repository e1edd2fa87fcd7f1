// RUN: not mpc-opt %s --mpc-plan-memory="alignment=48" 2>&1 | FileCheck %s --check-prefix=ALIGN
// ALIGN: error: mpc-plan-memory: alignment must be a power of two, got 48
// RUN: not mpc-opt %s --mpc-plan-memory="report=%t.missing/m.json" 2>&1 | FileCheck %s --check-prefix=REPORT
// REPORT: error: mpc-plan-memory: cannot open report output: {{.*}}m.json
// RUN: not mpc-opt %s --mpc-plan-memory="guard=-8" 2>&1 | FileCheck %s --check-prefix=GUARD
// RUN: not mpc-opt %s --mpc-plan-memory="guard=2000000000" 2>&1 | FileCheck %s --check-prefix=GUARD-BIG
// GUARD: error: mpc-plan-memory: guard must be between 0 and 2^30 bytes, got -8
// GUARD-BIG: error: mpc-plan-memory: guard must be between 0 and 2^30 bytes, got 2000000000
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = mpc.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
