// RUN: mpc-opt %s -split-input-file --mpc-plan-memory | FileCheck %s

// Elementwise ops write in place into a dying operand; a buffer is reused
// once its value is dead. Two 16 KiB buffers suffice for five values.
// CHECK-LABEL: func @chain
// CHECK-SAME: attributes {mpc.arena_bytes = 32768 : i64}
// CHECK: %[[A:.*]] = mpc.matmul {{.*}} {mpc.offsets = array<i64: 0>}
// CHECK: mpc.relu %[[A]] {mpc.offsets = array<i64: 0>}
// CHECK: mpc.matmul {{.*}} {mpc.offsets = array<i64: 16384>}
// CHECK: mpc.exp {{.*}} {mpc.offsets = array<i64: 16384>}
// CHECK: mpc.matmul {{.*}} {mpc.offsets = array<i64: 0>}
func.func @chain(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = mpc.matmul %x, %w : tensor<64x64xf32>, tensor<64x64xf32>
  %1 = mpc.relu %0 : tensor<64x64xf32>
  %2 = mpc.matmul %1, %w : tensor<64x64xf32>, tensor<64x64xf32>
  %3 = mpc.exp %2 : tensor<64x64xf32>
  %4 = mpc.matmul %3, %w : tensor<64x64xf32>, tensor<64x64xf32>
  return %4 : tensor<64x64xf32>
}

// -----

// No in place when the operand is still needed later, or for ops that are
// not elementwise (matmul), or when sizes differ (a cast).
// CHECK-LABEL: func @no_in_place
// CHECK: %[[A:.*]] = mpc.matmul {{.*}} {mpc.offsets = array<i64: 0>}
// CHECK: mpc.relu %[[A]] {mpc.offsets = array<i64: 16384>}
// CHECK: mpc.cast {{.*}} {mpc.offsets = array<i64: 0>}
func.func @no_in_place(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf16>) {
  %0 = mpc.matmul %x, %w : tensor<64x64xf32>, tensor<64x64xf32>
  %1 = mpc.relu %0 : tensor<64x64xf32>
  %2 = mpc.add %1, %0 : tensor<64x64xf32>, tensor<64x64xf32>
  %3 = mpc.cast %2 : tensor<64x64xf32> -> tensor<64x64xf16>
  return %2, %3 : tensor<64x64xf32>, tensor<64x64xf16>
}

// -----

// Arguments, constants and globals are not in the arena (-1 marks a result
// outside it); returned values live to the end.
// CHECK-LABEL: func @outside
// CHECK: mpc.constant
// CHECK-NOT: mpc.offsets
// CHECK: ml_program.global_load
// CHECK-NOT: mpc.offsets
// CHECK: mpc.add {{.*}} {mpc.offsets = array<i64: 0>}
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<8xf32>
func.func @outside(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c = mpc.constant dense<1.0> : tensor<8xf32>
  %b = ml_program.global_load @b : tensor<8xf32>
  %0 = mpc.add %x, %b : tensor<8xf32>, tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// A reshape is a view: its result shares its operand's buffer (the same
// offset), and the buffer lives as long as either; an elementwise op after
// it writes in place only into a buffer that both have finished with. A
// reshape of a function argument (outside the arena) gets its own buffer.
// CHECK-LABEL: func @reshape_view
// CHECK-SAME: attributes {mpc.arena_bytes = 49152 : i64}
// CHECK: %[[A:.*]] = mpc.matmul {{.*}} {mpc.offsets = array<i64: 0>}
// CHECK: %[[V:.*]] = mpc.reshape %[[A]] {mpc.offsets = array<i64: 0>}
// The relu reads the matmul's result, which the view keeps alive: no in place.
// CHECK: mpc.relu %[[A]] {mpc.offsets = array<i64: 16384>}
// CHECK: mpc.exp %[[V]] {mpc.offsets = array<i64: 0>}
// CHECK: mpc.reshape %arg0 {mpc.offsets = array<i64: 32768>}
func.func @reshape_view(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<4096xf32>, tensor<4096xf32>) {
  %0 = mpc.matmul %x, %w : tensor<64x64xf32>, tensor<64x64xf32>
  %1 = mpc.reshape %0 : tensor<64x64xf32> -> tensor<4096xf32>
  %2 = mpc.relu %0 : tensor<64x64xf32>
  %3 = mpc.exp %1 : tensor<4096xf32>
  %4 = mpc.reshape %x : tensor<64x64xf32> -> tensor<4096xf32>
  return %2, %3, %4 : tensor<64x64xf32>, tensor<4096xf32>, tensor<4096xf32>
}
