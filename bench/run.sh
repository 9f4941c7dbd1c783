#!/usr/bin/env bash
# moverctl vs rclone on the project's real test servers (Garage S3 on 127.0.0.1).
#
#   bench/run.sh            full run: writes bench/results/<date>.md (+ raw <date>.jsonl)
#   bench/run.sh --smoke    tiny corpora, 1 round, one setting, < 60 s once built; for CI
#
# Workloads (sizes are the full run's; --smoke uses 200 x 16 KiB and 2 x 8 MiB):
#   w1  20,000 x 16 KiB   S3 -> S3  garage moverctl-a -> moverctl-b, two remote names (bsrc, bdst)
#   w2  8 x 256 MiB       S3 -> S3  (same part size for both tools)
#   w3a / w3b             the same corpora local -> S3
#   w4  no-op re-run of w1 onto its complete destination (moverctl with and without its journal)
#   w5  listing/diffing at scale: `plan --inventory` on generated CSVs, `copy --dry-run` and `ls`
#       of local trees of empty files (rclone on the same trees for reference)
#   bw  --bwlimit accuracy: moverctl local -> S3 at 50 MiB/s for >= 30 s
# Concurrency sweep (w1-w3) for both tools, plus each tool's defaults; both verify (moverctl by
# default, rclone --checksum); every run writes to a fresh destination prefix.
#
# Environment (all optional):
#   ROUNDS=5             rounds per (workload, setting, tool); tools alternate order each round
#   SETTINGS="4 16 64 128 default"   concurrency sweep (numbers and/or "default")
#   LARGE_SETTINGS=...   sweep for w2/w3b (default: SETTINGS)
#   W1_SETTINGS W2_SETTINGS W3A_SETTINGS W3B_SETTINGS   per-workload sweeps (reduced runs)
#   WORKLOADS="w1 w2 w3a w3b w4 w5 bw"   subset to run
#   INVENTORY_SIZES="100000 300000 1000000"  TREE_SIZES="100000 300000"
#   SEED=42              corpus seed        KEEP=1   keep the generated corpora in target/bench
#   RUN_TIMEOUT=1800     seconds before one run is killed (counted as failed)
#   BENCH_DIR            work dir (default target/bench)
#   BENCH_PROFILE=debug  with --smoke only: use the debug build (CI, right after the tests)
#   MOVERCTL_GARAGE_DB=lmdb   metadata engine of Garage instances this script starts (running
#                        servers are reused as they are; machine.txt records the engine)
#   OUT_NAME             full-run report name: bench/results/OUT_NAME.md (default: the date)
# Exit status: 0 when every run succeeded and was checked; 1 otherwise, and also when an
# acceptance check fails (listing RSS +20 %, --bwlimit off by > 5 %); the report lists why.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LIB="$ROOT/bench/lib"
MODE=full
case "${1:-}" in
  --smoke) MODE=smoke ;;
  "") ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "usage: $0 [--smoke]" >&2
    exit 2
    ;;
esac

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

# ------------------------------------------------------------------------------------------------
# Parameters

SEED="${SEED:-42}"
KEEP="${KEEP:-0}"
RUN_TIMEOUT="${RUN_TIMEOUT:-1800}"
if [[ $MODE == smoke ]]; then
  SMALL_N=200 SMALL_SIZE=16384 LARGE_N=2 LARGE_SIZE=$((8 << 20))
  PART_MIB=5 # smallest S3 part: 8 MiB objects go in two parts
  ROUNDS="${ROUNDS:-1}"
  SETTINGS="${SETTINGS:-16}"
  INVENTORY_SIZES="${INVENTORY_SIZES:-10000 50000}"
  TREE_SIZES="${TREE_SIZES:-1000 3000}"
  BW_MIB=4
