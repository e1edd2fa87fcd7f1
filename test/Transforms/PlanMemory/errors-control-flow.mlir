// RUN: not mpc-opt %s --mpc-plan-memory 2>&1 | FileCheck %s
// CHECK: errors-control-flow.mlir:[[# @LINE + 1]]:1: error: mpc-plan-memory: graphs with control flow are not supported (one block per function)
func.func @branches(%x: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^next
^next:
  return %x : tensor<4xf32>
}
