// RUN: mpc-opt %s -split-input-file --mpc-fuse=epilogues=false | FileCheck %s
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false residuals=false" | FileCheck %s --check-prefix=OFF
// RUN: mpc-opt %s -split-input-file --mpc-fuse="epilogues=false remarks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A sublayer's output dropped and added to the residual stream, with no
// norm after it: one mpc.dropout_add, either side of the add; with a norm
// after it the norm takes the pair (mpc.add_layer_norm).
// CHECK-LABEL: func @residuals
// CHECK-NEXT: %[[A:.*]] = mpc.dropout_add %arg0, %arg1 {p = 1.000000e-01 : f64, seed = 4 : i64} : tensor<2x8x16xf16>, tensor<2x8x16xf16>
// CHECK-NEXT: %[[B:.*]] = mpc.dropout_add %arg0, %[[A]] {p = 2.000000e-01 : f64, seed = 5 : i64} : tensor<2x8x16xf16>, tensor<2x8x16xf16>
// CHECK-NEXT: %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = mpc.add_layer_norm %arg0, %[[B]], %arg2, %arg3 {dropout_p = 1.000000e-01 : f64, seed = 6 : i64}
// CHECK-NOT: mpc.dropout
// OFF-COUNT-2: mpc.dropout %arg0
// OFF: mpc.add_layer_norm
// REMARK: remark: fused: mpc.dropout + mpc.add + mpc.layer_norm -> mpc.add_layer_norm
// REMARK-COUNT-2: remark: fused: mpc.dropout + mpc.add -> mpc.dropout_add
func.func @residuals(%x: tensor<2x8x16xf16>, %r: tensor<2x8x16xf16>, %g: tensor<16xf16>, %b: tensor<16xf16>) -> tensor<2x8x16xf16> {
  %d, %m = mpc.dropout %x {p = 0.1 : f64, seed = 4 : i64} : tensor<2x8x16xf16>
  %0 = mpc.add %d, %r : tensor<2x8x16xf16>, tensor<2x8x16xf16>
  %d2, %m2 = mpc.dropout %x {p = 0.2 : f64, seed = 5 : i64} : tensor<2x8x16xf16>
  %1 = mpc.add %0, %d2 : tensor<2x8x16xf16>, tensor<2x8x16xf16>
  %d3, %m3 = mpc.dropout %x {p = 0.1 : f64, seed = 6 : i64} : tensor<2x8x16xf16>
  %2 = mpc.add %d3, %1 : tensor<2x8x16xf16>, tensor<2x8x16xf16>
  %y, %mean, %rstd = mpc.layer_norm %2, %g, %b : tensor<2x8x16xf16>, tensor<16xf16>
  return %y : tensor<2x8x16xf16>
}

// -----

// What must not fuse: a dropout whose mask is read (a hand-written
// backward), whose result has another reader, an add that broadcasts, the
// dropout added to itself.
// CHECK-LABEL: func @no_residuals
// CHECK-NOT: mpc.dropout_add
// REMARK-NOT: remark
func.func @no_residuals(%x: tensor<2x8x16xf16>, %r: tensor<2x8x16xf16>, %rb: tensor<16xf16>) -> (tensor<2x8x16xf16>, tensor<2x8x16xi1>, tensor<2x8x16xf16>, tensor<2x8x16xf16>, tensor<2x8x16xf16>, tensor<2x8x16xf16>) {
  %d, %m = mpc.dropout %x {p = 0.1 : f64, seed = 4 : i64} : tensor<2x8x16xf16>
  %0 = mpc.add %d, %r : tensor<2x8x16xf16>, tensor<2x8x16xf16>
  %d2, %m2 = mpc.dropout %x {p = 0.1 : f64, seed = 5 : i64} : tensor<2x8x16xf16>
  %1 = mpc.add %d2, %r : tensor<2x8x16xf16>, tensor<2x8x16xf16>
  %d3, %m3 = mpc.dropout %x {p = 0.1 : f64, seed = 6 : i64} : tensor<2x8x16xf16>
  %2 = mpc.add %d3, %rb : tensor<2x8x16xf16>, tensor<16xf16>
  %d4, %m4 = mpc.dropout %x {p = 0.1 : f64, seed = 7 : i64} : tensor<2x8x16xf16>
  %3 = mpc.add %d4, %d4 : tensor<2x8x16xf16>, tensor<2x8x16xf16>
  return %0, %m, %1, %d2, %2, %3 : tensor<2x8x16xf16>, tensor<2x8x16xi1>, tensor<2x8x16xf16>, tensor<2x8x16xf16>, tensor<2x8x16xf16>, tensor<2x8x16xf16>
}
