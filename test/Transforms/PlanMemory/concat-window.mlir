// A transpose (or a heads product, below) whose one reader is a
// concatenation (through reshapes, each read once) is written into the
// concatenation's window: it takes the concatenation's buffer (the same
// offset), which then lives from the first such transpose on, and the
// concat copies only its other operands (the lowering scatters the
// transpose's input into the window). Any other
// reader, a reshape whose strides do not compose back, a transpose of a
// view, or reuse=false gives the transpose a buffer of its own.
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory="reuse=false" | FileCheck %s --check-prefix=NOREUSE
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory="report=-" -o /dev/null | FileCheck %s --check-prefix=REPORT
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory="report=- reuse=false" -o /dev/null | FileCheck %s --check-prefix=REPORTNR

// A packed projection's gradient: two pieces transposed back from heads
// (one of them through a reshape), one plain. The concatenation (768
// bytes) is at 0 from the first transpose on; the plain piece's product
// has its own buffer.
// CHECK-LABEL: func @pieces_in_their_window
// CHECK-SAME: attributes {mpc.arena_bytes = 1024 : i64}
// CHECK: mpc.transpose %arg0 {mpc.offsets = array<i64: 0>,
// CHECK: %[[T:.*]] = mpc.transpose %arg1 {mpc.offsets = array<i64: 0>,
// CHECK: mpc.reshape %[[T]] {mpc.offsets = array<i64: 0>}
// CHECK: mpc.matmul {{.*}}{mpc.offsets = array<i64: 768>}
// CHECK: mpc.concat {{.*}}{axis = 1 : i64, mpc.offsets = array<i64: 0>}
// NOREUSE-LABEL: func @pieces_in_their_window
// NOREUSE: mpc.transpose %arg0 {mpc.offsets = array<i64: 768>,
// NOREUSE: mpc.transpose %arg1 {mpc.offsets = array<i64: 1024>,
// NOREUSE: mpc.concat {{.*}}{axis = 1 : i64, mpc.offsets = array<i64: 0>}
// REPORT: "function": "pieces_in_their_window",
// REPORT: "concat_windows": 2,
func.func @pieces_in_their_window(%dq: tensor<16x4xf32>, %dk: tensor<2x4x8xf32>, %x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x48xf32> {
  %0 = mpc.transpose %dq {permutation = array<i64: 1, 0>} : tensor<16x4xf32>
  %1 = mpc.transpose %dk {permutation = array<i64: 1, 0, 2>} : tensor<2x4x8xf32>
  %2 = mpc.reshape %1 : tensor<4x2x8xf32> -> tensor<4x16xf32>
  %3 = mpc.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32>
  %4 = mpc.concat %0, %2, %3 {axis = 1 : i64} : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  return %4 : tensor<4x48xf32>
}

// -----

// Not written into the window: a transpose the concat reads twice, one
// also read by an add, one whose reshape's shape and its own have no
// common refinement ([4, 6] and [6, 4]: no loop over the transpose's
// input reaches the window), and a transpose of a slice's view (the
// slice read only by it). Each has a buffer of its own, none
// the concatenation's.
// CHECK-LABEL: func @pieces_copied
// The offsets differ pairwise (each transpose from its concatenation).
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory | grep -A20 "func.func @pieces_copied" | %python -c "import re, sys; t = re.findall(r'mpc\.(transpose|concat) .*?mpc\.offsets = array<i64: (\d+)>', sys.stdin.read()); print(all(t[i][1] != t[i + 1][1] for i in range(0, len(t), 2)), len(t))" | FileCheck %s --check-prefix=APART
// APART: True 8
// REPORT: "function": "pieces_copied",
// REPORT: "concat_windows": 0,
func.func @pieces_copied(%a: tensor<4x4xf32>, %b: tensor<4x6xf32>, %x: tensor<4x8xf32>, %w: tensor<8x48xf32>, %c: tensor<16x8xf32>, %d: tensor<4x6xf32>) -> (tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x12xf32>, tensor<16x12xf32>) {
  %0 = mpc.transpose %a {permutation = array<i64: 1, 0>} : tensor<4x4xf32>
  %1 = mpc.concat %0, %0 {axis = 0 : i64} : tensor<4x4xf32>, tensor<4x4xf32>
  %2 = mpc.transpose %a {permutation = array<i64: 1, 0>} : tensor<4x4xf32>
  %3 = mpc.add %2, %a : tensor<4x4xf32>, tensor<4x4xf32>
  %4 = mpc.concat %2, %2 {axis = 1 : i64} : tensor<4x4xf32>, tensor<4x4xf32>
  %5 = mpc.transpose %b {permutation = array<i64: 1, 0>} : tensor<4x6xf32>
  %6 = mpc.reshape %5 : tensor<6x4xf32> -> tensor<4x6xf32>
  %7 = mpc.concat %6, %d {axis = 1 : i64} : tensor<4x6xf32>, tensor<4x6xf32>
  %8 = mpc.matmul %x, %w : tensor<4x8xf32>, tensor<8x48xf32>
  %9 = mpc.slice %8 {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 16>} : tensor<4x48xf32>
  %10 = mpc.transpose %9 {permutation = array<i64: 1, 0>} : tensor<4x16xf32>
  %11 = mpc.concat %10, %c {axis = 1 : i64} : tensor<16x4xf32>, tensor<16x8xf32>
  return %1, %3, %7, %11 : tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x12xf32>, tensor<16x12xf32>
}

// -----

// A heads product whose one reader is a concatenation (through a reshape)
// writes its matrices into the concatenation's window itself (a packed
// projection's gradient: the queries' heads written heads-second, rows 24
// elements apart); so does one written in order ([B, H, S, D] viewed as
// [B H, S, D]). Not one whose reshape merges dimensions the window does
// not keep evenly apart (the last two halves of a row, 4 apart where 2
// would be).
// CHECK-LABEL: func @heads_in_their_window
// CHECK: %[[Q:.*]] = mpc.heads_matmul {{.*}}{b_bshd, mpc.offsets = array<i64: [[W:[0-9]+]]>, result_bshd}
// CHECK: %[[R:.*]] = mpc.reshape %[[Q]] {mpc.offsets = array<i64: [[W]]>}
// CHECK: mpc.concat %[[R]], %{{.*}} {axis = 2 : i64, mpc.offsets = array<i64: [[W]]>}
// CHECK: %[[O:.*]] = mpc.heads_matmul {{.*}}{mpc.offsets = array<i64: [[V:[0-9]+]]>}
// CHECK: %[[P:.*]] = mpc.reshape %[[O]] {mpc.offsets = array<i64: [[V]]>}
// CHECK: mpc.concat %[[P]], %{{.*}} {axis = 0 : i64, mpc.offsets = array<i64: [[V]]>}
// CHECK: %[[N:.*]] = mpc.heads_matmul {{.*}}{mpc.offsets = array<i64: [[X:[0-9]+]]>}
// CHECK: mpc.reshape %[[N]] {mpc.offsets = array<i64: [[X]]>}
// CHECK-NOT: mpc.concat {{.*}}mpc.offsets = array<i64: [[X]]>
// REPORTNR: "function": "heads_in_their_window",
// REPORTNR: "concat_windows": 0,
// REPORT: "function": "heads_in_their_window",
// REPORT: "concat_windows": 2,
func.func @heads_in_their_window(%p: tensor<2x3x6x6xf32>, %v: tensor<2x6x3x4xf32>, %dk: tensor<2x6x12xf32>, %w: tensor<2x3x6x4xf32>, %x: tensor<3x6x4xf32>, %y: tensor<2x3x6x2x2xf32>) -> (tensor<2x6x24xf32>, tensor<9x6x4xf32>, tensor<2x3x6x2x4xf32>) {
  %dq = mpc.heads_matmul %p, %v {b_bshd, result_bshd} : tensor<2x3x6x6xf32>, tensor<2x6x3x4xf32> -> tensor<2x6x3x4xf32>
  %dqr = mpc.reshape %dq : tensor<2x6x3x4xf32> -> tensor<2x6x12xf32>
  %c = mpc.concat %dqr, %dk {axis = 2 : i64} : tensor<2x6x12xf32>, tensor<2x6x12xf32>
  %o = mpc.heads_matmul %p, %w : tensor<2x3x6x6xf32>, tensor<2x3x6x4xf32> -> tensor<2x3x6x4xf32>
  %or = mpc.reshape %o : tensor<2x3x6x4xf32> -> tensor<6x6x4xf32>
  %d = mpc.concat %or, %x {axis = 0 : i64} : tensor<6x6x4xf32>, tensor<3x6x4xf32>
  %n = mpc.heads_matmul %p, %w : tensor<2x3x6x6xf32>, tensor<2x3x6x4xf32> -> tensor<2x3x6x4xf32>
  %nr = mpc.reshape %n : tensor<2x3x6x4xf32> -> tensor<2x3x6x2x2xf32>
  %e = mpc.concat %nr, %y {axis = 4 : i64} : tensor<2x3x6x2x2xf32>, tensor<2x3x6x2x2xf32>
  return %c, %d, %e : tensor<2x6x24xf32>, tensor<9x6x4xf32>, tensor<2x3x6x2x4xf32>
}
