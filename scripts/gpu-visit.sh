#!/usr/bin/env bash
# A whole GPU visit: the checks of scripts/gpu-check.sh and the benchmarks
# of bench/run.sh (every model at every level the open measurements need),
# built here into one compressed bundle, run there part by part (each part
# within one 10-minute command).
#
#   PHASE=build scripts/gpu-visit.sh   here: $VISIT/ (the gpu-check bundle
#                                      and one bench folder per model, no
#                                      datasets: the run makes them again)
#                                      packed into $VISIT.tar.xz
#   PART=check scripts/gpu-visit.sh    there, carrying $VISIT.tar.xz: unpacks
#   PART=bert  scripts/gpu-visit.sh    it once (python3's tarfile, no xz
#   PART=mlp   scripts/gpu-visit.sh    binary needed), then runs the part,
#   PART=unet  scripts/gpu-visit.sh    its results in $RESULTS/<part>/
#   PART=ncu   scripts/gpu-visit.sh    the batch norms and column sums at
#                                      other launch settings
#                                      (mpc-bench-kernels --sweep), then
#                                      Nsight Compute's sections for the
#                                      kernel benchmark's slow lines
#                                      (bench/ncu_kernels.py: occupancy,
#                                      DRAM bytes, L2 hits, stall reasons;
#                                      about 10 s a line); tables and
#                                      JSON lines in $RESULTS/ncu/; a
#                                      command of its own after PART=all
#
# Parts, in the order a visit should run them: check (gpu-check.sh: unit
# tests, memcheck, curves against the CPU, kernel timings; about 4
# minutes on an H200), then bert, mlp, unet (bench/run.sh with LEVELS,
# EVAL=1 and the PyTorch peers). A part's failure never stops the others;
# each prints its table last.
#
#   PART=all scripts/gpu-visit.sh      the whole visit in one command of
#                                      under 10 minutes: check (its
#                                      DEADLINE CHECK_DEADLINE, 280 s),
#                                      then each model at the levels the
#                                      open measurements need (all_levels)
#                                      with the peers (PEERS, default
#                                      all_peers: eager AMP, and
#                                      torch.compile AMP for BERT),
#                                      each cut to
#                                      what is left of ALL_DEADLINE (560
#                                      s); one
#                                      visit.tar.gz and summary.txt in
#                                      $RESULTS (what comes back from a
#                                      GPU machine is a few files),
#                                      packed again after each part: a
#                                      command stopped at its limit
#                                      returns the parts it finished.
#                                      ALL_PARTS (default "check bert
#                                      unet mlp") chooses the parts, in
#                                      their order; with ncu, it takes at
#                                      most 150 s of what is left
#
# Variables: VISIT (default build/gpu-visit), PARTS (what the build makes,
# default "check bert mlp unet"), LEVELS (default "fp32 O2 O2-check
# O2-evalamp", and O2-attn, O2-measure, O2-keepcasts, O2-keepprobs and
# O2-copyprobs for
# BERT, O2-measure, O2-nofuse, O2-keepmoves and O2-wholeconcats for the
# UNet; the same at
# build and run), RESULTS (default $OUT where set, else
# $VISIT/results), PEERS (bench/run.sh's), OP_TIMES (bench/run.sh's; the
# levels whose step's device time is also split per entry point, default
# O2).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VISIT="${VISIT:-$ROOT/build/gpu-visit}"
LEVELS="${LEVELS:-}"
# levels MODEL: LEVELS, or by default fp32, O2, O2-check and O2-evalamp,
# O2-measure for BERT and the UNet (the O2 executable with its products'
# and convolutions' algorithms timed), and O2-attn, O2-keepcasts and
# O2-keepprobs and O2-copyprobs for BERT (the only model with attention:
# fused, its f32 softmax island's casts kept, its probabilities kept
# rather than computed again, and computed again by a copy of the forward
# rather than by its backward), O2-nofuse for the UNet (its batch norm + ReLU fusion
# against the unfused step), O2-keepmoves
# (its skip concatenation and upsampling kept for the backward pass rather
# than computed again: memory against time) and O2-wholeconcats (its
# concatenations written and convolved whole).
levels() {
  if [ -n "$LEVELS" ]; then
    echo "$LEVELS"
  elif [ "$1" = bert ]; then
    echo "fp32 O2 O2-pdl O2-headcopies O2-attn O2-rowsums O2-measure O2-keepcasts O2-keepprobs O2-copyprobs O2-check O2-evalamp"
  elif [ "$1" = unet ]; then
    echo "fp32 O2 O2-pdl O2-bngroups O2-measure O2-nofuse O2-keepmoves O2-wholeconcats O2-check O2-evalamp"
  else
    echo "fp32 O2 O2-check O2-evalamp"
  fi
}
# all_levels MODEL: PART=all's levels, the fewest that measure what is
# open: the step against PyTorch (O2), what the numerics checks cost
# (O2-check; BERT's and the MLP's), evaluation at the training level
# against f32 (O2-evalamp, with EVAL=1; the MLP), for the MLP mpc's own
# fp32 step (BERT's, 60.69 ms on an H200, is 4.99x its O2 step), for BERT
# its heads' transposes copied as before mpc.heads_matmul
# (O2-headcopies: whether cuBLASLt's pointer-array products beat the
# copies), fused attention (O2-attn: whether the CUDA default may fuse it; 1.98x
# the unfused step on 2026-12-04) and its layer norms' gamma and beta
# sums by the backward's row kernel (O2-rowsums, the O2 executable again
# with MPC_CUDA_NORM_SUMS=rows: 1.02x the default column reduction's step
# on 2026-12-04, a margin to confirm), for the UNet its concatenations
# and upsampling kept for the backward pass instead of computed again
# (O2-keepmoves: 0.995x the step for 97 MiB more on 2026-12-04, within
# the spread) and its concatenations written and convolved whole
# (O2-wholeconcats: 1.03x); for both, the step graph's kernels launched
# programmatically (O2-pdl, the O2 executable again with MPC_CUDA_PDL=on:
# whether the gaps between kernels shrink; never run on a GPU before);
# for the UNet its batch norms over groups of channels sized to the L2
# (O2-bngroups, the O2 executable again with MPC_CUDA_BN_GROUPS=l2:
# whether their second passes' bytes from L2 pay for the launches; never
# run on a GPU before).
# O2 first: a part cut short has measured it.
# The products' and convolutions' algorithms timed (O2-measure: 1.02x
# the heuristics' step on both models), the UNet's checks (1.32x its O2
# step) and evaluation (11.7x f32's) are measured and not open.
all_levels() {
  case "$1" in
  bert) echo "O2 O2-pdl O2-headcopies O2-attn O2-rowsums O2-check" ;;
  unet) echo "O2 O2-pdl O2-bngroups O2-wholeconcats O2-keepmoves" ;;
  *) echo "O2 O2-check O2-evalamp fp32" ;;
  esac
}
# all_peers MODEL: PART=all's PyTorch peers where PEERS is unset: eager
# AMP, and for BERT torch.compile AMP too (the fusion targets compare
# BERT with both; on 2026-12-04 a visit's checks took 195 s of the 560
# and its models 265 s, compiling BERT's peer included).
all_peers() {
  case "$1" in
  bert) echo "amp compile" ;;
  *) echo "amp" ;;
  esac
}
PHASE="${PHASE:-run}"
# PARTS: what the build makes (default all four).
PARTS="${PARTS:-check bert mlp unet}"
# What one command may carry, with the checkout.
LIMIT_MIB=56

