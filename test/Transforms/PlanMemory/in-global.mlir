// An elementwise op whose result is stored back to a global it reads (a
// gradient accumulator's acc = acc + g) writes the global itself: it gets
// mpc.in_globals and no arena buffer, and the store copies nothing. Only
// where nothing reads the global after the op and any other store writing
// it afterwards comes after the result's last reader; stores of constants
// that nothing reads after them (the step's resets of its accumulators)
// move to the end of the function first.
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory="report=-" -o /dev/null | FileCheck %s --check-prefix=REPORT
// Without reuse nothing moves and nothing is computed in a global.
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory=reuse=false | FileCheck %s --check-prefix=NOREUSE

// The accumulation: no arena at all (the gradient is an argument).
// CHECK-LABEL: func @accumulate
// CHECK-SAME: attributes {mpc.arena_bytes = 0 : i64}
// CHECK: %[[SUM:.*]] = mpc.add %{{.*}}, %{{.*}} {mpc.in_globals = [@acc]} : tensor<16x8xf32>, tensor<16x8xf32>
// CHECK-NEXT: ml_program.global_store @acc = %[[SUM]]
// REPORT: "function": "accumulate",
// REPORT: "written_in_globals": 1,
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<16x8xf32>
func.func @accumulate(%g: tensor<16x8xf32>) {
  %a = ml_program.global_load @acc : tensor<16x8xf32>
  %s = mpc.add %a, %g : tensor<16x8xf32>, tensor<16x8xf32>
  ml_program.global_store @acc = %s : tensor<16x8xf32>
  return
}

// -----

// The global's operand may come second; the result may also be read (it is
// the global's value from then on) and returned.
// CHECK-LABEL: func @second_operand
// CHECK: %[[SUM:.*]] = mpc.mul %{{.*}}, %{{.*}} {mpc.in_globals = [@acc]}
// CHECK: mpc.exp %[[SUM]] {mpc.offsets = array<i64: 0>}
// CHECK: return %[[SUM]]
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<8xf32>
func.func @second_operand(%g: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %a = ml_program.global_load @acc : tensor<8xf32>
  %s = mpc.mul %g, %a : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @acc = %s : tensor<8xf32>
  %e = mpc.exp %s : tensor<8xf32>
  return %s, %e : tensor<8xf32>, tensor<8xf32>
}

// -----

// The old value is read after the sum (here by a later op, after the
// store): the sum may not overwrite it, and takes an arena buffer; the
// load is a snapshot (test/Transforms/PlanMemory/snapshot.mlir).
// CHECK-LABEL: func @read_after
// CHECK: ml_program.global_load @acc : tensor<8xf32> {mpc.offsets = array<i64: 0>}
// CHECK: mpc.add %{{.*}}, %{{.*}} {mpc.offsets = array<i64: 256>}
// CHECK-NOT: mpc.in_global
// REPORT: "function": "read_after",
// REPORT: "written_in_globals": 0,
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<8xf32>
func.func @read_after(%g: tensor<8xf32>) -> tensor<8xf32> {
  %a = ml_program.global_load @acc : tensor<8xf32>
  %s = mpc.add %a, %g : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @acc = %s : tensor<8xf32>
  %old = mpc.exp %a : tensor<8xf32>
  return %old : tensor<8xf32>
}

// -----

// Read after through a second load of the same global: also not in place.
// CHECK-LABEL: func @second_load
// CHECK-NOT: mpc.in_global
// CHECK: return
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<8xf32>
func.func @second_load(%g: tensor<8xf32>) -> tensor<8xf32> {
  %a = ml_program.global_load @acc : tensor<8xf32>
  %b = ml_program.global_load @acc : tensor<8xf32>
  %s = mpc.add %a, %g : tensor<8xf32>, tensor<8xf32>
  %old = mpc.exp %b : tensor<8xf32>
  ml_program.global_store @acc = %s : tensor<8xf32>
  return %old : tensor<8xf32>
}

// -----

