// Module-level lowering: the state buffer (globals in order, 256-byte
// aligned, then the step counter), initializers expanded by
// mpc_init_globals with PyTorch's bounds worked out at compile time, the
// entry function behind mpc_step, and the JSON descriptor.
// RUN: mpc-opt %s --mpc-plan-memory --mpc-lower-to-runtime | FileCheck %s
// RUN: mpc-opt %s --mpc-plan-memory --mpc-lower-to-runtime=entry=eval | FileCheck %s --check-prefix=EVAL

// [784, 256]: kaiming_uniform bound sqrt(2) * sqrt(3 / 784) = 0.087482...
ml_program.global private mutable @w(#mpc.init<kaiming_uniform, seed = 7>) : tensor<784x256xf32>
// xavier_normal of an OHWI filter [8, 3, 3, 4]: fan_in 36, fan_out 72,
// std sqrt(2 / 108) = 0.136083...
ml_program.global private mutable @k(#mpc.init<xavier_normal, seed = 3>) : tensor<8x3x3x4xf16>
ml_program.global private mutable @b(#mpc.init<constant, value = 0.5>) : tensor<256xbf16>
ml_program.global private mutable @u(#mpc.init<uniform, seed = 1, low = -2.0, high = 3.0>) : tensor<10xf32>
ml_program.global private mutable @n(#mpc.init<normal, seed = 2, mean = 1.0, std = 0.02>) : tensor<10xf64>
ml_program.global private mutable @o(#mpc.init<ones>) : tensor<3xf32>
ml_program.global private @table(dense<[1, 2, 3]> : tensor<3xi32>) : tensor<3xi32>
ml_program.global private @half(dense<0.25> : tensor<4xf32>) : tensor<4xf32>

// CHECK: llvm.mlir.global internal constant @[[TABLE:.*]](dense<[1, 2, 3]> : tensor<3xi32>)

// CHECK-LABEL: func.func @train_step(
// CHECK-LABEL: func.func @eval(
// CHECK-NOT: mpcrt_increment_step
// CHECK: return

// CHECK-LABEL: func.func @mpc_init_globals(
// CHECK-SAME: %[[S:.*]]: !llvm.ptr)
// f32 (2), 200704 elements, uniform (0) in [-bound, bound), seed 7, at offset 0:
// CHECK: %cst = arith.constant -0.0874817765279706{{[0-9]*}} : f64
// CHECK: %cst_0 = arith.constant 0.0874817765279706{{[0-9]*}} : f64
// CHECK: call @mpcrt_fill_random(%c2_i32{{(_[0-9]+)?}}, %[[S]], %c200704_i64{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}}, %cst_0, %c7_i64{{(_[0-9]+)?}})
// CHECK: %[[K:.*]] = llvm.getelementptr %[[S]][%c802816_i64]
// CHECK: arith.constant 0.136082763487954{{[0-9]*}} : f64
// CHECK: call @mpcrt_fill_random(%c0_i32{{(_[0-9]+)?}}, %[[K]], %c288_i64{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}}, %c3_i64{{(_[0-9]+)?}})
// CHECK: call @mpcrt_fill(%c1_i32{{(_[0-9]+)?}}, %{{.*}}, %c256_i64{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}})
// CHECK: call @mpcrt_fill_random(%c2_i32{{(_[0-9]+)?}}, %{{.*}}, %c10_i64{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}}, %c1_i64{{(_[0-9]+)?}})
// CHECK: call @mpcrt_fill_random(%c3_i32{{(_[0-9]+)?}}, %{{.*}}, %c10_i64{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}}, %c2_i64{{(_[0-9]+)?}})
// CHECK: call @mpcrt_fill(%c2_i32{{(_[0-9]+)?}}, %{{.*}}, %c3_i64{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}})
// Dense values: non-splat copied from read-only data, splats filled.
// CHECK: %[[T:.*]] = llvm.mlir.addressof @[[TABLE]]
// CHECK: call @mpcrt_copy(%{{.*}}, %[[T]], %c12_i64{{(_[0-9]+)?}})
// CHECK: call @mpcrt_fill(%c2_i32{{(_[0-9]+)?}}, %{{.*}}, %c4_i64{{(_[0-9]+)?}}, %cst{{(_[0-9]+)?}})
// The step counter starts at 0.
// CHECK: call @mpcrt_zero(%{{.*}}, %c8_i64{{(_[0-9]+)?}})

// CHECK-LABEL: func.func @mpc_step(
// CHECK: call @train_step(%arg0, %arg1, %arg2, %arg3)

// The descriptor: inputs named by mpc.name (else argN), globals with
// their offsets, the step counter last.
// CHECK: llvm.mlir.global external constant @mpc_model("{
// CHECK-SAME: \22arena_bytes\22:1024
// CHECK-SAME: \22entry\22:\22train_step\22
// CHECK-SAME: {\22bytes\22:802816,\22dtype\22:\22f32\22,\22name\22:\22w\22,\22offset\22:0,\22shape\22:[784,256]}
// CHECK-SAME: {\22bytes\22:576,\22dtype\22:\22f16\22,\22name\22:\22k\22,\22offset\22:802816,\22shape\22:[8,3,3,4]}
// CHECK-SAME: {\22bytes\22:8,\22dtype\22:\22i64\22,\22name\22:\22mpc.step\22,\22offset\22:805376,\22shape\22:[]}
// CHECK-SAME: \22inputs\22:[{\22bytes\22:1024,\22dtype\22:\22f32\22,\22name\22:\22x\22,\22shape\22:[256]},{\22bytes\22:12,\22dtype\22:\22i32\22,\22name\22:\22arg1\22,\22shape\22:[3]}]
// CHECK-SAME: \22outputs\22:[{\22bytes\22:1024,\22dtype\22:\22f32\22,\22name\22:\22result0\22,\22shape\22:[256]}]
// CHECK-SAME: \22state_bytes\22:805632

// EVAL-LABEL: func.func @mpc_step(
// EVAL: call @eval(
// EVAL: \22entry\22:\22eval\22
func.func @train_step(%x: tensor<256xf32> {mpc.name = "x"}, %i: tensor<3xi32>) -> tensor<256xf32> {
  %0 = mpc.relu %x : tensor<256xf32>
  return %0 : tensor<256xf32>
}

func.func @eval(%x: tensor<256xf32>) -> tensor<256xf32> {
  %0 = mpc.neg %x : tensor<256xf32>
  return %0 : tensor<256xf32>
}
