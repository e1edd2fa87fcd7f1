#!/usr/bin/env bash
# The benchmarks, side by side with PyTorch in one run, on a machine with a
# GPU, PyTorch and a built checkout (scripts/setup.sh):
#
#   bench/run.sh            # work in bench/out/, table on stdout
#
# MLP: 1024 -> 4 x 4096 (ReLU) -> 1000, batch 512, momentum SGD; a
# BERT-base-style encoder and a UNet-style conv net (below), Adam; mpc at fp32
# and O2 f16 (dynamic loss scaling) against PyTorch fp32, eager AMP
# (autocast + GradScaler) and torch.compile AMP, from the same initial
# weights and batches; for BERT also eager AMP with attention written out
# (torch-amp-math: the gap fused attention makes, on its own). Steps:
# $WARMUP untimed, then $STEPS timed.
#
# Timing, the same on both sides: whole-step wall time after the warm-up,
# in windows of 10 steps that each end by reading the loss back (mpc: the
# runner's ms_per_step of each logged line; PyTorch: the same windows
# around its steps, loss.item() last); the median window, per step. Batch
# uploads are inside the window on both sides. Memory: mpc's memory_bytes
# (buffers, cuBLASLt/cuDNN workspaces, scratch) against PyTorch's
# max_memory_allocated.
#
# Selectors: MODELS (default "mlp bert unet"), PEERS (default "fp32 amp
# compile amp-math"; 0 or "" for none; amp-math applies to BERT only;
# amp-benchmark, eager AMP with torch.backends.cudnn.benchmark, to the
# UNet only).
# A run that crashes is recorded (a row saying so) and the others go on.
# Every result line is appended to $RESULTS_DIR/results.jsonl as soon as
# it exists, the output of every run to $RESULTS_DIR/bench.log, and the
# table ends in $RESULTS_DIR/table.md: on a GPU machine point RESULTS_DIR
# at the folder that comes back. On CUDA the run first measures the GPU's
# limits (bench/limits.py); the table gives each run's TFLOP/s as a share
# of the measured GEMM rate of its precision.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BENCH_DIR="${BENCH_DIR:-$ROOT/bench/out}"
RESULTS_DIR="${RESULTS_DIR:-$BENCH_DIR}"
BIN="${MPC_BUILD:-$ROOT/build}/bin"
STEPS="${STEPS:-100}" WARMUP="${WARMUP:-20}"
MODELS="${MODELS:-mlp bert unet}"
PEERS="${PEERS-fp32 amp compile amp-math}"
[ "$PEERS" = 0 ] && PEERS=""
# BACKEND=cpu PEERS=0 with small sizes checks the harness without a GPU;
# BACKEND=cpu with peers runs PyTorch on the CPU too (bench/cpu.sh).
BACKEND="${BACKEND:-cuda}"
# COMPILE_FLAGS: more mpc-compile options for every build (words), e.g.
# --emulate-cuda to check the CUDA harness without a GPU.
read -r -a COMPILE_FLAGS <<< "${COMPILE_FLAGS:-}"
# LEVELS: the mpc builds (default "fp32 O2"; O2-nofuse and fp32-nofuse
# compile with --no-fuse, to measure what fusion gives; O2-attn with
# --fuse-attention, mpc.attention on CUDA too; O2-keepcasts with
# --no-fold-casts, the casts around softmax and dropout as kernels of
# their own, to measure what folding them gives; O2-keepprobs with
# --keep-probabilities, an unfused attention's probabilities and mask
# kept for the backward pass instead of computed again from the scores:
# what the recomputation costs in time and saves in memory; O2-copyprobs
# with --no-recompute-in-backward, the dropped probabilities for the
# values' gradient computed by a copy of the forward rather than written
# by the softmax_dropout backward; O2-keepmoves
# with --no-recompute-moves, the concatenations, upsamplings and casts the
# backward pass reads kept rather than computed again; O2-wholeconcats
# with --no-concat-convs, a concatenation that only convolutions read
# written and convolved whole instead of its parts convolved, each adding
# to the one before); THREADS: --threads
# of mpc's executables and of the PyTorch peers on the CPU (0: their
# defaults).
# O2-check compiles with --check-numerics (what the checks cost),
# O2-evalamp with --eval-precision=amp (the evaluation at the training
# level instead of f32). O2-measure runs the O2 executable with
# MPC_CUDNN_ALGORITHMS=measure and MPC_CUBLASLT_ALGORITHMS=measure (each
# convolution's cuDNN algorithms and each product's cuBLASLt candidates
# timed on the first step, as PyTorch's cudnn.benchmark and TunableOp do;
# the peer that times convolutions is amp-benchmark). O2-rowsums runs
# it with MPC_CUDA_NORM_SUMS=rows (the layer norms' gamma and beta
# gradients by the backward's row kernel as it reads its inputs, instead
# of by the default column reduction reading them again). O2-pdl runs
# it with MPC_CUDA_PDL=on (the step graph's kernels launched while the
# kernel before them runs, waiting in their prologue: Programmatic
# Dependent Launch; the same results). O2-bngroups runs it with
# MPC_CUDA_BN_GROUPS=l2 (each batch norm's two passes over one group of
# channels after another, the bytes a group's second pass reads and
# writes within the L2, so that it reads from L2 rather than memory).
LEVELS="${LEVELS:-fp32 O2}"
# EVAL=1: each build's evaluation step is timed too (mpc_eval: the
# training data as validation data, EVALS evaluations, the first one
# untimed), in a separate run so that the training windows hold no
# evaluation.
EVAL="${EVAL:-0}" EVALS="${EVALS:-5}"
# OP_TIMES: the levels whose step is also run eagerly (--no-graph) for
# OP_STEPS steps with MPC_CUDA_OP_TIMES (CUDA), bench/op_times.py's table
# of where its device time goes then in $RESULTS_DIR/NAME-LEVEL.op-times.md
# (and .op-times.jsonl); default none.
OP_TIMES="${OP_TIMES:-}" OP_STEPS="${OP_STEPS:-5}"

