#!/usr/bin/env bash
# The resume journal and the merge-join at N objects (issue 30), no server: examples/journal_scale.rs
# (insert as the engine does, reopen, the no-op re-run's join over a synthetic sorted listing with
# one journal lookup per key, random lookups). Peak RSS from /usr/bin/time -v; the journal file is
# deleted afterwards.
#
# Environment: N (10000000) DIR (where the journal is written; default target/bench/journal)
# OUT (report; default bench/results/<date>-list.md, appended) SKIP_BUILD=1 CARGO_TARGET_DIR
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
N="${N:-10000000}"
DIR="${DIR:-$ROOT/target/bench/journal}"
OUT="${OUT:-$ROOT/bench/results/$(date -u +%F)-list.md}"
mkdir -p "$DIR"
if [[ ${SKIP_BUILD:-} != 1 ]]; then
  (cd "$ROOT" && cargo build -j 2 --release --quiet --example journal_scale)
fi
# Built where cargo builds (CARGO_TARGET_DIR, e.g. a release tree kept apart from the tests').
/usr/bin/time -v -o "$DIR/time.txt" "${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/journal_scale" "$N" "$DIR" | tee "$DIR/results.jsonl"
rm -f "$DIR"/journal-scale.sqlite*
python3 - "$DIR" "$OUT" "$N" <<'EOF'
import json, re, sys
d, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ph = {r["phase"]: r for r in map(json.loads, open(f"{d}/results.jsonl"))}
peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(f"{d}/time.txt").read()).group(1))
ins, ro, j, lk = ph["insert"], ph["reopen"], ph["resume_join"], ph["random_lookups"]
bpo = ins["bytes_per_object"]
rss = ", ".join(f"{k / 1e6:g} M: {v / 1024:.0f} MB" for k, v in j["rss_kb_at"])
lines = [f"## The journal at {n:,} objects (examples/journal_scale.rs, bench/journal.sh; no server)", "",
 "| measure | value |", "|---|---|",
 f"| bytes on disk per object (verified row with evidence, key `dNNNNN/fNNNNNNNNN`) | {bpo:.0f} ({ins['bytes_on_disk'] / 2**30:.2f} GiB in all) |",
 f"| insert, as the engine writes (copying row, then verified row; 256 a transaction) | {ins['objects_per_second']:,.0f} objects/s ({ins['seconds']:.0f} s) |",
 f"| reopen the journal | {ro['open_seconds']:.3f} s |",
 f"| open multipart uploads (end of every run): partial index / every row read (before) | {ro['open_uploads_seconds']:.4f} s / {ro['open_uploads_full_scan_seconds']:.2f} s |",
 f"| summary (shard start, `status`: reads every row) | {ro['summary_seconds']:.2f} s |",
 f"| resume: no-op re-run's join, one lookup per key, all skipped | {j['objects_per_second']:,.0f} keys/s ({j['seconds']:.0f} s) |",
 f"| random lookups | {lk['per_second']:,.0f} /s |",
 f"| resident memory during the join | {rss} |",
 f"| peak RSS of the whole bench | {peak / 1024:.0f} MB |", "",
 f"Sizes a 1 B-object move needs: {bpo * 1e9 / 1e9:.0f} GB of journal in all; per shard "
 f"{bpo * 1e7 / 1e9:.1f} GB at 10 M objects a shard (100 shards), {bpo * 1e8 / 1e9:.1f} GB at 100 M (10 shards). "
 f"A resumed shard of 10 M objects joins in about {n / j['objects_per_second'] * 1e7 / n:.0f} s before copying resumes "
 f"(the listing time comes on top).", ""]
open(out, "a").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
