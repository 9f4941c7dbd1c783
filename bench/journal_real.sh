#!/usr/bin/env bash
# The resume journal of a real move of N_OBJECTS objects (issue 30): moverctl itself copies
# N_OBJECTS empty local files (bench/lib/gen.py tree, 1,000 a folder) into a private Garage (LMDB),
# and the journal it wrote is measured (bench/journal.sh measures 10 M rows without a server).
#
#   1 full      copy TREE g:moverctl-a/j/full --journal J1: wall, objects/s, CPU, peak RSS; the
#               journal's bytes on disk per object and its rows
#   2 no-op     the same command again (every object journaled and listed at the destination):
#               the resume's wall time, CPU, peak RSS, LIST requests
#   3 resumed   a copy into g:moverctl-a/j/cut stopped by SIGINT once half the objects are
#               journaled, then run again: how many the second run skipped, its wall time, and the
#               objects per second it copied
# Every run's --json summary is checked: copied + skipped = N_OBJECTS, nothing failed.
#
# Environment: N_OBJECTS (1000000) PORT (3990; RPC +1, admin +3) OUT (report; default
# bench/results/<date>-journal-real.md) SKIP_BUILD=1 MOVERCTL_BIN KEEP=1 (leave the Garage, its
# objects and the local tree)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
N_OBJECTS="${N_OBJECTS:-1000000}"
PORT="${PORT:-3990}"
OUT="${OUT:-$ROOT/bench/results/$(date -u +%F)-journal-real.md}"
WORK="${BENCH_DIR:-$ROOT/target/bench}/journal-real"
GDIR="$WORK/garage"
TREE="$WORK/tree"
mkdir -p "$WORK"
log() { printf '[journal-real %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
if [[ ${SKIP_BUILD:-} != 1 && -z ${MOVERCTL_BIN:-} ]]; then
  log "building moverctl (release)"
  (cd "$ROOT" && cargo build -j 2 --release --quiet --bin moverctl)
fi
M="${MOVERCTL_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/moverctl}"

"$ROOT/bench/lib/own-garage.sh" start "$GDIR" "$PORT" >/dev/null
cleanup() {
  [[ -n ${PID:-} ]] && kill "$PID" 2>/dev/null || true
  if [[ ${KEEP:-} != 1 ]]; then
    "$ROOT/bench/lib/own-garage.sh" stop "$GDIR"
    rm -rf "$GDIR" "$TREE" "$TREE".complete* "$WORK"/j*.sqlite* "$WORK/state"
  fi
}
trap cleanup EXIT
# shellcheck disable=SC1091
source "$GDIR/env.sh"
export BENCH_S3_KEY_ID="$MOVERCTL_TEST_S3_KEY_ID" BENCH_S3_SECRET="$MOVERCTL_TEST_S3_SECRET"
export MOVERCTL_STATE_DIR="$WORK/state"
REMOTES="$WORK/remotes.toml"
printf '[remotes.g]\ntype = "s3"\nprovider = "onprem"\nendpoint = "%s"\nregion = "garage"\naccess_key_id_env = "BENCH_S3_KEY_ID"\nsecret_access_key_env = "BENCH_S3_SECRET"\n' \
  "$MOVERCTL_TEST_S3_ENDPOINT" >"$REMOTES"

if [[ ! -f $TREE.complete-$N_OBJECTS ]]; then
  log "writing $N_OBJECTS empty files"
  rm -rf "$TREE"
  python3 "$ROOT/bench/lib/gen.py" tree "$TREE" "$N_OBJECTS"
  touch "$TREE.complete-$N_OBJECTS"
fi
# Probed first (not timed), so no run pays for its first-use probe.
"$M" --config "$REMOTES" probe g:moverctl-a/j >/dev/null 2>&1

RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
# run NAME JOURNAL DEST: one measured copy, its --json summary and /usr/bin/time -v kept.
run() {
  local name=$1 j=$2 dst=$3
  /usr/bin/time -v -o "$WORK/$name.time" "$M" --config "$REMOTES" copy "$TREE" "$dst" \
    --journal "$j" --json -q >"$WORK/$name.out" 2>"$WORK/$name.err" || true
  python3 - "$name" "$WORK" "$j" "$N_OBJECTS" >>"$RESULTS" <<'EOF'
import json, os, re, sys
name, work, j, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
t = open(f"{work}/{name}.time").read()
def f(pat, conv=float):
    m = re.search(pat, t)
    return conv(m.group(1)) if m else None
wall = f(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", str)
parts = [float(x) for x in wall.split(":")]
wall_s = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
lines = [l for l in open(f"{work}/{name}.out").read().splitlines() if l.startswith("{")]
s = json.loads(lines[-1]) if lines else {}
size = sum(os.path.getsize(p) for p in (j, j + "-wal") if os.path.exists(p))
print(json.dumps({"run": name, "wall_s": wall_s, "user_s": f(r"User time \(seconds\): (\S+)"),
  "sys_s": f(r"System time \(seconds\): (\S+)"), "rss_kb": f(r"Maximum resident set size \(kbytes\): (\d+)", int),
  "exit": f(r"Exit status: (\d+)", int), "copied": (s.get("copied") or {}).get("objects"),
  "skipped": (s.get("skipped") or {}).get("objects"), "failed": (s.get("failed") or {}).get("objects"),
  "requests": s.get("requests"), "journal_bytes": size, "n": n}))
EOF
  tail -1 "$RESULTS" >&2
}

log "1: copying $N_OBJECTS objects with a fresh journal"
rm -f "$WORK"/j1.sqlite*
run full "$WORK/j1.sqlite" g:moverctl-a/j/full
log "2: the same command again (all journaled)"
run noop "$WORK/j1.sqlite" g:moverctl-a/j/full

log "3: a copy stopped by SIGINT at half, then resumed"
rm -f "$WORK"/j2.sqlite*
"$M" --config "$REMOTES" copy "$TREE" g:moverctl-a/j/cut --journal "$WORK/j2.sqlite" -q \
  >/dev/null 2>&1 &
PID=$!
half=$((N_OBJECTS / 2))
while kill -0 "$PID" 2>/dev/null; do
  sleep 0.5
  done_rows=$(python3 -c 'import sqlite3,sys
try:
    c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=1)
    print(c.execute("select count(*) from objects where state = '"'"'verified'"'"'").fetchone()[0])
except Exception:
    print(0)' "$WORK/j2.sqlite")
  if ((done_rows >= half)); then
    log "stopping it at $done_rows journaled objects"
    kill -INT "$PID" 2>/dev/null || true
    break
  fi
done
wait "$PID" || true
PID=
run resumed "$WORK/j2.sqlite" g:moverctl-a/j/cut

mkdir -p "$(dirname "$OUT")"
python3 - "$RESULTS" "$OUT" "$N_OBJECTS" "$(git -C "$ROOT" rev-parse --short HEAD)" <<'EOF'
import json, sys
rows = {r["run"]: r for r in map(json.loads, open(sys.argv[1]))}
out, n, commit = sys.argv[2], int(sys.argv[3]), sys.argv[4]
bad = [k for k, r in rows.items() if r["exit"] != 0 or r["failed"] or (r["copied"] or 0) + (r["skipped"] or 0) != n]
full, noop, res = rows["full"], rows["noop"], rows["resumed"]
cpu = lambda r: r["user_s"] + r["sys_s"]
L = [f"## The journal of a real move of {n:,} objects (bench/journal_real.sh, moverctl {commit})", "",
  "Empty local files into a private Garage (LMDB) on 127.0.0.1; release build; one run each.", "",
  "| run | wall s | objects/s | CPU s | peak RSS MB | copied | skipped | LIST (source + destination) | journal |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
for k, r in rows.items():
    copied = r["copied"] or 0
    rate = f"{copied / r['wall_s']:,.0f}" if copied else "—"
    q = r.get("requests") or {}
    lists = f"{q.get('list_source', '?')} + {q.get('list_destination', '?')}"
    jb = f"{r['journal_bytes'] / n:.0f} B/object ({r['journal_bytes'] / 2**20:.0f} MiB)"
    L.append(f"| {k} | {r['wall_s']:.1f} | {rate} | {cpu(r):.1f} | {r['rss_kb'] / 1024:.0f} | {copied:,} | {r['skipped'] or 0:,} | {lists} | {jb} |")
L += ["", f"- No-op resume of {n:,} journaled objects: {noop['wall_s']:.1f} s ({n / noop['wall_s']:,.0f} objects/s decided), "
      f"{noop['rss_kb'] / 1024:.0f} MB peak.",
      f"- Stopped at half and resumed: the second run skipped {res['skipped'] or 0:,} and copied {res['copied'] or 0:,} "
      f"in {res['wall_s']:.1f} s.",
      "- Runs failing a check: " + (", ".join(bad) if bad else "none"), ""]
open(out, "a").write("\n".join(L) + "\n")
print("\n".join(L))
sys.exit(1 if bad else 0)
EOF