else
  SMALL_N=20000 SMALL_SIZE=16384 LARGE_N=8 LARGE_SIZE=$((256 << 20))
  PART_MIB=64
  ROUNDS="${ROUNDS:-5}"
  SETTINGS="${SETTINGS:-4 16 64 128 default}"
  INVENTORY_SIZES="${INVENTORY_SIZES:-100000 300000 1000000}"
  TREE_SIZES="${TREE_SIZES:-100000 300000}"
  BW_MIB=50
fi
LARGE_SETTINGS="${LARGE_SETTINGS:-$SETTINGS}"
W1_SETTINGS="${W1_SETTINGS:-$SETTINGS}"
W3A_SETTINGS="${W3A_SETTINGS:-$SETTINGS}"
W2_SETTINGS="${W2_SETTINGS:-$LARGE_SETTINGS}"
W3B_SETTINGS="${W3B_SETTINGS:-$LARGE_SETTINGS}"
WORKLOADS="${WORKLOADS:-w1 w2 w3a w3b w4 w5 bw}"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
for s in $W1_SETTINGS $W2_SETTINGS $W3A_SETTINGS $W3B_SETTINGS; do
  [[ $s == default || $s =~ ^[1-9][0-9]*$ ]] || die "bad setting '$s' (a number or 'default')"
done
# The no-op re-run repeats w1 at the defaults when they are swept, else at the first setting.
NOOP_SETTING=default
[[ " $W1_SETTINGS " == *" default "* ]] || NOOP_SETTING="${W1_SETTINGS%% *}"
want() { [[ " $WORKLOADS " == *" $1 "* ]]; }

WORK="${BENCH_DIR:-$ROOT/target/bench}"
STAMP="$(date +%Y%m%d-%H%M%S)"
RUNS="$WORK/runs/$STAMP-$MODE"
CORPUS="$WORK/corpus"
RESULTS="$RUNS/results.jsonl"
CHECKS="$RUNS/checks.jsonl"
MACHINE="$RUNS/machine.txt"
SMALL_DIR="$CORPUS/small-${SMALL_N}x${SMALL_SIZE}-s$SEED"
LARGE_DIR="$CORPUS/large-${LARGE_N}x${LARGE_SIZE}-s$SEED"
SRC_BUCKET=moverctl-a
DST_BUCKET=moverctl-b
SMALL_KEY="bench-corpus/v1-s$SEED/small-${SMALL_N}x${SMALL_SIZE}"
LARGE_KEY="bench-corpus/v1-s$SEED/large-${LARGE_N}x${LARGE_SIZE}"
DST_ROOT="bench-run/$STAMP-$MODE"
mkdir -p "$RUNS" "$CORPUS"
: >"$RESULTS"
: >"$CHECKS"
T_START=$SECONDS

# ------------------------------------------------------------------------------------------------
# Tools

need_pkg() { # need_pkg COMMAND PACKAGE
  command -v "$1" >/dev/null 2>&1 && return 0
  log "installing $2"
  apt-get install -y "$2" >"$RUNS/apt-$2.log" 2>&1 ||
    { apt-get update >>"$RUNS/apt-$2.log" 2>&1 && apt-get install -y "$2" >>"$RUNS/apt-$2.log" 2>&1; } ||
    die "apt-get install $2 failed (log: $RUNS/apt-$2.log)"
}
need_pkg rclone rclone
[[ -x /usr/bin/time ]] || need_pkg /usr/bin/time time
command -v python3 >/dev/null || die "python3 is required"

# ------------------------------------------------------------------------------------------------
# Servers (reused when running; stopped at the end only if this script started them, like
# scripts/test.sh) and the moverctl build

