#!/usr/bin/env python3
"""Stands in for Nsight Compute in test/bench/ncu-kernels.test: checks the
arguments bench/ncu_kernels.py gives, then prints what `ncu --csv
--print-units base` would for a bench with two lines named NAME (the
program's JSON lines, ==PROF== lines, then the details CSV of two kernel
launches of the line profiled). FAKE_NCU_NO_STALLS=1: refuses the stall
reasons' regex as an unknown metric (exit 1, no CSV); FAKE_NCU_FAIL=NAME:
fails every run of that line."""
import os
import sys

args = sys.argv[1:]
assert args[:2] == ["--profile-from-start", "off"], args
assert args.count("--section") == 6, args
metrics = args[args.index("--metrics") + 1]
assert "dram__bytes_read.sum" in metrics, metrics
name = args[args.index("--only") + 1]
index = int(args[args.index("--index") + 1])
assert args[args.index("--only") - 1] == "--profile", args
if os.environ.get("FAKE_NCU_FAIL") == name:
    print("==ERROR== The application returned an error code (1).")
    sys.exit(1)
if os.environ.get("FAKE_NCU_NO_STALLS") and "regex:" in metrics:
    print("==ERROR== Failed to find metric regex:smsp__average_warps_")
    sys.exit(1)
print("==PROF== Connected to process 1234 (mpc-bench-kernels)")
for k in range(2):
    print('{"kernel": "%s", "shape": "16x128x128x128", "dtype": "f16", '
          '"index": %d, "profiled": %s}' % (name, k,
                                            "true" if k == index else "false"))
print("==PROF== Disconnected from process 1234")
header = ('"ID","Process ID","Process Name","Host Name","Kernel Name",'
          '"Context","Stream","Block Size","Grid Size","Device","CC",'
          '"Section Name","Metric Name","Metric Unit","Metric Value",'
          '"Rule Name","Rule Type","Rule Description"')
print(header)
kernels = ["void mpcrt::cuda::columnPartialsKernel<float, 3, 8, "
           "mpcrt::cuda::<unnamed>::ChannelMoments<__half>>"
           "(T3, mpcrt::cuda::ColumnPlan)",
           "void mpcrt::cuda::<unnamed>::batchNormApplyKernel"
           "<__half, 8, int>(const __half *, const float *, __half *, int, "
           "int, bool)"]
rows = [
    ("GPU Speed Of Light Throughput", "DRAM Throughput", "%", "{dram}"),
    ("GPU Speed Of Light Throughput", "Duration", "nsecond", "{ns}"),
    ("GPU Speed Of Light Throughput", "Compute (SM) Throughput", "%", "48.5"),
    ("Launch Statistics", "Registers Per Thread",
     "register/thread", "{regs}"),
    ("Launch Statistics", "Grid Size", "", "1,024"),
    ("Occupancy", "Theoretical Occupancy", "%", "50"),
    ("Occupancy", "Achieved Occupancy", "%", "41.2"),
    ("Warp State Statistics", "Warp Cycles Per Issued Instruction",
     "cycle", "14.25"),
    ("Scheduler Statistics", "Issued Warp Per Scheduler", "", "0.41"),
    ("Memory Workload Analysis", "L2 Hit Rate", "%", "{l2}"),
    ("Memory Workload Analysis", "L1/TEX Hit Rate", "%", "0.5"),
    ("Command line profiler metrics", "dram__bytes_read.sum", "byte",
     "{read}"),
    ("Command line profiler metrics", "dram__bytes_write.sum", "byte",
     "{write}"),
]
if "regex:" in metrics:
    rows += [("Command line profiler metrics",
              "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_"
              "active.ratio", "ratio", "9.5"),
             ("Command line profiler metrics",
              "smsp__average_warps_issue_stalled_barrier_per_issue_active."
              "ratio", "ratio", "0.5")]
values = [dict(dram="55.1", ns="31,000", regs="64", l2="3.2",
               read="67,108,864", write="131,072"),
          dict(dram="62.9", ns="37,310", regs="72", l2="41.5",
               read="40,000,000", write="67,108,864")]
for i, (kernel, v) in enumerate(zip(kernels, values)):
    common = '"%d","1234","mpc-bench-kernels","host","%s","1","7",' \
             '"(256, 1, 1)","(1024, 1, 1)","0","9.0"' % (i, kernel)
    for section, metric, unit, value in rows:
        print('%s,"%s","%s","%s","%s","","",""' %
              (common, section, metric, unit, value.format(**v)))
    # A rule's row: advice, no metric.
    print('%s,"SpeedOfLight","","","","SOLBottleneck","WRN","advice"' %
          common)
