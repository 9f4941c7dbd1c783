#!/usr/bin/env bash
# The engine's hot path against the current rclone (issue 30), on one private Garage:
#
#   noop  a no-op re-run of a 2,000-object corpus local -> S3 (moverctl with its journal, rclone
#         copy, rclone copy --checksum): wall time and client CPU of a run that has nothing to do
#   mp    S3 -> local of an rclone-written multipart corpus (N x SIZE_MIB uploaded by rclone at
#         its defaults: 5 MiB parts, its x-amz-meta-md5chksum); moverctl, rclone copy, and the
#         floor: one curl GET per object, all at once, into /dev/null
#   first local -> S3 of the mp corpus as a first copy (a fresh state folder): at the defaults
#         (probe on first use) and --no-probe; client CPU per GiB
#
#   MOVERCTL_BIN=/work/rel-perf/release/moverctl RCLONE_BIN=$(bash ../shared/tools/rclone-latest.sh) \
#     bench/hotpath.sh
#
# Tools alternate within each round (their order rotates); medians of ROUNDS (3) rounds. Records
# (bench/lib/measure.py) go to OUT's .jsonl; the report (medians, ratios, load averages) to OUT.
# Environment: ROUNDS (3) ROWS ("noop mp first") N (4) SIZE_MIB (256) SMALL_N (2000)
# PORT (3970; RPC +1, admin +3) OUT (bench/results/<date>-hotpath.md) BENCH_DIR (target/bench)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ROUNDS="${ROUNDS:-3}"
ROWS="${ROWS:-noop mp first}"
N="${N:-4}"
SIZE_MIB="${SIZE_MIB:-256}"
SMALL_N="${SMALL_N:-2000}"
PORT="${PORT:-3970}"
WORK="${BENCH_DIR:-$ROOT/target/bench}/hotpath"
OUT="${OUT:-$ROOT/bench/results/$(date -u +%Y-%m-%d)-hotpath.md}"
RAW="${OUT%.md}.jsonl"
M="${MOVERCTL_BIN:?set MOVERCTL_BIN to a release build of moverctl}"
RCLONE_BIN="${RCLONE_BIN:-rclone}"
log() { printf '[hotpath %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

mkdir -p "$WORK"
GDIR="$WORK/garage"
"$ROOT/bench/lib/own-garage.sh" start "$GDIR" "$PORT" >/dev/null
cleanup() {
  "$ROOT/bench/lib/own-garage.sh" stop "$GDIR" || true
  [[ ${KEEP:-0} == 1 ]] || rm -rf "${WORK:?}/big" "$WORK/big.complete" "$WORK/small" \
    "$WORK/small.complete" "$WORK/dst" "$GDIR/data" "$GDIR/meta"
}
trap cleanup EXIT
# shellcheck disable=SC1091
source "$GDIR/env.sh"
GPID=$(cat "$GDIR/garage.pid")
A="$MOVERCTL_TEST_S3_BUCKET_A"
B="$MOVERCTL_TEST_S3_BUCKET_B"
REMOTES="$WORK/remotes.toml"
cat >"$REMOTES" <<EOT
[remotes.g]
type = "s3"
provider = "onprem"
endpoint = "$MOVERCTL_TEST_S3_ENDPOINT"
region = "$MOVERCTL_TEST_S3_REGION"
access_key_id_env = "MOVERCTL_TEST_S3_KEY_ID"
secret_access_key_env = "MOVERCTL_TEST_S3_SECRET"
EOT
export RCLONE_CONFIG=/dev/null RCLONE_CONFIG_G_TYPE=s3 RCLONE_CONFIG_G_PROVIDER=Other \
  RCLONE_CONFIG_G_ENDPOINT="$MOVERCTL_TEST_S3_ENDPOINT" \
  RCLONE_CONFIG_G_ACCESS_KEY_ID="$MOVERCTL_TEST_S3_KEY_ID" \
  RCLONE_CONFIG_G_SECRET_ACCESS_KEY="$MOVERCTL_TEST_S3_SECRET" \
  RCLONE_CONFIG_G_REGION="$MOVERCTL_TEST_S3_REGION" RCLONE_CONFIG_G_FORCE_PATH_STYLE=true \
  RCLONE_CONFIG_G_NO_CHECK_BUCKET=true
RCLONE=(env -u AWS_CA_BUNDLE "$RCLONE_BIN")
export MOVERCTL_STATE_DIR="$WORK/state"
rm -rf "$MOVERCTL_STATE_DIR" "$RAW"
mkdir -p "$(dirname "$RAW")"
ROUND=0

measure() { # measure ROW TOOL BYTES -- CMD...
  local row=$1 tool=$2 bytes=$3
  shift 4
  sync
  python3 "$ROOT/bench/lib/measure.py" --out "$RAW" --server-pid "$GPID" \
    --meta "row=\"$row\"" --meta "tool=\"$tool\"" --meta "round=$ROUND" --meta "bytes=$bytes" \
    --meta "load=\"$(cut -d' ' -f1-3 /proc/loadavg)\"" \
    --stdout "$WORK/out.txt" --stderr "$WORK/err.txt" -- "$@" || {
    log "FAILED: $row | $tool"
    tail -5 "$WORK/err.txt" >&2
    exit 1
  }
}

SMALL="$WORK/small" BIG="$WORK/big"
BIG_BYTES=$((N * (SIZE_MIB << 20)))
if [[ " $ROWS " == *" noop "* ]]; then
  log "corpus: $SMALL_N x 16 KiB; first copies (not measured)"
  python3 "$ROOT/bench/lib/gen.py" files "$SMALL" "$SMALL_N" 16384 7 --per-dir 500
  "$M" --config "$REMOTES" copy "$SMALL" "g:$B/noop-m" --json -q >/dev/null
  "${RCLONE[@]}" copy "$SMALL" "g:$B/noop-r"
fi
if [[ " $ROWS " == *" mp "* || " $ROWS " == *" first "* ]]; then
  log "corpus: $N x $SIZE_MIB MiB, uploaded by rclone at its defaults (not measured)"
  python3 "$ROOT/bench/lib/gen.py" files "$BIG" "$N" "$((SIZE_MIB << 20))" 42
  "${RCLONE[@]}" copy "$BIG" "g:$A/mp-src"
fi
curl_get_all() { # every object of the mp corpus, one curl each, all at once, into /dev/null
  local f pids=()
  for f in "$BIG"/*.bin; do
    curl -sf -o /dev/null -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
      --aws-sigv4 "aws:amz:$MOVERCTL_TEST_S3_REGION:s3" \
      -u "$MOVERCTL_TEST_S3_KEY_ID:$MOVERCTL_TEST_S3_SECRET" \
      "$MOVERCTL_TEST_S3_ENDPOINT/$A/mp-src/${f##*/}" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || return 1; done
}
export -f curl_get_all
export BIG A

