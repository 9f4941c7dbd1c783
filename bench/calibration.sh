#!/usr/bin/env bash
# Predicted against measured: does `moverctl plan`, after `moverctl probe` of the source and the
# destination, predict how long `moverctl exec` of the same plan takes?
#
# On a Garage S3 server on 127.0.0.1 (S3 -> S3, bucket moverctl-a -> moverctl-b), streamed:
# plan and exec run with --no-server-side (two buckets of one Garage would otherwise be copied on
# the server, which this model does not time):
#   small  2,000 x 16 KiB
#   large  4 x 256 MiB
# Steps: build (release), upload each corpus to the source once (not timed); then for each
# corpus: probe the source and the destination (saved in a private state folder; the
# throughput phase with objects of exec's part size, --size 64MiB), `plan --save` with
# `--concurrency` equal to exec's `--transfers`, and `exec` the plan RUNS times into a fresh
# destination prefix (removed after each run), timed, with the load average before each run.
# Prints predicted, the median measured and their ratio, with the bound the plan named; exits 1
# when a ratio is outside +-25 %.
#
#   bench/calibration.sh                 # RUNS=3, the release build, a private LMDB Garage
#   RUNS=1 PROFILE=debug bench/calibration.sh
#   GARAGE=shared bench/calibration.sh   # the test servers instead (their env file:
#                                        # ENV_SH, default $MOVERCTL_SERVERS_DIR/env.sh)
#
# GARAGE=own (the default) starts a single-node Garage with LMDB (Garage's default engine; the
# test servers use sqlite) on 127.0.0.1:$CALIB_S3_PORT (default 3960; RPC +1, admin +3) with its
# data under target/calibration/garage, and stops it (its recorded PID only) at the end; it never
# touches the shared test servers. Everything written on Garage is under calib-<stamp>/ in both
# buckets and removed at the end (rclone purge); local files go to target/calibration/<stamp>/.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-3}
PROFILE=${PROFILE:-release}
TRANSFERS=${TRANSFERS:-32}
PROBE_SIZE=${PROBE_SIZE:-64MiB}
GARAGE=${GARAGE:-own}
CALIB_S3_PORT=${CALIB_S3_PORT:-3960}
OWN_DIR=$ROOT/target/calibration/garage
STARTED_GARAGE=0
log() { echo "calibration: $*" >&2; }
case $GARAGE in
  own)
    if [[ -f $OWN_DIR/garage.pid ]] && kill -0 "$(cat "$OWN_DIR/garage.pid")" 2>/dev/null; then
      log "reusing the private Garage already running in $OWN_DIR"
    else
      STARTED_GARAGE=1
    fi
    ENV_SH=$("$ROOT/bench/lib/own-garage.sh" start "$OWN_DIR" "$CALIB_S3_PORT") || {
      if ((STARTED_GARAGE)); then "$ROOT/bench/lib/own-garage.sh" stop "$OWN_DIR"; fi
      exit 2
    }
    ;;
  shared)
    ENV_SH=${ENV_SH:-${MOVERCTL_SERVERS_DIR:-$ROOT/target/test-servers}/env.sh}
    if [[ ! -f $ENV_SH ]]; then
      echo "calibration: no test-server environment at $ENV_SH (scripts/servers.sh start writes it; or set ENV_SH or MOVERCTL_SERVERS_DIR)" >&2
      exit 2
    fi
    ;;
  *)
    echo "calibration: GARAGE must be own or shared" >&2
    exit 2
    ;;
esac
# shellcheck disable=SC1090
source "$ENV_SH"

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
W=$ROOT/target/calibration/$STAMP
mkdir -p "$W"
export MOVERCTL_STATE_DIR=$W/state

if [[ $PROFILE == release ]]; then
  (cd "$ROOT" && cargo build --release --locked -q -j "${CARGO_JOBS:-2}")
else
  (cd "$ROOT" && cargo build --locked -q -j "${CARGO_JOBS:-2}")
fi
M=$ROOT/target/$PROFILE/moverctl

REMOTES=$W/remotes.toml
for r in csrc cdst; do
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
SRC_BUCKET=$MOVERCTL_TEST_S3_BUCKET_A
DST_BUCKET=$MOVERCTL_TEST_S3_BUCKET_B
PREFIX=calib-$STAMP

# rclone only removes what this script wrote (configured by environment, never printed).
export RCLONE_CONFIG=/dev/null RCLONE_CONFIG_CG_TYPE=s3 RCLONE_CONFIG_CG_PROVIDER=Other \
  RCLONE_CONFIG_CG_ENDPOINT=$MOVERCTL_TEST_S3_ENDPOINT \
  RCLONE_CONFIG_CG_ACCESS_KEY_ID=$MOVERCTL_TEST_S3_KEY_ID \
  RCLONE_CONFIG_CG_SECRET_ACCESS_KEY=$MOVERCTL_TEST_S3_SECRET \
  RCLONE_CONFIG_CG_REGION=$MOVERCTL_TEST_S3_REGION RCLONE_CONFIG_CG_FORCE_PATH_STYLE=true
