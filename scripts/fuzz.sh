#!/usr/bin/env bash
# Fuzzes mpc for a bounded time with libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer:
#
#   scripts/fuzz.sh                      # each target FUZZ_SECONDS (60)
#   FUZZ_SECONDS=600 scripts/fuzz.sh     # longer
#   FUZZ_SWEEP=0 scripts/fuzz.sh         # without the seeds' sweep
#
# Targets (tools/mpc-fuzz/): mpc-fuzz-pipeline (the textual IR parsed,
# verified and run through graph checks, fusion, precision assignment,
# cast clean-up, memory planning and the lowering, in the variant of
# mpc-compile's options a hash of the input picks; seeded with every .mlir
# of test/), mpc-fuzz-policy (--mpc-assign-precision's JSON policy files,
# with name entries; seeded with the test inputs) and mpc-fuzz-readers (the
# training executable's .npy, .npz and safetensors readers; seeded with
# small valid files), mpc-fuzz-import (ONNX models through
# mpc-import-onnx's checks and translation, whose result must verify;
# seeded with test/Import's models and ONNX's node tests). The build is
# scripts/sanitize.sh's (FUZZ_BUILD, default build-asan/): clang-22 with
# the sanitizers and libFuzzer's coverage on mpc's own code (Debian's
# LLVM/MLIR libraries are not instrumented: ASAN_OPTIONS=
# allow_user_poisoning=0 keeps their allocators' annotations from being
# misread).
#
# A crash, a sanitizer report or a timeout stops the run and exits 1,
# leaving the input in FUZZ_BUILD/findings/; reproduce it with
#   FUZZ_BUILD/bin/mpc-fuzz-<target> FUZZ_BUILD/findings/crash-...
# and add it as a lit regression test.
set -euo pipefail
MPC_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ_BUILD="${FUZZ_BUILD:-$MPC_ROOT/build-asan}"
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
# The sanitized build of scripts/sanitize.sh, fuzzers only.
SANITIZE_BUILD="$FUZZ_BUILD" SANITIZE_BUILD_ONLY=1 \
  SANITIZE_TARGETS="mpc-fuzz-pipeline mpc-fuzz-policy mpc-fuzz-readers mpc-fuzz-import" \
  "$MPC_ROOT/scripts/sanitize.sh"

# Seeds.
seeds="$FUZZ_BUILD/seeds"
rm -rf "$seeds" && mkdir -p "$seeds/pipeline" "$seeds/policy" "$seeds/readers" \
  "$seeds/import"
