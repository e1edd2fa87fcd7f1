// RUN: mpc-opt %s --mpc-plan-memory="guard=64" | FileCheck %s
// RUN: mpc-opt %s --mpc-plan-memory | FileCheck %s --check-prefix=NOGUARD

// Guards: every buffer has 64 bytes after its end that no buffer takes,
// for the whole function (the last product's buffer does not reuse the
// first's, though their values never live at the same time). In place
// and views stay: the add writes into the relu's buffer, the reshapes are
// views of it. A 1000-byte buffer's guard starts at byte 1000, unaligned:
// without guards an overflow of up to 24 bytes would land in the
// alignment. The guards are listed in offset order with the op whose
// result the buffer holds first. The module records the guard for the
// state buffer's layout (each global and the step counter get one too).
// CHECK: module attributes {mpc.state_guard = 64 : i64}
// CHECK-LABEL: func @chain
// CHECK-SAME: mpc.arena_bytes = 2664 : i64
// CHECK-SAME: mpc.arena_guards = [
// CHECK-SAME: {bytes = 64 : i64, loc = "loc({{.*}}guard.mlir\22:[[#L:]]:8)", offset = 1000 : i64, op = "mpc.matmul"},
// CHECK-SAME: {bytes = 64 : i64, loc = "loc({{.*}}guard.mlir\22:[[#L+1]]:8)", offset = 2280 : i64, op = "mpc.relu"},
// CHECK-SAME: {bytes = 64 : i64, loc = "loc({{.*}}guard.mlir\22:[[#L+5]]:8)", offset = 2600 : i64, op = "mpc.matmul"}]
// CHECK: mpc.matmul {{.*}} {mpc.offsets = array<i64: 0>}
// CHECK: mpc.relu {{.*}} {mpc.offsets = array<i64: 1280>}
// CHECK: mpc.add {{.*}} {mpc.offsets = array<i64: 1280>}
// CHECK: mpc.reshape {{.*}} {mpc.offsets = array<i64: 1280>}
// CHECK: mpc.reshape {{.*}} {mpc.offsets = array<i64: 1280>}
// CHECK: mpc.matmul {{.*}} {mpc.offsets = array<i64: 2560>}
// Without guards the last product takes the first's bytes.
// NOGUARD-NOT: mpc.state_guard
// NOGUARD-LABEL: func @chain
// NOGUARD-SAME: attributes {mpc.arena_bytes = 2024 : i64}
// NOGUARD: mpc.matmul {{.*}} {mpc.offsets = array<i64: 0>}
// NOGUARD: mpc.matmul {{.*}} {mpc.offsets = array<i64: 0>}
func.func @chain(%x: tensor<10x25xf32>, %w: tensor<25x25xf32>, %v: tensor<25x1xf32>) -> tensor<10x1xf32> {
  %0 = mpc.matmul %x, %w : tensor<10x25xf32>, tensor<25x25xf32>
  %1 = mpc.relu %0 : tensor<10x25xf32>
  %2 = mpc.add %1, %0 : tensor<10x25xf32>, tensor<10x25xf32>
  %3 = mpc.reshape %2 : tensor<10x25xf32> -> tensor<250xf32>
  %4 = mpc.reshape %3 : tensor<250xf32> -> tensor<10x25xf32>
  %5 = mpc.matmul %4, %v : tensor<10x25xf32>, tensor<25x1xf32>
  return %5 : tensor<10x1xf32>
}