ENV_FILE="$("$ROOT/scripts/servers.sh" env)"
STARTED_SERVERS=0
[[ -f $ENV_FILE ]] || STARTED_SERVERS=1
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  local rc=$?
  if ((STARTED_SERVERS)); then "$ROOT/scripts/servers.sh" stop >/dev/null 2>&1 || true; fi
  if [[ $KEEP != 1 ]]; then rm -rf "${CORPUS:?}" "${RUNS:?}/bin"; fi
  exit "$rc"
}
trap cleanup EXIT
log "starting (or reusing) the test servers"
# Garage's default (and fast) metadata engine for new instances; see scripts/servers.sh.
export MOVERCTL_GARAGE_DB="${MOVERCTL_GARAGE_DB:-lmdb}"
"$ROOT/scripts/servers.sh" start >&2
# shellcheck disable=SC1090
source "$ENV_FILE"
GARAGE_PID="$(cat "$MOVERCTL_TEST_SERVERS_DIR/run/garage-a.pid")"
GARAGE_LOG="$MOVERCTL_TEST_SERVERS_DIR/logs/garage-a.log"
[[ $MOVERCTL_TEST_S3_ENDPOINT == http://127.0.0.1:* ]] || die "S3 endpoint is not on 127.0.0.1"

# BENCH_PROFILE=debug (smoke runs in CI only: the tests just built it) skips the release build;
# its timings mean nothing, but every step of the harness runs.
PROFILE="${BENCH_PROFILE:-release}"
[[ $PROFILE == release || ($PROFILE == debug && $MODE == smoke) ]] ||
  die "BENCH_PROFILE=debug is for --smoke only"
log "building moverctl (cargo build, $PROFILE profile)"
T_BUILD=$SECONDS
if [[ $PROFILE == release ]]; then
  (cd "$ROOT" && cargo build --release --quiet) || die "cargo build --release failed"
else
  (cd "$ROOT" && cargo build --quiet) || die "cargo build failed"
fi
BUILD_S=$((SECONDS - T_BUILD))
# A private copy: other people rebuilding target/$PROFILE during the run must not change it.
mkdir -p "$RUNS/bin"
cp "$ROOT/target/$PROFILE/moverctl" "$RUNS/bin/moverctl"
MOVERCTL="$RUNS/bin/moverctl"
export MOVERCTL_STATE_DIR="$RUNS/state"

# moverctl: two remote names for the same Garage; --no-server-side (moverctl_cmd) streams the bytes
# through this host as rclone does here (server-side copies: bench/server_side.sh).
REMOTES="$RUNS/remotes.toml"
for r in bsrc bdst; do
  cat <<EOF
[remotes.$r]
type = "s3"
provider = "onprem"
endpoint = "$MOVERCTL_TEST_S3_ENDPOINT"
region = "$MOVERCTL_TEST_S3_REGION"
access_key_id_env = "MOVERCTL_TEST_S3_KEY_ID"
secret_access_key_env = "MOVERCTL_TEST_S3_SECRET"

EOF
done >"$REMOTES"

# rclone: configured by environment only; two differently named remotes, so rclone streams the
# bytes through this host instead of a server-side CopyObject.
export RCLONE_CONFIG=/dev/null
for r in BSRC BDST; do
  export "RCLONE_CONFIG_${r}_TYPE=s3" "RCLONE_CONFIG_${r}_PROVIDER=Other" \
    "RCLONE_CONFIG_${r}_ENDPOINT=$MOVERCTL_TEST_S3_ENDPOINT" \
    "RCLONE_CONFIG_${r}_ACCESS_KEY_ID=$MOVERCTL_TEST_S3_KEY_ID" \
    "RCLONE_CONFIG_${r}_SECRET_ACCESS_KEY=$MOVERCTL_TEST_S3_SECRET" \
    "RCLONE_CONFIG_${r}_REGION=$MOVERCTL_TEST_S3_REGION" \
    "RCLONE_CONFIG_${r}_FORCE_PATH_STYLE=true" "RCLONE_CONFIG_${r}_NO_CHECK_BUCKET=true"
done
# rclone 1.60 fails with LoadCustomCABundleError when AWS_CA_BUNDLE is set: unset it for rclone only.
RCLONE=(env -u AWS_CA_BUNDLE rclone)

# ------------------------------------------------------------------------------------------------
# Machine description (noise: the machine is shared; the load average is recorded)

{
  echo "date: $(date -u +%FT%TZ)   mode: $MODE   rounds: $ROUNDS"
  echo "settings (concurrency): w1 [$W1_SETTINGS]  w2 [$W2_SETTINGS]  w3a [$W3A_SETTINGS]  w3b [$W3B_SETTINGS]  no-op at [$NOOP_SETTING]"
  echo "nproc: $(nproc)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  free -h | sed 's/^/mem: /'
  echo "kernel: $(uname -r)"
  echo "moverctl: $("$MOVERCTL" --version) at $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?')$(cd "$ROOT" && [[ -n $(git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null) ]] && echo ' (src has uncommitted changes from concurrent work)')"
  echo "rclone: $("${RCLONE[@]}" version 2>/dev/null | head -1)"
  echo "server: Garage $("${MOVERCTL_TOOLS:-$HOME/.cache/moverctl/tools}/bin/garage" --version 2>/dev/null | head -1 || true) garage-a pid $GARAGE_PID, 127.0.0.1, $(grep -o 'db_engine = "[a-z]*"' "$MOVERCTL_TEST_SERVERS_DIR/garage-a/garage.toml" 2>/dev/null || echo 'db_engine ?'); buckets $SRC_BUCKET -> $DST_BUCKET"
  echo "corpora: small ${SMALL_N} x ${SMALL_SIZE} B, large ${LARGE_N} x ${LARGE_SIZE} B, part size ${PART_MIB} MiB, seed $SEED"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$MACHINE"

# ------------------------------------------------------------------------------------------------
# Corpora: generated locally (deterministic), seeded once into Garage with rclone

log "generating corpora in $CORPUS"
python3 "$LIB/gen.py" files "$SMALL_DIR" "$SMALL_N" "$SMALL_SIZE" "$SEED"
python3 "$LIB/gen.py" files "$LARGE_DIR" "$LARGE_N" "$LARGE_SIZE" "$SEED"
SMALL_BYTES=$((SMALL_N * SMALL_SIZE))
LARGE_BYTES=$((LARGE_N * LARGE_SIZE))

# rclone_size REMOTE:PATH -> "count bytes"
rclone_size() {
  "${RCLONE[@]}" size --json "$1" 2>/dev/null |
    python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["count"], v["bytes"])' 2>/dev/null || echo "0 0"
}

seed() { # seed LOCAL_DIR KEY COUNT BYTES
  local have
  have="$(rclone_size "bsrc:$SRC_BUCKET/$2")"
  if [[ $have == "$3 $4" ]]; then
    log "source $SRC_BUCKET/$2 already seeded ($3 objects)"
    return 0
  fi
  log "seeding $SRC_BUCKET/$2 with rclone ($3 objects, $4 bytes)"
  "${RCLONE[@]}" copy "$1" "bsrc:$SRC_BUCKET/$2" --checksum --transfers 16 --checkers 16 \
    --s3-chunk-size "${PART_MIB}M" --s3-upload-cutoff "${PART_MIB}M" >"$RUNS/seed.log" 2>&1 ||
    die "seeding $2 failed (log: $RUNS/seed.log)"
  have="$(rclone_size "bsrc:$SRC_BUCKET/$2")"
  [[ $have == "$3 $4" ]] || die "seeded $2 holds '$have', expected '$3 $4'"
}
seed "$SMALL_DIR" "$SMALL_KEY" "$SMALL_N" "$SMALL_BYTES"
seed "$LARGE_DIR" "$LARGE_KEY" "$LARGE_N" "$LARGE_BYTES"

# Does Garage log requests (MOVERCTL_GARAGE_LOG at info)? Without it, request counts are missing.
# (grep -c, not -q: under pipefail an early exit of grep would fail the pipeline)
if [[ $(tail -c 2000000 "$GARAGE_LOG" | grep -c "GET /$SRC_BUCKET?.*prefix=bench-corpus" || true) == 0 ]]; then
  log "WARNING: Garage does not log requests (MOVERCTL_GARAGE_LOG=warn?): request counts will be missing"
fi

log "loopback baseline"
echo "loopback (python, 1 MiB writes): $(python3 "$LIB/loopback.py" 1024) MB/s" >>"$MACHINE"

# ------------------------------------------------------------------------------------------------
# Running and checking one measured command

SEQ=0
FAILS=0
MEASURE_EXTRA=()
fail() {
  log "FAILED: $*"
  FAILS=$((FAILS + 1))
}

# measure KIND WORKLOAD SETTING TOOL ROUND SRC_KIND BYTES OBJECTS TOKENS -- CMD...
# MEASURE_EXTRA (array): more measure.py flags for this call.
# TOKENS: space-separated strings that mark this run's requests: the run's destination prefix
# and the source prefix, without a trailing / so that a HEAD of the prefix itself counts too
# (names are chosen so that no token is a substring of another run's names).
# Sets RUN_ID and RUN_RC; RUN_OUT / RUN_ERR are the command's stdout and stderr files.
measure() {
  local kind=$1 wl=$2 setting=$3 tool=$4 round=$5 src_kind=$6 bytes=$7 objects=$8 tokens=$9
  shift 10
  SEQ=$((SEQ + 1))
  RUN_ID="$SEQ-$wl-$setting-$tool-r$round"
  RUN_OUT="$RUNS/$RUN_ID.out"
  RUN_ERR="$RUNS/$RUN_ID.err"
  local m=() t
  for t in $tokens; do m+=(--match "$t"); done
  RUN_RC=0
  python3 "$LIB/measure.py" --out "$RESULTS" --server-pid "$GARAGE_PID" --server-log "$GARAGE_LOG" \
    --timeout "$RUN_TIMEOUT" "${m[@]}" ${MEASURE_EXTRA[@]+"${MEASURE_EXTRA[@]}"} --stdout "$RUN_OUT" --stderr "$RUN_ERR" \
    --meta "run_id=$RUN_ID" --meta "kind=$kind" --meta "workload=$wl" --meta "setting=$setting" \
    --meta "tool=$tool" --meta "round=$round" --meta "src_kind=$src_kind" --meta "bytes=$bytes" \
    --meta "objects=$objects" -- "$@" || RUN_RC=$?
  local line
  line="$(tail -n1 "$RESULTS")"
  log "$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("%-34s rc=%s wall=%.2fs rss=%sKB cpu=%.2fs server=%ss req=%s" % (r["run_id"], r["rc"], r["wall_s"], r.get("rss_kb"), r.get("user_s",0)+r.get("sys_s",0), r.get("server_cpu_s"), r.get("requests_total")))' "$line")"
  if ((RUN_RC != 0)); then
    fail "$RUN_ID exited $RUN_RC; last lines of $RUN_ERR:"
    tail -n 5 "$RUN_ERR" >&2 || true
  fi
}

check() { # check OK DETAIL: records the outcome of the last run's check
  python3 -c 'import json,sys; print(json.dumps({"run_id": sys.argv[1], "ok": sys.argv[2] == "1", "detail": sys.argv[3]}))' \
    "$RUN_ID" "$1" "$2" >>"$CHECKS"
  [[ $1 == 1 ]] || fail "$RUN_ID: $2"
}

# The destination must hold exactly the corpus afterwards; moverctl's summary must agree.
check_copy() { # check_copy DST_PREFIX COUNT BYTES TOOL
  local have detail=""
  have="$(rclone_size "bdst:$DST_BUCKET/$1")"
  [[ $have == "$2 $3" ]] || detail="destination holds '$have' (count bytes), expected '$2 $3'"
  if [[ $4 == moverctl* && -z $detail ]]; then
    detail="$(python3 - "$RUN_OUT" "$2" <<'PY'
import json, sys
s = None
for line in open(sys.argv[1]):
    if '"event":"summary"' in line.replace(" ", ""):
        s = json.loads(line)
if s is None:
    print("no --json summary from moverctl")
elif s["failed"]["objects"] or s["copied"]["objects"] + s["skipped"]["objects"] != int(sys.argv[2]):
    print(f"moverctl summary: copied {s['copied']['objects']}, skipped {s['skipped']['objects']}, failed {s['failed']['objects']}")
PY
)"
  fi
  if [[ -z $detail ]]; then check 1 "complete"; else check 0 "$detail"; fi
}

# A no-op re-run must transfer nothing.
check_noop() { # check_noop TOOL COUNT
  local detail=""
  if [[ $1 == moverctl* ]]; then
    detail="$(python3 - "$RUN_OUT" "$2" <<'PY'
import json, sys
s = None
for line in open(sys.argv[1]):
    if '"event":"summary"' in line.replace(" ", ""):
        s = json.loads(line)
if s is None:
    print("no --json summary from moverctl")
elif s["copied"]["objects"] or s["failed"]["objects"] or s["skipped"]["objects"] != int(sys.argv[2]):
    print(f"not a no-op: copied {s['copied']['objects']}, skipped {s['skipped']['objects']}, failed {s['failed']['objects']}")
PY
)"
  else
    local n
    n="$(grep -c ': Copied (' "$RUN_ERR" || true)"
    [[ $n == 0 ]] || detail="rclone copied $n objects on a no-op re-run"
  fi
  if [[ -z $detail ]]; then check 1 "nothing copied"; else check 0 "$detail"; fi
}

