// Casts of one value to one type are merged (they are Pure: CSE shares them).
// RUN: mpc-opt %s -cse | FileCheck %s

// CHECK-LABEL: func @duplicate_casts
// CHECK-COUNT-1: mpc.cast
// CHECK-NOT: mpc.cast
func.func @duplicate_casts(%x: tensor<4xf32>) -> (tensor<4xf16>, tensor<4xf16>) {
  %0 = mpc.cast %x : tensor<4xf32> -> tensor<4xf16>
  %1 = mpc.cast %x : tensor<4xf32> -> tensor<4xf16>
  return %0, %1 : tensor<4xf16>, tensor<4xf16>
}
