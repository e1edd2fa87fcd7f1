#!/usr/bin/env python3
"""Nsight Compute's view of the kernel benchmark's lines, one command.

  bench/ncu_kernels.py [--bench PATH] [--ncu PATH] [--out FILE.jsonl]
                       [--deadline SECONDS] [NAME ...]

Runs `mpc-bench-kernels --profile --only NAME --index K` under `ncu
--profile-from-start off` for each line named NAME (every K the bench
reports for it; default: the lines still short of 0.7 of the copy rate,
and the batch norms'), with the sections that say why a kernel is slow:
speed of light (DRAM and SM throughput), occupancy and launch (registers,
grid, waves), warp state and scheduler statistics (cycles per issued
instruction, issue rate), memory workload (L1 and L2 hit rates), the
DRAM bytes read and written, and the warps' stall reasons. Each kernel
launch of a line becomes one JSON line in --out (every metric ncu gave,
by name) and a row of the table printed last: its microseconds, DRAM
throughput and achieved GB/s, L2 hit rate, occupancy, registers and the
largest stall reason. An ncu run that fails is tried again without the
stall reasons' metrics (names that differ between versions), then
recorded as failed; the others go on.

  bench/ncu_kernels.py --parse FILE.csv   the table of one CSV that
                                          `ncu --csv --print-units base`
                                          printed (no run)
"""
import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time

# The lines profiled by default: those short of 0.7 of the copy rate on
# 2026-12-04 (docs/Benchmarks.md), the batch norms' whole family, and
# cuDNN's batch norm, then ours over groups of channels sized to the L2,
# last (their DRAM bytes say whether cuDNN reads the tensor once and
# whether our groups' second passes read theirs from L2; after the
# others, so that the deadline cuts them first).
DEFAULT_LINES = [
    "batch_norm", "batch_norm_inference", "batch_norm_backward",
    "batch_norm_relu_backward_formed", "layer_norm_backward",
    "add_layer_norm_backward", "embedding_backward", "check_numerics",
    "column_sums", "unary_gelu", "softmax_dropout", "transpose_last",
    "batch_norm_relu_cudnn", "batch_norm_relu_backward_cudnn",
    "batch_norm_l2_groups",
]

SECTIONS = ["SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats",
            "SchedulerStats", "MemoryWorkloadAnalysis"]
BYTES = "dram__bytes_read.sum,dram__bytes_write.sum"
STALLS = "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio"

# Units as `--print-units base` writes them, to microseconds and bytes.
TIME_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0,
           "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}