cp "$MPC_ROOT"/test/Transforms/AssignPrecision/Inputs/*.json "$seeds/policy/"
find "$MPC_ROOT/test" "$MPC_ROOT/examples" -name '*.mlir' |
  while read -r f; do
    # One seed per -split-input-file case.
    awk -v out="$seeds/pipeline/$(basename "$f" .mlir)" '
      /^\/\/ -----/ { n++; next } { print > (out "-" n ".mlir") }' "$f"
  done
python3 "$MPC_ROOT/scripts/make_dataset.py" --samples 4 --features 3 \
  --classes 2 -o "$seeds/data.npz"
python3 - "$seeds" << 'PY'
import json, struct, sys, zipfile, zlib
seeds = sys.argv[1]
npz = open(seeds + "/data.npz", "rb").read()
npy = zipfile.ZipFile(seeds + "/data.npz").read("x.npy")
open(seeds + "/readers/npy", "wb").write(b"\0" + npy)
open(seeds + "/readers/npz", "wb").write(b"\1" + npz)
# A checkpoint of the fuzzer's model, with mpc's CRC over the whole file.
data = struct.pack("<6f", *range(6)) + b"\0\x3c" * 4 + struct.pack("<q", 7)
header = {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
          "b": {"dtype": "F16", "shape": [4], "data_offsets": [24, 32]},
          "mpc.step": {"dtype": "I64", "shape": [], "data_offsets": [32, 40]},
          "__metadata__": {"format": "mpc", "mpc.entry": "train_step",
                           "mpc.crc32": "00000000"}}
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * ((8 - len(text) % 8) % 8)
size = struct.pack("<Q", len(text))
crc = b"%08x" % (zlib.crc32(size + text + data) & 0xffffffff)
text = text.replace(b"00000000", crc, 1)
for mode in (2, 3):
    open(seeds + "/readers/ckpt%d" % mode, "wb").write(
        bytes([mode]) + size + text + data)
PY

# The importer's: its test models and the models of the node tests of
# the ops it imports (test/Import/node-tests.txt; about 330).
cp "$MPC_ROOT"/test/Import/Inputs/*.onnx "$MPC_ROOT"/test/Import/Inputs/fuzz/*.onnx \
  "$seeds/import/"
# ... two of them keeping their weights in external data files. The
# fuzzer writes each input into TMPDIR, where their data files are: the
# references (location, offset, length), mutated, reach the importer's
# reader of them, and unmutated its whole path.
export TMPDIR="$FUZZ_BUILD/fuzz-tmp"
mkdir -p "$TMPDIR"
for model in mlp-static encoder; do
  python3 "$MPC_ROOT/test/Import/externalize.py" \
    "$MPC_ROOT/test/Import/Inputs/$model.onnx" "$TMPDIR/$model.onnx" \
    --one-file "$model.bin" --attributes
  mv "$TMPDIR/$model.onnx" "$seeds/import/$model-external.onnx"
done
nodes=/usr/share/libonnx-testdata/data/node
if [ -d "$nodes" ]; then
  grep -v '^#' "$MPC_ROOT/test/Import/node-tests.txt" | awk 'NF { print $2 }' |
    while read -r t; do
      if [ -f "$nodes/$t/model.onnx" ]; then
        cp "$nodes/$t/model.onnx" "$seeds/import/$t.onnx"
      fi
    done
fi

findings="$FUZZ_BUILD/findings"
mkdir -p "$findings"
export ASAN_OPTIONS="allow_user_poisoning=0:detect_leaks=0:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
# Runs are one process each, single-threaded: they run side by side, one
# per core (FUZZ_JOBS, default nproc), each with its own log, shown in a
# fixed order once all are done.
jobs="${FUZZ_JOBS:-$(nproc)}"
# The limits and the findings' folder every run takes.
limits=(-timeout=30 -rss_limit_mb=4096 -max_len=65536 -detect_leaks=0
  -artifact_prefix="$findings/")
# Waits until fewer than `jobs` runs are under way.
slot() {
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
}
# Every seed of the pipeline fuzzer through each of 24 of mpc-compile's
# variants (tools/mpc-fuzz/Variants.h: CPU and CUDA, O1, O2 and O3, f16
# and bf16, the optional passes all on or all off), once each (about 45
# s on one core): a timed run reaches only the variants its inputs'
# hashes pick.
sweep_one() {
  local n=$1
  if MPC_FUZZ_VARIANT=$n "$FUZZ_BUILD/bin/mpc-fuzz-pipeline" -runs=0 \
    "${limits[@]}" "$seeds/pipeline" > "$findings/sweep-$n.log" 2>&1; then
    rm -f "$findings/sweep-$n.log"
  fi
}
if [ "${FUZZ_SWEEP:-1}" != 0 ]; then
  echo "== mpc-fuzz-pipeline: the seeds through 24 variants"
  variants=()
  for passes in 0x600 0xAA; do
    for cuda in 0 1; do
      for level in 0 1 2; do
        for bf16 in 0 1; do
          variants+=($((passes | cuda | level << 11 | bf16 << 13)))
        done
      done
    done
  done
  rm -f "$findings"/sweep-*.log
  for n in "${variants[@]}"; do
    slot
    sweep_one "$n" &
  done
  wait
  for n in "${variants[@]}"; do
    if [ -f "$findings/sweep-$n.log" ]; then
      tail -n 40 "$findings/sweep-$n.log"
      echo "fuzz: a seed fails in MPC_FUZZ_VARIANT=$n; the input is" \
        "in $findings/"
      status=1
    fi
  done
fi
# The timed runs, the longest first (the importer's seeds alone take
# about a minute), each leaving its status beside its log.
fuzz_one() {
  local target=$1 corpus="$FUZZ_BUILD/corpus/$1" rc=0
  mkdir -p "$corpus"
  "$FUZZ_BUILD/bin/mpc-fuzz-$target" "$corpus" "$seeds/$target" \
    -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 "${limits[@]}" \
    > "$findings/fuzz-$target.log" 2>&1 || rc=$?
  echo $rc > "$findings/fuzz-$target.status"
}
targets=(import pipeline policy readers)
rm -f "$findings"/fuzz-*.log "$findings"/fuzz-*.status
for target in "${targets[@]}"; do
  slot
  fuzz_one "$target" &
done
wait
for target in pipeline policy readers import; do
  echo "== mpc-fuzz-$target: ${FUZZ_SECONDS}s"
  tail -n 40 "$findings/fuzz-$target.log"
  if [ "$(cat "$findings/fuzz-$target.status")" != 0 ]; then
    echo "fuzz: mpc-fuzz-$target found a problem; the input is in $findings/"
    status=1
  fi
done
exit $status
