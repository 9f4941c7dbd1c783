#!/usr/bin/env bash
# Listing a large source (issue 30): one ordered LIST stream against --list-streams N, and the
# current rclone, on N_OBJECTS objects in a private Garage (LMDB, S3 port PORT).
#
# Corpus: N_OBJECTS empty objects `list1m/dNNNN/fNNNNNNN` (1,000 a folder, bench/lib/gen.py tree),
# uploaded once with `rclone copy --transfers 64` (not timed; about 6 minutes per million on a busy
# 2-core machine). Then, ROUNDS rounds with the order rotated, each tool lists the whole corpus and
# prints one line per key (the line count is checked against N_OBJECTS):
#   moverctl-S   moverctl copy --dry-run --list-streams S g:moverctl-a/list1m EMPTY-FOLDER
#                (the run's listing + merge-join, nothing copied; one `would copy` line per key)
#   rclone-lsf   rclone lsf -R g:moverctl-a/list1m
#   rclone-size  rclone size g:moverctl-a/list1m (counts; no line per key)
# Reported: median wall time, client CPU (user+sys) and peak RSS (/usr/bin/time -v), LIST
# requests (moverctl's own count), and the speed-up of each moverctl-S over moverctl-1.
# Garage's own floor: LATENCY_SAMPLES single LIST requests of 1,000 keys (curl --aws-sigv4) at
# spread-out start-after points, one at a time and 8 at a time.
#
# DELAY_MS (0): every request of the measured tools (and of the floor's curl) goes through
# bench/lib/delay-proxy.py, held that long, as over a path to a cloud region (the corpus upload
# does not).
# Environment: N_OBJECTS (1000000) STREAMS ("1 2 4 8 16") RCLONE_TOOLS ("rclone-lsf rclone-size") ROUNDS (3) PORT (3980)
# LATENCY_SAMPLES (40) GDIR (the Garage folder; default under BENCH_DIR) KEEP=1 (leave Garage and
# its corpus running; default: stop it and delete its folder and the local tree)
# OUT (report; default bench/results/<date>-list.md) SKIP_BUILD=1 MOVERCTL_BIN
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
N_OBJECTS="${N_OBJECTS:-1000000}"
STREAMS="${STREAMS:-1 2 4 8 16}"
ROUNDS="${ROUNDS:-3}"
PORT="${PORT:-3980}"
LATENCY_SAMPLES="${LATENCY_SAMPLES:-40}"
OUT="${OUT:-$ROOT/bench/results/$(date -u +%F)-list.md}"
WORK="${BENCH_DIR:-$ROOT/target/bench}/list"
GDIR="${GDIR:-$WORK/garage}"
RUNS="$WORK/runs/$(date -u +%Y%m%d-%H%M%S)"
RESULTS="$RUNS/results.jsonl"
mkdir -p "$RUNS" "$WORK/empty"
: >"$RESULTS"
log() { printf '[list %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [[ ${SKIP_BUILD:-} != 1 ]]; then
  log "building moverctl (release)"
  (cd "$ROOT" && cargo build -j 2 --release --quiet --bin moverctl)
fi
MOVERCTL="${MOVERCTL_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/moverctl}"
RCLONE_BIN="$(bash "$ROOT/../shared/tools/rclone-latest.sh" 2>/dev/null | tail -n 1 || true)"
[[ -x $RCLONE_BIN ]] || RCLONE_BIN="$(command -v rclone || true)"
[[ -x $RCLONE_BIN ]] || {
  log "no rclone (../shared/tools/rclone-latest.sh, or Debian's rclone package)"
  exit 2
}
RCLONE=(env -u AWS_CA_BUNDLE "$RCLONE_BIN")

"$ROOT/bench/lib/own-garage.sh" start "$GDIR" "$PORT" >/dev/null
cleanup() {
  if [[ ${KEEP:-} != 1 ]]; then
    "$ROOT/bench/lib/own-garage.sh" stop "$GDIR"
    rm -rf "$GDIR" "$WORK/tree" "$WORK/tree.complete"
  fi
}
trap cleanup EXIT
# shellcheck disable=SC1091
source "$GDIR/env.sh"
ENDPOINT="$MOVERCTL_TEST_S3_ENDPOINT"
export BENCH_S3_KEY_ID="$MOVERCTL_TEST_S3_KEY_ID" BENCH_S3_SECRET="$MOVERCTL_TEST_S3_SECRET"
export MOVERCTL_STATE_DIR="$RUNS/state"
REMOTES="$RUNS/remotes.toml"
write_remotes() { # ENDPOINT: the remote `g` the measured moverctl runs use
  printf '[remotes.g]\ntype = "s3"\nprovider = "onprem"\nendpoint = "%s"\nregion = "garage"\naccess_key_id_env = "BENCH_S3_KEY_ID"\nsecret_access_key_env = "BENCH_S3_SECRET"\n' \
    "$1" >"$REMOTES"
}
write_remotes "$ENDPOINT"
export RCLONE_CONFIG=/dev/null RCLONE_CONFIG_G_TYPE=s3 RCLONE_CONFIG_G_PROVIDER=Other \
  RCLONE_CONFIG_G_ENDPOINT="$ENDPOINT" RCLONE_CONFIG_G_ACCESS_KEY_ID="$BENCH_S3_KEY_ID" \
  RCLONE_CONFIG_G_SECRET_ACCESS_KEY="$BENCH_S3_SECRET" RCLONE_CONFIG_G_REGION=garage \
  RCLONE_CONFIG_G_FORCE_PATH_STYLE=true RCLONE_CONFIG_G_NO_CHECK_BUCKET=true

# --- corpus -------------------------------------------------------------------------------------
marker="$GDIR/list-corpus-$N_OBJECTS.done"
if [[ ! -f $marker ]]; then
  log "writing $N_OBJECTS empty files, then uploading them (not timed)"
  python3 "$ROOT/bench/lib/gen.py" tree "$WORK/tree" "$N_OBJECTS"
  "${RCLONE[@]}" copy "$WORK/tree" g:moverctl-a/list1m --transfers 64 --checkers 16 \
    --no-check-dest --s3-no-head --stats 0 -q
  touch "$marker"
fi

# --- a path with latency (DELAY_MS): every request through bench/lib/delay-proxy.py ------------
export DELAY_MS="${DELAY_MS:-0}"
if [[ $DELAY_MS != 0 ]]; then
  PROXY_PORT=$((PORT + 10))
  python3 "$ROOT/bench/lib/delay-proxy.py" "$PROXY_PORT" "$PORT" "$DELAY_MS" &
  PROXY_PID=$!
  trap 'kill "$PROXY_PID" 2>/dev/null || true; cleanup' EXIT
  for _ in $(seq 1 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PROXY_PORT") 2>/dev/null && break
    sleep 0.1
  done
  ENDPOINT="http://127.0.0.1:$PROXY_PORT"
  log "every request delayed ${DELAY_MS} ms (delay proxy on $ENDPOINT)"
  write_remotes "$ENDPOINT"
  export RCLONE_CONFIG_G_ENDPOINT="$ENDPOINT"
fi

# --- Garage's floor: single LIST requests -------------------------------------------------------
one_list() { # start-after key -> seconds (curl signs the query as written: keep it sorted)
  curl --noproxy '*' -sf --aws-sigv4 "aws:amz:garage:s3" --user "$BENCH_S3_KEY_ID:$BENCH_S3_SECRET" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
    -o /dev/null -w '%{time_total}\n' \
    "$ENDPOINT/moverctl-a?list-type=2&max-keys=1000&prefix=list1m%2F&start-after=list1m%2F$1"
}
export -f one_list
export ENDPOINT
folders=$(((N_OBJECTS + 999) / 1000))
starts=()
for i in $(seq 0 $((LATENCY_SAMPLES - 1))); do
  d=$((i * folders / LATENCY_SAMPLES))
  starts+=("$(printf 'd%04d%%2Ff%07d' "$d" $((d * 1000 + 500)))")
done
printf '%s\n' "${starts[@]}" | while read -r s; do one_list "$s"; done >"$RUNS/latency-1.txt"
t0=$(date +%s.%N)
printf '%s\n' "${starts[@]}" | xargs -P 8 -I{} bash -c 'one_list {}' >"$RUNS/latency-8.txt"
t1=$(date +%s.%N)
python3 - "$RUNS" "$t0" "$t1" "$LATENCY_SAMPLES" >>"$RESULTS" <<'EOF'
import json, statistics, sys
runs, t0, t1, n = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
one = [float(x) for x in open(f"{runs}/latency-1.txt")]
eight = [float(x) for x in open(f"{runs}/latency-8.txt")]
print(json.dumps({"tool": "garage-list-page", "median_one_at_a_time_s": statistics.median(one),
                  "median_eight_at_a_time_s": statistics.median(eight),
                  "pages_per_s_eight_at_a_time": n / (t1 - t0)}))
EOF

# --- listing ------------------------------------------------------------------------------------
run_tool() { # tool round
  local tool=$1 round=$2 t0 t1 lines
  local tv="$RUNS/$tool-r$round.time" err="$RUNS/$tool-r$round.err"
  t0=$(date +%s.%N)
  case $tool in
    moverctl-*)
      lines=$(/usr/bin/time -v -o "$tv" "$MOVERCTL" copy --config "$REMOTES" --dry-run \
        --list-streams "${tool#moverctl-}" g:moverctl-a/list1m "$WORK/empty" 2>"$err" | wc -l)
      ;;
    rclone-lsf)
      lines=$(/usr/bin/time -v -o "$tv" "${RCLONE[@]}" lsf -R --files-only g:moverctl-a/list1m 2>"$err" | wc -l)
      ;;
    rclone-size)
      /usr/bin/time -v -o "$tv" "${RCLONE[@]}" size --json g:moverctl-a/list1m >"$RUNS/size.json" 2>"$err"
      lines=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["count"])' "$RUNS/size.json")
      ;;
  esac
  t1=$(date +%s.%N)
  python3 - "$tool" "$round" "$t0" "$t1" "$lines" "$N_OBJECTS" "$tv" "$err" >>"$RESULTS" <<'EOF'