// Another store writes the global before the sum's last reader (the
// reset to zero, moved to the end of the function, still comes before the
// return that reads the sum): the sum stays in the arena.
// CHECK-LABEL: func @stored_again
// CHECK: mpc.add %{{.*}}, %{{.*}} {mpc.offsets = array<i64: 0>}
// CHECK-NOT: mpc.in_global
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<8xf32>
func.func @stored_again(%g: tensor<8xf32>) -> tensor<8xf32> {
  %a = ml_program.global_load @acc : tensor<8xf32>
  %s = mpc.add %a, %g : tensor<8xf32>, tensor<8xf32>
  %z = mpc.constant dense<0.0> : tensor<8xf32>
  ml_program.global_store @acc = %z : tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

// The reset comes after the sum's last reader: the global's old value is
// dead from the sum on, so the sum is computed in the global and read
// there, and the reset then zeroes it.
// CHECK-LABEL: func @reset_after_read
// CHECK-SAME: attributes {mpc.arena_bytes = 32 : i64}
// CHECK: %[[SUM:.*]] = mpc.add %{{.*}}, %{{.*}} {mpc.in_globals = [@acc]}
// CHECK: mpc.exp %[[SUM]] {mpc.offsets = array<i64: 0>}
// CHECK: ml_program.global_store @acc = %{{.*}}
// REPORT: "function": "reset_after_read",
// REPORT: "written_in_globals": 1,
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<8xf32>
func.func @reset_after_read(%g: tensor<8xf32>) -> tensor<8xf32> {
  %a = ml_program.global_load @acc : tensor<8xf32>
  %s = mpc.add %a, %g : tensor<8xf32>, tensor<8xf32>
  %e = mpc.exp %s : tensor<8xf32>
  %z = mpc.constant dense<0.0> : tensor<8xf32>
  ml_program.global_store @acc = %z : tensor<8xf32>
  return %e : tensor<8xf32>
}

// -----

// The step that consumes accumulated gradients resets the accumulators
// before the optimizer's update reads the sums (--mpc-accumulate-gradients,
// then --mpc-optimizer): the resets are stores of constants that nothing
// after them reads, so the plan moves them to the end, and the sums are
// computed in the accumulators. The sum's store of a kept value stays.
// CHECK-LABEL: func @step_resets_first
// CHECK-SAME: attributes {mpc.arena_bytes = 0 : i64}
// CHECK: %[[SUM:.*]] = mpc.add %{{.*}}, %{{.*}} {mpc.in_globals = [@acc]}
// CHECK: %[[W:.*]] = mpc.sgd_update %{{.*}}, %[[SUM]]
// CHECK-NEXT: ml_program.global_store @w = %[[W]]
// CHECK-NEXT: ml_program.global_store @acc = %{{.*}}
// CHECK-NEXT: ml_program.global_store @loss_acc = %{{.*}}
// CHECK-NEXT: return
// NOREUSE-LABEL: func @step_resets_first
// NOREUSE: mpc.add %{{.*}}, %{{.*}} {mpc.offsets
// NOREUSE-NEXT: mpc.constant
// NOREUSE-NEXT: ml_program.global_store @acc
// NOREUSE: mpc.sgd_update
ml_program.global private mutable @w(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @loss_acc(dense<0.0> : tensor<f32>) : tensor<f32>
ml_program.global private @lr(dense<0.1> : tensor<f32>) : tensor<f32>
func.func @step_resets_first(%g: tensor<8xf32>) {
  %a = ml_program.global_load @acc : tensor<8xf32>
  %s = mpc.add %a, %g : tensor<8xf32>, tensor<8xf32>
  %z = mpc.constant dense<0.0> : tensor<8xf32>
  ml_program.global_store @acc = %z : tensor<8xf32>
  %zl = mpc.constant dense<0.0> : tensor<f32>
  ml_program.global_store @loss_acc = %zl : tensor<f32>
  %w = ml_program.global_load @w : tensor<8xf32>
  %lr = ml_program.global_load @lr : tensor<f32>
  %nw = mpc.sgd_update %w, %s lr(%lr) : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @w = %nw : tensor<8xf32>
  return
}

// -----

// A reset that a later load reads stays where it is (the load must see
// the zeros): the sum, still read after it, takes an arena buffer.
// CHECK-LABEL: func @reset_read_again
// CHECK: mpc.add %{{.*}}, %{{.*}} {mpc.offsets = array<i64: 0>}
// CHECK-NEXT: mpc.constant
// CHECK-NEXT: ml_program.global_store @acc
// CHECK-NEXT: ml_program.global_load @acc
// CHECK-NOT: mpc.in_global
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<8xf32>
func.func @reset_read_again(%g: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %a = ml_program.global_load @acc : tensor<8xf32>
  %s = mpc.add %a, %g : tensor<8xf32>, tensor<8xf32>
  %z = mpc.constant dense<0.0> : tensor<8xf32>
  ml_program.global_store @acc = %z : tensor<8xf32>
  %b = ml_program.global_load @acc : tensor<8xf32>
  %e = mpc.exp %s : tensor<8xf32>
  %f = mpc.add %b, %e : tensor<8xf32>, tensor<8xf32>
  return %e, %f : tensor<8xf32>, tensor<8xf32>
}

// -----

// A store of a value that is not a constant is not moved: the sum read
// after it stays in the arena.
// CHECK-LABEL: func @reset_by_value
// CHECK: mpc.add %{{.*}}, %{{.*}} {mpc.offsets = array<i64: 0>}
// CHECK-NEXT: ml_program.global_store @acc = %arg1
// CHECK-NOT: mpc.in_global
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<8xf32>
func.func @reset_by_value(%g: tensor<8xf32>, %v: tensor<8xf32>) -> tensor<8xf32> {
  %a = ml_program.global_load @acc : tensor<8xf32>
  %s = mpc.add %a, %g : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @acc = %v : tensor<8xf32>
  %e = mpc.exp %s : tensor<8xf32>
  return %e : tensor<8xf32>
}

// -----

// Stored back, read, then reset after its last reader: in the global.
// CHECK-LABEL: func @stored_then_reset
// CHECK: %[[SUM:.*]] = mpc.add %{{.*}}, %{{.*}} {mpc.in_globals = [@acc]}
// CHECK-NEXT: ml_program.global_store @acc = %[[SUM]]
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<8xf32>
func.func @stored_then_reset(%g: tensor<8xf32>) -> tensor<8xf32> {
  %a = ml_program.global_load @acc : tensor<8xf32>
  %s = mpc.add %a, %g : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @acc = %s : tensor<8xf32>
  %e = mpc.exp %s : tensor<8xf32>
  %z = mpc.constant dense<0.0> : tensor<8xf32>
  ml_program.global_store @acc = %z : tensor<8xf32>
  return %e : tensor<8xf32>
}

// -----

// Stored to another global than the one read, or not elementwise: a copy
// from the arena, as before.
// CHECK-LABEL: func @other_global
// CHECK-NOT: mpc.in_global
// CHECK: mpc.matmul {{.*}} {mpc.offsets = array<i64: 0>}
// CHECK-NOT: mpc.in_global
// CHECK: return
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @other(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @w(#mpc.init<zeros>) : tensor<8x8xf32>
func.func @other_global(%g: tensor<8xf32>) {
  %a = ml_program.global_load @acc : tensor<8xf32>
  %s = mpc.add %a, %g : tensor<8xf32>, tensor<8xf32>
  ml_program.global_store @other = %s : tensor<8xf32>
  %w = ml_program.global_load @w : tensor<8x8xf32>
  %p = mpc.matmul %w, %w : tensor<8x8xf32>, tensor<8x8xf32>
  ml_program.global_store @w = %p : tensor<8x8xf32>
  return
}

// -----

// The other operand may broadcast (each result element still reads the
// global's element at its own index only).
// CHECK-LABEL: func @broadcast
// CHECK: mpc.add %{{.*}}, %{{.*}} {mpc.in_globals = [@acc]} : tensor<4x8xf32>, tensor<8xf32>
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<4x8xf32>
func.func @broadcast(%g: tensor<8xf32>) {
  %a = ml_program.global_load @acc : tensor<4x8xf32>
  %s = mpc.add %a, %g : tensor<4x8xf32>, tensor<8xf32>
  ml_program.global_store @acc = %s : tensor<4x8xf32>
  return
}

// -----

// A batch norm's new running statistics (results 1 and 2), stored back to
// the globals it read them from, are computed in those globals: the kernel
// updates them in place, so neither the copy into a result buffer before
// it nor the store after it copies anything. The other results stay in the
// arena.
// CHECK-LABEL: func @running_statistics
// CHECK: mpc.batch_norm {{.*}} {mpc.in_globals = [unit, @mean, @var, unit, unit], mpc.offsets = array<i64: 0, -1, -1, 1024, 1280>}
// REPORT: "function": "running_statistics",
// REPORT: "written_in_globals": 2,
ml_program.global private mutable @mean(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @var(#mpc.init<ones>) : tensor<8xf32>
func.func @running_statistics(%x: tensor<2x4x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x4x8xf32> {
  %m = ml_program.global_load @mean : tensor<8xf32>
  %v = ml_program.global_load @var : tensor<8xf32>
  %y:5 = mpc.batch_norm %x, %g, %b, %m, %v : tensor<2x4x4x8xf32>, tensor<8xf32>
  ml_program.global_store @mean = %y#1 : tensor<8xf32>
  ml_program.global_store @var = %y#2 : tensor<8xf32>
  return %y#0 : tensor<2x4x4x8xf32>
}

// -----

// The old running mean is read after the batch norm (returned): the new
// one takes an arena buffer; the variance is still computed in its global.
// CHECK-LABEL: func @old_mean_read_after
// CHECK: mpc.batch_norm {{.*}} {mpc.in_globals = [unit, unit, @var, unit, unit]
ml_program.global private mutable @mean(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @var(#mpc.init<ones>) : tensor<8xf32>
func.func @old_mean_read_after(%x: tensor<2x4x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<2x4x4x8xf32>, tensor<8xf32>) {
  %m = ml_program.global_load @mean : tensor<8xf32>
  %v = ml_program.global_load @var : tensor<8xf32>
  %y:5 = mpc.batch_norm %x, %g, %b, %m, %v : tensor<2x4x4x8xf32>, tensor<8xf32>
  ml_program.global_store @mean = %y#1 : tensor<8xf32>
  ml_program.global_store @var = %y#2 : tensor<8xf32>
  return %y#0, %m : tensor<2x4x4x8xf32>, tensor<8xf32>
}

// -----

// A running statistic stored to another global than the one read (here
// the mean's result into the variance's global and the other way round).
// The new mean may be computed in @mean: nothing reads the old mean again,
// and @mean is next written after the new mean's last reader (its store to
// @var, which copies it). The new variance may not: its global @var is
// written (with the new mean) before the variance's own store reads it.
// CHECK-LABEL: func @swapped
// CHECK: mpc.batch_norm {{.*}} {mpc.in_globals = [unit, @mean, unit, unit, unit], mpc.offsets = array<i64: 0, -1, 1024, 1280, 1536>}
ml_program.global private mutable @mean(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @var(#mpc.init<ones>) : tensor<8xf32>
func.func @swapped(%x: tensor<2x4x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x4x8xf32> {
  %m = ml_program.global_load @mean : tensor<8xf32>
  %v = ml_program.global_load @var : tensor<8xf32>
  %y:5 = mpc.batch_norm %x, %g, %b, %m, %v : tensor<2x4x4x8xf32>, tensor<8xf32>
  ml_program.global_store @var = %y#1 : tensor<8xf32>
  ml_program.global_store @mean = %y#2 : tensor<8xf32>
  return %y#0 : tensor<2x4x4x8xf32>
}

// -----

// A GEMM that sums a weight gradient into its accumulator (mpc.matmul_add,
// mpc.matmul_bias_grad with an addend) writes the global too, in place
// (C is the addend); a bias gradient is not the addend's sum and takes an
// arena buffer even where its size matches the accumulator's (here a
// [1, 16] weight's).
// CHECK-LABEL: func @gemm_accumulates
// CHECK: mpc.matmul_add %{{.*}}, %{{.*}}, %{{.*}} {mpc.in_globals = [@acc], transpose_a}
// CHECK: mpc.matmul_bias_grad %{{.*}}, %{{.*}}, %{{.*}} {mpc.in_globals = [@acc_row, unit], mpc.offsets = array<i64: -1, 0>, transpose_a}
// REPORT: "function": "gemm_accumulates",
// REPORT: "written_in_globals": 2,
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<32x16xf32>
ml_program.global private mutable @acc_row(#mpc.init<zeros>) : tensor<1x16xf32>
func.func @gemm_accumulates(%x: tensor<64x32xf16>, %dy: tensor<64x16xf16>, %r: tensor<64x1xf16>) -> tensor<16xf32> {
  %a = ml_program.global_load @acc : tensor<32x16xf32>
  %s = mpc.matmul_add %x, %dy, %a {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>, tensor<32x16xf32> -> tensor<32x16xf32>
  ml_program.global_store @acc = %s : tensor<32x16xf32>
  %b = ml_program.global_load @acc_row : tensor<1x16xf32>
  %w, %db = mpc.matmul_bias_grad %r, %dy, %b {transpose_a} : tensor<64x1xf16>, tensor<64x16xf16>, tensor<1x16xf32>
  ml_program.global_store @acc_row = %w : tensor<1x16xf32>
  return %db : tensor<16xf32>
}

// -----

// Not stored back (the step that consumes the accumulator): the sum takes
// the addend's arena buffer where the addend dies at the GEMM.
// CHECK-LABEL: func @gemm_in_place
// CHECK: %[[A:.*]] = mpc.exp %{{.*}} {mpc.offsets = array<i64: 0>}
// CHECK: mpc.matmul_bias_grad %{{.*}}, %{{.*}}, %[[A]] {mpc.offsets = array<i64: 0, 2048>, transpose_a}
func.func @gemm_in_place(%x: tensor<64x32xf16>, %dy: tensor<64x16xf16>, %g: tensor<32x16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>) {
  %a = mpc.exp %g : tensor<32x16xf32>
  %w, %db = mpc.matmul_bias_grad %x, %dy, %a {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>, tensor<32x16xf32>
  return %w, %db : tensor<32x16xf32>, tensor<16xf32>
}

// -----

// The bias gradient summed into its accumulator by the same op (a bias
// addend) is computed in that accumulator's global too.
// CHECK-LABEL: func @bias_accumulates
// CHECK: mpc.matmul_bias_grad %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}) {mpc.in_globals = [@acc, @bacc], transpose_a}
// REPORT: "function": "bias_accumulates",
// REPORT: "written_in_globals": 2,
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<32x16xf32>
ml_program.global private mutable @bacc(#mpc.init<zeros>) : tensor<16xf32>
func.func @bias_accumulates(%x: tensor<64x32xf16>, %dy: tensor<64x16xf16>) {
  %a = ml_program.global_load @acc : tensor<32x16xf32>
  %b = ml_program.global_load @bacc : tensor<16xf32>
  %w, %db = mpc.matmul_bias_grad %x, %dy, %a bias(%b) {transpose_a} : tensor<64x32xf16>, tensor<64x16xf16>, tensor<32x16xf32> bias(tensor<16xf32>)
  ml_program.global_store @acc = %w : tensor<32x16xf32>
  ml_program.global_store @bacc = %db : tensor<16xf32>
  return
}

// -----

// A layer norm backward's gamma and beta gradients summed into their
// accumulators (its addends), and an embedding's table gradient into its
// accumulator, are computed in the accumulators' globals; the input
// gradient and a gradient without an addend take arena buffers.
// CHECK-LABEL: func @parameter_gradients_accumulate
// CHECK: mpc.layer_norm_backward {{.*}} gamma_addend(%{{.*}} : tensor<16xf32>) beta_addend(%{{.*}} : tensor<16xf32>) {mpc.in_globals = [unit, @gacc, @bacc], mpc.offsets = array<i64: 0, -1, -1>}
// CHECK: mpc.add_layer_norm_backward {{.*}} beta_addend(%{{.*}} : tensor<16xf32>) {mpc.in_globals = [unit, unit, unit, @bacc2], mpc.offsets = array<i64: {{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}, -1>}
// CHECK: mpc.embedding_backward {{.*}} addend(%{{.*}}) {mpc.in_globals = [@tacc]}
// REPORT: "function": "parameter_gradients_accumulate",
// REPORT: "written_in_globals": 4,
ml_program.global private mutable @gacc(#mpc.init<zeros>) : tensor<16xf32>
ml_program.global private mutable @bacc(#mpc.init<zeros>) : tensor<16xf32>
ml_program.global private mutable @bacc2(#mpc.init<zeros>) : tensor<16xf32>
ml_program.global private mutable @tacc(#mpc.init<zeros>) : tensor<100x16xf32>
func.func @parameter_gradients_accumulate(%dy: tensor<8x16xf32>, %x: tensor<8x16xf32>, %mean: tensor<8xf32>, %rstd: tensor<8xf32>, %g: tensor<16xf32>, %ids: tensor<8xi32>) -> (tensor<8x16xf32>, tensor<16xf32>) {
  %ga = ml_program.global_load @gacc : tensor<16xf32>
  %ba = ml_program.global_load @bacc : tensor<16xf32>
  %dx, %dg, %db = mpc.layer_norm_backward %dy, %x, %mean, %rstd, %g gamma_addend(%ga : tensor<16xf32>) beta_addend(%ba : tensor<16xf32>) : tensor<8x16xf32>, tensor<8xf32>, tensor<16xf32>
  ml_program.global_store @gacc = %dg : tensor<16xf32>
  ml_program.global_store @bacc = %db : tensor<16xf32>
  %b2 = ml_program.global_load @bacc2 : tensor<16xf32>
  %ex, %er, %eg, %eb = mpc.add_layer_norm_backward %dx, %x, %mean, %rstd, %g beta_addend(%b2 : tensor<16xf32>) : tensor<8x16xf32>, tensor<8xf32>, tensor<16xf32>
  ml_program.global_store @bacc2 = %eb : tensor<16xf32>
  %ta = ml_program.global_load @tacc : tensor<100x16xf32>
  %t = mpc.embedding_backward %ex, %ids addend(%ta) : tensor<8x16xf32>, tensor<8xi32> -> tensor<100x16xf32>
  ml_program.global_store @tacc = %t : tensor<100x16xf32>
  return %er, %eg : tensor<8x16xf32>, tensor<16xf32>
}

// -----

// A batch norm backward's gamma and beta gradients summed into their
// accumulators likewise: both in the accumulators' globals, the input
// gradient in the arena. The memory report counts it as summed.
// CHECK-LABEL: func @batch_norm_accumulate
// CHECK: mpc.batch_norm_backward {{.*}} gamma_addend(%{{.*}} : tensor<8xf32>) beta_addend(%{{.*}} : tensor<8xf32>) {mpc.in_globals = [unit, @bngacc, @bnbacc], mpc.offsets = array<i64: 0, -1, -1>}
// REPORT: "function": "batch_norm_accumulate",
// REPORT: "fused": {
// REPORT-NEXT: "mpc.batch_norm_backward summed": 1
// REPORT: "written_in_globals": 2,
ml_program.global private mutable @bngacc(#mpc.init<zeros>) : tensor<8xf32>
ml_program.global private mutable @bnbacc(#mpc.init<zeros>) : tensor<8xf32>
func.func @batch_norm_accumulate(%dy: tensor<2x4x4x8xf16>, %x: tensor<2x4x4x8xf16>, %g: tensor<8xf32>, %sm: tensor<8xf32>, %si: tensor<8xf32>) -> tensor<2x4x4x8xf16> {
  %ga = ml_program.global_load @bngacc : tensor<8xf32>
  %ba = ml_program.global_load @bnbacc : tensor<8xf32>
  %dx, %dg, %db = mpc.batch_norm_backward %dy, %x, %g, %sm, %si gamma_addend(%ga : tensor<8xf32>) beta_addend(%ba : tensor<8xf32>) : tensor<2x4x4x8xf16>, tensor<8xf32>
  ml_program.global_store @bngacc = %dg : tensor<8xf32>
  ml_program.global_store @bnbacc = %db : tensor<8xf32>
  return %dx : tensor<2x4x4x8xf16>
}

// -----

// Nothing moves across a call (its callee may read the global): the reset
// stays before the update, and the sum in the arena.
// CHECK-LABEL: func @call_after_reset
// CHECK: mpc.add %{{.*}}, %{{.*}} {mpc.offsets = array<i64: 0>}
// CHECK-NEXT: mpc.constant
// CHECK-NEXT: ml_program.global_store @acc
// CHECK-NEXT: call @elsewhere
ml_program.global private mutable @acc(#mpc.init<zeros>) : tensor<8xf32> {mpc.grad_accumulator = @w}
func.func private @elsewhere()
func.func @call_after_reset(%g: tensor<8xf32>) -> tensor<8xf32> {
  %a = ml_program.global_load @acc : tensor<8xf32>
  %s = mpc.add %a, %g : tensor<8xf32>, tensor<8xf32>
  %z = mpc.constant dense<0.0> : tensor<8xf32>
  ml_program.global_store @acc = %z : tensor<8xf32>
  func.call @elsewhere() : () -> ()
  %e = mpc.exp %s : tensor<8xf32>
  return %e : tensor<8xf32>
}
