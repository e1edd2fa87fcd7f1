#!/usr/bin/env python3
"""Per-kernel GPU time of one executable's steps, from Nsight Compute's CSV.

  ncu --metrics gpu__time_duration.sum --csv --print-units base \\
      ./model-O2 --data model.npz --steps 2 --no-graph > k.csv
  bench/kernel_profile.py k.csv --top 30

Prints kernels grouped by name, heaviest first: total microseconds, launch
count and share of the whole. ncu serialises kernels, so the total is the
sum of kernel times, not the step time (no overlap, no launch gaps).
"""
import argparse
import collections
import sys

from ncu_kernels import parse_csv


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    launches = parse_csv(open(args.csv, errors="replace").read())
    if not launches:
        sys.exit("kernel_profile: no ncu CSV header in " + args.csv)
    total = collections.Counter()
    count = collections.Counter()
    for launch in launches:
        us = launch["metrics"].get("gpu__time_duration.sum")
        if not isinstance(us, float):
            continue
        name = launch["kernel_name"].split("(")[0][:90]
        total[name] += us / 1000.0
        count[name] += 1
    whole = sum(total.values())
    print(f"{whole:.0f} us in {sum(count.values())} launches")
    for name, us in total.most_common(args.top):
        print(f"{us:10.0f} us {count[name]:6d} x {100 * us / whole:5.1f}%  {name}")


if __name__ == "__main__":
    main()