purge() { env -u AWS_CA_BUNDLE rclone purge "cg:$1" >/dev/null 2>&1 || true; }
cleanup() {
  purge "$SRC_BUCKET/$PREFIX"
  purge "$DST_BUCKET/$PREFIX"
  if ((STARTED_GARAGE)); then "$ROOT/bench/lib/own-garage.sh" stop "$OWN_DIR" || true; fi
}
trap cleanup EXIT

log "corpora (bench/lib/gen.py, seeded, reused when present)"
CORPUS=$ROOT/target/calibration/corpus
python3 "$ROOT/bench/lib/gen.py" files "$CORPUS/small" 2000 16384 calib-small >/dev/null
python3 "$ROOT/bench/lib/gen.py" files "$CORPUS/large" 4 268435456 calib-large >/dev/null
for c in small large; do
  "$M" --config "$REMOTES" copy "$CORPUS/$c" "csrc:$SRC_BUCKET/$PREFIX/$c/" \
    --journal "$W/upload-$c.journal" >/dev/null 2>"$W/upload-$c.err"
done

median() { python3 -c 'import statistics,sys; print(f"{statistics.median(float(x) for x in sys.argv[1:]):.3f}")' "$@"; }

fail=0
load() { cut -d' ' -f1 /proc/loadavg; }
rows=()
for c in small large; do
  log "$c: probing source and destination (load $(load))"
  "$M" --config "$REMOTES" probe "csrc:$SRC_BUCKET/$PREFIX/" --size "$PROBE_SIZE" >"$W/probe-src-$c.txt"
  "$M" --config "$REMOTES" probe "cdst:$DST_BUCKET/$PREFIX/" --size "$PROBE_SIZE" >"$W/probe-dst-$c.txt"
  grep -hE "request rate|engine CPU|streams" "$W/probe-src-$c.txt" "$W/probe-dst-$c.txt" >&2 || true
  "$M" --config "$REMOTES" plan --from onprem --to onprem \
    --src "csrc:$SRC_BUCKET/$PREFIX/$c/" --dst "cdst:$DST_BUCKET/$PREFIX/run/$c/" \
    --concurrency "$TRANSFERS" --save "calib-$c" --plans-dir "$W/plans" --json --no-server-side \
    >"$W/plan-$c.json" 2>"$W/plan-$c.err"
  read -r predicted bound objects bytes < <(python3 -c '
import json,sys
v=json.load(open(sys.argv[1])); c=v["candidates"][0]
print(c["time"]["seconds"], c["time"]["bound"].replace(" ","_"), v["corpus"]["objects"], v["corpus"]["bytes"])' "$W/plan-$c.json")
  times=() loads=()
  for i in $(seq 1 "$RUNS"); do
    dst="cdst:$DST_BUCKET/$PREFIX/run-$i/$c/"
    loads+=("$(load)")
    t0=$(date +%s.%N)
    "$M" --config "$REMOTES" exec "$W/plans/calib-$c.toml" --dst "$dst" \
      --transfers "$TRANSFERS" --journal "$W/exec-$c-$i.journal" --stats 0 --no-server-side \
      >"$W/exec-$c-$i.out" 2>"$W/exec-$c-$i.err"
    t1=$(date +%s.%N)
    times+=("$(python3 -c "print(f'{$t1-$t0:.3f}')")")
    purge "$DST_BUCKET/$PREFIX/run-$i"
  done
  measured=$(median "${times[@]}")
  ratio=$(python3 -c "print(f'{float(\"$predicted\")/float(\"$measured\"):.2f}')")
  rows+=("$(printf '%-7s %-22s %9.2fs %9.2fs %7s  %s (runs %s; load %s)' "$c" "$objects ($bytes B)" "$predicted" "$measured" "$ratio" "${bound//_/ }" "${times[*]}" "${loads[*]}")")
  if python3 -c "import sys; r=float('$ratio'); sys.exit(0 if 0.75<=r<=1.25 else 1)"; then :; else fail=1; fi
done
printf '%-7s %-22s %10s %10s %7s  %s\n' corpus objects predicted measured ratio "bound (runs; load average before each)"
printf '%s\n' "${rows[@]}"
echo "server: Garage $("${MOVERCTL_TOOLS:-$HOME/.cache/moverctl/tools}/bin/garage" --version 2>/dev/null | head -1 | cut -d' ' -f2 || true) ($GARAGE, $MOVERCTL_TEST_S3_ENDPOINT); probe --size $PROBE_SIZE; exec --transfers $TRANSFERS"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); moverctl $(cd "$ROOT" && git rev-parse --short HEAD); files in $W"
exit $fail
