// The memory report: globals by role, and per function the arena, the live
// peak, the bytes of all its tensors, what was fused and the gradients and
// activations live at the peak.
// RUN: mpc-opt %s --mpc-plan-memory="report=-" -o /dev/null | FileCheck %s
// RUN: mpc-opt %s --mpc-plan-memory --mpc-memory-report=%t.json -o /dev/null
// RUN: FileCheck %s < %t.json

// @w (16x8 f32, 512 B) is what SGD updates: a parameter; @w_f16 its copy
// (256 B); @m its momentum (512 B): optimizer state; @steps is written by the
// graph otherwise: other state (4 B). @lr is only read: a parameter (4 B).
// CHECK: "parameters": {
// CHECK-NEXT: "total": 772,
// CHECK-NEXT: "f32": 516,
// CHECK-NEXT: "f16": 256
// CHECK: "optimizer_state": {
// CHECK-NEXT: "total": 512,
// CHECK: "other_state": {
// CHECK-NEXT: "total": 4,
// The state buffer as the runtime lays it out: each global at the next
// 256-byte boundary (@w 0, @w_f16 512, @m 768, @lr 1280, @steps 1536), then
// the 8-byte step counter at 1792: 2048 bytes.
// CHECK: "state_buffer_bytes": 2048,
// The arena holds the logits (128 B, dead once their gradient exists), the
// loss (4 B, live to the end), the logits' gradient (128 B) and the weight
// gradient (512 B); the optimizer writes in place into the globals, outside
// the arena. Greedy by size: the weight gradient at 0, the logits reuse 0
// (dead before it), their gradient at 512, the loss at 768 (aligned after
// 640): 772 bytes for a live peak of 644, of 772 bytes of tensors in all;
// nothing fused.
// CHECK: "function": "train_step",
// CHECK-NEXT: "arena_bytes": 772,
// CHECK-NEXT: "peak_live_bytes": 644,
// CHECK-NEXT: "buffer_bytes": 772,
// CHECK-NEXT: "fused": {},
// No result is written straight into a global (no accumulation).
// CHECK-NEXT: "written_in_globals": 0,
// No load is copied (none is read after a store to its global).
// CHECK-NEXT: "load_snapshots": 0,
// No slice is read in its operand's buffer (there is none).
// CHECK-NEXT: "slice_views": 0,
// No transpose is written into a concatenation (there is none).
// CHECK-NEXT: "concat_windows": 0,
// Both gradients are live at the peak, with the loss.
// CHECK-NEXT: "gradients_at_peak": {
// CHECK-NEXT: "total": 640,
// CHECK: "activations_at_peak": {
// CHECK-NEXT: "total": 4,
// CHECK: "workspace_bytes": 0,
// 772 + 512 + 4 + 772.
// CHECK-NEXT: "peak_bytes": 2060,
// Arguments and results (256 + 16 + 4), and what the executable allocates:
// state buffer + arena + those, 2048 + 772 + 276.
// CHECK-NEXT: "io_bytes": 276,
// CHECK-NEXT: "allocated_bytes": 3096
ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<16x8xf32>
ml_program.global private mutable @w_f16 : tensor<16x8xf16> {mpc.master = @w}
ml_program.global private mutable @m(#mpc.init<zeros>) : tensor<16x8xf32>
ml_program.global private mutable @lr(dense<0.1> : tensor<f32>) : tensor<f32>
ml_program.global private mutable @steps(dense<0> : tensor<i32>) : tensor<i32>

func.func @train_step(%x: tensor<4x16xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<16x8xf32>
  %logits = mpc.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32>
  %loss = mpc.cross_entropy %logits, %y : tensor<4x8xf32>, tensor<4xi32>
  %one = mpc.constant dense<1.0> : tensor<f32>
  %dl = mpc.cross_entropy_backward %one, %logits, %y : tensor<f32>, tensor<4x8xf32>, tensor<4xi32>
  %dw = mpc.matmul %x, %dl {transpose_a} : tensor<4x16xf32>, tensor<4x8xf32>
  %m = ml_program.global_load @m : tensor<16x8xf32>
  %lr = ml_program.global_load @lr : tensor<f32>
  %nw, %nm, %c = mpc.sgd_update %w, %dw lr(%lr) momentum_buffer(%m) copy(f16) {momentum = 0.9} : tensor<16x8xf32>, tensor<16x8xf32>
  ml_program.global_store @w = %nw : tensor<16x8xf32>
  ml_program.global_store @m = %nm : tensor<16x8xf32>
  ml_program.global_store @w_f16 = %c : tensor<16x8xf16>
  %s = ml_program.global_load @steps : tensor<i32>
  ml_program.global_store @steps = %s : tensor<i32>
  return %loss : tensor<f32>
}