# ------------------------------------------------------------------------------------------------
# Commands

# moverctl_cmd SETTING SRC DST JOURNAL [EXTRA...] -> CMD array
moverctl_cmd() {
  local setting=$1 src=$2 dst=$3 journal=$4
  shift 4
  CMD=("$MOVERCTL" copy --config "$REMOTES" "$src" "$dst" --json --journal "$journal" --no-server-side)
  if [[ $setting != default ]]; then
    CMD+=(--transfers "$setting" --part-size "${PART_MIB}MiB" --multipart-threshold "${PART_MIB}MiB"
      --part-concurrency 4)
  fi
  CMD+=("$@")
}

rclone_cmd() { # rclone_cmd SETTING SRC DST
  local setting=$1 src=$2 dst=$3
  CMD=("${RCLONE[@]}" copy "$src" "$dst" --checksum -v --stats-one-line)
  if [[ $setting != default ]]; then
    CMD+=(--transfers "$setting" --checkers "$setting" --s3-chunk-size "${PART_MIB}M"
      --s3-upload-cutoff "${PART_MIB}M" --s3-upload-concurrency 4)
  fi
}

# One copy run: copy_run WL SETTING TOOL ROUND
copy_run() {
  local wl=$1 setting=$2 tool=$3 round=$4 src_m src_r src_kind tokens count bytes
  local dst="$DST_ROOT/r$round/$wl-$setting-$tool"
  case $wl in
    w1) src_m="bsrc:$SRC_BUCKET/$SMALL_KEY" src_r="$src_m" src_kind=s3 count=$SMALL_N bytes=$SMALL_BYTES ;;
    w2) src_m="bsrc:$SRC_BUCKET/$LARGE_KEY" src_r="$src_m" src_kind=s3 count=$LARGE_N bytes=$LARGE_BYTES ;;
    w3a) src_m="$SMALL_DIR" src_r="$SMALL_DIR" src_kind=local count=$SMALL_N bytes=$SMALL_BYTES ;;
    w3b) src_m="$LARGE_DIR" src_r="$LARGE_DIR" src_kind=local count=$LARGE_N bytes=$LARGE_BYTES ;;
  esac
  tokens="$dst"
  if [[ $src_kind == s3 ]]; then tokens="$tokens ${src_m#bsrc:"$SRC_BUCKET"/}"; fi
  if [[ $tool == moverctl ]]; then
    moverctl_cmd "$setting" "$src_m" "bdst:$DST_BUCKET/$dst" "$RUNS/journal-$wl-$setting-r$round.sqlite"
  else
    rclone_cmd "$setting" "$src_r" "bdst:$DST_BUCKET/$dst"
  fi
  measure copy "$wl" "$setting" "$tool" "$round" "$src_kind" "$bytes" "$count" "$tokens" -- "${CMD[@]}"
  check_copy "$dst" "$count" "$bytes" "$tool"
}

