#!/usr/bin/env python3
"""Checks the last run recorded in a bench/cpu.sh results file and marks it.

  cpu_check.py RAW.jsonl --objects N --bytes B [--labels REGEX] [--forbid REGEX]
               (--local-dest DIR --local-src DIR | --s3-dest REMOTE:PATH)

The last record of RAW.jsonl (written by bench/lib/measure.py) passes when:
  - the command exited 0;
  - with --labels: it carries moverctl's --json summary, which copied N objects and B bytes and
    failed none, and every key of its verified_by matches REGEX (fullmatch) and none matches
    --forbid (search);
  - the destination holds exactly N objects of B bytes in total: a local folder is compared file
    by file with the source (`cmp`, so byte-exact); an S3 destination is counted with
    `rclone size --json` (rclone configured by the caller's RCLONE_CONFIG_* variables).
The record is rewritten with "check": "ok" or the reason it failed; the exit status is 1 on a
failure.
"""
import argparse
import json
import os
import re
import subprocess
import sys


def check(rec, a):
    if rec.get("rc") != 0:
        return f"exit status {rec.get('rc')}"
    if a.labels:
        s = rec.get("summary")
        if not s:
            return "no --json summary"
        copied = s.get("copied") or {}
        if copied.get("objects") != a.objects or copied.get("bytes") != a.bytes:
            return f"summary copied {copied}, want {a.objects} objects of {a.bytes} bytes"
        if (s.get("failed") or {}).get("objects"):
            return f"summary failed {s.get('failed')}"
        labels = s.get("verified_by") or {}
        if sum(labels.values()) != a.objects:
            return f"verified_by {labels} does not count {a.objects} objects"
        for k in labels:
            if not re.fullmatch(a.labels, k):
                return f"verified_by {k!r} is not {a.labels!r}"
            if a.forbid and re.search(a.forbid, k):
                return f"verified_by {k!r} has {a.forbid!r}"
    if a.local_dest:
        src = sorted(os.listdir(a.local_src))
        dst = sorted(os.listdir(a.local_dest))
        if src != dst:
            return f"destination holds {dst}, want {src}"
        total = 0
        for name in src:
            p, q = os.path.join(a.local_src, name), os.path.join(a.local_dest, name)
            total += os.path.getsize(q)
            if subprocess.run(["cmp", "-s", p, q]).returncode != 0:
                return f"{name}: bytes differ"
        if len(dst) != a.objects or total != a.bytes:
            return f"destination holds {len(dst)} files of {total} bytes"
    if a.s3_dest:
        p = subprocess.run(["env", "-u", "AWS_CA_BUNDLE", "rclone", "size", "--json", a.s3_dest],
                           capture_output=True, text=True)
        if p.returncode != 0:
            return f"rclone size failed: {p.stderr.strip()[-200:]}"
        got = json.loads(p.stdout)
        if got.get("count") != a.objects or got.get("bytes") != a.bytes:
            return f"destination holds {got.get('count')} objects of {got.get('bytes')} bytes"
    return "ok"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("--objects", type=int, required=True)
    ap.add_argument("--bytes", type=int, required=True)
    ap.add_argument("--labels")
    ap.add_argument("--forbid")
    ap.add_argument("--local-dest")
    ap.add_argument("--local-src")
    ap.add_argument("--s3-dest")
    a = ap.parse_args()
    with open(a.raw) as f:
        lines = f.read().splitlines()
    rec = json.loads(lines[-1])
    result = check(rec, a)
    rec["check"] = result
    lines[-1] = json.dumps(rec, sort_keys=True)
    tmp = a.raw + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, a.raw)
    if result != "ok":
        print(f"check failed: {result}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
