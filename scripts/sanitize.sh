#!/usr/bin/env bash
# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer:
# mpc's code built with both (and libFuzzer's coverage, so that the same
# build serves scripts/fuzz.sh) in a separate build, SANITIZE_BUILD
# (default build-asan/), then the lit suites that exercise the compiler
# and the tools (SANITIZE_SUITES, default Dialect Transforms Conversion
# Tools Examples; the e2e and bench suites train models and take long
# under the sanitizers: add them for a longer run), and the unit tests of
# the CUDA backend's kernels emulated on the host.
#
# The sanitized build optimises at -O1 (what AddressSanitizer and
# libFuzzer advise): the emulated CUDA kernels, half its compile time,
# compile 31% faster than at -O3 (Nn.cu: 145 s -> 100 s) and their tests
# run as fast (Nn's under the sanitizers: 138 s at -O3, 132 s at -O1).
#
# Debian's LLVM/MLIR libraries are not instrumented: the run sets
# ASAN_OPTIONS=allow_user_poisoning=0 (their allocators' annotations would
# otherwise be misread), and mpc-compile links the executables it makes
# with the sanitizer flags (MPC_SANITIZE in CMakeLists.txt).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
SANITIZE_BUILD="${SANITIZE_BUILD:-$MPC_ROOT/build-asan}"
SANITIZE_SUITES="${SANITIZE_SUITES:-Dialect Transforms Conversion Tools Examples}"
if [ ! -f "$SANITIZE_BUILD/build.ninja" ]; then
  cmake -G Ninja -S "$MPC_ROOT" -B "$SANITIZE_BUILD" \
    -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_C_FLAGS_RELEASE=-O1 -DNDEBUG" \
    "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMPC_SANITIZE=address,undefined \
    -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link \
    -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link \
    -DLLVM_USE_LINKER=lld \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DMPC_ENABLE_CUDA=OFF -DMPC_BUILD_UNITTESTS=ON \
    -DMPC_ENABLE_FUZZERS=ON >/dev/null
fi
# The CUDA backend's kernels, emulated on the host where CUDA's headers
# are found (docs/CUDA.md), run their unit tests under the sanitizers too:
# an access outside a buffer in a kernel is caught here.
# (The target list is read whole first: `ninja | grep -q` under pipefail
# fails whenever grep stops reading before ninja has written everything,
# and the stage was then skipped without a word.)
emulated=""
targets="$(ninja -C "$SANITIZE_BUILD" -t targets all 2>/dev/null || true)"
if grep -q '^MPCRuntimeCUDAEmulatedTests:' <<<"$targets"; then
  emulated=MPCRuntimeCUDAEmulatedTests
fi
ninja -C "$SANITIZE_BUILD" ${SANITIZE_TARGETS:-mpc-opt mpc-compile mpc-runner mpcrt-cpu mpc-fuzz-pipeline mpc-fuzz-policy mpc-fuzz-readers $emulated}
[ "${SANITIZE_BUILD_ONLY:-0}" = 1 ] && exit 0
export ASAN_OPTIONS="allow_user_poisoning=0:detect_leaks=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
suites=()
for s in $SANITIZE_SUITES; do suites+=("$SANITIZE_BUILD/test/$s"); done
/usr/lib/llvm-22/bin/lit -sv "${suites[@]}" || status=1
if [ -n "$emulated" ] && [ -z "${SANITIZE_TARGETS:-}" ]; then
  # One shard of the tests per core (GoogleTest's sharding), each its own
  # log, shown in order once all are done (about a minute on two cores).
  echo "== the CUDA backend's kernels, emulated, under the sanitizers"
  shards=$(nproc)
  pids=()
  for ((k = 0; k < shards; ++k)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$k \
      "$SANITIZE_BUILD/unittests/MPCRuntimeCUDAEmulatedTests" --gtest_brief=1 \
      > "$SANITIZE_BUILD/emulated-shard-$k.log" 2>&1 &
    pids+=($!)
  done
  for ((k = 0; k < shards; ++k)); do
    wait "${pids[$k]}" || status=1
    echo "-- shard $((k + 1)) of $shards"
    cat "$SANITIZE_BUILD/emulated-shard-$k.log"
  done
fi
exit $status
