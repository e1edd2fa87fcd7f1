#!/usr/bin/env python3
"""Summaries and the comparison table of the benchmarks.

  report.py ours METRICS.jsonl MEMORY.json --impl mpc-O2 --model mlp \
      --batch 512 --warmup 20 --flops-per-sample F
      One JSON line for an mpc run: median ms/step over the logged lines
      after the warm-up (each line averages its interval), and the most
      memory the backend held (memory_bytes of the metrics: buffers and,
      on CUDA, cuBLASLt/cuDNN workspaces and scratch; else the bytes the
      executable allocates).
  report.py eval METRICS.jsonl --impl "mpc-O2 eval" --model mlp --batch 512
      One JSON line for an evaluation timing run: the median over its
      evaluations but the first (which pays for the first launches) of
      the time per validation batch, and the last evaluation's loss.
  report.py table RESULTS.jsonl
      A Markdown table per model: ms/step, samples/s, peak memory, TFLOP/s
      and each mpc run's speed ratio to every PyTorch run; a run that
      failed is a row saying so. With a limits line (limits.py): the
      measured floors first, and each run's TFLOP/s over the GEMM rate of
      its precision (f32 for *-fp32 runs, f16 for the others). Each mpc
      build named after another (mpc-O2-check after mpc-O2) gets a line
      with its step time and memory against that one's; evaluation
      timings (eval lines) a table of their own, each against the first.
"""
import json
import statistics
import sys


def ours(args):
    metrics, memory = args[0], args[1]
    opt = dict(zip(args[2::2], args[3::2]))
    warmup = int(opt["--warmup"])
    lines = [json.loads(l) for l in open(metrics) if l.strip()]
    timed = [m["ms_per_step"] for m in lines if m["step"] > warmup]
    ms = statistics.median(timed)
    batch = int(opt["--batch"])
    mem = json.loads(open(memory).read())
    print(json.dumps({
        "impl": opt["--impl"], "model": opt["--model"], "batch": batch,
        "ms_per_step": ms, "samples_per_s": batch * 1000.0 / ms,
        "peak_bytes": max([m.get("memory_bytes", 0) for m in lines] +
                          [mem["allocated_bytes"]]),
        "tflops": float(opt["--flops-per-sample"]) * batch / (ms * 1e-3) / 1e12,
        "final_loss": lines[-1]["loss"]}))


def evaluation(args):
    metrics = args[0]
    opt = dict(zip(args[1::2], args[2::2]))
    batch = int(opt["--batch"])
    evals = [m for m in (json.loads(l) for l in open(metrics) if l.strip())
             if "eval_ms" in m]
    if len(evals) < 2:
        sys.exit("report.py eval: %s holds %d evaluations; at least 2 are "
                 "needed (the first is not timed)" % (metrics, len(evals)))
    per_batch = [m["eval_ms"] * batch / m["val_samples"] for m in evals[1:]]
    ms = statistics.median(per_batch)
    print(json.dumps({
        "impl": opt["--impl"], "model": opt["--model"], "batch": batch,
        "eval_ms_per_batch": ms, "samples_per_s": batch * 1000.0 / ms,
        "evaluations": len(per_batch),
        "val_loss": evals[-1].get("val_loss")}))


def is_eval(r):
    return "eval_ms_per_batch" in r or r["impl"].endswith(" eval")


def eval_table(runs):
    """The evaluation timings of one model, each against the first."""
    done = [r for r in runs if "error" not in r]
    print("Evaluation (per validation batch):\n")
    print("| impl | ms/batch | samples/s | val loss | vs %s |" %
          (done[0]["impl"] if done else "-"))
    print("|---|---|---|---|---|")
    for r in runs:
        if "error" in r:
            cells = [r["impl"], "failed: " + r["error"], "", "", ""]
        else:
            loss = r.get("val_loss")
            cells = [r["impl"], "%.3f" % r["eval_ms_per_batch"],
                     "%.0f" % r["samples_per_s"],
                     "%.6f" % loss if loss is not None else "-",
                     "%.2fx" % (done[0]["eval_ms_per_batch"] /
                                r["eval_ms_per_batch"])]
        print("| " + " | ".join(cells) + " |")
    print()


def derived_lines(done):
    """mpc-BASE-SUFFIX against mpc-BASE: step time and memory, a line
    each."""
    by_impl = {r["impl"]: r for r in done}
    lines = []
    for r in done:
        impl = r["impl"]
        if not impl.startswith("mpc-") or "-" not in impl[4:]:
            continue
        base = by_impl.get(impl.rsplit("-", 1)[0])
        if base is None:
            continue
        line = "%s: %.3fx the step time of %s" % (
            impl, r["ms_per_step"] / base["ms_per_step"], base["impl"])
        if r.get("peak_bytes") is not None and base.get("peak_bytes"):
            line += ", memory %+.0f MiB" % (
                (r["peak_bytes"] - base["peak_bytes"]) / 2**20)
        lines.append("- " + line + ".")
    return lines