import json, re, sys
tool, rnd, t0, t1, lines, want, tv, err = sys.argv[1:]
t = open(tv).read()
num = lambda pat: float(re.search(pat, t).group(1))
lists = re.search(r"LIST (\d+) \+ (\d+)", open(err).read())
print(json.dumps({"tool": tool, "round": int(rnd), "wall_s": float(t1) - float(t0),
                  "cpu_s": num(r"User time \(seconds\): ([\d.]+)") + num(r"System time \(seconds\): ([\d.]+)"),
                  "peak_rss_mb": num(r"Maximum resident set size \(kbytes\): (\d+)") / 1024,
                  "keys": int(lines), "ok": int(lines) == int(want),
                  "list_requests": int(lists.group(1)) if lists else None}))
EOF
  tail -n 1 "$RESULTS" >&2
}

tools=()
for s in $STREAMS; do tools+=("moverctl-$s"); done
read -r -a rclone_tools <<<"${RCLONE_TOOLS:-rclone-lsf rclone-size}"
tools+=("${rclone_tools[@]}")
for r in $(seq 1 "$ROUNDS"); do
  n=${#tools[@]}
  for i in $(seq 0 $((n - 1))); do
    run_tool "${tools[$(((i + r) % n))]}" "$r"
  done
done

python3 - "$RESULTS" "$OUT" "$N_OBJECTS" "$ROUNDS" <<'EOF'
import json, statistics, sys
res, out, n, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
rows = [json.loads(l) for l in open(res)]
floor = next(r for r in rows if r["tool"] == "garage-list-page")
by = {}
for r in rows:
    if "round" in r:
        by.setdefault(r["tool"], []).append(r)
med = lambda t, k: statistics.median(x[k] for x in by[t])
one = med("moverctl-1", "wall_s") if "moverctl-1" in by else None
import os
delay = os.environ.get("DELAY_MS", "0")
path = f", every request delayed {delay} ms" if delay not in ("", "0") else ""
lines = [f"## Listing {n:,} objects (private Garage, LMDB{path}; medians of {rounds} rounds)", "",
         "| tool | wall s | keys/s | vs 1 stream | CPU s | peak RSS MB | LIST requests | all keys |",
         "|---|---|---|---|---|---|---|---|"]
for t in by:
    w = med(t, "wall_s")
    lr = by[t][0].get("list_requests")
    lines.append(f"| {t} | {w:.2f} | {n / w:,.0f} | {one / w:.2f}x | {med(t, 'cpu_s'):.2f} | "
                 f"{max(x['peak_rss_mb'] for x in by[t]):.0f} | {lr if lr is not None else '-'} | "
                 f"{all(x['ok'] for x in by[t])} |")
lines += ["", f"Garage's floor: one LIST page of 1,000 keys takes {floor['median_one_at_a_time_s'] * 1000:.1f} ms "
          f"one at a time (median), {floor['median_eight_at_a_time_s'] * 1000:.1f} ms eight at a time; "
          f"eight at a time it serves {floor['pages_per_s_eight_at_a_time']:.0f} pages/s, so "
          f"{n / 1000 / floor['pages_per_s_eight_at_a_time']:.1f} s for {n // 1000:,} pages is the fastest any client lists here.", ""]
open(out, "a").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
log "raw results: $RESULTS"
