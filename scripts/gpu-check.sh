#!/usr/bin/env bash
# One GPU visit's checks of the CUDA backend, in one command.
#
#   PHASE=build scripts/gpu-check.sh   here: build, then put everything the
#                                      GPU machine runs in $BUNDLE
#   PHASE=run scripts/gpu-check.sh     there (carry $BUNDLE with the
#                                      checkout): no compiler, LLVM, lit or
#                                      network needed
#   PHASE=ncu scripts/gpu-check.sh     there: the kernel benchmark's launch
#                                      settings swept, and Nsight Compute
#                                      on its slow lines (profile_kernels)
#
# The run phase prints the environment (nvidia-smi, driver, CUDA, cuDNN and
# PyTorch versions, ldd of one executable, where the CUDA libraries were
# found), runs the CUDA unit tests plainly and under compute-sanitizer
# (memcheck; racecheck on the kernels with shared memory), trains the MLP
# on the GPU at fp32, O1 f16 and O2 bf16 against loss curves the CPU
# reference computed in the build phase, checks graph replay (also with
# programmatic dependencies, MPC_CUDA_PDL=on) against eager
# and the memory plan against one without reuse and one with guards
# (--arena-guards), bit for bit, trains
# with gradient accumulation and evaluation against the
# CPU reference, checks that --check-numerics names the op of two forced
# overflows as the CPU does, runs each benchmark model a few steps at its
# full size,
# and times the memory-bound kernels against a copy (mpc-bench-kernels).
# The data are made on each machine by the checkout's scripts (CRCs
# compared), not carried.
# Each part has a time limit; a failure in one never stops the others. A
# table comes last; in $RESULTS (default: $OUT where set, else
# $BUNDLE/results) at most 9 files: summary.txt, parts.jsonl, all.log,
# unit-tests.json, memcheck.log, curves.jsonl, kernels.jsonl, and the
# kernels against a baseline build's on the same GPU
# (kernels-vs-baseline.md and .jsonl; see baseline_bench).
#
# The run phase ends within DEADLINE seconds (510): each part's own limit
# is cut to what is left, and a part with no time left is SKIPPED.
#
# Variables: BUNDLE (default build/gpu-check), STEPS (100: steps of the
# curve comparison), SMOKE_STEPS (5), DEADLINE, MPC_BUILD (build),
# BASELINE and BASELINE_BENCH (baseline_bench).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PHASE="${PHASE:-}"
BUNDLE="${BUNDLE:-$ROOT/build/gpu-check}"
STEPS="${STEPS:-100}" SMOKE_STEPS="${SMOKE_STEPS:-5}"
DEADLINE="${DEADLINE:-510}"

# The three curve configurations: name and mpc-compile options.
CURVES=(fp32 o1f16 o2bf16)
curve_options() {
  local common=(--train --entry=ad_step --optimizer="kind=momentum lr=0.01")
  case $1 in
  fp32) echo "${common[@]@Q}" ;;
  o1f16) echo "${common[@]@Q} --amp=O1 --dtype=f16 '--loss-scaling=mode=dynamic init-scale=1024'" ;;
  o2bf16) echo "${common[@]@Q} --amp=O2 --dtype=bf16" ;;
  esac
}