# The no-op re-run of w1 onto the destination of this round's w1 run at NOOP_SETTING.
noop_run() { # noop_run TOOL ROUND
  local tool=$1 round=$2 setting=$NOOP_SETTING
  local base=moverctl
  [[ $tool == rclone ]] && base=rclone
  local dst="$DST_ROOT/r$round/w1-$setting-$base"
  local tokens="$dst $SMALL_KEY"
  case $tool in
    moverctl) # the same journal as the copy: "verified earlier", no request per object
      moverctl_cmd "$setting" "bsrc:$SRC_BUCKET/$SMALL_KEY" "bdst:$DST_BUCKET/$dst" "$RUNS/journal-w1-$setting-r$round.sqlite" ;;
    moverctl-nojournal) # a fresh journal (another machine): one HEAD per object proves it
      moverctl_cmd "$setting" "bsrc:$SRC_BUCKET/$SMALL_KEY" "bdst:$DST_BUCKET/$dst" "$RUNS/journal-w4-fresh-r$round.sqlite" ;;
    rclone)
      rclone_cmd "$setting" "bsrc:$SRC_BUCKET/$SMALL_KEY" "bdst:$DST_BUCKET/$dst" ;;
  esac
  measure noop w4 "$setting" "$tool" "$round" s3 "$SMALL_BYTES" "$SMALL_N" "$tokens" -- "${CMD[@]}"
  check_noop "$tool" "$SMALL_N"
}

