#!/usr/bin/env bash
# One move split into N shards run as N processes on this machine (N = 1, 2, 4 by default),
# over the same corpus on the test Garage (127.0.0.1): total requests by class, bytes read, wall
# time, and the planner's time model beside the measured aggregate rate.
#
#   bench/sharded.sh                 OBJECTS=4000 SIZE=16384 SHARDS="1 2 4"
#   OUT=bench/results/NAME.md bench/sharded.sh
#
# On 2 cores the server sets the floor, so the point is no overlap and no extra requests: every
# object read once (GETs = objects, bytes copied = corpus bytes), PUTs = objects, LISTs about one
# run's whatever N. Needs the test servers (scripts/servers.sh start) and a release build
# (BENCH_PROFILE=debug for the debug one).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
OBJECTS="${OBJECTS:-4000}"
SIZE="${SIZE:-16384}"
SHARDS="${SHARDS:-1 2 4}"
PROFILE="${BENCH_PROFILE:-release}"
WORK="${BENCH_DIR:-$ROOT/target/bench}/sharded"
OUT="${OUT:-$ROOT/bench/results/$(date -u +%Y-%m-%d)-sharded.md}"
log() { printf '[sharded %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

env_file="$(scripts/servers.sh env)"
[ -f "$env_file" ] || { log "start the test servers first: scripts/servers.sh start"; exit 1; }
# shellcheck disable=SC1090
source "$env_file"
if [ "$PROFILE" = release ]; then
  cargo build --release --locked --bin moverctl >&2
  BIN="$ROOT/target/release/moverctl"
else
  cargo build --locked --bin moverctl >&2
  BIN="$ROOT/target/debug/moverctl"
fi

rm -rf "$WORK" && mkdir -p "$WORK/corpus"
cat >"$WORK/remotes.toml" <<EOF
[remotes.garage]
type = "s3"
provider = "onprem"
endpoint = "$MOVERCTL_TEST_S3_ENDPOINT"
region = "$MOVERCTL_TEST_S3_REGION"
access_key_id_env = "MOVERCTL_TEST_S3_KEY_ID"
secret_access_key_env = "MOVERCTL_TEST_S3_SECRET"
EOF
export MOVERCTL_CONFIG="$WORK/remotes.toml"
stamp="$(date +%s)"
src="garage:$MOVERCTL_TEST_S3_BUCKET_A/bench-sharded-$stamp"

log "corpus: $OBJECTS x $SIZE bytes"
python3 - "$WORK/corpus" "$OBJECTS" "$SIZE" <<'EOF'
import os, sys
root, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    d = os.path.join(root, f"p{i % 16:02d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"{i:07d}.bin"), "wb") as f:
        f.write(bytes(((i * 7 + j) % 251) for j in range(size)))
EOF
MOVERCTL_STATE_DIR="$WORK/state-seed" "$BIN" copy "$WORK/corpus" "$src" --transfers 64 >/dev/null 2>&1

rows=()
for n in $SHARDS; do
  dst="garage:$MOVERCTL_TEST_S3_BUCKET_B/bench-sharded-$stamp-n$n"
  "$BIN" plan --from onprem --to onprem --workers "$n" --shards "$n" --src "$src" --dst "$dst" \
    --save "n$n" --plans-dir "$WORK/plans" >/dev/null
  log "N=$n: $n exec processes"
  start=$(date +%s.%N)
  pids=()
  for k in $(seq 0 $((n - 1))); do
    MOVERCTL_STATE_DIR="$WORK/state-n$n" "$BIN" exec "$WORK/plans/n$n.toml" --shard "$k/$n" \
      --json --transfers 32 --no-server-side >"$WORK/n$n-shard$k.jsonl" 2>"$WORK/n$n-shard$k.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  end=$(date +%s.%N)
  rows+=("$n $start $end")
done

python3 - "$WORK" "$OBJECTS" "$SIZE" "$OUT" "${rows[@]}" <<'EOF'
import json, sys, tomllib
work, objects, size, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
lines = [
    "# Sharded runs: one move as N processes on one machine",
    "",
    f"Corpus: {objects} x {size} B in Garage (127.0.0.1), S3 -> S3, `exec --shard K/N --transfers 32`"
    " per process; every process verifies as a plain `copy` does.",
    "",
    "| N | wall s | objects copied | bytes copied | LIST src | LIST dst | GET | PUT | HEAD |"
    " aggregate MB/s | plan's time model s | plan's s per shard |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
]
ok = True
for row in sys.argv[5:]:
    n, start, end = row.split()
    n = int(n)
    wall = float(end) - float(start)
    tot = dict(copied=0, bytes=0, ls=0, ld=0, get=0, put=0, head=0)
    for k in range(n):
        last = [l for l in open(f"{work}/n{n}-shard{k}.jsonl") if '"summary"' in l][-1]
        s = json.loads(last)
        tot["copied"] += s["copied"]["objects"]
        tot["bytes"] += s["copied"]["bytes"]
        r = s["requests"]
        tot["ls"] += r["list_source"]; tot["ld"] += r["list_destination"]
        tot["get"] += r["get"]; tot["put"] += r["put"]; tot["head"] += r["head"]
    plan = tomllib.load(open(f"{work}/plans/n{n}.toml", "rb"))
    model = plan["prediction"]["seconds"]
    per = plan["shards"]["seconds_per_shard"]
    ok &= tot["copied"] == objects and tot["get"] == objects and tot["bytes"] == objects * size
    lines.append(
        f"| {n} | {wall:.1f} | {tot['copied']} | {tot['bytes']} | {tot['ls']} | {tot['ld']} |"
        f" {tot['get']} | {tot['put']} | {tot['head']} | {tot['bytes'] / wall / 1e6:.2f} |"
        f" {float(model):.1f} | {float(per):.1f} |"
    )
lines += [
    "",
    "Every object read once (GET = objects, bytes copied = corpus bytes) at every N: "
    + ("yes" if ok else "NO"),
    "",
    "The plan's time model assumes the default 10 Gbps path and per-stream rates, not this"
    " loopback server; on 2 shared cores Garage sets the floor, so the measured aggregate rate"
    " does not grow with N here.",
]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
sys.exit(0 if ok else 1)
EOF
