#!/usr/bin/env bash
# Builds mpc and runs every test suite: lit (FileCheck) and GoogleTest
# (ctest). Exits non-zero on any failure.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

status=0
echo "== lit: check-mpc"
/usr/lib/llvm-22/bin/lit -sv "$MPC_BUILD/test" || status=1
echo "== ctest: unit tests"
ctest --test-dir "$MPC_BUILD" --output-on-failure || status=1
exit $status