def table(args):
    rows = [json.loads(l) for l in open(args[0]) if l.strip()]
    evals = [r for r in rows if is_eval(r)]
    rows = [r for r in rows if not is_eval(r)]
    limits = next((r for r in rows if r["impl"] == "limits" and
                   "error" not in r), None)
    rows = [r for r in rows if r["impl"] != "limits"]
    if limits:
        print("Measured on %s: copy %.0f GB/s; GEMM 8192^3 f16 %.0f, bf16 "
              "%.0f, f32 %.1f TFLOP/s.\n" % (
                  limits["gpu"], limits["copy_gb_per_s"],
                  limits["gemm_f16_tflops"], limits["gemm_bf16_tflops"],
                  limits["gemm_f32_tflops"]))
    for model in sorted({r["model"] for r in rows}):
        runs = [r for r in rows if r["model"] == model]
        done = [r for r in runs if "error" not in r]
        peers = [r for r in done if r["impl"].startswith("torch")]
        batch = done[0]["batch"] if done else 0
        print("### %s (batch %d)\n" % (model, batch))
        head = ["impl", "ms/step", "samples/s", "memory (MiB)", "TFLOP/s"]
        if limits:
            head.append("of GEMM rate")
        head += ["vs " + p["impl"] for p in peers]
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in runs:
            if "error" in r:
                cells = [r["impl"], "failed: " + r["error"]]
                cells += [""] * (len(head) - len(cells))
            else:
                cells = [r["impl"], "%.2f" % r["ms_per_step"],
                         "%.0f" % r["samples_per_s"],
                         "%.0f" % (r["peak_bytes"] / 2**20)
                         if r.get("peak_bytes") is not None else "-",
                         ("%.1f" if r["tflops"] >= 1 else "%.3f") %
                         r["tflops"]]
                if limits:
                    rate = limits["gemm_f32_tflops" if r["impl"].endswith(
                        "fp32") else "gemm_f16_tflops"]
                    cells.append("%.0f%%" % (100 * r["tflops"] / rate))
                cells += ["%.2fx" % (p["ms_per_step"] / r["ms_per_step"])
                          for p in peers]
            print("| " + " | ".join(cells) + " |")
        print()
        derived = derived_lines(done)
        if derived:
            print("\n".join(derived) + "\n")
        model_evals = [r for r in evals if r["model"] == model]
        if model_evals:
            eval_table(model_evals)


def cpu(args):
    """bench/cpu.sh's table: one row per model and thread count, mpc
    against the fastest PyTorch configuration measured."""
    import glob
    import os
    names = {"examples": "example", "mlp-large": "benchmark size"}
    rates = {}
    for path in glob.glob(os.path.join(args[0], "limits-threads-*.json")):
        for line in open(path):
            if line.strip():
                r = json.loads(line)
                rates[str(r["threads"])] = r["gemm_f32_gflops"]
    for t in sorted(rates):
        print("Measured f32 GEMM rate (2048^3 sgemm, OpenBLAS), %s "
              "thread(s): %.0f GFLOP/s." % (t, rates[t]))
    if rates:
        print()
    print("| model | threads | mpc ms/step | PyTorch ms/step | PyTorch / mpc "
          "| mpc GFLOP/s (of GEMM rate) |")
    print("|---|---|---|---|---|---|")
    for path in sorted(glob.glob(os.path.join(args[0], "*", "threads-*",
                                              "results.jsonl"))):
        group = os.path.basename(os.path.dirname(os.path.dirname(path)))
        threads = os.path.basename(os.path.dirname(path)).split("-")[1]
        rows = [json.loads(l) for l in open(path) if l.strip()]
        for model in sorted({r["model"] for r in rows}):
            runs = {r["impl"]: r for r in rows if r["model"] == model}
            ours, peer = runs.get("mpc-fp32"), runs.get("torch-fp32")
            batch = next((r["batch"] for r in (ours, peer)
                          if r and "batch" in r), "?")
            cells = ["%s (%s, batch %s)" % (model, names.get(group, group),
                                            batch), threads]
            for r in (ours, peer):
                if r is None or "error" in r:
                    cells.append("failed: " + (r or {}).get("error", "no run"))
                else:
                    blas = r.get("blas_threads")
                    cells.append("%.2f" % r["ms_per_step"] +
                                 (" (BLAS threads %d)" % blas if blas else ""))
            ok = all(r is not None and "error" not in r for r in (ours, peer))
            cells.append("%.2fx" % (peer["ms_per_step"] / ours["ms_per_step"])
                         if ok else "")
            if ours is not None and "error" not in ours:
                gflops = ours["tflops"] * 1e3
                rate = rates.get(threads)
                cells.append("%.1f" % gflops + (" (%.0f%%)" % (
                    100 * gflops / rate) if rate else ""))
            else:
                cells.append("")
            print("| " + " | ".join(cells) + " |")


def conv(args):
    """bench/cpu/conv.sh's table: per shape and thread count, each kernel's
    time in mpc and oneDNN, and oneDNN's over mpc's."""
    rows = [json.loads(l) for l in open(args[0]) if l.strip()]
    print("| N H W C O K | threads | kernel | mpc ms | oneDNN ms | "
          "oneDNN / mpc |")
    print("|---|---|---|---|---|---|")
    for ours in (r for r in rows if r["impl"] == "mpc"):
        peer = next((r for r in rows if r["impl"] == "onednn" and
                     r["shape"] == ours["shape"] and
                     r["threads"] == ours["threads"]), None)
        for kernel in ("forward", "backward_data", "backward_filter"):
            key = kernel + "_ms"
            cells = [" ".join(str(v) for v in ours["shape"]),
                     str(ours["threads"]), kernel, "%.2f" % ours[key]]
            cells += (["%.2f" % peer[key], "%.2fx" % (peer[key] / ours[key])]
                      if peer else ["", ""])
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    {"ours": ours, "eval": evaluation, "table": table, "cpu": cpu,
     "conv": conv}[sys.argv[1]](sys.argv[2:])