run() { # run ROW TOOL
  case "$1/$2" in
    noop/m) measure "noop" "moverctl" 0 -- "$M" --config "$REMOTES" copy "$SMALL" "g:$B/noop-m" --json ;;
    noop/r) measure "noop" "rclone" 0 -- "${RCLONE[@]}" copy "$SMALL" "g:$B/noop-r" ;;
    noop/rc) measure "noop" "rclone --checksum" 0 -- "${RCLONE[@]}" copy --checksum "$SMALL" "g:$B/noop-r" ;;
    mp/m) rm -rf "$WORK/dst" && measure "mp" "moverctl" "$BIG_BYTES" -- "$M" --config "$REMOTES" copy "g:$A/mp-src" "$WORK/dst" --json --journal "$WORK/j-mp.sqlite"
      rm -f "$WORK"/j-mp.sqlite* ;;
    mp/r) rm -rf "$WORK/dst" && measure "mp" "rclone" "$BIG_BYTES" -- "${RCLONE[@]}" copy "g:$A/mp-src" "$WORK/dst" ;;
    mp/c) measure "mp" "curl GET, one per object" "$BIG_BYTES" -- bash -c curl_get_all ;;
    first/m) rm -rf "$WORK/state-first" && "${RCLONE[@]}" delete "g:$B/first" 2>/dev/null || true
      measure "first" "moverctl, first copy" "$BIG_BYTES" -- env MOVERCTL_STATE_DIR="$WORK/state-first" "$M" --config "$REMOTES" copy "$BIG" "g:$B/first" --json --journal "$WORK/j-first.sqlite"
      rm -f "$WORK"/j-first.sqlite* ;;
    first/n) rm -rf "$WORK/state-first" && "${RCLONE[@]}" delete "g:$B/first" 2>/dev/null || true
      measure "first" "moverctl, first copy --no-probe" "$BIG_BYTES" -- env MOVERCTL_STATE_DIR="$WORK/state-first" "$M" --config "$REMOTES" copy "$BIG" "g:$B/first" --no-probe --json --journal "$WORK/j-first.sqlite"
      rm -f "$WORK"/j-first.sqlite* ;;
  esac
}

LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
for ROUND in $(seq 1 "$ROUNDS"); do
  for row in $ROWS; do
    case $row in
      noop) tools=(m r rc) ;;
      mp) tools=(m r c) ;;
      first) tools=(m n) ;;
    esac
    k=${#tools[@]}
    log "round $ROUND, $row (load $(cut -d' ' -f1 /proc/loadavg))"
    for i in $(seq 0 $((k - 1))); do run "$row" "${tools[$(((i + ROUND - 1) % k))]}"; done
  done
done
LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$RAW" "$LOAD_START" "$LOAD_END" "$("${RCLONE[@]}" version | head -1)" \
  "$(git -C "$ROOT" rev-parse --short HEAD)" >"$OUT" <<'PY'
import json, statistics, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
print(f"# Hot path against {sys.argv[4]} (moverctl {sys.argv[5]}), private Garage")
print(f"\nload average at start {sys.argv[2]}, at end {sys.argv[3]}; medians of the rounds\n")
print("| row | tool | rounds | wall s | client CPU s | CPU s/GiB | wall per run |")
print("|---|---|---|---|---|---|---|")
rows = {}
for r in recs:
    rows.setdefault((r["row"], r["tool"]), []).append(r)
for (row, tool), rs in rows.items():
    wall = statistics.median(r["wall_s"] for r in rs)
    cpu = statistics.median(r["user_s"] + r["sys_s"] for r in rs)
    gib = rs[0]["bytes"] / 2**30
    per = " ".join(f"{r['wall_s']:.2f}" for r in rs)
    per_gib = f"{cpu / gib:.2f}" if gib else "-"
    print(f"| {row} | {tool} | {len(rs)} | {wall:.3f} | {cpu:.3f} | {per_gib} | {per} |")
PY
log "report: $OUT"
cat "$OUT"