SIZE_B = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9,
          "KB": 1e3, "MB": 1e6, "GB": 1e9}


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def parse_csv(text):
    """The launches of ncu's details CSV: one dict per kernel launch (its
    ID, name and every metric, by name; a name given by two sections is
    also kept as "Section: Name"), in launch order. Lines before the
    header (the profiled program's output, ncu's ==PROF== lines) are
    skipped."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')),
                 None)
    if start is None:
        return []
    launches = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        # Rows of ncu's rules (advice, no metric) have no metric name.
        if not row.get("ID") or not row.get("Metric Name"):
            continue
        launch = launches.setdefault(row["ID"], {
            "id": int(row["ID"]) if row["ID"].isdigit() else row["ID"],
            "kernel_name": row.get("Kernel Name", ""),
            "metrics": {}, "units": {},
        })
        name, unit = row["Metric Name"], row.get("Metric Unit", "")
        value = number(row.get("Metric Value", ""))
        if value is None:
            value = row.get("Metric Value", "")
        section = row.get("Section Name", "")
        if name in launch["metrics"] and section:
            name = section + ": " + name
        launch["metrics"][name] = value
        launch["units"][name] = unit
    return list(launches.values())


def short_name(kernel):
    """A kernel's name without namespaces, return type and parameters, its
    template arguments kept: batchNormApplyKernel<__half, 8, int>."""
    name = re.sub(r"\(anonymous namespace\)::|<unnamed>::|mpcrt::cuda::", "",
                  kernel)
    if name.startswith("void "):
        name = name[5:]
    depth = 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            name = name[:i]
            break
    return name[:120]


def derive(launch):
    """The table's columns from one launch's metrics (None where ncu gave
    no such metric)."""
    m, u = launch["metrics"], launch["units"]

    def get(*names):
        for n in names:
            if isinstance(m.get(n), float):
                return m[n], u.get(n, "")
        return None, ""

    us, unit = get("Duration", "gpu__time_duration.sum")
    us = us * TIME_US.get(unit, 1.0) if us is not None else None
    read, ru = get("dram__bytes_read.sum")
    write, wu = get("dram__bytes_write.sum")
    moved = None
    if read is not None and write is not None:
        moved = read * SIZE_B.get(ru, 1.0) + write * SIZE_B.get(wu, 1.0)
    stalls = {k: v for k, v in m.items()
              if k.startswith("smsp__average_warps_issue_stalled_")
              and isinstance(v, float)}
    top = max(stalls, key=stalls.get) if stalls else None
    total = sum(stalls.values()) if stalls else 0.0
    return {
        "kernel": short_name(launch["kernel_name"]),
        "us": us,
        "dram_pct": get("DRAM Throughput")[0],
        "dram_mb": moved / 1e6 if moved is not None else None,
        "dram_gb_per_s": moved / (us * 1e3) if moved and us else None,
        "l1_hit_pct": get("L1/TEX Hit Rate")[0],
        "l2_hit_pct": get("L2 Hit Rate")[0],
        "sm_pct": get("Compute (SM) Throughput")[0],
        "registers": get("Registers Per Thread")[0],
        "grid": get("Grid Size")[0],
        "waves": get("Waves Per SM")[0],
        "theoretical_occupancy_pct": get("Theoretical Occupancy")[0],
        "achieved_occupancy_pct": get("Achieved Occupancy")[0],
        "cycles_per_issue": get("Warp Cycles Per Issued Instruction")[0],
        "issued_per_scheduler": get("Issued Warp Per Scheduler")[0],
        "top_stall": (re.sub(r"smsp__average_warps_issue_stalled_|"
                             r"_per_issue_active\.ratio", "", top)
                      if top else None),
        "top_stall_share": stalls[top] / total if top and total else None,
    }


COLUMNS = [
    ("line", lambda r: r["line"] + (" #%d" % r["index"] if r["index"] else
                                     "")),
    ("kernel", lambda r: r["kernel"][:60]),
    ("us", lambda r: "%.1f" % r["us"] if r["us"] is not None else ""),
    ("DRAM %", lambda r: fmt(r["dram_pct"], "%.0f")),
    ("DRAM MB", lambda r: fmt(r["dram_mb"], "%.1f")),
    ("GB/s", lambda r: fmt(r["dram_gb_per_s"], "%.0f")),
    ("L2 hit %", lambda r: fmt(r["l2_hit_pct"], "%.0f")),
    ("occupancy % (of)", lambda r: "%s (%s)" % (
        fmt(r["achieved_occupancy_pct"], "%.0f"),
        fmt(r["theoretical_occupancy_pct"], "%.0f"))),
    ("regs", lambda r: fmt(r["registers"], "%.0f")),
    ("grid", lambda r: fmt(r["grid"], "%.0f")),
    ("cycles/issue", lambda r: fmt(r["cycles_per_issue"], "%.1f")),
    ("top stall", lambda r: "%s %.0f%%" % (r["top_stall"],
                                          100 * r["top_stall_share"])
     if r["top_stall"] else ""),
]


def fmt(value, form):
    return form % value if isinstance(value, float) else ""


def table(rows):
    out = ["| " + " | ".join(c for c, _ in COLUMNS) + " |",
           "|" + "---|" * len(COLUMNS)]
    for r in rows:
        out.append("| " + " | ".join(cell(r) for _, cell in COLUMNS) + " |")
    return "\n".join(out)


def bench_lines(stdout):
    """The bench's JSON lines in a run's output."""
    found = []
    for line in stdout.splitlines():
        if line.startswith('{"kernel"'):
            try:
                found.append(json.loads(line))
            except ValueError:
                pass
    return found


def profile(args, name, index, stalls):
    """One ncu run of line `name`'s index-th: (bench lines, launches,
    ncu's exit status, its output's tail)."""
    metrics = BYTES + ("," + STALLS if stalls else "")
    command = [args.ncu, "--profile-from-start", "off"]
    for section in SECTIONS:
        command += ["--section", section]
    command += ["--metrics", metrics, "--csv", "--print-units", "base",
                args.bench, "--profile", "--only", name, "--index",
                str(index)]
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=args.run_timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout if isinstance(e.stdout, str) else ""
        return bench_lines(out), [], 124, "timed out"
    text = done.stdout
    return (bench_lines(text), parse_csv(text), done.returncode,
            (text + done.stderr)[-2000:])


def run(args):
    names = args.names or DEFAULT_LINES
    start = time.time()
    rows, records, failed = [], [], []
    for name in names:
        index, count = 0, 1
        while index < count:
            if args.deadline and time.time() - start > args.deadline:
                failed.append("%s #%d: no time left (--deadline %d s)" %
                              (name, index, args.deadline))
                index += 1
                continue
            lines, launches, code, tail = profile(args, name, index, True)
            if not launches:
                lines, launches, code, tail = profile(args, name, index,
                                                      False)
            count = max(count, len(lines))
            chosen = [l for l in lines if l.get("profiled")]
            shape = chosen[0].get("shape", "") if chosen else ""
            dtype = chosen[0].get("dtype", "") if chosen else ""
            if not launches:
                failed.append("%s #%d: ncu exit %d, no launches: %s" %
                              (name, index, code, tail.strip()[-400:]))
            for launch in launches:
                row = derive(launch)
                row.update(line=name, index=index, shape=shape, dtype=dtype)
                rows.append(row)
                records.append(dict(row, metrics=launch["metrics"],
                                    units=launch["units"]))
            index += 1
    if args.out:
        with open(args.out, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    print(table(rows))
    for f in failed:
        print("failed: " + f)
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", metavar="NAME")
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--bench", default=os.path.join(
        here, "..", "build", "bin", "mpc-bench-kernels"))
    p.add_argument("--ncu", default=shutil.which("ncu") or "ncu")
    p.add_argument("--out", help="every launch's metrics, as JSON lines")
    p.add_argument("--deadline", type=int, default=0,
                   help="seconds after which no further run starts")
    p.add_argument("--run-timeout", type=int, default=120,
                   help="seconds one ncu run may take")
    p.add_argument("--parse", metavar="CSV",
                   help="print the table of one ncu CSV, run nothing")
    args = p.parse_args()
    if args.parse:
        rows = []
        for launch in parse_csv(open(args.parse, errors="replace").read()):
            row = derive(launch)
            row.update(line="", index=0)
            rows.append(row)
        if not rows:
            sys.exit("ncu_kernels: no ncu CSV header in " + args.parse)
        print(table(rows))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
