// Category overrides: pass options and a JSON policy file.
// RUN: mpc-opt %s -split-input-file --mpc-assign-precision="level=O1 alignment-remarks=false" | FileCheck %s --check-prefix=DEFAULT
// RUN: mpc-opt %s -split-input-file --mpc-assign-precision="level=O1 alignment-remarks=false fp32-ops=mpc.gelu lowp-ops=add" | FileCheck %s --check-prefix=OPTIONS
// RUN: mpc-opt %s -split-input-file --mpc-assign-precision="level=O1 alignment-remarks=false promote-ops=mpc.matmul follow-ops=mpc.exp" | FileCheck %s --check-prefix=MOVED
// RUN: mpc-opt %s -split-input-file --mpc-assign-precision="level=O1 alignment-remarks=false policy=%S/Inputs/policy.json" | FileCheck %s --check-prefix=OPTIONS

// DEFAULT-LABEL: func @gelu_add
// DEFAULT: %[[MM:.*]] = mpc.matmul {{.*}} : tensor<4x16xf16>, tensor<16x8xf16>
// gelu follows its f16 input; add promotes to the f32 bias.
// DEFAULT: mpc.gelu %[[MM]] : tensor<4x8xf16>
// DEFAULT: mpc.add {{.*}} : tensor<4x8xf32>, tensor<8xf32>

// OPTIONS-LABEL: func @gelu_add
// OPTIONS: %[[MM:.*]] = mpc.matmul
// OPTIONS: %[[UP:.*]] = mpc.cast %[[MM]] : tensor<4x8xf16> -> tensor<4x8xf32>
// OPTIONS: mpc.gelu %[[UP]] : tensor<4x8xf32>
// OPTIONS: mpc.add {{.*}} : tensor<4x8xf16>, tensor<8xf16>
func.func @gelu_add(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = "mpc.matmul"(%x, %w) : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %1 = mpc.gelu %0 : tensor<4x8xf32>
  %2 = mpc.add %1, %b : tensor<4x8xf32>, tensor<8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// MOVED-LABEL: func @moved
// matmul as promote: its f32 inputs keep it in f32.
// MOVED: mpc.matmul %{{.*}}, %{{.*}} : tensor<4x16xf32>, tensor<16x8xf32>
// exp as follow: runs in its input's type, no cast.
// MOVED-NOT: mpc.cast
// MOVED: mpc.exp %{{.*}} : tensor<4xf16>
func.func @moved(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %h: tensor<4xf16>) -> (tensor<4x8xf32>, tensor<4xf16>) {
  %0 = mpc.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32>
  %1 = mpc.exp %h : tensor<4xf16>
  return %0, %1 : tensor<4x8xf32>, tensor<4xf16>
}
