// Splat constants: small ones are read-only globals in the executable;
// float ones over 4 KiB live in the state buffer and are filled at
// initialisation, never stored expanded (a 16 GiB splat costs a fill, not
// a 16 GiB object file); identical ones share one slot; an integer splat
// too large to store expanded is refused with its location.
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory --mpc-lower-to-runtime -verify-diagnostics | FileCheck %s

// The small splat stays a global of 4 elements.
// CHECK-DAG: llvm.mlir.global internal constant @[[SMALL:__mpc_const_[0-9]+]](dense<2.500000e-01> : tensor<4xf32>)
// CHECK-NOT: llvm.mlir.global internal constant @__mpc_const_{{.*}}tensor<4294967296xf32>
// CHECK-LABEL: func.func @huge(
// Both uses of the huge splat read one state slot (after the step counter
// at 0: offset 256).
// CHECK: %[[SLOT:.*]] = llvm.getelementptr %arg1[%c256_i64]
// CHECK: call @mpcrt_binary_f32(%c2_i32, %{{.*}}, %{{.*}}, %[[SLOT]],
// CHECK: %[[SLOT2:.*]] = llvm.getelementptr %arg1[%c256_i64_{{[0-9]+}}]
// CHECK: call @mpcrt_binary_f32(%c2_i32_{{[0-9]+}}, %{{.*}}, %{{.*}}, %[[SLOT2]],
// CHECK: llvm.mlir.addressof @[[SMALL]]
// CHECK-LABEL: func.func @mpc_init_globals(
// CHECK: %[[AT:.*]] = llvm.getelementptr %arg0[%c256_i64]
// CHECK: call @mpcrt_fill(%c2_i32, %[[AT]], %c4294967296_i64, %cst)
// CHECK-NOT: call @mpcrt_fill(
// CHECK: return
// The model descriptor's state includes the slot: 256 + 2^32 * 4 bytes.
// CHECK: state_bytes{{.}}22:17179869440
func.func @huge(%x: tensor<65536x65536xf32>, %s: tensor<4xf32>) -> (tensor<65536x65536xf32>, tensor<4xf32>) {
  %c = mpc.constant dense<0.5> : tensor<65536x65536xf32>
  %y = mpc.mul %x, %c : tensor<65536x65536xf32>, tensor<65536x65536xf32>
  %c2 = mpc.constant dense<0.5> : tensor<65536x65536xf32>
  %z = mpc.mul %y, %c2 : tensor<65536x65536xf32>, tensor<65536x65536xf32>
  %k = mpc.constant dense<0.25> : tensor<4xf32>
  %t = mpc.mul %s, %k : tensor<4xf32>, tensor<4xf32>
  return %z, %t : tensor<65536x65536xf32>, tensor<4xf32>
}

// -----

func.func @huge_integers(%x: tensor<8192x8192xi32>) -> tensor<8192x8192xi32> {
  // expected-error @+1 {{'mpc.constant' op is a splat of 268435456 bytes of 'i32'; integer splats are stored expanded, at most 16777216 bytes}}
  %c = mpc.constant dense<3> : tensor<8192x8192xi32>
  return %c : tensor<8192x8192xi32>
}
