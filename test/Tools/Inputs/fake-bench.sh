#!/bin/sh
# Stands in for mpc-bench-kernels: --sweep prints two of its lines, and
# on stderr a note a run may give (cuBLASLt refusing a product through
# pointer arrays); other runs (under a stand-in ncu, which does not run
# it) print nothing.
# With FAKE_BENCH_KILL (a file holding a process ID), its --sweep kills
# that process first: a visit stopped at its limit in the middle of a part.
if [ "$1" = --sweep ] && [ -n "${FAKE_BENCH_KILL:-}" ]; then
  kill -KILL "$(cat "$FAKE_BENCH_KILL")"
  exit 1
fi
if [ "$1" = --sweep ]; then
  echo "mpc: cuBLASLt refused the 512x512x64 product through pointer arrays (batch 96): CUBLAS_STATUS_NOT_SUPPORTED; it runs as strided batches, a call per index of the smaller batch dimension" >&2
  echo '{"kernel": "copy", "shape": "1 GiB", "ms": 0.51000, "gb_per_s": 4210.5}'
  echo '{"kernel": "batch_norm", "shape": "16x128x128x128 partials=32768", "dtype": "f16", "ms": 0.08100, "bytes": 134217728, "gb_per_s": 1657.0, "of_copy": 0.394, "target": 0.70, "target_met": false, "ms_cold": 0.08200, "copy_same_ms": 0.03300, "of_same_copy": 0.402}'
fi
exit 0