# level_options LEVEL: the mpc-compile options of a level, in `amp`; the
# level whose executable it runs, in `exe_level` (itself but for a level
# that only sets the environment), and that environment, in `run_env`.
level_options() {
  amp=()
  exe_level=$1
  run_env=()
  case "$1" in
  fp32) ;;
  fp32-nofuse) amp=(--no-fuse) ;;
  O2) amp=(--amp=O2 --dtype=f16) ;;
  O2-nofuse) amp=(--amp=O2 --dtype=f16 --no-fuse) ;;
  O2-attn) amp=(--amp=O2 --dtype=f16 --fuse-attention) ;;
  O2-headcopies) amp=(--amp=O2 --dtype=f16 --no-head-products) ;;
  O2-keepcasts) amp=(--amp=O2 --dtype=f16 --no-fold-casts) ;;
  O2-keepprobs) amp=(--amp=O2 --dtype=f16 --keep-probabilities) ;;
  O2-copyprobs) amp=(--amp=O2 --dtype=f16 --no-recompute-in-backward) ;;
  O2-keepmoves) amp=(--amp=O2 --dtype=f16 --no-recompute-moves) ;;
  O2-wholeconcats) amp=(--amp=O2 --dtype=f16 --no-concat-convs) ;;
  O2-check) amp=(--amp=O2 --dtype=f16 --check-numerics) ;;
  O2-evalamp) amp=(--amp=O2 --dtype=f16 --eval-precision=amp) ;;
  O2-measure)
    amp=(--amp=O2 --dtype=f16)
    exe_level=O2
    run_env=(MPC_CUDNN_ALGORITHMS=measure MPC_CUBLASLT_ALGORITHMS=measure)
    ;;
  O2-rowsums)
    amp=(--amp=O2 --dtype=f16)
    exe_level=O2
    run_env=(MPC_CUDA_NORM_SUMS=rows)
    ;;
  O2-pdl)
    amp=(--amp=O2 --dtype=f16)
    exe_level=O2
    run_env=(MPC_CUDA_PDL=on)
    ;;
  O2-bngroups)
    amp=(--amp=O2 --dtype=f16)
    exe_level=O2
    run_env=(MPC_CUDA_BN_GROUPS=l2)
    ;;
  *) return 1 ;;
  esac
}
for level in $LEVELS; do
  if ! level_options "$level"; then
    echo "bench/run.sh: unknown level '$level' in LEVELS (known: fp32" \
      "fp32-nofuse O2 O2-nofuse O2-attn O2-headcopies O2-keepcasts" \
      "O2-keepprobs" \
      "O2-copyprobs" \
      "O2-keepmoves O2-wholeconcats" \
      "O2-check" \
      "O2-evalamp O2-measure O2-rowsums O2-pdl O2-bngroups)" >&2
    exit 2
  fi
