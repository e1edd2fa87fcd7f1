#!/usr/bin/env python3
"""Helpers of the data-parallel e2e tests.

  data_parallel.py data OUT.npz --samples N --overflow-sample S
      N samples of 8 small features and labels in [0, 4); sample S (in
      file order) has features of 3e4, which overflow an f16 matmul.
  data_parallel.py kill-rank --rank R --bound B -- COMMAND...
      Runs COMMAND (an mpirun job), waits for its rank R to be training
      (a process whose environment says OMPI_COMM_WORLD_RANK=R, for a
      second), kills that process with SIGKILL, and checks that COMMAND
      ends with a non-zero status within B seconds; prints how it ended.
      A job still running after B seconds is killed and the check fails.
  data_parallel.py position CHECKPOINT
      Prints the data position a checkpoint records ("epoch E, sample S":
      the next step's first sample is S of epoch E's order).
"""
import json
import os
import random
import signal
import struct
import subprocess
import sys
import threading
import time
import zipfile

from loss_scaling import npy


def fail(message):
    print("data_parallel.py: " + message, file=sys.stderr)
    sys.exit(1)


def rank_process(rank, parent):
    """The pid of a descendant of `parent` that is rank `rank`, or None."""
    children = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(pid))
        except (OSError, IndexError, ValueError):
            continue
    todo, seen = [parent], []
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            seen.append(c)
            todo.append(c)
    want = b"OMPI_COMM_WORLD_RANK=%d" % rank
    for pid in seen:
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                if want in f.read().split(b"\0"):
                    return pid
        except OSError:
            continue
    return None


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "data":
        out = args[0]
        n = int(args[args.index("--samples") + 1])
        bad = int(args[args.index("--overflow-sample") + 1])
        rng = random.Random(11)
        x = []
        for s in range(n):
            x.extend(3e4 if s == bad else rng.uniform(-0.5, 0.5)
                     for _ in range(8))
        labels = [rng.randrange(4) for _ in range(n)]
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
            z.writestr("x.npy", npy("<f4", (n, 8),
                                    struct.pack("<%df" % (8 * n), *x)))
            z.writestr("labels.npy",
                       npy("<i4", (n,), struct.pack("<%di" % n, *labels)))
    elif cmd == "kill-rank":
        rank = int(args[args.index("--rank") + 1])
        bound = float(args[args.index("--bound") + 1])
        command = args[args.index("--") + 1:]
        job = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, start_new_session=True)
        # The job's messages are read as they come: a full pipe would stop
        # the launcher and read as a hang.
        said = []
        reader = threading.Thread(target=lambda: said.append(job.stderr.read()))
        reader.start()

        def messages():
            reader.join(timeout=bound)
            return b"".join(said).decode(errors="replace")
        victim, start = None, time.monotonic()
        while victim is None and time.monotonic() - start < bound:
            if job.poll() is not None:
                fail("the job ended before rank %d was found (status %d): %s"
                     % (rank, job.returncode, messages()))
            victim = rank_process(rank, job.pid)
            time.sleep(0.1)
        if victim is None:
            os.killpg(job.pid, signal.SIGKILL)
            fail("no process of rank %d: %s" % (rank, messages()))
        time.sleep(1.0)  # training
        os.kill(victim, signal.SIGKILL)
        try:
            job.wait(timeout=bound)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            fail("the job still ran %g s after rank %d was killed (a hang): %s"
                 % (bound, rank, messages()))
        if job.returncode == 0:
            fail("the job ended with status 0 after rank %d was killed: %s"
                 % (rank, messages()))
        print("killed rank %d: the job ended with status %d within %g s"
              % (rank, job.returncode, bound))
        sys.stdout.write(messages())
    elif cmd == "position":
        with open(args[0], "rb") as f:
            size = struct.unpack("<Q", f.read(8))[0]
            meta = json.loads(f.read(size))["__metadata__"]
        if "mpc.data_epoch" not in meta:
            fail(args[0] + ": no data position")
        print("epoch %s, sample %s" % (meta["mpc.data_epoch"],
                                       meta["mpc.data_offset"]))
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main()
