#!/usr/bin/env bash
# Draining checkpoints (issue 28): what `moverctl drain` costs over a plain copy, and what it costs
# while it only watches.
#
# 1. Time to durable: one DCP-layout checkpoint of N x SIZE_MIB shard files (plus `.metadata`) on
#    local disk, copied into a private Garage (LMDB, S3 port PORT) four ways, ROUNDS rounds with
#    the order rotated:
#      drain    moverctl drain CKPT g:moverctl-b/... (one pass: finds the checkpoint complete,
#               copies it with the verified engine, writes the receipt at the destination and
#               beside the checkpoint); wall time = time until the receipt exists
#      copy     moverctl copy CKPT/step-1 g:moverctl-b/... (the same engine, no receipt)
#      rclone   rclone copy --transfers N (the current rclone, ../shared/tools/rclone-latest.sh)
#      floor    N parallel `curl --aws-sigv4 -T` single PUTs (no checksum, no listing): what this
#               Garage ingests on this machine
#    Medians of wall time, client CPU and peak RSS; ratios drain/copy, drain/rclone, drain/floor.
#    Every destination is checked (object count and bytes).
# 2. Idle watching: IDLE_CKPTS checkpoints of IDLE_FILES small files each (10,000 files by
#    default), all drained first; then `drain --watch --every IDLE_EVERY` runs IDLE_SECS seconds with
#    nothing to do. Reported: CPU seconds used while idle (utime+stime from /proc) and peak RSS,
#    and the same for polling only (`--every IDLE_POLL` without --watch).
#
# Environment: N (8) SIZE_MIB (512) ROUNDS (3) PORT (3930) IDLE_CKPTS (100) IDLE_FILES (100)
# IDLE_SECS (60) IDLE_EVERY (1m) IDLE_POLL (10s) PARTS (time idle; both by default: "ttd idle")
# OUT (report; default bench/results/<date>-drain.md) SKIP_BUILD=1 BENCH_PROFILE (release|debug)
# MOVERCTL_BIN (a moverctl binary to use instead of target/PROFILE/moverctl)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
N="${N:-8}"
SIZE_MIB="${SIZE_MIB:-512}"
ROUNDS="${ROUNDS:-3}"
PORT="${PORT:-3930}"
IDLE_CKPTS="${IDLE_CKPTS:-100}"
IDLE_FILES="${IDLE_FILES:-100}"
IDLE_SECS="${IDLE_SECS:-60}"
IDLE_EVERY="${IDLE_EVERY:-1m}"
IDLE_POLL="${IDLE_POLL:-10s}"
PARTS="${PARTS:-ttd idle}"
PROFILE="${BENCH_PROFILE:-release}"
OUT="${OUT:-$ROOT/bench/results/$(date -u +%F)-drain.md}"
WORK="${BENCH_DIR:-$ROOT/target/bench}/drain"
GDIR="$WORK/garage"
RUNS="$WORK/runs/$(date -u +%Y%m%d-%H%M%S)"
RESULTS="$RUNS/results.jsonl"
mkdir -p "$RUNS"
: >"$RESULTS"
log() { printf '[drain %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [[ ${SKIP_BUILD:-} != 1 ]]; then
  log "building moverctl ($PROFILE)"
  if [[ $PROFILE == release ]]; then
    (cd "$ROOT" && cargo build -j 2 --release --quiet --bin moverctl)
  else
    (cd "$ROOT" && cargo build -j 2 --quiet --bin moverctl)
  fi
fi
MOVERCTL="${MOVERCTL_BIN:-$ROOT/target/$PROFILE/moverctl}"
RCLONE_BIN="$(bash "$ROOT/../shared/tools/rclone-latest.sh" 2>/dev/null | tail -n 1 || true)"
[[ -x $RCLONE_BIN ]] || RCLONE_BIN="$(command -v rclone || true)"
[[ -x $RCLONE_BIN ]] || {
  log "no rclone (../shared/tools/rclone-latest.sh, or Debian's rclone package)"
  exit 2
}
RCLONE=(env -u AWS_CA_BUNDLE "$RCLONE_BIN")

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
export RCLONE_CONFIG=/dev/null RCLONE_CONFIG_G_TYPE=s3 RCLONE_CONFIG_G_PROVIDER=Other \
  RCLONE_CONFIG_G_ENDPOINT="$ENDPOINT" RCLONE_CONFIG_G_ACCESS_KEY_ID="$BENCH_S3_KEY_ID" \
  RCLONE_CONFIG_G_SECRET_ACCESS_KEY="$BENCH_S3_SECRET" RCLONE_CONFIG_G_REGION=garage \
  RCLONE_CONFIG_G_FORCE_PATH_STYLE=true RCLONE_CONFIG_G_NO_CHECK_BUCKET=true
# The first use of the destination is probed once, so that every drain/copy run below takes the
# same (checksum) path and none of them pays for a probe.
"$MOVERCTL" probe --config "$REMOTES" --size 1MiB --streams 2 --requests 3 g:moverctl-b/probe >/dev/null 2>&1 || true

# --- 1. time to durable -------------------------------------------------------------------------
ckpt_root="$WORK/corpus/ckpt-${N}x${SIZE_MIB}"
ckpt="$ckpt_root/step-1"
python3 "$ROOT/bench/lib/gen.py" files "$ckpt" "$N" "$((SIZE_MIB << 20))" 28 >/dev/null
# gen.py names files f0.bin ...; a DCP checkpoint is complete once .metadata exists.
[[ -f $ckpt/.metadata ]] || echo "dcp metadata" >"$ckpt/.metadata"
want_objects=$((N + 1))
want_bytes=$((N * (SIZE_MIB << 20) + $(stat -c %s "$ckpt/.metadata")))

floor_put() { # dst-prefix: N parallel single PUTs with curl's SigV4, then .metadata
  local pids=() f
  for f in "$ckpt"/* "$ckpt"/.metadata; do
    curl --noproxy '*' -sf --aws-sigv4 "aws:amz:garage:s3" --user "$BENCH_S3_KEY_ID:$BENCH_S3_SECRET" \
      -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -T "$f" "$ENDPOINT/moverctl-b/$1/$(basename "$f")" -o /dev/null &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
}
export -f floor_put
export ckpt ENDPOINT

run_ttd() { # tool round
  local tool=$1 round=$2
  local dst="ttd/r$round/$tool" cmd check
  case $tool in
    drain)
      rm -f "$ckpt_root"/step-1.moverctl-receipt.json
      cmd=("$MOVERCTL" drain --config "$REMOTES" --json "$ckpt_root" "g:moverctl-b/$dst")
      check="$dst/step-1"
      ;;
    copy)
      cmd=("$MOVERCTL" copy --config "$REMOTES" --json "$ckpt" "g:moverctl-b/$dst/step-1")
      check="$dst/step-1"
      ;;
    rclone)
      cmd=("${RCLONE[@]}" copy --transfers "$N" --checkers "$N" "$ckpt" "g:moverctl-b/$dst/step-1" -q)
      check="$dst/step-1"
      ;;
    floor)
      cmd=(bash -c "floor_put $dst/step-1")
      check="$dst/step-1"
      ;;
  esac
  python3 "$ROOT/bench/lib/measure.py" --out "$RESULTS" --stdout "$RUNS/$tool-$round.out" \
    --stderr "$RUNS/$tool-$round.err" --meta "part=ttd" --meta "tool=$tool" --meta "round=$round" \
    --meta "load1=$(cut -d' ' -f1 /proc/loadavg)" -- "${cmd[@]}"
  local have extra=0
  have=$("${RCLONE[@]}" size --json "g:moverctl-b/$check" | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["count"], v["bytes"])')
  if [[ $tool == drain ]]; then
    # the receipt at the destination is one more object
    [[ -f $ckpt_root/step-1.moverctl-receipt.json ]] || {
      log "FAILED: drain round $round wrote no receipt beside the checkpoint"
      exit 1
    }
    extra=1
  fi
  local count=${have%% *} bytes=${have##* }
  if [[ $((count - extra)) != "$want_objects" ]] || ((bytes < want_bytes)); then
    log "FAILED: $tool round $round: destination holds $have, want $want_objects objects, $want_bytes bytes"
    exit 1
  fi
}

if [[ " $PARTS " == *" ttd "* ]]; then
  tools=(drain copy rclone floor)
  for ((r = 1; r <= ROUNDS; r++)); do
    for ((i = 0; i < ${#tools[@]}; i++)); do
      t=${tools[$(((i + r - 1) % ${#tools[@]}))]}
      log "time to durable, round $r: $t"
      run_ttd "$t" "$r"
    done
  done
fi

# --- 2. idle watching ---------------------------------------------------------------------------
cpu_of() { # pid -> utime+stime in clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat"
}
idle_run() { # mode (watch|poll)
  local mode=$1 args
  local dir="$WORK/corpus/idle-${IDLE_CKPTS}x${IDLE_FILES}"
  if [[ ! -f $dir.complete ]]; then
    rm -rf "$dir"
    python3 - "$dir" "$IDLE_CKPTS" "$IDLE_FILES" <<'EOF'
import os, sys
d, n, f = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for c in range(n):
    p = os.path.join(d, f"step-{c:05d}")
    os.makedirs(p, exist_ok=True)
    for i in range(f - 1):
        with open(os.path.join(p, f"__{i}_0.distcp"), "wb") as fh:
            fh.write(os.urandom(1024))
    with open(os.path.join(p, ".metadata"), "wb") as fh:
        fh.write(b"dcp metadata")
EOF
    log "idle corpus: first drain of $((IDLE_CKPTS * IDLE_FILES)) files"
    "$MOVERCTL" drain --config "$REMOTES" -q "$dir" "g:moverctl-b/idle" >"$RUNS/idle-first.out" 2>&1
    touch "$dir.complete"
  fi
  case $mode in
    watch) args=(--watch --every "$IDLE_EVERY") ;;
    poll) args=(--every "$IDLE_POLL") ;;
  esac
  "$MOVERCTL" drain --config "$REMOTES" -q "${args[@]}" "$dir" "g:moverctl-b/idle" \
    >"$RUNS/idle-$mode.out" 2>&1 &
  local pid=$! tick
  tick=$(getconf CLK_TCK)
  # the first pass checks every receipt; idle starts once it is over (CPU stops rising)
  local before after prev=-1
  for _ in $(seq 1 120); do
    sleep 1
    before=$(cpu_of "$pid")
    [[ $before == "$prev" ]] && break
    prev=$before
  done
  local first_rss
  first_rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
  sleep "$IDLE_SECS"
  after=$(cpu_of "$pid")
  local hwm rss
  hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  kill -TERM "$pid" 2>/dev/null || true # (SIGINT is ignored by background jobs of a script)
  wait "$pid" 2>/dev/null || true
  python3 -c 'import json,sys; print(json.dumps({"part":"idle","tool":sys.argv[1],"files":int(sys.argv[2]),"idle_s":int(sys.argv[3]),"cpu_s":(int(sys.argv[5])-int(sys.argv[4]))/int(sys.argv[6]),"first_pass_hwm_kb":int(sys.argv[7]),"hwm_kb":int(sys.argv[8]),"rss_kb":int(sys.argv[9]),"args":" ".join(sys.argv[10:])}))' \
    "$mode" "$((IDLE_CKPTS * IDLE_FILES))" "$IDLE_SECS" "$before" "$after" "$tick" "$first_rss" "$hwm" "$rss" "${args[@]}" >>"$RESULTS"
}

if [[ " $PARTS " == *" idle "* ]]; then
  log "idle watching ($IDLE_SECS s, --watch --every $IDLE_EVERY)"
  idle_run watch
  log "idle polling ($IDLE_SECS s, --every $IDLE_POLL)"
  idle_run poll
fi

python3 - "$RESULTS" "$N" "$SIZE_MIB" "$ROUNDS" >"$RUNS/report.md" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
n, size, rounds = sys.argv[2], sys.argv[3], sys.argv[4]
ttd = [r for r in rows if r.get("part") == "ttd"]
if ttd:
    print(f"# Time to durable: a checkpoint of {n} x {size} MiB, local disk -> S3 (Garage, LMDB)\n")
    print(f"{rounds} rounds, order rotated, medians; CPU is user + system (GNU time).\n")
    print("| tool | wall s | CPU s | peak RSS MB | wall s per round |")
    print("|---|---:|---:|---:|---|")
    med = {}
    names = {"drain": "moverctl drain (until the receipt)", "copy": "moverctl copy",
             "rclone": f"rclone copy --transfers {n}", "floor": f"floor: {n} parallel curl PUTs"}
    for tool in ["drain", "copy", "rclone", "floor"]:
        rs = [r for r in ttd if r.get("tool") == tool]
        if not rs:
            continue
        wall = statistics.median(r["wall_s"] for r in rs)
        med[tool] = wall
        cpu = statistics.median(r["user_s"] + r["sys_s"] for r in rs)
        rss = statistics.median(r["rss_kb"] for r in rs) / 1024
        per = ", ".join(f"{r['wall_s']:.2f}" for r in rs)
        print(f"| {names[tool]} | {wall:.2f} | {cpu:.2f} | {rss:.0f} | {per} |")
    print()
    for a, b in [("drain", "copy"), ("drain", "rclone"), ("drain", "floor"), ("copy", "floor"), ("rclone", "floor")]:
        if a in med and b in med:
            print(f"- {a} / {b}: {med[a] / med[b]:.3f}")
    print()
idle = [r for r in rows if r.get("part") == "idle"]
if idle:
    print("# Idle: a drain with nothing to do\n")
    print("| mode | files watched | idle s | CPU s while idle | CPU % | peak RSS MB (first pass) | peak RSS MB | RSS MB at the end |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in idle:
        print(f"| `{r['args']}` | {r['files']:,} | {r['idle_s']} | {r['cpu_s']:.2f} | {100 * r['cpu_s'] / r['idle_s']:.2f} | "
              f"{r['first_pass_hwm_kb'] / 1024:.0f} | {r['hwm_kb'] / 1024:.0f} | {r['rss_kb'] / 1024:.0f} |")
print(f"\nload average at the end: {open('/proc/loadavg').read().split()[:3]}")
EOF
cat "$RUNS/report.md"
mkdir -p "$(dirname "$OUT")"
cp "$RUNS/report.md" "$OUT"
cp "$RESULTS" "${OUT%.md}.jsonl"
log "report: $OUT"