done
# The interpreter of the PyTorch peers.
PYTHON="${PYTHON:-python3}"
THREADS="${THREADS:-0}"
PEER_DEVICE=(--device cuda)
if [ "$BACKEND" = cpu ]; then
  blas=1
  [ "$THREADS" -gt 1 ] && blas="1,$THREADS"
  PEER_DEVICE=(--device cpu --threads "$THREADS" --blas-threads "$blas")
fi
# PHASE=build generates and compiles only; PHASE=run runs what a build made
# (BENCH_DIR carried to the GPU machine, which needs no compiler; a dataset
# missing there is made again by the same seeded scripts, so the datasets
# need not be carried); default both.
PHASE="${PHASE:-all}"
building() { [ "$PHASE" != run ]; }
running() { [ "$PHASE" != build ]; }
mkdir -p "$BENCH_DIR" "$RESULTS_DIR"
RESULTS="$RESULTS_DIR/results.jsonl"
LOG="$RESULTS_DIR/bench.log"
if running; then
  : > "$RESULTS"
  : > "$LOG"
fi
FAILED=0
selected() { [[ " $MODELS " == *" $1 "* ]]; }

# attempt MODEL IMPL COMMAND...: runs COMMAND, its output in bench.log and
# its stdout (JSON lines) appended to the results; a failure becomes a
# result line naming it, and the run goes on.
attempt() {
  local model=$1 impl=$2
  shift 2
  local out status
  echo "== $model $impl: $*" >> "$LOG"
  out=$("$@" 2>> "$LOG")
  status=$?
  if [ $status -eq 0 ] && [ -n "$out" ]; then
    echo "$out" >> "$RESULTS"
    return 0
  fi
  local why
  why=$(tail -n 1 "$LOG" | tr -d '"\\' | cut -c1-160)
  echo "-- failed (exit $status)" >> "$LOG"
  printf '{"impl": "%s", "model": "%s", "error": "exit %d: %s"}\n' \
    "$impl" "$model" "$status" "$why" >> "$RESULTS"
  FAILED=1
  return 1
}

# Runs one mpc executable and summarises it (one JSON line on stdout).
mpc_run() {
  local name=$1 level=$2 batch=$3 flops=$4
  level_options "$level"
  local exe="$BENCH_DIR/$name-$exe_level"
  local metrics="$BENCH_DIR/$name-$level.jsonl"
  rm -f "$metrics"
  env ${run_env[@]+"${run_env[@]}"} "$exe" --data "$BENCH_DIR/$name.npz" \
    --no-shuffle --threads "$THREADS" --steps $((WARMUP + STEPS)) \
    --log-every 10 --metrics "$metrics" >> "$LOG" &&
    "$exe" --print-memory > "$BENCH_DIR/$name-$level.memory.json" &&
    python3 "$ROOT/bench/report.py" ours "$metrics" \
      "$BENCH_DIR/$name-$level.memory.json" --impl "mpc-$level" \
      --model "$name" --batch "$batch" --warmup "$WARMUP" \
      --flops-per-sample "$flops"
}

# Times one mpc executable's evaluation step (one JSON line on stdout):
# an evaluation after every other step, EVALS of them.
mpc_eval() {
  local name=$1 level=$2 batch=$3
  level_options "$level"
  local exe="$BENCH_DIR/$name-$exe_level"
  local metrics="$BENCH_DIR/$name-$level.eval.jsonl"
  rm -f "$metrics"
  env ${run_env[@]+"${run_env[@]}"} "$exe" --data "$BENCH_DIR/$name.npz" \
    --val-data "$BENCH_DIR/$name.npz" --no-shuffle --threads "$THREADS" \
    --steps $((2 * EVALS)) --eval-every 2 --log-every 2 \
    --metrics "$metrics" >> "$LOG" &&
    python3 "$ROOT/bench/report.py" eval "$metrics" --impl "mpc-$level eval" \
      --model "$name" --batch "$batch"
}

