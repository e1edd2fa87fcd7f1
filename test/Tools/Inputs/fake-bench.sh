#!/bin/sh
# Stands in for mpc-bench-kernels: --sweep prints two of its lines; other
# runs (under a stand-in ncu, which does not run it) print nothing.
# With FAKE_BENCH_KILL (a file holding a process ID), its --sweep kills
# that process first: a visit stopped at its limit in the middle of a part.
if [ "$1" = --sweep ] && [ -n "${FAKE_BENCH_KILL:-}" ]; then
  kill -KILL "$(cat "$FAKE_BENCH_KILL")"
  exit 1
fi
if [ "$1" = --sweep ]; then
  echo '{"kernel": "copy", "shape": "1 GiB", "ms": 0.51000, "gb_per_s": 4210.5}'
  echo '{"kernel": "batch_norm", "shape": "16x128x128x128 partials=32768", "dtype": "f16", "ms": 0.08100, "bytes": 134217728, "gb_per_s": 1657.0, "of_copy": 0.394, "target": 0.70, "target_met": false, "ms_cold": 0.08200, "copy_same_ms": 0.03300, "of_same_copy": 0.402}'
fi
exit 0
