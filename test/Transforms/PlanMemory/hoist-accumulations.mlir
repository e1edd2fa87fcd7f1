// An accumulation into a gradient accumulator (a global marked
// mpc.grad_accumulator), which --mpc-accumulate-gradients places at the end
// of the backward pass, moves up to just after its gradient (or the cast
// that widens it) is computed: the gradient dies there instead of living
// to the end, and the sum is computed in the accumulator.
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory | FileCheck %s
// Without reuse nothing moves.
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory=reuse=false | FileCheck %s --check-prefix=NOREUSE

// The f16 gradient's widening cast and the sum move up to the product:
// the 64 KiB f16 gradient and its 128 KiB cast die there (192 KiB at the
// peak), not at the end beside the 64 KiB result (256 KiB).
// CHECK-LABEL: func @micro_step
// CHECK-SAME: attributes {mpc.arena_bytes = 196608 : i64}
// CHECK: %[[G:.*]] = mpc.matmul %arg0, %arg1
// CHECK-NEXT: %[[ACC:.*]] = ml_program.global_load @acc
// CHECK-NEXT: %[[W:.*]] = mpc.cast %[[G]]
// CHECK-NEXT: %[[S:.*]] = mpc.add %[[ACC]], %[[W]] {mpc.in_globals = [@acc]}
// CHECK-NEXT: mpc.matmul %arg0, %arg1 {mpc.offsets = array<i64: 0>}
// CHECK: ml_program.global_store @acc = %[[S]]
// NOREUSE-LABEL: func @micro_step
// NOREUSE: mpc.matmul
// NOREUSE-NEXT: mpc.matmul
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<128x256xf32> {mpc.grad_accumulator = @w}
func.func @micro_step(%x: tensor<128x128xf16>, %y: tensor<128x256xf16>) -> tensor<128x256xf16> {
  %g = mpc.matmul %x, %y : tensor<128x128xf16>, tensor<128x256xf16>
  %h = mpc.matmul %x, %y : tensor<128x128xf16>, tensor<128x256xf16>
  %e = mpc.exp %h : tensor<128x256xf16>
  %a = ml_program.global_load @acc : tensor<128x256xf32>
  %w = mpc.cast %g : tensor<128x256xf16> -> tensor<128x256xf32>
  %s = mpc.add %a, %w : tensor<128x256xf32>, tensor<128x256xf32>
  ml_program.global_store @acc = %s : tensor<128x256xf32>
  return %e : tensor<128x256xf16>
}

// -----

// The gradient may come first and be a function argument: the sum moves to
// the top; a reset (in the step) stored later does not stop it.
// CHECK-LABEL: func @argument_first
// CHECK-NEXT: ml_program.global_load @acc
// CHECK-NEXT: mpc.add %arg0, %{{.*}} {mpc.in_globals = [@acc]}
// CHECK-NEXT: mpc.exp
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<8xf32> {mpc.grad_accumulator = @w}
func.func @argument_first(%g: tensor<8xf32>) -> tensor<8xf32> {
  %e = mpc.exp %g : tensor<8xf32>
  %a = ml_program.global_load @acc : tensor<8xf32>
  %s = mpc.add %g, %a : tensor<8xf32>, tensor<8xf32>
  %n = mpc.neg %s : tensor<8xf32>
  %z = mpc.constant dense<0.0> : tensor<8xf32>
  ml_program.global_store @acc = %z : tensor<8xf32>
  return %n : tensor<8xf32>
}

// -----

// What stays: a global that is not a gradient accumulator; an accumulator
// stored before the add (the sum would read the store's value too early);
// an accumulator loaded twice; a sum an all-reduce reads.
// CHECK-LABEL: func @not_an_accumulator
// CHECK: mpc.exp
// CHECK-NEXT: ml_program.global_load @state
// CHECK-NEXT: mpc.add
ml_program.global private mutable @state(#mpc.init<zeros>) : tensor<8xf32>
func.func @not_an_accumulator(%g: tensor<8xf32>) -> tensor<8xf32> {
  %e = mpc.exp %g : tensor<8xf32>
  %a = ml_program.global_load @state : tensor<8xf32>
  %s = mpc.add %a, %g : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @state = %s : tensor<8xf32>
  return %e : tensor<8xf32>
}

// -----

// CHECK-LABEL: func @stored_before
// CHECK: mpc.exp
// CHECK-NEXT: ml_program.global_store @acc = %arg1
// CHECK-NEXT: ml_program.global_load @acc
// CHECK-NEXT: mpc.add
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<8xf32> {mpc.grad_accumulator = @w}
func.func @stored_before(%g: tensor<8xf32>, %v: tensor<8xf32>) -> tensor<8xf32> {
  %e = mpc.exp %g : tensor<8xf32>
  ml_program.global_store @acc = %v : tensor<8xf32>
  %a = ml_program.global_load @acc : tensor<8xf32>
  %s = mpc.add %a, %g : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @acc = %s : tensor<8xf32>
  return %e : tensor<8xf32>
}

// -----

// CHECK-LABEL: func @loaded_twice
// CHECK: mpc.exp
// CHECK-NEXT: ml_program.global_load @acc
// CHECK-NEXT: mpc.add
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<8xf32> {mpc.grad_accumulator = @w}
func.func @loaded_twice(%g: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %b = ml_program.global_load @acc : tensor<8xf32>
  %e = mpc.exp %g : tensor<8xf32>
  %a = ml_program.global_load @acc : tensor<8xf32>
  %s = mpc.add %a, %g : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @acc = %s : tensor<8xf32>
  return %e, %b : tensor<8xf32>, tensor<8xf32>
}

// -----

// CHECK-LABEL: func @all_reduced
// CHECK: mpc.exp
// CHECK-NEXT: ml_program.global_load @acc
// CHECK-NEXT: mpc.add
// CHECK-NEXT: mpc.all_reduce
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<8xf32> {mpc.grad_accumulator = @w}
func.func @all_reduced(%g: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = mpc.exp %g : tensor<8xf32>
  %a = ml_program.global_load @acc : tensor<8xf32>
  %s = mpc.add %a, %g : tensor<8xf32>, tensor<8xf32>
  %r = mpc.all_reduce %s {bucket = 0 : i64} : tensor<8xf32>
  %z = mpc.constant dense<0.0> : tensor<8xf32>
  ml_program.global_store @acc = %z : tensor<8xf32>
  return %e, %r : tensor<8xf32>, tensor<8xf32>
}