# Runs one mpc executable eagerly with MPC_CUDA_OP_TIMES and writes
# bench/op_times.py's table (and its JSON lines) of the steps after the
# first.
mpc_times() {
  local name=$1 level=$2
  local raw="$BENCH_DIR/$name-$level.times"
  local table="$RESULTS_DIR/$name-$level.op-times"
  echo "== $name mpc-$level op times" >> "$LOG"
  level_options "$level"
  env ${run_env[@]+"${run_env[@]}"} MPC_CUDA_OP_TIMES="$raw" \
    "$BENCH_DIR/$name-$exe_level" \
    --data "$BENCH_DIR/$name.npz" --no-shuffle --threads "$THREADS" \
    --steps "$OP_STEPS" --no-graph >> "$LOG" 2>&1 &&
    python3 "$ROOT/bench/op_times.py" "$raw" > "$table.md" &&
    python3 "$ROOT/bench/op_times.py" "$raw" --json > "$table.jsonl"
}

# bench NAME BATCH FLOPS_PER_SAMPLE OPTIMIZER [PEER OPTIONS...]:
# BENCH_DIR/NAME.mlir and NAME.npz compiled at fp32 and O2 f16 and run,
# then the selected PyTorch peers from the fp32 executable's initial
# checkpoint.
bench() {
  local name=$1 batch=$2 flops=$3 optimizer=$4
  shift 4
  local level amp mode
  for level in $LEVELS; do
    level_options "$level"
    # A level that runs another's executable builds it only where that
    # level is not built anyway.
    if building && { [ "$exe_level" = "$level" ] ||
      [[ " $LEVELS " != *" $exe_level "* ]]; }; then
      "$BIN/mpc-compile" "$BENCH_DIR/$name.mlir" --train \
        --optimizer="$optimizer" --backend="$BACKEND" "${amp[@]}" \
        ${COMPILE_FLAGS[@]+"${COMPILE_FLAGS[@]}"} \
        -o "$BENCH_DIR/$name-$exe_level" || FAILED=1
    fi
    if running; then
      attempt "$name" "mpc-$level" mpc_run "$name" "$level" "$batch" "$flops"
      if [ "$EVAL" = 1 ]; then
        attempt "$name" "mpc-$level eval" mpc_eval "$name" "$level" "$batch"
      fi
      if [[ " $OP_TIMES " == *" $level "* ]] &&
        ! mpc_times "$name" "$level"; then
        echo "-- op times of $name-$level failed" >> "$LOG"
        FAILED=1
      fi
    fi
  done
  running || return 0
  [ -n "$PEERS" ] || return 0
  level_options "${LEVELS%% *}"
  local first=$exe_level
  if ! "$BENCH_DIR/$name-$first" --data "$BENCH_DIR/$name.npz" --steps 0 \
    --checkpoint "$BENCH_DIR/$name-init.safetensors" >> "$LOG" 2>&1; then
    echo "no initial checkpoint for $name: peers not run" >> "$LOG"
    FAILED=1
    return 0
  fi
  for mode in $PEERS; do
    local peer=(--mode "$mode")
    if [ "$mode" = amp-math ]; then
      [ "$name" = bert ] || continue
      peer=(--mode amp --attention math)
    fi
    if [ "$mode" = amp-benchmark ]; then
      [ "$name" = unet ] || continue
      peer=(--mode amp --cudnn-benchmark)
    fi
    attempt "$name" "torch-$mode" "$PYTHON" "$ROOT/bench/torch_peer.py" \
      "$name" --init "$BENCH_DIR/$name-init.safetensors" \
      --data "$BENCH_DIR/$name.npz" "${peer[@]}" --batch "$batch" \
      --steps "$STEPS" --warmup "$WARMUP" --window 10 "${PEER_DEVICE[@]}" "$@"
  done
}

