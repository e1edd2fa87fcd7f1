#!/usr/bin/env python3
"""Checks that every kernel of the CUDA backend begins with
MPCRT_KERNEL_PROLOGUE() (lib/Runtime/CUDA/Device.cuh): a kernel without it
that a step graph's programmatic edge reaches (MPC_CUDA_PDL=on) could read
its inputs before the kernels that write them have finished.

usage: check_kernel_prologues.py FILE_OR_FOLDER...

Prints the count of kernels checked, or each kernel whose body does not
begin with the prologue (file:line: name) and exits 1.
"""

import os
import re
import sys

PROLOGUE = "MPCRT_KERNEL_PROLOGUE();"


def kernels(text):
    """(name, offset of the body's opening brace) of each __global__
    function defined in `text`; declarations are skipped."""
    for match in re.finditer(r"\b__global__\b", text):
        i, depth, name = match.end(), 0, "?"
        while i < len(text):
            ch = text[i]
            if ch == "(":
                if depth == 0:
                    words = re.findall(r"[A-Za-z_]\w*", text[match.end():i])
                    if words and words[-1] != "__launch_bounds__":
                        name = words[-1]
                depth += 1
            elif ch == ")":
                depth -= 1
            elif depth == 0 and ch == ";":
                break
            elif depth == 0 and ch == "{":
                yield name, i
                break
            i += 1


def strip_comments(text):
    """`text` with comments blanked (their newlines kept)."""
    def blank(match):
        return re.sub(r"[^\n]", " ", match.group(0))
    return re.sub(r"//[^\n]*|/\*.*?\*/", blank, text, flags=re.S)


def sources(paths):
    for path in paths:
        if os.path.isdir(path):
            for name in sorted(os.listdir(path)):
                if name.endswith((".cu", ".cuh")):
                    yield os.path.join(path, name)
        else:
            yield path


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    checked, missing = 0, []
    for path in sources(argv[1:]):
        with open(path, encoding="utf-8") as f:
            text = strip_comments(f.read())
        for name, brace in kernels(text):
            checked += 1
            if not text[brace + 1:].lstrip().startswith(PROLOGUE):
                line = text.count("\n", 0, brace) + 1
                missing.append("%s:%d: %s" % (path, line, name))
    for entry in missing:
        print("%s does not begin with %s" % (entry, PROLOGUE))
    if missing:
        return 1
    print("%d kernels, each beginning with %s" % (checked, PROLOGUE))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
