#!/usr/bin/env bash
# Predicted against measured for moves copied on the server (issue 29), and for the pair that
# must not be: on the shared test servers (scripts/servers.sh start),
#   same   Garage A bucket moverctl-a -> bucket moverctl-b (one service: exec copies on the server)
#   apart  Garage A bucket moverctl-a -> Garage B (127.0.0.1:3910) bucket moverctl-c (two services:
#          exec streams every byte through this machine)
# for 4 x 256 MiB (in 64 MiB parts, as exec uploads them) and 2,000 x 16 KiB. For each pair and
# corpus: probe the source and the destination (the probe now times the service's own copies:
# CopyObject of a small and a --size object, copies in parallel, UploadPartCopy), `plan --save`
# with `--concurrency` equal to exec's `--transfers` (never --no-server-side: the plan decides as
# exec does), check that the plan and every exec agree on server-side or streamed, and time `exec`
# RUNS times into fresh prefixes. Prints predicted, the median measured, the ratio and the bound;
# exits 1 when a ratio is outside +-25 % or a pair is copied the wrong way.
#
#   bench/calibration_server_side.sh              # RUNS=3, PROFILE=release
#   RUNS=1 PROFILE=debug PAIRS=same CORPORA=large bench/calibration_server_side.sh
#   MBIN=/work/rel/release/moverctl bench/calibration_server_side.sh   # a binary built elsewhere
#
# Everything written on the servers is under calib-ss-<stamp>/ and removed at the end; local files
# go to target/calibration/ss-<stamp>/ (the corpus under target/calibration/corpus is reused).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-3}
PROFILE=${PROFILE:-release}
TRANSFERS=${TRANSFERS:-32}
PROBE_SIZE=${PROBE_SIZE:-64MiB}
PAIRS=${PAIRS:-"same apart"}
CORPORA=${CORPORA:-"large small"}
ENV_SH=${ENV_SH:-${MOVERCTL_SERVERS_DIR:-$ROOT/target/test-servers}/env.sh}
log() { echo "calibration-ss: $*" >&2; }
if [[ ! -f $ENV_SH ]]; then
  log "no test-server environment at $ENV_SH (scripts/servers.sh start writes it)"
  exit 2
fi
# shellcheck disable=SC1090
source "$ENV_SH"

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
W=$ROOT/target/calibration/ss-$STAMP
mkdir -p "$W"
export MOVERCTL_STATE_DIR=$W/state
if [[ -n ${MBIN:-} ]]; then
  : # a binary built elsewhere (MBIN=/path/to/moverctl), e.g. a release build in another target dir
elif [[ $PROFILE == release ]]; then
  (cd "$ROOT" && cargo build --release --locked -q -j "${CARGO_JOBS:-2}")
else
  (cd "$ROOT" && cargo build --locked -q -j "${CARGO_JOBS:-2}")
fi
M=${MBIN:-$ROOT/target/$PROFILE/moverctl}

REMOTES=$W/remotes.toml
cat >"$REMOTES" <<EOF
[remotes.ga]
type = "s3"
provider = "onprem"
endpoint = "$MOVERCTL_TEST_S3_ENDPOINT"
region = "$MOVERCTL_TEST_S3_REGION"
access_key_id_env = "MOVERCTL_TEST_S3_KEY_ID"
secret_access_key_env = "MOVERCTL_TEST_S3_SECRET"

[remotes.gb]
type = "s3"
provider = "onprem"
endpoint = "$MOVERCTL_TEST_S3B_ENDPOINT"
region = "$MOVERCTL_TEST_S3B_REGION"
access_key_id_env = "MOVERCTL_TEST_S3B_KEY_ID"
secret_access_key_env = "MOVERCTL_TEST_S3B_SECRET"
EOF
PREFIX=calib-ss-$STAMP
SRC=ga:$MOVERCTL_TEST_S3_BUCKET_A/$PREFIX
dst_of() { # dst_of PAIR
  case $1 in
    same) echo "ga:$MOVERCTL_TEST_S3_BUCKET_B/$PREFIX" ;;
    apart) echo "gb:$MOVERCTL_TEST_S3B_BUCKET/$PREFIX" ;;
  esac
}
# rclone only removes what this script wrote (configured by environment, never printed).
export RCLONE_CONFIG=/dev/null
for r in GA GB; do
  ep=$MOVERCTL_TEST_S3_ENDPOINT key=$MOVERCTL_TEST_S3_KEY_ID sec=$MOVERCTL_TEST_S3_SECRET
  if [[ $r == GB ]]; then ep=$MOVERCTL_TEST_S3B_ENDPOINT key=$MOVERCTL_TEST_S3B_KEY_ID sec=$MOVERCTL_TEST_S3B_SECRET; fi
  export "RCLONE_CONFIG_${r}_TYPE=s3" "RCLONE_CONFIG_${r}_PROVIDER=Other" "RCLONE_CONFIG_${r}_ENDPOINT=$ep" \
    "RCLONE_CONFIG_${r}_ACCESS_KEY_ID=$key" "RCLONE_CONFIG_${r}_SECRET_ACCESS_KEY=$sec" \
    "RCLONE_CONFIG_${r}_REGION=$MOVERCTL_TEST_S3_REGION" "RCLONE_CONFIG_${r}_FORCE_PATH_STYLE=true"
