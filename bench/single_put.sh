#!/usr/bin/env bash
# One streamed PUT against parts (issue 15): N x SIZE_MIB single-part objects (written by rclone,
# so their ETags are MD5s) copied S3 -> S3 between two buckets of a private Garage (LMDB, S3 port
# PORT), side by side:
#   moverctl                    defaults: one streamed PUT per object with the source's MD5
#   moverctl --no-streamed-put  the same objects in 64 MiB parts (MD5 computed to check the source)
#   rclone copy --checksum      one GET and one PUT per object, the source's MD5 as Content-MD5
#                               (two remote names, so that it streams)
# moverctl runs with --no-server-side (the two buckets are one service). ROUNDS rounds, the order
# rotated each round; medians of wall time and client CPU (user + system, GNU time). Every run's
# destination is checked (object count and bytes).
#
# Environment: N (4) SIZE_MIB (100) ROUNDS (3) PORT (3990) OUT (report; default
# bench/results/<date>-single-put.md) SKIP_BUILD=1 (use target/release as it is)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
N="${N:-4}"
SIZE_MIB="${SIZE_MIB:-100}"
ROUNDS="${ROUNDS:-3}"
PORT="${PORT:-3990}"
OUT="${OUT:-$ROOT/bench/results/$(date -u +%F)-single-put.md}"
WORK="${BENCH_DIR:-$ROOT/target/bench}/single-put"
GDIR="$WORK/garage"
RUNS="$WORK/runs/$(date -u +%Y%m%d-%H%M%S)"
RESULTS="$RUNS/results.jsonl"
mkdir -p "$RUNS"
: >"$RESULTS"
log() { printf '[single-put %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [[ ${SKIP_BUILD:-} != 1 ]]; then
  log "building moverctl (release)"
  (cd "$ROOT" && cargo build -j 2 --release --quiet --bin moverctl)
fi
MOVERCTL="$ROOT/target/release/moverctl"

"$ROOT/bench/lib/own-garage.sh" start "$GDIR" "$PORT"
trap '"$ROOT/bench/lib/own-garage.sh" stop "$GDIR"' EXIT
# shellcheck disable=SC1091
source "$GDIR/env.sh"
ENDPOINT="$MOVERCTL_TEST_S3_ENDPOINT"
export BENCH_S3_KEY_ID="$MOVERCTL_TEST_S3_KEY_ID" BENCH_S3_SECRET="$MOVERCTL_TEST_S3_SECRET"
export MOVERCTL_STATE_DIR="$RUNS/state"
REMOTES="$RUNS/remotes.toml"
printf '[remotes.g]\ntype = "s3"\nprovider = "onprem"\nendpoint = "%s"\nregion = "garage"\naccess_key_id_env = "BENCH_S3_KEY_ID"\nsecret_access_key_env = "BENCH_S3_SECRET"\n' \
  "$ENDPOINT" >"$REMOTES"
# Two rclone remotes for the one Garage: within one remote rclone would copy on the server.
export RCLONE_CONFIG=/dev/null
for r in G GD; do
  export "RCLONE_CONFIG_${r}_TYPE=s3" "RCLONE_CONFIG_${r}_PROVIDER=Other" \
    "RCLONE_CONFIG_${r}_ENDPOINT=$ENDPOINT" "RCLONE_CONFIG_${r}_ACCESS_KEY_ID=$BENCH_S3_KEY_ID" \
    "RCLONE_CONFIG_${r}_SECRET_ACCESS_KEY=$BENCH_S3_SECRET" "RCLONE_CONFIG_${r}_REGION=garage" \
    "RCLONE_CONFIG_${r}_FORCE_PATH_STYLE=true" "RCLONE_CONFIG_${r}_NO_CHECK_BUCKET=true"
done

# rclone 1.60 refuses an AWS_CA_BUNDLE with its transport (the test servers' env may set one).
RCLONE=(env -u AWS_CA_BUNDLE rclone)

corpus="corpus/single-${N}x${SIZE_MIB}"
dir="$WORK/$corpus"
python3 "$ROOT/bench/lib/gen.py" files "$dir" "$N" "$((SIZE_MIB << 20))" 7 >/dev/null
log "uploading $N x $SIZE_MIB MiB with rclone (single part: below its 200 MiB cutoff)"
"${RCLONE[@]}" copy "$dir" "g:moverctl-a/$corpus" --s3-upload-cutoff 5G -q

run_one() { # tool round
  local tool=$1 round=$2 cmd
  local dst="run/r$round/$tool"
  case $tool in
    moverctl) cmd=("$MOVERCTL" copy --config "$REMOTES" --json --no-server-side "g:moverctl-a/$corpus" "g:moverctl-b/$dst") ;;
    moverctl-parts) cmd=("$MOVERCTL" copy --config "$REMOTES" --json --no-server-side --no-streamed-put "g:moverctl-a/$corpus" "g:moverctl-b/$dst") ;;
    rclone) cmd=("${RCLONE[@]}" copy --checksum "g:moverctl-a/$corpus" "gd:moverctl-b/$dst" -q) ;;
  esac
  python3 "$ROOT/bench/lib/measure.py" --out "$RESULTS" --stdout "$RUNS/$tool-$round.out" \
    --stderr "$RUNS/$tool-$round.err" --meta "tool=$tool" --meta "round=$round" \
    --meta "load1=$(cut -d' ' -f1 /proc/loadavg)" -- "${cmd[@]}"
  local have
  have=$("${RCLONE[@]}" size --json "g:moverctl-b/$dst" | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["count"], v["bytes"])')
  [[ $have == "$N $((N * (SIZE_MIB << 20)))" ]] || {
    log "FAILED: $tool round $round: destination holds $have"
    exit 1
  }
}