# ------------------------------------------------------------------------------------------------
# The rounds: tools alternate order each round; workloads interleave within a round

for ((round = 1; round <= ROUNDS; round++)); do
  if ((round % 2)); then order=(moverctl rclone); else order=(rclone moverctl); fi
  log "round $round/$ROUNDS (${order[*]})"
  for wl in w1 w2 w3a w3b; do
    want "$wl" || continue
    case $wl in
      w1) settings="$W1_SETTINGS" ;;
      w2) settings="$W2_SETTINGS" ;;
      w3a) settings="$W3A_SETTINGS" ;;
      w3b) settings="$W3B_SETTINGS" ;;
    esac
    for setting in $settings; do
      for tool in "${order[@]}"; do
        copy_run "$wl" "$setting" "$tool" "$round"
      done
    done
  done
  if want w4 && want w1; then
    if ((round % 2)); then noop_order=(moverctl moverctl-nojournal rclone); else noop_order=(rclone moverctl-nojournal moverctl); fi
    for tool in "${noop_order[@]}"; do noop_run "$tool" "$round"; done
  fi
done

# ------------------------------------------------------------------------------------------------
# w5: listing and diffing at scale (once; peak RSS is what matters here)

if want w5; then
  log "w5: inventories ($INVENTORY_SIZES) and trees ($TREE_SIZES)"
  for n in $INVENTORY_SIZES; do
    python3 "$LIB/gen.py" inventory "$CORPUS/inventory-$n.csv" "$n" "$SEED"
    measure list w5-plan "$n" moverctl 1 local 0 "$n" "" -- \
      "$MOVERCTL" plan --from aws:us-east-1 --to backblaze-b2 --inventory "$CORPUS/inventory-$n.csv" --no-probe --json
    if ((RUN_RC == 0)) && ! grep -q "\"objects\": $n\b" "$RUN_OUT"; then
      check 0 "plan output does not show $n objects"
    else check 1 "ok"; fi
  done
  mkdir -p "$CORPUS/empty-dst"
  for n in $TREE_SIZES; do
    log "w5: tree of $n empty files"
    python3 "$LIB/gen.py" tree "$CORPUS/tree-$n" "$n"
    measure list w5-dryrun "$n" moverctl 1 local 0 "$n" "" -- \
      "$MOVERCTL" copy --dry-run "$CORPUS/tree-$n" "$CORPUS/empty-dst"
    if grep -q "would copy.*$n" "$RUN_OUT" "$RUN_ERR"; then check 1 ok; else check 0 "dry run did not report $n objects"; fi
    measure list w5-dryrun "$n" rclone 1 local 0 "$n" "" -- \
      "${RCLONE[@]}" copy --dry-run -q "$CORPUS/tree-$n" "$CORPUS/empty-dst"
    measure list w5-ls "$n" moverctl 1 local 0 "$n" "" -- "$MOVERCTL" ls "$CORPUS/tree-$n"
    if [[ $(grep -c . "$RUN_OUT") -ge $n ]]; then check 1 ok; else check 0 "ls printed fewer than $n lines"; fi
    measure list w5-ls "$n" rclone 1 local 0 "$n" "" -- "${RCLONE[@]}" lsf -R --files-only "$CORPUS/tree-$n"
  done
