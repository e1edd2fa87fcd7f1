// The globals of a training step by role, the same in --mpc-graph-summary,
// --mpc-plan-memory's report and --mpc-assign-precision's (GlobalRoles.h): what an update updates,
// and its low-precision copy, are parameters; SGD's momentum and Adam's
// moments optimizer state; what else the step writes other state; an
// immutable global (a learning rate) a constant. (The rule before counted
// every written global as state: the MLP example's hand-written step
// summarised as one parameter, its learning rate.)
// RUN: mpc-opt %s --mpc-graph-summary -o /dev/null | FileCheck %s --check-prefix=SUMMARY
// RUN: mpc-opt %s --mpc-plan-memory="report=-" -o /dev/null | FileCheck %s --check-prefix=REPORT
// The precision report's weight bytes are the parameters' (not the 576
// bytes of moments and momentum, nor the constant).
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 alignment-remarks=false report=- report-format=table" -o /dev/null | FileCheck %s --check-prefix=PRECISION
// PRECISION: weight bytes: before f32 544, f16 256; after f32 544, f16 256

// @w 16x8 f32 (512 B), @w_f16 (256 B), @b 8 f32 (32 B): 3 parameters, 264
// elements, 800 bytes. State: @m (512 B), @v1 and @v2 (32 B each), @t
// (4 B), @steps (4 B).
// SUMMARY: module: 3 parameters, 264 elements, 800 bytes; 5 state globals, 584 bytes
// SUMMARY-NEXT: parameters f32: 2, 544 bytes
// SUMMARY-NEXT: parameters f16: 1, 256 bytes
// SUMMARY-NEXT: optimizer state: 3, 576 bytes
// SUMMARY-NEXT: constants: 1, 4 bytes
// SUMMARY-NEXT: func @train_step:

// REPORT: "parameters": {
// REPORT-NEXT: "total": 800,
// REPORT: "optimizer_state": {
// REPORT-NEXT: "total": 576,
// REPORT: "other_state": {
// REPORT-NEXT: "total": 8,
// REPORT: "constants": {
// REPORT-NEXT: "total": 4,
// REPORT-NEXT: "f32": 4
ml_program.global private mutable @w(#mpc.init<xavier_uniform>) : tensor<16x8xf32>
ml_program.global private mutable @w_f16 : tensor<16x8xf16> {mpc.master = @w}
ml_program.global private mutable @m(#mpc.init<zeros>) : tensor<16x8xf32>
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @v1(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @v2(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @t(dense<0> : tensor<i32>) : tensor<i32>
ml_program.global private @lr(dense<0.1> : tensor<f32>) : tensor<f32>
ml_program.global private mutable @steps(dense<0> : tensor<i32>) : tensor<i32>

func.func @train_step(%x: tensor<4x16xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %w = ml_program.global_load @w : tensor<16x8xf32>
  %b = ml_program.global_load @b : tensor<8xf32>
  %mm = mpc.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32>
  %logits = mpc.add %mm, %b : tensor<4x8xf32>, tensor<8xf32>
  %loss = mpc.cross_entropy %logits, %y : tensor<4x8xf32>, tensor<4xi32>
  %one = mpc.constant dense<1.0> : tensor<f32>
  %dl = mpc.cross_entropy_backward %one, %logits, %y : tensor<f32>, tensor<4x8xf32>, tensor<4xi32>
  %dw = mpc.matmul %x, %dl {transpose_a} : tensor<4x16xf32>, tensor<4x8xf32>
  %db = mpc.reduce_sum %dl {dims = array<i64: 0>} : tensor<4x8xf32>
  %m = ml_program.global_load @m : tensor<16x8xf32>
  %lr = ml_program.global_load @lr : tensor<f32>
  %nw, %nm, %c = mpc.sgd_update %w, %dw lr(%lr) momentum_buffer(%m) copy(f16) {momentum = 0.9} : tensor<16x8xf32>, tensor<16x8xf32>
  ml_program.global_store @w = %nw : tensor<16x8xf32>
  ml_program.global_store @m = %nm : tensor<16x8xf32>
  ml_program.global_store @w_f16 = %c : tensor<16x8xf16>
  %v1 = ml_program.global_load @v1 : tensor<8xf32>
  %v2 = ml_program.global_load @v2 : tensor<8xf32>
  %t = ml_program.global_load @t : tensor<i32>
  %nb:3 = mpc.adam_update %b, %db, %v1, %v2 lr(%lr) step(%t) : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @b = %nb#0 : tensor<8xf32>
  ml_program.global_store @v1 = %nb#1 : tensor<8xf32>
  ml_program.global_store @v2 = %nb#2 : tensor<8xf32>
  %t2 = mpc.increment %t : tensor<i32>
  ml_program.global_store @t = %t2 : tensor<i32>
  %s = ml_program.global_load @steps : tensor<i32>
  ml_program.global_store @steps = %s : tensor<i32>
  return %loss : tensor<f32>
}
