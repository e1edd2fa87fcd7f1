// A load's readers read the global itself, unless a store overwrites the
// global before the loaded value's last reader: then the load gets an
// arena buffer (mpc.offsets), which the lowering fills at the load.
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory="report=-" -o /dev/null | FileCheck %s --check-prefix=REPORT

// Read after the store: a snapshot, live to its last reader.
// CHECK-LABEL: func @read_after_store
// CHECK: ml_program.global_load @g : tensor<4xf32> {mpc.offsets = array<i64: 0>}
// CHECK: mpc.sub {{.*}} {mpc.offsets = array<i64: 0>}
// REPORT: "function": "read_after_store",
// REPORT: "load_snapshots": 1,
ml_program.global private mutable @g(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
func.func @read_after_store(%x: tensor<4xf32>) -> tensor<4xf32> {
  %p = ml_program.global_load @g : tensor<4xf32>
  ml_program.global_store @g = %x : tensor<4xf32>
  %d = mpc.sub %x, %p : tensor<4xf32>, tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

// Every reader before the store: no copy.
// CHECK-LABEL: func @read_before_store
// CHECK: ml_program.global_load @g : tensor<4xf32>
// REPORT: "function": "read_before_store",
// REPORT: "load_snapshots": 0,
ml_program.global private mutable @g(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
func.func @read_before_store(%x: tensor<4xf32>) -> tensor<4xf32> {
  %p = ml_program.global_load @g : tensor<4xf32>
  %d = mpc.sub %x, %p : tensor<4xf32>, tensor<4xf32>
  ml_program.global_store @g = %x : tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

// Returned after a store (the results are copied out at the end), and
// read through a view: the view shares the snapshot's buffer.
// CHECK-LABEL: func @returned
// CHECK: ml_program.global_load @g : tensor<4xf32> {mpc.offsets = array<i64: 0>}
// CHECK: mpc.reshape {{.*}} {mpc.offsets = array<i64: 0>}
ml_program.global private mutable @g(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
func.func @returned(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<2x2xf32>) {
  %p = ml_program.global_load @g : tensor<4xf32>
  %v = mpc.reshape %p : tensor<4xf32> -> tensor<2x2xf32>
  ml_program.global_store @g = %x : tensor<4xf32>
  return %p, %v : tensor<4xf32>, tensor<2x2xf32>
}

// -----

// A store of another global, or the store of the loaded value's own sum
// after its last reader (which then writes the global itself): no copy.
// CHECK-LABEL: func @other_global
// CHECK: ml_program.global_load @g : tensor<4xf32>{{$}}
// CHECK: mpc.add {{.*}} {mpc.in_globals = [@g]}
// REPORT: "function": "other_global",
// REPORT: "load_snapshots": 0,
ml_program.global private mutable @g(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
ml_program.global private mutable @h(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
func.func @other_global(%x: tensor<4xf32>) -> tensor<4xf32> {
  %p = ml_program.global_load @g : tensor<4xf32>
  ml_program.global_store @h = %x : tensor<4xf32>
  %s = mpc.add %p, %x : tensor<4xf32>, tensor<4xf32>
  ml_program.global_store @g = %s : tensor<4xf32>
  return %s : tensor<4xf32>
}
