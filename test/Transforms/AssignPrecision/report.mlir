// The precision report: JSON for tools, a table for people.
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 alignment-remarks=false report=-" -o /dev/null | FileCheck %s
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 alignment-remarks=false" --mpc-precision-report=%t.json -o /dev/null
// RUN: FileCheck %s < %t.json
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 alignment-remarks=false report=- report-format=json" -o /dev/null | FileCheck %s
// RUN: mpc-opt %s --mpc-assign-precision="level=O1 alignment-remarks=false report=- report-format=table" -o /dev/null | FileCheck %s --check-prefix=TABLE

// CHECK: "level": "O1",
// CHECK-NEXT: "dtype": "f16",
// CHECK-NEXT: "ops": [
// CHECK-NEXT: {
// CHECK-NEXT: "location": "{{.*}}/report.mlir:{{[0-9]+}}:8",
// CHECK-NEXT: "function": "f",
// CHECK-NEXT: "op": "mpc.matmul",
// CHECK-NEXT: "category": "lowp",
// CHECK-NEXT: "inputs": [
// CHECK-NEXT: "f16",
// CHECK-NEXT: "f16"
// CHECK-NEXT: ],
// CHECK-NEXT: "outputs": [
// CHECK-NEXT: "f16"
// CHECK-NEXT: ],
// CHECK-NEXT: "rule": "lowp: low precision, f32 accumulation (default)"
// CHECK: "op": "mpc.add",
// CHECK-NEXT: "category": "promote",
// CHECK: "rule": "promote: widest input (default)"
// CHECK: "op": "mpc.softmax",
// CHECK-NEXT: "category": "fp32",
// CHECK-NEXT: "inputs": [
// CHECK-NEXT: "f32"
// CHECK: "rule": "fp32: numerically sensitive (default)"
// CHECK: "totals": {
// CHECK-NEXT: "ops_by_dtype": {
// CHECK-NEXT: "f16": 1,
// CHECK-NEXT: "f32": 2
// CHECK-NEXT: },
// Two inputs of the matmul cast down, its result cast up for the add.
// CHECK-NEXT: "casts_inserted": 3,
// CHECK-NEXT: "activation_bytes": {
// 3 ops x 32x16 f32 = 6144 bytes before; after: the matmul result (1024)
// and 3 casts (32x64 + 64x16 halves = 6144, 32x16 f32 = 2048) join.
// CHECK-NEXT: "before": {
// CHECK-NEXT: "f32": 6144
// CHECK-NEXT: },
// CHECK-NEXT: "after": {
// CHECK-NEXT: "f16": 7168,
// CHECK-NEXT: "f32": 6144
// CHECK-NEXT: }
// CHECK-NEXT: },
// CHECK-NEXT: "weight_bytes": {
// CHECK-NEXT: "before": {
// CHECK-NEXT: "f32": 64
// CHECK-NEXT: },
// CHECK-NEXT: "after": {
// CHECK-NEXT: "f32": 64

// TABLE: mixed precision: level O1, dtype f16
// TABLE-NEXT: location op category inputs output rule
// TABLE-NEXT: report.mlir:{{[0-9]+}}:8 mpc.matmul lowp f16,f16 f16 lowp: low precision, f32 accumulation (default)
// TABLE-NEXT: report.mlir:{{[0-9]+}}:8 mpc.add promote f32,f32 f32 promote: widest input (default)
// TABLE-NEXT: report.mlir:{{[0-9]+}}:8 mpc.softmax fp32 f32 f32 fp32: numerically sensitive (default)
// TABLE-NEXT: casts inserted: 3
// TABLE-NEXT: activation bytes: before f32 6144; after f16 7168, f32 6144
// TABLE-NEXT: weight bytes: before f32 64; after f32 64
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<16xf32>
func.func @f(%x: tensor<32x64xf32>, %w: tensor<64x16xf32>) -> tensor<32x16xf32> {
  %b = ml_program.global_load @b : tensor<16xf32>
  %0 = mpc.matmul %x, %w : tensor<32x64xf32>, tensor<64x16xf32>
  %1 = mpc.add %0, %b : tensor<32x16xf32>, tensor<16xf32>
  %2 = mpc.softmax %1 : tensor<32x16xf32>
  return %2 : tensor<32x16xf32>
}
