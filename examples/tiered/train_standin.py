#!/usr/bin/env python3
"""A stand-in for a training job on a tiered pipeline (no GPU, no PyTorch needed).

It reads the dataset `moverctl stage` put on the fast tier (every file, once, like an epoch),
checks it against the ready marker(s), then writes checkpoints in PyTorch Distributed
Checkpoint's layout every few seconds into CKPT_DIR/step-NNNNNN/: the shard files
`__<rank>_0.distcp` first, each written in several chunks with pauses (so a checkpoint is visibly
half-written for a while), and `.metadata` last, as DCP does. `moverctl drain --watch` beside it
must never upload a checkpoint before its `.metadata` exists.

With --leave-last-incomplete the last checkpoint gets its shard files but no `.metadata`, as a
job killed mid-save leaves it: it must never reach durable storage.

Usage: train_standin.py --data FAST_DIR/data --ckpt FAST_DIR/ckpt [--steps 4] [--every 2]
                        [--ranks 4] [--shard-bytes 300000] [--leave-last-incomplete]
"""

import argparse
import glob
import hashlib
import json
import os
import sys
import time


def read_dataset(data):
    """Every staged file read once; the markers say how many objects and bytes to expect."""
    files, total, h = 0, 0, hashlib.sha256()
    for root, dirs, names in os.walk(data):
        dirs.sort()
        for name in sorted(names):
            if name.startswith(".moverctl-staged"):
                continue
            with open(os.path.join(root, name), "rb") as f:
                while True:
                    block = f.read(1 << 20)
                    if not block:
                        break
                    h.update(block)
                    total += len(block)
            files += 1
    markers = [json.load(open(m)) for m in glob.glob(os.path.join(data, ".moverctl-staged*.json"))]
    want = (sum(m["objects"] for m in markers), sum(m["bytes"] for m in markers))
    print(f"data: read {files} files, {total} bytes (markers say {want[0]} objects, {want[1]} bytes) sha256 {h.hexdigest()[:16]}", flush=True)
    if not markers:
        sys.exit(f"no ready marker in {data}: was the data staged?")
    if (files, total) != want:
        sys.exit(f"the staged data is not what the markers say: {files} files, {total} bytes")


def write_checkpoint(ckpt, step, ranks, shard_bytes, complete):
    d = os.path.join(ckpt, f"step-{step:06d}")
    os.makedirs(d, exist_ok=True)
    chunk = max(1, shard_bytes // 4)
    for rank in range(ranks):
        with open(os.path.join(d, f"__{rank}_0.distcp"), "wb") as f:
            written = 0
            while written < shard_bytes:
                n = min(chunk, shard_bytes - written)
                f.write(bytes((step * 31 + rank * 7 + written + i) % 251 for i in range(n)))
                f.flush()
                os.fsync(f.fileno())
                written += n
                time.sleep(0.05)
    if complete:
        meta = {"step": step, "ranks": ranks, "files": [f"__{r}_0.distcp" for r in range(ranks)]}
        tmp = os.path.join(d, ".metadata.tmp")
        with open(tmp, "w") as f:
            json.dump(meta, f)
            f.flush()
            os.fsync(f.fileno())
        # DCP's last write: .metadata appears whole, after every shard file.
        os.rename(tmp, os.path.join(d, ".metadata"))
    print(f"checkpoint step-{step:06d} {'complete' if complete else 'left incomplete'}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--ckpt", required=True)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--every", type=float, default=2.0)
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--shard-bytes", type=int, default=300_000)
    p.add_argument("--leave-last-incomplete", action="store_true")
    a = p.parse_args()
    read_dataset(a.data)
    os.makedirs(a.ckpt, exist_ok=True)
    for i in range(a.steps):
        time.sleep(a.every)
        last = i == a.steps - 1
        write_checkpoint(a.ckpt, (i + 1) * 100, a.ranks, a.shard_bytes,
                         complete=not (last and a.leave_last_incomplete))


if __name__ == "__main__":
    main()