# The floors, in the same run: copy bandwidth and GEMM rates (limits.py).
if running && [ "$BACKEND" = cuda ]; then
  attempt gpu limits python3 "$ROOT/bench/limits.py"
fi

# W: hidden widths instead of L layers of H (examples/mlp.mlir: 512,256).
B="${B:-512}" I="${I:-1024}" H="${H:-4096}" L="${L:-4}" C="${C:-1000}"
W="${W:-}"
if selected mlp; then
  if building; then
    python3 "$ROOT/bench/models.py" mlp --batch $B --input $I --hidden $H \
      --layers $L --widths "$W" --classes $C -o "$BENCH_DIR/mlp.mlir"
  fi
  if building || [ ! -f "$BENCH_DIR/mlp.npz" ]; then
    python3 "$ROOT/scripts/make_dataset.py" --samples $((B * 8)) \
      --features $I --classes $C -o "$BENCH_DIR/mlp.npz"
  fi
  # Per sample: forward 2, backward 4 flops per weight.
  dims="$I $(if [ -n "$W" ]; then echo "${W//,/ }"; else
    for _ in $(seq "$L"); do echo -n "$H "; done; fi) $C"
  weights=0 prev=""
  for d in $dims; do
    [ -n "$prev" ] && weights=$((weights + prev * d))
    prev=$d
  done
  bench mlp $B $((6 * weights)) "kind=momentum lr=0.01"
fi

# BERT-base-style encoder: hidden 768, 12 heads, feed-forward 3072,
# sequence 512, $BL layers, batch $BB, Adam; 2-class classification.
BB="${BB:-8}" BS="${BS:-512}" BD="${BD:-768}" BH="${BH:-12}" BF="${BF:-3072}"
BL="${BL:-12}" BV="${BV:-30522}"
if selected bert; then
  if building; then
    python3 "$ROOT/bench/models.py" bert --batch $BB --seq $BS --hidden $BD \
      --heads $BH --ffn $BF --layers $BL --vocab $BV --classes 2 \
      -o "$BENCH_DIR/bert.mlir"
  fi
  if building || [ ! -f "$BENCH_DIR/bert.npz" ]; then
    python3 "$ROOT/test/e2e/random_inputs.py" -o "$BENCH_DIR/bert.npz" \
      input_ids:i4:$((BB * 8))x$BS:0:$BV labels:i4:$((BB * 8)):0:2
  fi
  bench bert $BB \
    $((3 * (BL * (2 * BS * (4 * BD * BD + 2 * BD * BF) + 4 * BS * BS * BD) + \
      2 * BD * BD + 4 * BD))) \
    "kind=adam lr=1e-4" --heads $BH --optimizer adam --lr 1e-4
fi

# UNet-style conv net: base width $UW (448 W^2 weights: 7.3M at 128),
# ${US}x$US RGB images, batch $UB, Adam; NHWC throughout.
UB="${UB:-16}" US="${US:-128}" UW="${UW:-128}"
if selected unet; then
  if building; then
    python3 "$ROOT/bench/models.py" unet --batch $UB --image $US \
      --width $UW -o "$BENCH_DIR/unet.mlir"
  fi
  if building || [ ! -f "$BENCH_DIR/unet.npz" ]; then
    python3 "$ROOT/test/e2e/random_inputs.py" -o "$BENCH_DIR/unet.npz" \
      image:f4:$((UB * 4))x${US}x${US}x3:-1:1 \
      mask:f4:$((UB * 4))x${US}x${US}x1:0:1
  fi
  # 3x the forward's 2 multiply-adds per weight per output pixel: full
  # size 28W + 54W^2, half size 162W^2, quarter size 248W^2 (transposed
  # conv counted at its input size).
  bench unet $UB \
    $((3 * 2 * (US * US * (28 * UW + 54 * UW * UW) + \
      (US / 2) * (US / 2) * 162 * UW * UW + \
      (US / 4) * (US / 4) * 248 * UW * UW))) \
    "kind=adam lr=1e-3" --optimizer adam --lr 1e-3
fi

if running; then
  python3 "$ROOT/bench/report.py" table "$RESULTS" | tee "$RESULTS_DIR/table.md"
fi
exit $FAILED