fi

# ------------------------------------------------------------------------------------------------
# --bwlimit accuracy: moverctl local -> S3 of the large corpus (2 GiB at 50 MiB/s: ~41 s)

if want bw; then
  log "bw: moverctl --bwlimit ${BW_MIB}MiB/s on $LARGE_BYTES bytes"
  dst="$DST_ROOT/bw"
  moverctl_cmd default "$LARGE_DIR" "bdst:$DST_BUCKET/$dst" "$RUNS/journal-bw.sqlite" --bwlimit "${BW_MIB}MiB/s"
  MEASURE_EXTRA=(--sample-net) # the wire rate per second, not only the average
  measure bwlimit bw default moverctl 1 local "$LARGE_BYTES" "$LARGE_N" "$dst" -- "${CMD[@]}"
  MEASURE_EXTRA=()
  check_copy "$dst" "$LARGE_N" "$LARGE_BYTES" moverctl
  python3 - "$RESULTS" "$((BW_MIB << 20))" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
r = json.loads(lines[-1]); r["target_bps"] = int(sys.argv[2]); lines[-1] = json.dumps(r, sort_keys=True)
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
fi

# ------------------------------------------------------------------------------------------------
# Report

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg); bench wall time $((SECONDS - T_START)) s (build ${BUILD_S} s)" >>"$MACHINE"
REPORT="$RUNS/report.md"
RC=0
title="moverctl vs rclone ($MODE, $(date +%F))"
python3 "$LIB/report.py" "$RESULTS" "$CHECKS" "$MACHINE" --expect-rounds "$ROUNDS" --title "$title" >"$REPORT" || RC=1
cat "$REPORT"
if [[ $MODE == full ]]; then
  mkdir -p "$ROOT/bench/results"
  out="$ROOT/bench/results/${OUT_NAME:-$(date +%F)}"
  cp "$REPORT" "$out.md"
  cp "$RESULTS" "$out.jsonl"
  log "results: $out.md (raw records: $out.jsonl; run logs: $RUNS)"
else
  log "smoke report: $REPORT (run logs: $RUNS)"
fi
((FAILS == 0)) || RC=1
log "done in $((SECONDS - T_START)) s (build ${BUILD_S} s), $FAILS failure(s)"
exit "$RC"
