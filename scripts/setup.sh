#!/usr/bin/env bash
# Installs what mpc needs from Debian's packages (only what is missing), then
# configures and builds incrementally in build/. Sourced by demo.sh and
# test.sh; safe to run again.
set -euo pipefail

MPC_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MPC_BUILD="${MPC_BUILD:-$MPC_ROOT/build}"

packages=(llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools clang-22
          lld-22 liblld-22-dev ccache ninja-build cmake libgtest-dev libgmock-dev
          pkgconf libopenblas-dev libonnx-dev libprotobuf-dev libonnx-testdata
          openmpi-bin libopenmpi-dev)
# mpc_install_missing PACKAGE...: installs those not installed yet.
mpc_install_missing() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "mpc: installing ${missing[*]}"
  local sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
}
mpc_install_missing "${packages[@]}"

# mpc_configure SOURCE BUILD: configures BUILD for the tree at SOURCE
# (once; the build's settings, for this checkout and for the older trees
# scripts/gpu-check.sh builds a benchmark of).
mpc_configure() {
  [ -f "$2/build.ninja" ] && return 0
  cmake -G Ninja -S "$1" -B "$2" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
}

export CCACHE_BASEDIR="$MPC_ROOT"
mpc_configure "$MPC_ROOT" "$MPC_BUILD"
ninja -C "$MPC_BUILD" ${MPC_NINJA_FLAGS:-}
