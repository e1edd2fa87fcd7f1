// The memory report names what --mpc-fuse left in each function, and the
// plan holds the fused op's output only: the product and the sum it no
// longer writes are not tensors of the plan.
// RUN: mpc-opt %s --mpc-fuse --mpc-plan-memory="report=-" -o /dev/null | FileCheck %s --check-prefix=FUSED
// RUN: mpc-opt %s --mpc-plan-memory="report=-" -o /dev/null | FileCheck %s --check-prefix=PLAIN

// Fused: the two layers' outputs (64x512 and 64x16 f16, 65536 + 2048 bytes).
// FUSED: "function": "forward",
// FUSED: "buffer_bytes": 67584,
// FUSED-NEXT: "fused": {
// FUSED-NEXT: "mpc.fused_matmul none": 1,
// FUSED-NEXT: "mpc.fused_matmul relu": 1
// FUSED-NEXT: },
// Unfused: each product, sum and ReLU output its own tensor unless written
// in place over a dead input (the sum over the product, the ReLU over the
// sum): the same bytes, more kernels.
// PLAIN: "function": "forward",
// PLAIN: "buffer_bytes": 67584,
// PLAIN-NEXT: "fused": {},
func.func @forward(%x: tensor<64x784xf16>, %w1: tensor<784x512xf16>, %b1: tensor<512xf16>, %w2: tensor<512x16xf16>, %b2: tensor<16xf16>) -> tensor<64x16xf16> {
  %0 = mpc.matmul %x, %w1 : tensor<64x784xf16>, tensor<784x512xf16>
  %1 = mpc.add %0, %b1 : tensor<64x512xf16>, tensor<512xf16>
  %2 = mpc.relu %1 : tensor<64x512xf16>
  %3 = mpc.matmul %2, %w2 : tensor<64x512xf16>, tensor<512x16xf16>
  %4 = mpc.add %3, %b2 : tensor<64x16xf16>, tensor<16xf16>
  return %4 : tensor<64x16xf16>
}
