#!/usr/bin/env python3
"""Random chains of mpc.transpose and mpc.reshape, canonicalized by
mpc-opt, against an interpreter of both ops: each canonicalized function
must give the original's values (every element of an input numbered by its
position), with no more transposes than before.

  data_movement_chains.py MPC_OPT WORK_DIR [COUNT] [SEED]
"""
import random
import re
import subprocess
import sys


def strides(shape):
    out, n = [], 1
    for d in reversed(shape):
        out.append(n)
        n *= d
    return out[::-1]


def transpose(value, perm):
    shape, data = value
    new_shape = [shape[p] for p in perm]
    src = strides(shape)
    out = []
    for flat in range(len(data)):
        rest, offset = flat, 0
        for d, s in zip(reversed(new_shape), reversed(range(len(perm)))):
            offset += (rest % d) * src[perm[s]]
            rest //= d
        out.append(data[offset])
    return new_shape, out


def factor(n):
    for f in range(2, n):
        if n % f == 0:
            return f
    return None


def random_reshape(shape, rng):
    shape = list(shape)
    kind = rng.choice(["split", "merge", "unit", "drop"])
    if kind == "split":
        dims = [i for i, d in enumerate(shape) if factor(d)]
        if dims and len(shape) < 6:
            i = rng.choice(dims)
            f = factor(shape[i])
            shape[i:i + 1] = [f, shape[i] // f]
            return shape
    if kind == "merge" and len(shape) > 1:
        i = rng.randrange(len(shape) - 1)
        shape[i:i + 2] = [shape[i] * shape[i + 1]]
        return shape
    if kind == "drop" and 1 in shape and len(shape) > 1:
        shape.remove(1)
        return shape
    if len(shape) < 6:
        shape.insert(rng.randrange(len(shape) + 1), 1)
    return shape


def tensor(shape):
    return "tensor<%sxf32>" % "x".join(map(str, shape)) if shape else \
        "tensor<f32>"


def chain(name, rng):
    shape = [rng.choice([1, 2, 3, 4, 6]) for _ in range(rng.randint(2, 4))]
    lines, ops, value = [], [], "%x"
    first = list(shape)
    for k in range(rng.randint(2, 7)):
        if rng.random() < 0.5:
            perm = list(range(len(shape)))
            rng.shuffle(perm)
            lines.append("  %%v%d = mpc.transpose %s {permutation = "
                         "array<i64: %s>} : %s" % (
                             k, value, ", ".join(map(str, perm)),
                             tensor(shape)))
            ops.append(("transpose", perm))
            shape = [shape[p] for p in perm]
        else:
            to = random_reshape(shape, rng)
            lines.append("  %%v%d = mpc.reshape %s : %s -> %s" % (
                k, value, tensor(shape), tensor(to)))
            ops.append(("reshape", to))
            shape = to
        value = "%%v%d" % k
    text = "func.func @%s(%%x: %s) -> %s {\n%s\n  return %s : %s\n}\n" % (
        name, tensor(first), tensor(shape), "\n".join(lines), value,
        tensor(shape))
    return text, first


OP = re.compile(r"(%\S+) = mpc\.(transpose|reshape) (%\S+) (.*)$")


def run(body, first):
    n = 1
    for d in first:
        n *= d
    values = {}
    arg = None
    for line in body:
        line = line.strip()
        m = re.match(r"func\.func @\w+\((%\w+):", line)
        if m:
            arg = m.group(1)
            values[arg] = (list(first), list(range(n)))
            continue
        m = OP.match(line)
        if m:
            out, op, src, rest = m.groups()
            if op == "transpose":
                perm = [int(p) for p in re.search(
                    r"array<i64: ([^>]*)>", rest).group(1).split(",")]
                values[out] = transpose(values[src], perm)
            else:
                to = re.search(r"-> tensor<([^>]*)>", rest).group(1)
                dims = [int(d) for d in to.split("x")[:-1]]
                values[out] = (dims, values[src][1])
            continue
        m = re.match(r"return (%\S+) :", line)
        if m:
            return values[m.group(1)]
        if line and not line.startswith(("}", "module", "func.func")):
            raise SystemExit("unexpected line: " + line)
    raise SystemExit("no return")


def functions(text):
    out, name, body = {}, None, []
    for line in text.splitlines():
        m = re.search(r"func\.func @(\w+)", line)
        if m:
            name, body = m.group(1), []
        if name:
            body.append(line)
            if line.strip() == "}":
                out[name] = body
                name = None
    return out


def main():
    mpc_opt, work = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 400
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    texts, firsts = [], {}
    for i in range(count):
        text, first = chain("f%d" % i, rng)
        texts.append(text)
        firsts["f%d" % i] = first
    source = work + ".mlir"
    with open(source, "w") as f:
        f.write("\n".join(texts))
    result = subprocess.run([mpc_opt, source, "-canonicalize"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    before = functions(open(source).read())
    after = functions(result.stdout)
    fewer = 0
    for name, body in before.items():
        want = run(body, firsts[name])
        got = run(after[name], firsts[name])
        if want != got:
            raise SystemExit("%s differs after -canonicalize:\n%s\n%s" % (
                name, "\n".join(body), "\n".join(after[name])))
        t0 = sum("mpc.transpose" in l for l in body)
        t1 = sum("mpc.transpose" in l for l in after[name])
        if t1 > t0:
            raise SystemExit("%s has more transposes after -canonicalize:"
                             "\n%s\n%s" % (name, "\n".join(body),
                                           "\n".join(after[name])))
        fewer += t1 < t0
    print("%d chains give the same values, none with more transposes; %d "
          "with fewer" % (len(before), fewer))


if __name__ == "__main__":
    main()
