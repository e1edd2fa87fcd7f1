#!/usr/bin/env bash
# Builds mpc and runs every test suite: lit (FileCheck) and GoogleTest
# (ctest), then the compiler's and tools' lit suites again under
# AddressSanitizer and UndefinedBehaviorSanitizer (scripts/sanitize.sh;
# MPC_SANITIZE_TESTS=0 skips) and a bounded fuzzing run in the same
# sanitized build (scripts/fuzz.sh; MPC_FUZZ_SECONDS per target, default
# 30, 0 skips). Exits non-zero on any failure.
set -euo pipefail
# Each phase's heading says when it began (seconds since the start) and
# the disk space left where the tests write, so a log shows where a run's
# time goes and a run that filled its disk (SIGBUS in a tool writing an
# mmap'ed output, "No space left") says so.
phase() {
  echo "== $* (at ${SECONDS}s; $(df -Ph "${MPC_BUILD:-.}" 2>/dev/null |
    awk 'NR == 2 { print $4 }') free)"
}
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

# The independent oracles some tests use (PyTorch exports and trains the
# models the importer is checked against): Debian's, when missing.
mpc_install_missing python3-torch python3-torchvision python3-numpy

status=0
phase "lit: check-mpc"
results="$MPC_BUILD/lit-results.json"
rm -f "$results"
/usr/lib/llvm-22/bin/lit -sv -o "$results" "$MPC_BUILD/test" || status=1
phase "ctest: unit tests"
# One test per core (each is its own process; 149 s serial, 87 s on two
# cores).
ctest --test-dir "$MPC_BUILD" -j "$(nproc)" --output-on-failure || status=1
if [ "${MPC_SANITIZE_TESTS:-1}" != 0 ]; then
  phase "lit under AddressSanitizer and UndefinedBehaviorSanitizer"
  "$MPC_ROOT/scripts/sanitize.sh" || status=1
fi
if [ "${MPC_FUZZ_SECONDS:-30}" != 0 ]; then
  phase "fuzz: ${MPC_FUZZ_SECONDS:-30}s per target"
  FUZZ_SECONDS="${MPC_FUZZ_SECONDS:-30}" "$MPC_ROOT/scripts/fuzz.sh" || status=1
fi
# A failing lit test's own lines come last again, where a log read from
# its end shows them: each failed test's name and the end of its output.
if [ -f "$results" ]; then
  "$MPC_ROOT/scripts/lit_failures.py" "$results" || true
fi
phase "end: $([ $status = 0 ] && echo passed || echo FAILED)"
exit $status