build() {
  set -e
  rm -rf "$VISIT" "$VISIT.tar.xz"
  mkdir -p "$VISIT"
  local model
  for model in $PARTS; do
    case "$model" in
    check | bert | mlp | unet) ;;
    *)
      echo "gpu-visit: PARTS may hold check, bert, mlp and unet (got" \
        "'$model')" >&2
      exit 2
      ;;
    esac
    if [ "$model" = check ]; then
      BUNDLE="$VISIT/check" PHASE=build "$ROOT/scripts/gpu-check.sh"
      continue
    fi
    BENCH_DIR="$VISIT/bench-$model" MODELS=$model LEVELS="$(levels $model)" \
      PHASE=build "$ROOT/bench/run.sh"
    rm -f "$VISIT/bench-$model"/*.npz
    strip "$VISIT/bench-$model/$model"-*
  done
  # One stream with a dictionary larger than the bundle: the executables
  # share the runtime's kernels (about 9 MiB each), which then compress
  # to almost nothing after the first (xz's default window of 8 MiB
  # would miss them: 46 MiB instead of 24). Preset 0 (the fastest match
  # finder) packs the check bundle's 278 MiB of executables in 13 s
  # against 120 s at the default preset 6, for 6% more bytes.
  tar -cf - -C "$(dirname "$VISIT")" "$(basename "$VISIT")" |
    xz -T1 --lzma2=preset=0,dict=192MiB > "$VISIT.tar.xz"
  local mib=$(($(stat -c %s "$VISIT.tar.xz") / 1048576))
  echo "gpu-visit: $VISIT.tar.xz holds $mib MiB; carry it with the" \
    "checkout and run PART=check, bert, mlp, unet there"
  if [ "$mib" -gt "$LIMIT_MIB" ]; then
    echo "gpu-visit: more than $LIMIT_MIB MiB: carry fewer LEVELS" >&2
    exit 1
  fi
}

unpack() {
  [ -d "$VISIT" ] && [ "$VISIT" -nt "$VISIT.tar.xz" ] && return 0
  [ -f "$VISIT.tar.xz" ] || {
    echo "gpu-visit: no $VISIT.tar.xz here: run PHASE=build first, and" \
      "carry it" >&2
    return 1
  }
  rm -rf "$VISIT"
  python3 - "$VISIT.tar.xz" "$(dirname "$VISIT")" << 'PY' || return 1
import sys, tarfile
with tarfile.open(sys.argv[1], "r:xz") as t:
    t.extractall(sys.argv[2])
PY
  touch "$VISIT"
}

# pack RESULTS WORK PARTS: summary.txt (every finished part's table) and
# visit.tar.gz (WORK, every part's results) in RESULTS, each replaced
# whole. PART=all packs after each part, so a command stopped at its
# limit (what is under $OUT still comes back) returns the parts it
# finished.
pack() {
  local results=$1 work=$2 parts=$3 model
  {
    if [ -f "$work/check.out" ]; then
      echo "== check"
      tail -n 30 "$work/check.out"
    fi
    # The kernels against the baseline's on this GPU: the lines that
    # changed past the margin, and the count of each verdict.
    local against="$work/check/kernels-vs-baseline.md"
    if [ -f "$against" ]; then
      echo "== kernels against the baseline (all lines in visit.tar.gz)"
      head -n 4 "$against"
      grep -E '\| (slower|faster) \|$' "$against" || true
      tail -n 1 "$against"
    fi
    # The defaults that wait for these timings, each with its verdict
    # (bench/decide.py; its table of lines in visit.tar.gz: decisions.md).
    local kernels=() steps=() args=() file
    for file in "$work"/check/kernels.jsonl "$work"/check/.logs/current-*.jsonl; do
      if [ -f "$file" ]; then kernels+=("$file"); fi
    done
    for model in bert unet mlp; do
      file="$work/$model/results.jsonl"
      if [ -f "$file" ]; then steps+=("$file"); fi
    done
    if [ ${#kernels[@]} -gt 0 ]; then args+=(--kernels "${kernels[@]}"); fi
    if [ ${#steps[@]} -gt 0 ]; then args+=(--steps "${steps[@]}"); fi
    if [ ${#args[@]} -gt 0 ]; then
      echo "== decisions (the lines in visit.tar.gz: decisions.md)"
      if python3 "$ROOT/bench/decide.py" "${args[@]}" \
        > "$work/decisions.md"; then
        grep '^- ' "$work/decisions.md" | grep -v ': not timed:' || true
      else
        echo "bench/decide.py failed"
      fi
    fi
    # What the runs said that a default waits for: cuBLASLt refusing
    # pointer-array products (they then ran as strided batches), and the
    # step graphs' programmatic dependencies (MPC_CUDA_PDL=on).
    local said
    said=$(cat "$work"/*.out "$work"/*/bench.log 2> /dev/null |
      grep -E "cuBLASLt refused the .* through pointer arrays|step graph: " |
      sort | uniq -c | sort -rn | head -n 10)
    if [ -n "$said" ]; then
      echo "== the runs' notes (each with its count)"
      echo "$said"
    fi
    if [ -f "$work/ncu.out" ]; then
      echo "== ncu (the sweep in visit.tar.gz: ncu/sweep.md)"
      if [ -f "$work/ncu/table.md" ]; then
        cat "$work/ncu/table.md"
      else
        tail -n 5 "$work/ncu.out"
      fi
    fi
    for model in bert unet mlp; do
      case " $parts " in *" $model "*) ;; *) continue ;; esac
      echo "== $model"
      if [ -f "$work/$model/table.md" ]; then
        cat "$work/$model/table.md"
      fi
      # Where the O2 step's device time goes: the largest entry points.
      if [ -f "$work/$model/$model-O2.op-times.md" ]; then
        head -n 14 "$work/$model/$model-O2.op-times.md"
        tail -n 1 "$work/$model/$model-O2.op-times.md"
      fi
      if [ -f "$work/$model.out" ]; then
        tail -n 3 "$work/$model.out"
      else
        echo "$model: not run (the command stopped before it)"
      fi
    done
  } > "$results/summary.txt.tmp"
  tar -czf "$results/visit.tar.gz.tmp" -C "$work" .
  mv "$results/summary.txt.tmp" "$results/summary.txt"
  mv "$results/visit.tar.gz.tmp" "$results/visit.tar.gz"
}

