// Every buffer starts at a multiple of the alignment (256 by default).
// RUN: mpc-opt %s --mpc-plan-memory | FileCheck %s --check-prefix=A256
// RUN: mpc-opt %s --mpc-plan-memory="alignment=64" | FileCheck %s --check-prefix=A64

// Three live 12-byte buffers.
// A256: attributes {mpc.arena_bytes = 524 : i64}
// A256: mpc.exp {{.*}} {mpc.offsets = array<i64: 0>}
// A256: mpc.exp {{.*}} {mpc.offsets = array<i64: 256>}
// A256: mpc.exp {{.*}} {mpc.offsets = array<i64: 512>}
// A64: attributes {mpc.arena_bytes = 140 : i64}
// A64: mpc.exp {{.*}} {mpc.offsets = array<i64: 64>}
func.func @three(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %0 = mpc.exp %x : tensor<3xf32>
  %1 = mpc.exp %x : tensor<3xf32>
  %2 = mpc.exp %x : tensor<3xf32>
  return %0, %1, %2 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}