# make_data DIR: the data of every part, made by the checkout's scripts
# (Python's seeded generators: the same arrays on both machines; the build
# records each array's CRC-32 and size and the run phase compares, instead
# of carrying some 10 MB of arrays). data_sums DIR prints them (the
# archives' own dates differ).
data_sums() {
  python3 - "$1"/*.npz << 'PY'
import os, sys, zipfile
for path in sys.argv[1:]:
    for info in zipfile.ZipFile(path).infolist():
        print(os.path.basename(path), info.filename, info.CRC, info.file_size)
PY
}

make_data() {
  local dir=$1
  mkdir -p "$dir"
  python3 "$ROOT/scripts/make_dataset.py" --samples 1024 --noise 4 \
    -o "$dir/mlp.npz" > /dev/null &&
    python3 "$ROOT/scripts/make_dataset.py" --samples 512 --features 1024 \
      --classes 1000 -o "$dir/smoke-mlp.npz" > /dev/null &&
    python3 "$ROOT/test/e2e/random_inputs.py" -o "$dir/smoke-bert.npz" \
      input_ids:i4:8x512:0:30522 labels:i4:8:0:2 &&
    python3 "$ROOT/test/e2e/random_inputs.py" -o "$dir/smoke-unet.npz" \
      image:f4:16x128x128x3:-1:1 mask:f4:16x128x128x1:0:1 &&
    python3 "$ROOT/test/e2e/random_inputs.py" -o "$dir/exp-overflow.npz" \
      x:f4:8x2:23:24 t:f4:8x2:0:1 &&
    python3 "$ROOT/test/e2e/loss_scaling.py" data "$dir/overflow.npz" \
      --overflow-batch 2 > /dev/null
}

# The numerics checks' two forced overflows (test/e2e/numerics.test): an
# f16 exp in the forward pass, and an f16 matmul whose weight gradient
# overflows at step 3 and its forward product at step 9. numerics_run
# NAME EXE prints the steps' reports of the CPU or CUDA executable.
NUMERICS=(exp-overflow overflow)
numerics_options() {
  case $1 in
  exp-overflow) echo "--train --amp=O1 --dtype=f16 --check-numerics" ;;
  overflow) echo "--train '--optimizer=kind=momentum lr=0.5' --amp=O2" \
    "--dtype=f16 '--loss-scaling=mode=dynamic init-scale=256" \
    "growth-interval=3' --check-numerics" ;;
  esac
}
numerics_run() {
  local name=$1 exe=$2 data=$3 steps=2
  [ "$name" = overflow ] && steps=12
  "$exe" --data "$data/$name.npz" --no-shuffle --steps $steps --log-every 1 |
    grep 'skipped: first non-finite'
}

# compile_both SOURCE CPU GPU OPTION...: SOURCE compiled with OPTIONs for
# the CPU reference, run here ($BUNDLE/CPU), and for CUDA, run there
# ($BUNDLE/bin/GPU).
compile_both() {
  local source=$1 cpu=$2 gpu=$3
  shift 3
  "$MPC_BUILD/bin/mpc-compile" "$source" "$@" -o "$BUNDLE/$cpu"
  "$MPC_BUILD/bin/mpc-compile" "$source" "$@" --backend=cuda \
    -o "$BUNDLE/bin/$gpu"
}

# baseline_bench: the kernel benchmark as it was at BASELINE (a commit;
# default the first word of bench/kernels/BASELINE, the last commit whose
# kernels a GPU timed; "none": no baseline), built from that commit's
# tree in $MPC_BUILD/baseline/COMMIT (kept, so built once), or
# BASELINE_BENCH (a built mpc-bench-kernels), into the bundle as
# mpc-bench-kernels-baseline: the run times both on the same GPU
# (kernels_vs_baseline), whatever card earlier timings came from.
baseline_bench() {
  local commit="${BASELINE:-$(awk 'NR == 1 { print $1 }' \
    "$ROOT/bench/kernels/BASELINE")}" bench="${BASELINE_BENCH:-}"
  if [ -z "$bench" ]; then
    [ "$commit" = none ] && return 0
    local wanted=$commit
    commit=$(git -C "$ROOT" rev-parse --verify --quiet "$wanted^{commit}") || {
      echo "gpu-check: BASELINE '$wanted' is not a commit of this" \
        "checkout's history (BASELINE=none builds no baseline)" >&2
      return 1
    }
    local tree="$MPC_BUILD/baseline/$commit"
    if [ ! -x "$tree/build/bin/mpc-bench-kernels" ]; then
      rm -rf "$tree/src"
      mkdir -p "$tree/src"
      git -C "$ROOT" archive "$commit" | tar -x -C "$tree/src"
      CCACHE_BASEDIR="$tree/src" mpc_configure "$tree/src" "$tree/build"
      CCACHE_BASEDIR="$tree/src" ninja -C "$tree/build" mpc-bench-kernels
    fi
    bench="$tree/build/bin/mpc-bench-kernels"
  else
    commit="the build given as BASELINE_BENCH"
  fi
  cp "$bench" "$BUNDLE/bin/mpc-bench-kernels-baseline"
  echo "$commit" > "$BUNDLE/baseline"
}

build() {
  set -e
  # shellcheck source=setup.sh
  source "$ROOT/scripts/setup.sh"
  local bin="$MPC_BUILD/bin"
  [ -x "$bin/mpc-cuda-env" ] || {
    echo "gpu-check: this build has no CUDA backend (see docs/CUDA.md)" >&2
    exit 1
  }
  rm -rf "$BUNDLE"
  mkdir -p "$BUNDLE/bin" "$BUNDLE/data" "$BUNDLE/expected"
  cp "$MPC_BUILD/unittests/MPCRuntimeCUDATests" "$bin/mpc-cuda-env" \
    "$bin/mpc-bench-kernels" "$BUNDLE/bin/"
  cp "$ROOT/test/e2e/metrics.py" "$BUNDLE/"
  echo "STEPS=$STEPS" > "$BUNDLE/settings"
  baseline_bench

  # GPU-vs-CPU curves (test/e2e/cuda-matches-cpu.test): the CPU reference
  # runs here; the CUDA executables run there.
  make_data "$BUNDLE/data"
  data_sums "$BUNDLE/data" > "$BUNDLE/data.sums"
  local name
  for name in "${CURVES[@]}"; do
    eval "local options=($(curve_options "$name"))"
    compile_both "$ROOT/examples/mlp.mlir" "cpu-$name" "curve-$name" \
      "${options[@]}"
    "$BUNDLE/cpu-$name" --data "$BUNDLE/data/mlp.npz" --steps "$STEPS" \
      --log-every 5 --metrics "$BUNDLE/expected/$name.jsonl" > /dev/null
    rm "$BUNDLE/cpu-$name"
  done
  # The O2 bf16 step planned without sharing (--no-memory-reuse): it must
  # compute the sharing plan's bits on the GPU too.
  eval "local options=($(curve_options o2bf16))"
  "$bin/mpc-compile" "$ROOT/examples/mlp.mlir" "${options[@]}" \
    --no-memory-reuse --backend=cuda -o "$BUNDLE/bin/curve-o2bf16-noreuse"
  # The same with guards after every buffer and global (--arena-guards):
  # no kernel writes past its result (the run stops naming it), and none
  # reads bytes nothing wrote (the arena is filled with NaN before each
  # call, so the curve would differ).
  "$bin/mpc-compile" "$ROOT/examples/mlp.mlir" "${options[@]}" \
    --arena-guards=64 --backend=cuda -o "$BUNDLE/bin/curve-o2bf16-guards"

  # Gradient accumulation and evaluation (O2 f16, 4 micro-batches, an
  # evaluation every 6 steps): the CPU reference's curve and evaluations.
  local accumulate=(--train --entry=ad_step --optimizer="kind=adam lr=1e-3"
    --amp=O2 --dtype=f16 --accumulate=4)
  compile_both "$ROOT/examples/mlp.mlir" cpu-accumulate accumulate-eval \
    "${accumulate[@]}"
  "$BUNDLE/cpu-accumulate" --data "$BUNDLE/data/mlp.npz" \
    --val-data "$BUNDLE/data/mlp.npz" --eval-every 6 --steps 12 \
    --log-every 5 --metrics "$BUNDLE/expected/accumulate.jsonl" > /dev/null
  rm "$BUNDLE/cpu-accumulate"

  # Data parallel at world size 1 (one GPU, no launcher): NCCL's
  # all-reduce on the backend's stream, recorded into the step's graph.
  local parallel=(--train --entry=dp_step --optimizer="kind=adam lr=1e-3"
    --amp=O2 --dtype=f16 --data-parallel)
  compile_both "$ROOT/examples/mlp.mlir" cpu-parallel data-parallel \
    "${parallel[@]}"
  "$BUNDLE/cpu-parallel" --data "$BUNDLE/data/mlp.npz" --steps 12 \
    --log-every 5 --metrics "$BUNDLE/expected/parallel.jsonl" > /dev/null
  rm "$BUNDLE/cpu-parallel"

  # The forced overflows: the CPU reference's reports (source locations
  # are the compile's: the same here and there).
  for name in "${NUMERICS[@]}"; do
    eval "local options=($(numerics_options "$name"))"
    compile_both "$ROOT/test/e2e/Inputs/$name.txt" "cpu-$name" \
      "numerics-$name" "${options[@]}"
    numerics_run "$name" "$BUNDLE/cpu-$name" "$BUNDLE/data" \
      > "$BUNDLE/expected/numerics-$name.txt"
    rm "$BUNDLE/cpu-$name"
  done

  # The benchmark models at their full sizes (bench/run.sh's defaults), O2
  # f16, one batch of data each.
  python3 "$ROOT/bench/models.py" mlp -o "$BUNDLE/smoke-mlp.mlir"
  python3 "$ROOT/bench/models.py" bert --batch 8 --seq 512 --hidden 768 \
    --heads 12 --ffn 3072 --layers 12 --vocab 30522 --classes 2 \
    -o "$BUNDLE/smoke-bert.mlir"
  python3 "$ROOT/bench/models.py" unet --batch 16 --image 128 --width 128 \
    -o "$BUNDLE/smoke-unet.mlir"
  local model optimizer
  for model in mlp bert unet; do
    optimizer="kind=adam lr=1e-4"
    [ $model = mlp ] && optimizer="kind=momentum lr=0.01"
    "$bin/mpc-compile" "$BUNDLE/smoke-$model.mlir" --train \
      --optimizer="$optimizer" --amp=O2 --dtype=f16 --backend=cuda \
      -o "$BUNDLE/bin/smoke-$model"
    # BERT with mpc.attention (cuBLASLt products in chunks of heads).
    [ $model = bert ] && "$bin/mpc-compile" "$BUNDLE/smoke-$model.mlir" \
      --train --optimizer="$optimizer" --amp=O2 --dtype=f16 --backend=cuda \
      --fuse-attention -o "$BUNDLE/bin/smoke-bert-attn"
    # The UNet with guards: cuDNN's convolutions and our batch norms on
    # the GPU write nothing past their results (3.1 GB of arena: every
    # buffer its own bytes).
    [ $model = unet ] && "$bin/mpc-compile" "$BUNDLE/smoke-$model.mlir" \
      --train --optimizer="$optimizer" --amp=O2 --dtype=f16 --backend=cuda \
      --arena-guards=64 -o "$BUNDLE/bin/smoke-unet-guards"
    rm "$BUNDLE/smoke-$model.mlir"
  done
  rm -rf "$BUNDLE/data" # made again there
  # Host symbols are not needed there; without them the bundle (CUDA
  # kernels in every executable) keeps well inside what can be carried.
  strip "$BUNDLE"/bin/curve-* "$BUNDLE"/bin/smoke-* "$BUNDLE"/bin/numerics-* \
    "$BUNDLE/bin/accumulate-eval" "$BUNDLE/bin/data-parallel" \
    "$BUNDLE/bin/MPCRuntimeCUDATests" "$BUNDLE"/bin/mpc-bench-kernels*
  # Each executable carries the same CUDA kernels (most of its bytes):
  # one xz stream with a dictionary larger than them all compresses every
  # copy after the first to almost nothing (gzip's 32 KiB window gave a
  # quarter of the size, each executable on its own); the run phase
  # unpacks it. Preset 0 (the fastest match finder): 13 s for these
  # 278 MiB against 120 s at the default preset 6, 6% more bytes.
  (
    cd "$BUNDLE/bin"
    local packed=(curve-* smoke-* numerics-* accumulate-eval data-parallel
      MPCRuntimeCUDATests mpc-bench-kernels*)
    tar -cf - "${packed[@]}" |
      xz -T1 --lzma2=preset=0,dict=192MiB > "$BUNDLE/bin.tar.xz"
    rm -f "${packed[@]}"
  )
  local bytes
  bytes=$(du -sb "$BUNDLE" | cut -f1)
  echo "gpu-check: $BUNDLE holds $((bytes / 1048576)) MiB; carry it with" \
    "the checkout (at most 64 MiB together) and run PHASE=run there"
}

# --- the run phase -------------------------------------------------------

RESULTS="${RESULTS:-${OUT:-$BUNDLE/results}}"
DATA="${DATA:-${TMPDIR:-/tmp}/mpc-gpu-check-data}"
export BUNDLE RESULTS STEPS SMOKE_STEPS DATA
TABLE=()

STARTED=$(date +%s)

# part NAME LIMIT_SECONDS COMMAND...: runs COMMAND with a time limit, its
# output appended to all.log, one line in parts.jsonl and the table.
part() {
  local name=$1 limit=$2
  shift 2
  local log="$RESULTS/.logs/$name.log" start end status verdict
  local left=$((STARTED + DEADLINE - $(date +%s) - 5))
  [ "$limit" -gt "$left" ] && limit=$left
  start=$(date +%s.%N)
  { echo "== $name: $*"; } > "$log"
  if [ "$limit" -lt 5 ]; then
    echo "no time left (DEADLINE=$DEADLINE s)" >> "$log"
    status=-1
  else
    # A part's own failure is recorded, never fatal. A part that is a
    # function of this script runs in a fresh copy of it (timeout runs
    # programs only).
    local program=("$@")
    if declare -F "$1" > /dev/null; then
      program=(bash "${BASH_SOURCE[0]}" --part "$@")
    fi
    timeout --kill-after=5 "$limit" "${program[@]}" >> "$log" 2>&1
    status=$?
  fi
  end=$(date +%s.%N)
  case $status in
  -1) verdict=SKIPPED ;;
  0) verdict=PASS ;;
  124 | 137) verdict=TIMEOUT ;;
  *) verdict=FAIL ;;
  esac
  local seconds
  seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  cat "$log" >> "$RESULTS/all.log"
  echo "-- $name: $verdict (exit $status, ${seconds} s)" >> "$RESULTS/all.log"
  printf '{"part": "%s", "verdict": "%s", "exit": %d, "seconds": %s}\n' \
    "$name" "$verdict" "$status" "$seconds" >> "$RESULTS/parts.jsonl"
  TABLE+=("$(printf '%-28s %-8s %8s s' "$name" "$verdict" "$seconds")")
  return 0
}

environment() {
  nvidia-smi || true
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
    --format=csv || true
  command -v nvcc > /dev/null && nvcc --version | tail -2
  python3 - << 'PY' || true
import torch
print("PyTorch", torch.__version__, "CUDA", torch.version.cuda,
      "cuDNN", torch.backends.cudnn.version())
PY
  uname -r
  "$BUNDLE/bin/mpc-cuda-env" --list
  ldd "$BUNDLE/bin/curve-fp32"
}

# The data, made again and checked against the build's checksums.
data() {
  rm -rf "$DATA"
  make_data "$DATA" &&
    data_sums "$DATA" | diff "$BUNDLE/data.sums" - &&
    echo "the data match the build's"
}

# The unit tests; on a GPU machine none may skip.
unit() {
  local log="$RESULTS/.logs/unit-run.log"
  "$BUNDLE/bin/MPCRuntimeCUDATests" \
    --gtest_output="json:$RESULTS/unit-tests.json" 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]} skipped
  skipped=$(grep -c '^\[  SKIPPED \] ' "$log")
  if [ "$skipped" -gt 0 ]; then
    echo "$skipped tests skipped (no usable CUDA device?)"
    return 1
  fi
  return "$status"
}

curve() {
  local name=$1
  "$BUNDLE/bin/curve-$name" --data "$DATA/mlp.npz" --steps "$STEPS" \
    --log-every 5 --metrics "$RESULTS/.logs/$name.jsonl" &&
    python3 "$BUNDLE/metrics.py" track "$RESULTS/.logs/$name.jsonl" \
      "$BUNDLE/expected/$name.jsonl" --tol 0.1 --floor 0.02 --no-skips &&
    echo "GPU and CPU curves agree at every logged step"
}

# same_as_o2bf16 EXE RUN MESSAGE [OPTION...]: EXE trains on the MLP's data
# as the o2bf16 curve did (with OPTIONs) and must log the same losses, bit
# for bit.
same_as_o2bf16() {
  local exe=$1 run=$2 message=$3
  shift 3
  "$BUNDLE/bin/$exe" --data "$DATA/mlp.npz" --steps "$STEPS" \
    --log-every 5 "$@" --metrics "$RESULTS/.logs/$run.jsonl" &&
    python3 "$BUNDLE/metrics.py" same "$RESULTS/.logs/$run.jsonl" \
      "$RESULTS/.logs/o2bf16.jsonl" &&
    echo "$message"
}

replay() {
  same_as_o2bf16 curve-o2bf16 eager \
    "graph replay and eager steps agree bit for bit" --no-graph
}

# The same with the step graph's kernel dependencies made programmatic
# (MPC_CUDA_PDL=on, docs/CUDA.md): each kernel waits in its prologue for
# the one before, so the losses are the same bits.
replay_programmatic() {
  MPC_CUDA_PDL=on same_as_o2bf16 curve-o2bf16 programmatic \
    "with programmatic dependencies the graph replay agrees bit for bit"
}

plan_reuse() {
  same_as_o2bf16 curve-o2bf16-noreuse noreuse \
    "the step planned without memory reuse agrees bit for bit"
}

guards() {
  same_as_o2bf16 curve-o2bf16-guards guards \
    "with guards and a poisoned arena the step agrees bit for bit"
}

accumulate_eval() {
  "$BUNDLE/bin/accumulate-eval" --data "$DATA/mlp.npz" \
    --val-data "$DATA/mlp.npz" --eval-every 6 --steps 12 \
    --log-every 5 --metrics "$RESULTS/.logs/accumulate.jsonl" &&
    python3 "$BUNDLE/metrics.py" track "$RESULTS/.logs/accumulate.jsonl" \
      "$BUNDLE/expected/accumulate.jsonl" --tol 0.1 --floor 0.02 &&
    python3 "$BUNDLE/metrics.py" track-eval "$RESULTS/.logs/accumulate.jsonl" \
      "$BUNDLE/expected/accumulate.jsonl" --tol 0.1 --floor 0.02 &&
    echo "accumulated steps and evaluations agree with the CPU reference"
}

data_parallel() {
  "$BUNDLE/bin/data-parallel" --data "$DATA/mlp.npz" --steps 12 \
    --log-every 5 --metrics "$RESULTS/.logs/parallel.jsonl" &&
    "$BUNDLE/bin/data-parallel" --data "$DATA/mlp.npz" --steps 12 \
      --log-every 5 --no-graph --metrics "$RESULTS/.logs/parallel-eager.jsonl" &&
    python3 "$BUNDLE/metrics.py" same "$RESULTS/.logs/parallel.jsonl" \
      "$RESULTS/.logs/parallel-eager.jsonl" &&
    python3 "$BUNDLE/metrics.py" track "$RESULTS/.logs/parallel.jsonl" \
      "$BUNDLE/expected/parallel.jsonl" --tol 0.1 --floor 0.02 &&
    echo "NCCL at world size 1: recorded and eager steps agree bit for bit," \
      "and with the CPU reference"
}

# The forced overflows name the op, location and phase the CPU reference
# names, at the same steps.
numerics() {
  local name status=0
  for name in "${NUMERICS[@]}"; do
    numerics_run "$name" "$BUNDLE/bin/numerics-$name" "$DATA" \
      > "$RESULTS/.logs/numerics-$name.txt"
    cat "$RESULTS/.logs/numerics-$name.txt"
    diff "$BUNDLE/expected/numerics-$name.txt" \
      "$RESULTS/.logs/numerics-$name.txt" || status=1
  done
  [ $status = 0 ] && echo "the GPU's numerics checks name what the CPU's name"
}

# The kernel micro-benchmark: one JSON line per kernel into kernels.jsonl
# (on success only), the kernels short of their target listed.
kernels() {
  local out="$RESULTS/.logs/kernels.jsonl"
  "$BUNDLE/bin/mpc-bench-kernels" > "$out" || return 1
  mv "$out" "$RESULTS/kernels.jsonl"
  python3 - "$RESULTS/kernels.jsonl" << 'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for l in lines:
    if "tflop_per_s" in l:
        print("%-26s %-28s %-9s %9.4f ms %8.1f TFLOP/s" % (
            l["kernel"], l["shape"], l.get("dtype", ""), l["ms"],
            l["tflop_per_s"]))
        continue
    print("%-26s %-28s %-9s %9.4f ms %8.1f GB/s %s" % (
        l["kernel"], l["shape"], l.get("dtype", ""), l["ms"], l["gb_per_s"],
        "" if "of_copy" not in l else "%.2f of copy%s%s" % (
            l["of_copy"], "" if l["target_met"] else "  (target %.2f)" % l["target"],
            "" if "of_same_copy" not in l else
            "; cold %.4f ms, %.2f of a same-size copy" % (
                l["ms_cold"], l["of_same_copy"]))))
PY
}

# The kernels of the current build against the baseline's
# (mpc-bench-kernels-baseline, baseline_bench), on this GPU: two rounds
# each, alternating, each line's least time; the table in
# kernels-vs-baseline.md, the rows in kernels-vs-baseline.jsonl.
kernels_vs_baseline() {
  [ -x "$BUNDLE/bin/mpc-bench-kernels-baseline" ] || {
    echo "no baseline in the bundle (BASELINE=none at build)"
    return 0
  }
  local round logs="$RESULTS/.logs"
  for round in 1 2; do
    "$BUNDLE/bin/mpc-bench-kernels-baseline" > "$logs/baseline-$round.jsonl" &&
      "$BUNDLE/bin/mpc-bench-kernels" > "$logs/current-$round.jsonl" ||
      return 1
  done
  {
    echo "Kernels at $(cat "$BUNDLE/baseline") (baseline) and at this" \
      "build (current), on $(nvidia-smi --query-gpu=name \
        --format=csv,noheader 2> /dev/null | head -1)"
    echo
    python3 "$ROOT/bench/kernels/compare.py" \
      --baseline "$logs"/baseline-*.jsonl --current "$logs"/current-*.jsonl \
      --json "$RESULTS/kernels-vs-baseline.jsonl"
  } > "$RESULTS/kernels-vs-baseline.md" || return 1
  cat "$RESULTS/kernels-vs-baseline.md"
}

smoke() {
  local model=$1
  "$BUNDLE/bin/smoke-$model" --data "$DATA/smoke-${model%-*}.npz" \
    --steps "$SMOKE_STEPS" --log-every 1 \
    --metrics "$RESULTS/.logs/smoke-$model.jsonl" &&
    "$BUNDLE/bin/smoke-$model" --print-memory &&
    python3 - "$RESULTS/.logs/smoke-$model.jsonl" << 'PY'
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert lines, "no metrics"
for l in lines:
    assert math.isfinite(l["loss"]), "loss %r at step %d" % (l["loss"], l["step"])
print("steps", [l["step"] for l in lines], "losses",
      [round(l["loss"], 4) for l in lines],
      "ms/step", lines[-1].get("ms_per_step"))
PY
}

# prepare: the carried bundle ready to run here: its settings, its
# executables unpacked (once), and where this machine keeps cuBLASLt and
# cuDNN (PyTorch's packages, say) in the environment, for every part.
prepare() {
  [ -d "$BUNDLE/bin" ] || {
    echo "gpu-check: no $BUNDLE/bin; run PHASE=build first and carry it" >&2
    exit 1
  }
  # shellcheck source=/dev/null
  [ -f "$BUNDLE/settings" ] && source "$BUNDLE/settings"
  # The executables, packed at build (python3's tarfile: no xz needed
  # here); unpacked once.
  if [ -f "$BUNDLE/bin.tar.xz" ]; then
    python3 - "$BUNDLE/bin.tar.xz" "$BUNDLE/bin" << 'PY' || exit 1
import sys, tarfile
with tarfile.open(sys.argv[1], "r:xz") as t:
    t.extractall(sys.argv[2])
PY
    rm -f "$BUNDLE/bin.tar.xz"
  fi
  mkdir -p "$RESULTS/.logs"
  local found
  if found=$("$BUNDLE/bin/mpc-cuda-env" --print 2> "$RESULTS/.logs/env.err"); then
    eval "$found"
  fi
}

# PHASE=ncu: the kernel benchmark's batch norms and column sums at other
# launch settings (mpc-bench-kernels --sweep: sweep.jsonl and sweep.md),
# then Nsight Compute on its slow lines (bench/ncu_kernels.py, NCU the
# ncu to run, NCU_LINES the lines, NCU_DEADLINE when to start no more
# runs: ncu.jsonl and table.md), in $RESULTS.
profile_kernels() {
  prepare
  local bench="$BUNDLE/bin/mpc-bench-kernels" status=0
  "$bench" --sweep > "$RESULTS/sweep.jsonl" || status=1
  python3 - "$RESULTS/sweep.jsonl" << 'PY' | tee "$RESULTS/sweep.md"
import json, sys
print("| kernel | shape and setting | dtype | ms | of copy |")
print("|---|---|---|---|---|")
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "of_copy" in r:
        print("| %s | %s | %s | %.4f | %.2f |" % (
            r["kernel"], r["shape"], r.get("dtype", ""), r["ms"], r["of_copy"]))
PY
  # shellcheck disable=SC2086
  python3 "$ROOT/bench/ncu_kernels.py" --bench "$bench" \
    --ncu "${NCU:-ncu}" --deadline "${NCU_DEADLINE:-420}" \
    --out "$RESULTS/ncu.jsonl" ${NCU_LINES:-} | tee "$RESULTS/table.md"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  rm -rf "$RESULTS/.logs"
  return $status
}

run() {
  prepare
  rm -f "$RESULTS"/{summary.txt,parts.jsonl,all.log,unit-tests.json}
  rm -f "$RESULTS"/{memcheck.log,curves.jsonl,kernels.jsonl}
  rm -f "$RESULTS"/kernels-vs-baseline.{md,jsonl}
  part environment 30 environment
  part data 60 data
  part unit-tests 90 unit
  if command -v compute-sanitizer > /dev/null; then
    # The failed-capture test makes CUDA API calls fail on purpose (a
    # synchronize inside a capture), which memcheck reports as errors; the
    # rank checks are death tests, whose children (the binary run again)
    # launch nothing and did not finish under memcheck in 180 s on an
    # H200: both run in the plain part only.
    part memcheck 180 compute-sanitizer --tool memcheck --error-exitcode 1 \
      --log-file "$RESULTS/memcheck.log" "$BUNDLE/bin/MPCRuntimeCUDATests" \
      --gtest_filter='-Graph.AFailedCapture*:*PastEightDimensionsAreErrors'
    # 157 s on an H200 (2026-12-04), 89 s of it the attention test.
    part racecheck 210 compute-sanitizer --tool racecheck --error-exitcode 1 \
      "$BUNDLE/bin/MPCRuntimeCUDATests" \
      --gtest_filter='Elementwise.*:Training.*:Nn.*:Support.*:Edges.*:-*PastEightDimensionsAreErrors'
  else
    part memcheck 5 sh -c 'echo "no compute-sanitizer on PATH"; exit 1'
  fi
  local name
  for name in "${CURVES[@]}"; do
    part "curve-$name" 45 curve "$name"
  done
  part graph-replay 45 replay
  part graph-replay-pdl 45 replay_programmatic
  part plan-reuse 45 plan_reuse
  part accumulate-eval 60 accumulate_eval
  part data-parallel 60 data_parallel
  part numerics 30 numerics
  local model
  for model in mlp bert bert-attn unet; do
    part "smoke-$model" 60 smoke $model
  done
  part kernels 90 kernels
  part kernels-vs-baseline 60 kernels_vs_baseline
  # Last: what is left of the deadline.
  part guards 30 guards
  part smoke-unet-guards 45 smoke unet-guards
  # Every metrics line of the run, tagged with its run.
  local f
  for f in "$RESULTS"/.logs/*.jsonl; do
    [ -f "$f" ] || continue
    sed "s/^{/{\"run\": \"$(basename "$f" .jsonl)\", /" "$f"
  done > "$RESULTS/curves.jsonl"
  {
    echo "gpu-check ($(date -u +%Y-%m-%dT%H:%M:%SZ), STEPS=$STEPS)"
    printf '%s\n' "${TABLE[@]}"
  } > "$RESULTS/summary.txt"
  rm -rf "$RESULTS/.logs"
  cat "$RESULTS/summary.txt"
  ! grep -qE ' (FAIL|TIMEOUT|SKIPPED) ' "$RESULTS/summary.txt"
}

if [ "${1:-}" = --part ]; then
  shift
  "$@"
  exit
fi

case "$PHASE" in
build) build ;;
run) run ;;
ncu) profile_kernels ;;
*)
  sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'
  [ "$PHASE" = help ] || exit 2
  ;;
esac
