// f64 values are not mixed precision's to round: as autocast, which casts
// no float64 tensor, O1 and O2 leave an op with an f64 operand or result
// as written, in every category (a matmul is not run in f16, a softmax not
// in f32), while the f32 ops beside it are assigned as usual. O3 stores
// and runs everything low, f64 too. An instance's own precision still
// holds.
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 alignment-remarks=false" | FileCheck %s --check-prefix=CHECK
// RUN: mpc-opt %s --mpc-assign-precision="level=O2 alignment-remarks=false" | FileCheck %s --check-prefix=CHECK
// RUN: mpc-opt %s --mpc-assign-precision="level=O3 alignment-remarks=false" 2>/dev/null | FileCheck %s --check-prefix=O3
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 alignment-remarks=false report=- report-format=json" -o /dev/null | FileCheck %s --check-prefix=REPORT

// CHECK-LABEL: func.func @f64_ops
// CHECK-NEXT:  %[[MM:.*]] = mpc.matmul %arg0, %arg1 : tensor<8x8xf64>, tensor<8x8xf64>
// CHECK-NEXT:  %[[SM:.*]] = mpc.softmax %[[MM]] {axis = 1 : i64} : tensor<8x8xf64>
// CHECK-NEXT:  %[[ADD:.*]] = mpc.add %[[SM]], %arg0 : tensor<8x8xf64>, tensor<8x8xf64>
// CHECK-NEXT:  return %[[ADD]]
// O3-LABEL: func.func @f64_ops
// O3: mpc.matmul %{{.*}}, %{{.*}} : tensor<8x8xf16>, tensor<8x8xf16>
// O3: mpc.softmax %{{.*}} {axis = 1 : i64} : tensor<8x8xf16>
// REPORT:      "op": "mpc.matmul",
// REPORT-NEXT: "category": "lowp",
// REPORT:      "rule": "f64: runs as written (mixed precision casts no f64 value)"
// REPORT:      "op": "mpc.softmax",
// REPORT-NEXT: "category": "fp32",
// REPORT-NEXT: "inputs": [
// REPORT-NEXT:   "f64"
// REPORT:      "rule": "f64: runs as written (mixed precision casts no f64 value)"
func.func @f64_ops(%x: tensor<8x8xf64>, %w: tensor<8x8xf64>) -> tensor<8x8xf64> {
  %0 = mpc.matmul %x, %w : tensor<8x8xf64>, tensor<8x8xf64>
  %1 = mpc.softmax %0 {axis = 1 : i64} : tensor<8x8xf64>
  %2 = mpc.add %1, %x : tensor<8x8xf64>, tensor<8x8xf64>
  return %2 : tensor<8x8xf64>
}

// An f32 matmul goes low; its result cast to f64 feeds f64 ops, which stay.
// CHECK-LABEL: func.func @mixed
// CHECK: mpc.matmul %{{.*}}, %{{.*}} : tensor<8x8xf16>, tensor<8x8xf16>
// CHECK: mpc.cast %{{.*}} : tensor<8x8x{{f16|f32}}> -> tensor<8x8xf64>
// CHECK: mpc.mul %{{.*}}, %arg2 : tensor<8x8xf64>, tensor<8x8xf64>
// CHECK-NOT: mpc.cast
// CHECK: return
func.func @mixed(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>, %y: tensor<8x8xf64>) -> tensor<8x8xf64> {
  %0 = mpc.matmul %x, %w : tensor<8x8xf32>, tensor<8x8xf32>
  %1 = mpc.cast %0 : tensor<8x8xf32> -> tensor<8x8xf64>
  %2 = mpc.mul %1, %y : tensor<8x8xf64>, tensor<8x8xf64>
  return %2 : tensor<8x8xf64>
}

// An instance's precision is the user's word: this f64 matmul runs low.
// CHECK-LABEL: func.func @instance
// CHECK: mpc.matmul %{{.*}}, %{{.*}} {mpc.precision = "lowp"} : tensor<8x8xf16>, tensor<8x8xf16>
func.func @instance(%x: tensor<8x8xf64>, %w: tensor<8x8xf64>) -> tensor<8x8xf64> {
  %0 = mpc.matmul %x, %w {mpc.precision = "lowp"} : tensor<8x8xf64>, tensor<8x8xf64>
  return %0 : tensor<8x8xf64>
}