# every RESULTS: PART=all, each part's results in a folder of its own
# there, packed into RESULTS/visit.tar.gz; every table in summary.txt.
every() {
  local results=$1 work="${TMPDIR:-/tmp}/mpc-gpu-visit-all"
  local start
  start=$(date +%s)
  rm -rf "$work"
  mkdir -p "$work" "$results"
  local status=0 parts="${ALL_PARTS:-check bert unet mlp}" part
  for part in $parts; do
    case "$part" in
    check | ncu | bert | unet | mlp) ;;
    *)
      echo "gpu-visit: ALL_PARTS may hold check, ncu, bert, unet and mlp" \
        "(got '$part')" >&2
      return 2
      ;;
    esac
  done
  case " $parts " in
  *" check "*)
    DEADLINE="${CHECK_DEADLINE:-280}" PART=check RESULTS="$work" \
      "${BASH_SOURCE[0]}" > "$work/check.out" 2>&1 || status=1
    pack "$results" "$work" "$parts"
    ;;
  esac
  # Each later part's share of what is left: the profiling part (the
  # sweep and Nsight Compute) 150 s at most, BERT the most of the models
  # (its peers compile a 12-layer encoder), the MLP the least.
  local model left limit
  for model in $parts; do
    [ "$model" = check ] && continue
    left=$((start + ${ALL_DEADLINE:-560} - $(date +%s)))
    case $model in
    ncu) limit=$((left < 150 ? left : 150)) ;;
    bert) limit=$((left / 2)) ;;
    unet) limit=$((left * 3 / 5)) ;;
    mlp) limit=$left ;;
    esac
    if [ "$model" = ncu ]; then
      if [ "$limit" -lt 40 ]; then
        echo "ncu: no time left" > "$work/ncu.out"
        status=1
        continue
      fi
      NCU_DEADLINE=$((limit - 30)) PART=ncu RESULTS="$work" \
        timeout --kill-after=5 "$limit" "${BASH_SOURCE[0]}" \
        > "$work/ncu.out" 2>&1 || status=1
      pack "$results" "$work" "$parts"
      continue
    fi
    if [ "$limit" -lt 20 ]; then
      echo "$model: no time left (ALL_DEADLINE=${ALL_DEADLINE:-560} s)" \
        > "$work/$model.out"
      status=1
      continue
    fi
    local code=0
    LEVELS="$(all_levels $model)" PART=$model RESULTS="$work" \
      PEERS="${PEERS-$(all_peers $model)}" timeout --kill-after=5 "$limit" \
      "${BASH_SOURCE[0]}" \
      > "$work/$model.out" 2>&1 || code=$?
    if [ $code != 0 ]; then
      echo "$model: exit $code (124: out of its $limit s)" >> "$work/$model.out"
      status=1
    fi
    pack "$results" "$work" "$parts"
  done
  pack "$results" "$work" "$parts"
  cat "$results/summary.txt"
  return $status
}

