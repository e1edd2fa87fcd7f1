"""Moves one arena guard of a training executable compiled with
--arena-guards onto the last bytes of its buffer, so that the kernel
writing the buffer writes into the guard: the runner must then stop and
name the op. Rewrites the descriptor (mpc_model) in a copy of the
executable, keeping its length.

usage: shift_guard.py EXE FUNCTION OP BYTES OUT
  the first guard of FUNCTION (step, accumulate or eval) after a buffer
  that OP's result holds first moves BYTES bytes down (its offset must
  keep its number of digits).
"""

import json
import os
import sys


def main():
    exe, function, op = sys.argv[1], sys.argv[2], sys.argv[3]
    shift, out = int(sys.argv[4]), sys.argv[5]
    data = open(exe, "rb").read()
    start = data.index(b'{"accumulate_steps"')
    end = data.index(b"\0", start)

    def dump(model):
        return json.dumps(model, sort_keys=True, separators=(",", ":")).encode()

    model = json.loads(data[start:end])
    if dump(model) != data[start:end]:
        sys.exit("the descriptor is not written as expected")
    guard = next(g for g in model["arena_guards"]
                 if g["function"] == function and g["op"] == op)
    guard["offset"] -= shift
    new = dump(model)
    if len(new) != end - start:
        sys.exit("cannot move the guard in place")
    with open(out, "wb") as f:
        f.write(data[:start] + new + data[end:])
    os.chmod(out, 0o755)


if __name__ == "__main__":
    main()
