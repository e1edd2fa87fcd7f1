"""Moves a guard of a training executable compiled with --arena-guards
onto the last bytes of what it guards, so that the kernel writing there
writes into the guard: the runner must then stop and name it. Rewrites
the descriptor (mpc_model) in a copy of the executable, keeping its
length.

usage:
  move_guard.py EXE OUT arena FUNCTION OP BYTES
    the first guard of FUNCTION (step, accumulate or eval) after a buffer
    that OP's result holds first moves BYTES bytes down;
  move_guard.py EXE OUT global NAME BYTES
    the global NAME is described as BYTES bytes long, fewer than it
    holds, so that its guard starts inside it.
"""

import json
import os
import sys


def main():
    exe, out, what = sys.argv[1], sys.argv[2], sys.argv[3]
    data = open(exe, "rb").read()
    start = data.index(b'{"accumulate_steps"')
    end = data.index(b"\0", start)

    def dump(model):
        return json.dumps(model, sort_keys=True, separators=(",", ":")).encode()

    model = json.loads(data[start:end])
    if dump(model) != data[start:end]:
        sys.exit("the descriptor is not written as expected")
    if what == "arena":
        function, op, shift = sys.argv[4], sys.argv[5], int(sys.argv[6])
        guard = next(g for g in model["arena_guards"]
                     if g["function"] == function and g["op"] == op)
        guard["offset"] -= shift
    elif what == "global":
        name, size = sys.argv[4], int(sys.argv[5])
        next(g for g in model["globals"] if g["name"] == name)["bytes"] = size
    else:
        sys.exit("arena or global, not " + what)
    new = dump(model)
    if len(new) != end - start:
        sys.exit("cannot move the guard in place (the numbers must keep "
                 "their digits)")
    with open(out, "wb") as f:
        f.write(data[:start] + new + data[end:])
    os.chmod(out, 0o755)


if __name__ == "__main__":
    main()