run() {
  local part=${PART:-}
  local results="${RESULTS:-${OUT:-$VISIT/results}}"
  unpack || exit 1
  if [ "$part" = all ]; then
    every "$results"
    return
  fi
  mkdir -p "$results/$part"
  case "$part" in
  check)
    BUNDLE="$VISIT/check" RESULTS="$results/check" PHASE=run \
      "$ROOT/scripts/gpu-check.sh"
    ;;
  bert | mlp | unet)
    BENCH_DIR="$VISIT/bench-$part" RESULTS_DIR="$results/$part" \
      MODELS=$part LEVELS="$(levels $part)" EVAL=1 PHASE=run \
      OP_TIMES="${OP_TIMES-O2}" "$ROOT/bench/run.sh"
    ;;
  ncu)
    # The batch norms and column sums at other launch settings, then
    # Nsight Compute on the kernel benchmark's slow lines: gpu-check.sh's
    # PHASE=ncu, on the check bundle (its executables unpacked and the
    # CUDA libraries found as for its other parts).
    [ -d "$VISIT/check/bin" ] || {
      echo "gpu-visit: PART=ncu needs the check bundle's" \
        "mpc-bench-kernels (PARTS with check at build)" >&2
      exit 1
    }
    BUNDLE="$VISIT/check" RESULTS="$results/ncu" PHASE=ncu \
      "$ROOT/scripts/gpu-check.sh"
    ;;
  *)
    echo "gpu-visit: PART must be check, bert, mlp, unet, ncu or all (got" \
      "'$part')" >&2
    exit 2
    ;;
  esac
}

case "$PHASE" in
build) build ;;
run) run ;;
*)
  echo "gpu-visit: PHASE must be build or run (got '$PHASE')" >&2
  exit 2
  ;;
esac
