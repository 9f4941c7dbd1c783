#!/usr/bin/env bash
# Predicted against measured: does `moverctl plan`, after `moverctl probe` of the source and the
# destination, predict how long `moverctl exec` of the same plan takes?
#
# On the project's Garage test server (127.0.0.1, S3 -> S3, bucket moverctl-a -> moverctl-b):
#   small  2,000 x 16 KiB
#   large  4 x 256 MiB
# Steps: build (release), upload each corpus to the source once (not timed), probe the source
# and the destination (saved in a private state folder), `plan --save` each corpus with
# `--concurrency` equal to exec's `--transfers`, then `exec` the plan RUNS times into a fresh
# destination prefix (removed after each run) and time it. Prints predicted, the median measured
# and their ratio, with the bound the plan named; exits 1 when a ratio is outside +-25 %.
#
#   bench/calibration.sh                 # RUNS=3, the release build
#   RUNS=1 PROFILE=debug bench/calibration.sh
#   ENV_SH=path/to/env.sh bench/calibration.sh   # test servers' env (default target/test-servers/env.sh)
#
# Everything it writes on Garage is under calib-<stamp>/ in both buckets and removed at the end
# (rclone purge); local files go to target/calibration/<stamp>/.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-3}
PROFILE=${PROFILE:-release}
TRANSFERS=${TRANSFERS:-32}
ENV_SH=${ENV_SH:-$ROOT/target/test-servers/env.sh}
if [[ ! -f $ENV_SH ]]; then
  echo "calibration: no test-server environment at $ENV_SH (scripts/servers.sh start writes it; or set ENV_SH)" >&2
  exit 2
fi
# shellcheck disable=SC1090
source "$ENV_SH"

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
W=$ROOT/target/calibration/$STAMP
mkdir -p "$W"
export MOVERCTL_STATE_DIR=$W/state
log() { echo "calibration: $*" >&2; }

if [[ $PROFILE == release ]]; then
  (cd "$ROOT" && cargo build --release --locked -q)
else
  (cd "$ROOT" && cargo build --locked -q)
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

log "probing source and destination"
"$M" --config "$REMOTES" probe "csrc:$SRC_BUCKET/$PREFIX/" >"$W/probe-src.txt"
"$M" --config "$REMOTES" probe "cdst:$DST_BUCKET/$PREFIX/" >"$W/probe-dst.txt"
grep -E "request rate|engine CPU|streams" "$W/probe-src.txt" "$W/probe-dst.txt" >&2 || true

median() { python3 -c 'import statistics,sys; print(f"{statistics.median(float(x) for x in sys.argv[1:]):.3f}")' "$@"; }

fail=0
printf '%-7s %-22s %10s %10s %7s  %s\n' corpus objects predicted measured ratio "bound (runs)"
for c in small large; do
  "$M" --config "$REMOTES" plan --from onprem --to onprem \
    --src "csrc:$SRC_BUCKET/$PREFIX/$c/" --dst "cdst:$DST_BUCKET/$PREFIX/run/$c/" \
    --concurrency "$TRANSFERS" --save "calib-$c" --plans-dir "$W/plans" --json \
    >"$W/plan-$c.json" 2>"$W/plan-$c.err"
  read -r predicted bound objects bytes < <(python3 -c '
import json,sys
v=json.load(open(sys.argv[1])); c=v["candidates"][0]
print(c["time"]["seconds"], c["time"]["bound"].replace(" ","_"), v["corpus"]["objects"], v["corpus"]["bytes"])' "$W/plan-$c.json")
  times=()
  for i in $(seq 1 "$RUNS"); do
    dst="cdst:$DST_BUCKET/$PREFIX/run-$i/$c/"
    t0=$(date +%s.%N)
    "$M" --config "$REMOTES" exec "$W/plans/calib-$c.toml" --dst "$dst" \
      --transfers "$TRANSFERS" --journal "$W/exec-$c-$i.journal" --stats 0 \
      >"$W/exec-$c-$i.out" 2>"$W/exec-$c-$i.err"
    t1=$(date +%s.%N)
    times+=("$(python3 -c "print(f'{$t1-$t0:.3f}')")")
    purge "$DST_BUCKET/$PREFIX/run-$i"
  done
  measured=$(median "${times[@]}")
  ratio=$(python3 -c "print(f'{float(\"$predicted\")/float(\"$measured\"):.2f}')")
  printf '%-7s %-22s %9.2fs %9.2fs %7s  %s (%s)\n' "$c" "$objects ($bytes B)" "$predicted" "$measured" "$ratio" "${bound//_/ }" "${times[*]}"
  if python3 -c "import sys; r=float('$ratio'); sys.exit(0 if 0.75<=r<=1.25 else 1)"; then :; else fail=1; fi
done
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); moverctl $(cd "$ROOT" && git rev-parse --short HEAD); files in $W"
exit $fail
