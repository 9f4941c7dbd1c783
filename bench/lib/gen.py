#!/usr/bin/env python3
"""Deterministic inputs for bench/run.sh.

  gen.py files DIR COUNT SIZE SEED [--per-dir N]   COUNT files of SIZE bytes of seeded random data
  gen.py inventory FILE COUNT SEED                  a `key,size` CSV (with header) of COUNT lines
  gen.py tree DIR COUNT                             COUNT empty files, 1,000 per folder

The same arguments always give the same bytes: file i of `files` is random.Random("SEED:i")
(Mersenne Twister) output, so the corpus is reproducible on any machine with Python 3.9+.
Each output gets a marker beside it (DIR.complete or FILE.complete, never inside the corpus)
holding the arguments; when the
marker matches, the output is reused and nothing is written.
"""
import os
import random
import sys

CHUNK = 16 << 20


def marker_ok(marker, spec):
    try:
        with open(marker) as f:
            return f.read() == spec
    except OSError:
        return False


def write_marker(marker, spec):
    with open(marker, "w") as f:
        f.write(spec)


def key_of(i, count, per_dir):
    """d000/f000000.bin for multi-folder corpora, f00.bin for small counts."""
    if count <= per_dir:
        return f"f{i:0{len(str(count - 1))}d}.bin"
    return f"d{i // per_dir:03d}/f{i:06d}.bin"


def files(d, count, size, seed, per_dir=1000):
    spec = f"files {count} {size} {seed} {per_dir}\n"
    marker = d.rstrip("/") + ".complete"
    if marker_ok(marker, spec):
        return
    if os.path.exists(marker):
        os.remove(marker)
    os.makedirs(d, exist_ok=True)
    for i in range(count):
        path = os.path.join(d, key_of(i, count, per_dir))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        rng = random.Random(f"{seed}:{i}")
        left = size
        with open(path, "wb") as f:
            while left > 0:
                n = min(left, CHUNK)
                f.write(rng.randbytes(n))
                left -= n
    write_marker(marker, spec)


def inventory(path, count, seed):
    """Keys spread over 1,000-key folders; sizes from a seeded log-uniform spread (1 KiB..1 GiB)."""
    spec = f"inventory {count} {seed}\n"
    marker = path + ".complete"
    if marker_ok(marker, spec) and os.path.exists(path):
        return
    rng = random.Random(f"{seed}:inventory")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("key,size\n")
        for i in range(count):
            size = int(2 ** rng.uniform(10, 30))
            f.write(f"corpus/d{i // 1000:04d}/f{i:07d}.bin,{size}\n")
    os.replace(tmp, path)
    write_marker(marker, spec)


def tree(d, count, per_dir=1000):
    spec = f"tree {count} {per_dir}\n"
    marker = d.rstrip("/") + ".complete"
    if marker_ok(marker, spec):
        return
    if os.path.exists(marker):
        os.remove(marker)
    os.makedirs(d, exist_ok=True)
    for i in range(count):
        sub = os.path.join(d, f"d{i // per_dir:04d}")
        if i % per_dir == 0:
            os.makedirs(sub, exist_ok=True)
        open(os.path.join(sub, f"f{i:07d}"), "wb").close()
    write_marker(marker, spec)


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "files" and len(args) in (4, 6):
        per_dir = int(args[5]) if len(args) == 6 and args[4] == "--per-dir" else 1000
        files(args[0], int(args[1]), int(args[2]), args[3], per_dir)
    elif cmd == "inventory" and len(args) == 3:
        inventory(args[0], int(args[1]), args[2])
    elif cmd == "tree" and len(args) == 2:
        tree(args[0], int(args[1]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