tools=(moverctl moverctl-parts rclone)
for ((r = 1; r <= ROUNDS; r++)); do
  for ((i = 0; i < ${#tools[@]}; i++)); do
    t=${tools[$(((i + r - 1) % ${#tools[@]}))]}
    log "round $r: $t"
    run_one "$t" "$r"
  done
done

python3 - "$RESULTS" "$N" "$SIZE_MIB" "$ROUNDS" >"$RUNS/report.md" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
n, size, rounds = sys.argv[2], sys.argv[3], sys.argv[4]
print(f"# One streamed PUT against parts: {n} x {size} MiB single-part, S3 -> S3 (Garage, LMDB)\n")
print(f"{rounds} rounds, medians; client CPU is user + system (GNU time).\n")
print("| tool | wall s | CPU s | peak RSS MB | verified by | wall s per round |")
print("|---|---:|---:|---:|---|---|")
for tool in ["moverctl", "moverctl-parts", "rclone"]:
    rs = [r for r in rows if r.get("tool") == tool]
    wall = statistics.median(r["wall_s"] for r in rs)
    cpu = statistics.median(r["user_s"] + r["sys_s"] for r in rs)
    rss = statistics.median(r["rss_kb"] for r in rs) / 1024
    by = ", ".join(sorted((rs[0].get("summary") or {}).get("verified_by", {}).keys())) or "—"
    name = {"moverctl": "moverctl (streamed PUT)", "moverctl-parts": "moverctl --no-streamed-put",
            "rclone": "rclone --checksum"}[tool]
    per = ", ".join(f"{r['wall_s']:.2f}" for r in rs)
    print(f"| {name} | {wall:.2f} | {cpu:.2f} | {rss:.0f} | {by} | {per} |")
print(f"\nload average at the end: {open('/proc/loadavg').read().split()[:3]}")
EOF
cat "$RUNS/report.md"
mkdir -p "$(dirname "$OUT")"
cp "$RUNS/report.md" "$OUT"
cp "$RESULTS" "${OUT%.md}.jsonl"
log "report: $OUT"