done
purge() { env -u AWS_CA_BUNDLE rclone purge "$1" >/dev/null 2>&1 || true; }
cleanup() {
  purge "ga:$MOVERCTL_TEST_S3_BUCKET_A/$PREFIX"
  purge "ga:$MOVERCTL_TEST_S3_BUCKET_B/$PREFIX"
  purge "gb:$MOVERCTL_TEST_S3B_BUCKET/$PREFIX"
}
trap cleanup EXIT

CORPUS=$ROOT/target/calibration/corpus
python3 "$ROOT/bench/lib/gen.py" files "$CORPUS/small" 2000 16384 calib-small >/dev/null
python3 "$ROOT/bench/lib/gen.py" files "$CORPUS/large" 4 268435456 calib-large >/dev/null
for c in $CORPORA; do
  "$M" --config "$REMOTES" copy "$CORPUS/$c" "$SRC/$c/" --journal "$W/upload-$c.journal" -q
done

median() { python3 -c 'import statistics,sys; print(f"{statistics.median(float(x) for x in sys.argv[1:]):.3f}")' "$@"; }
load() { cut -d' ' -f1 /proc/loadavg; }
fail=0
rows=()
for pair in $PAIRS; do
  DST=$(dst_of "$pair")
  want=$([[ $pair == same ]] && echo True || echo False)
  for c in $CORPORA; do
    log "$pair/$c: probing source and destination (load $(load))"
    "$M" --config "$REMOTES" probe "$SRC/" --size "$PROBE_SIZE" >"$W/probe-src-$pair-$c.txt"
    "$M" --config "$REMOTES" probe "$DST/" --size "$PROBE_SIZE" >"$W/probe-dst-$pair-$c.txt"
    grep -h "server-side copy" "$W/probe-dst-$pair-$c.txt" >&2 || true
    "$M" --config "$REMOTES" plan --from onprem --to onprem --src "$SRC/$c/" --dst "$DST/run/$c/" \
      --concurrency "$TRANSFERS" --save "ss-$pair-$c" --plans-dir "$W/plans" --json \
      >"$W/plan-$pair-$c.json" 2>"$W/plan-$pair-$c.err"
    read -r predicted bound server_side start < <(python3 -c '
import json,sys
c=json.load(open(sys.argv[1]))["candidates"][0]
print(c["time"]["seconds"], c["time"]["bound"].replace(" ","_"), c["server_side"], c["time"].get("start_seconds", 0))' "$W/plan-$pair-$c.json")
    if [[ $server_side != "$want" ]]; then
      log "WRONG: the plan of $pair/$c says server_side=$server_side"
      fail=1
    fi
    times=() loads=() noops=()
    for i in $(seq 1 "$RUNS"); do
      loads+=("$(load)")
      t0=$(date +%s.%N)
      "$M" --config "$REMOTES" exec "$W/plans/ss-$pair-$c.toml" --dst "$DST/run-$i/$c/" \
        --transfers "$TRANSFERS" --journal "$W/exec-$pair-$c-$i.journal" --stats 0 \
        >"$W/exec-$pair-$c-$i.out" 2>"$W/exec-$pair-$c-$i.err"
      t1=$(date +%s.%N)
      times+=("$(python3 -c "print(f'{$t1-$t0:.3f}')")")
      if cat "$W/exec-$pair-$c-$i.out" "$W/exec-$pair-$c-$i.err" | grep -q "copied by the destination service"; then ran=True; else ran=False; fi
      if [[ $ran != "$want" ]]; then
        log "WRONG: exec of $pair/$c run $i server-side=$ran"
        fail=1
      fi
      # The same plan again, everything already there: exec's fixed cost (start, listings,
      # journal, summary) on this machine now.
      t0=$(date +%s.%N)
      "$M" --config "$REMOTES" exec "$W/plans/ss-$pair-$c.toml" --dst "$DST/run-$i/$c/" \
        --transfers "$TRANSFERS" --journal "$W/exec-$pair-$c-$i.journal" --stats 0 -q \
        >/dev/null 2>&1
      t1=$(date +%s.%N)
      noops+=("$(python3 -c "print(f'{$t1-$t0:.3f}')")")
      purge "$DST/run-$i"
    done
    measured=$(median "${times[@]}")
    noop=$(median "${noops[@]}")
    copy_ratio=$(python3 -c "m=float('$measured')-float('$noop'); p=float('$predicted')-float('$start'); print(f'{p/m:.2f}' if m>0 else '-')")
    ratio=$(python3 -c "print(f'{float(\"$predicted\")/float(\"$measured\"):.2f}')")
    rows+=("$(printf '%-6s %-6s %-11s %9.3fs %9.3fs %6s  %s; start %ss; nothing-to-copy exec %ss, copy part ratio %s (runs %s; load %s)' "$pair" "$c" "$([[ $server_side == True ]] && echo server-side || echo streamed)" "$predicted" "$measured" "$ratio" "${bound//_/ }" "$start" "$noop" "$copy_ratio" "${times[*]}" "${loads[*]}")")
    python3 -c "import sys; r=float('$ratio'); sys.exit(0 if 0.75<=r<=1.25 else 1)" || fail=1
  done
done
printf '%-6s %-6s %-11s %10s %10s %6s  %s\n' pair corpus copy predicted measured ratio "bound (runs; load average before each)"
printf '%s\n' "${rows[@]}"
echo "servers: $MOVERCTL_TEST_S3_ENDPOINT and $MOVERCTL_TEST_S3B_ENDPOINT; probe --size $PROBE_SIZE; exec --transfers $TRANSFERS; $PROFILE build"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); moverctl $(cd "$ROOT" && git rev-parse --short HEAD); files in $W"
exit $fail
