#!/usr/bin/env bash
# `stage` against `copy` on the same corpus (issue 28): N objects of SIZE bytes in the shared test
# Garage (scripts/servers.sh), copied S3 -> a local folder by
#   copy      moverctl copy SRC DIR
#   stage     moverctl stage SRC DIR                (the same engine + its listing-free marker
#                                                    and manifest work)
#   nodes2    moverctl stage SRC DIR --node 0/2, then --node 1/2 (one machine runs both in turn:
#             each lists the whole source once for the split, then its range)
#   rerun     moverctl stage SRC DIR again on a staged folder (copies nothing)
#   evict     moverctl stage SRC DIR --evict (a HEAD per staged file, then removal)
# Each row ROUNDS times into a fresh folder (fresh state dir too); medians and the ratio to copy.
# Environment: COUNT (500) SIZE (262144) ROUNDS (3) MOVERCTL (target/release/moverctl when built,
# else target/debug/moverctl) OUT (bench/results/<date>-stage.md)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
COUNT="${COUNT:-500}"
SIZE="${SIZE:-262144}"
ROUNDS="${ROUNDS:-3}"
if [ -z "${MOVERCTL:-}" ]; then
  MOVERCTL="$ROOT/target/release/moverctl"
  [ -x "$MOVERCTL" ] || MOVERCTL="$ROOT/target/debug/moverctl"
fi
OUT="${OUT:-$ROOT/bench/results/$(date -u +%F)-stage.md}"
ENV_SH="${ENV_SH:-$ROOT/target/test-servers/env.sh}"
[ -f "$ENV_SH" ] || ENV_SH=/work/main/target/test-servers/env.sh
# shellcheck disable=SC1090
source "$ENV_SH"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cat >"$WORK/remotes.toml" <<TOML
[remotes.garage]
type = "s3"
provider = "onprem"
endpoint = "$MOVERCTL_TEST_S3_ENDPOINT"
region = "$MOVERCTL_TEST_S3_REGION"
access_key_id_env = "MOVERCTL_TEST_S3_KEY_ID"
secret_access_key_env = "MOVERCTL_TEST_S3_SECRET"
TOML
export MOVERCTL_CONFIG="$WORK/remotes.toml"
PREFIX="bench-stage-$(date +%s)"
SRC="garage:$MOVERCTL_TEST_S3_BUCKET_A/$PREFIX"
mkdir -p "$WORK/corpus"
python3 - "$WORK/corpus" "$COUNT" "$SIZE" <<'PY'
import os, random, sys
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = random.Random(42)
for i in range(n):
    os.makedirs(f"{d}/part-{i % 8}", exist_ok=True)
    with open(f"{d}/part-{i % 8}/sample-{i:05d}.bin", "wb") as f:
        f.write(r.randbytes(size))
PY
MOVERCTL_STATE_DIR="$WORK/seed-state" "$MOVERCTL" copy "$WORK/corpus" "$SRC" --quiet
echo "corpus: $COUNT x $SIZE bytes at $SRC; binary $MOVERCTL" >&2

secs() { python3 -c 'import time; print(f"{time.time():.3f}")'; }
run_row() { # row round -> seconds
  local row=$1 r=$2 dir="$WORK/dst-$1-$2" t0 t1
  export MOVERCTL_STATE_DIR="$WORK/state-$row-$r"
  case "$row" in
    rerun|evict) "$MOVERCTL" stage "$SRC" "$dir" --quiet ;;
  esac
  t0=$(secs)
  case "$row" in
    copy) "$MOVERCTL" copy "$SRC" "$dir" --quiet ;;
    stage|rerun) "$MOVERCTL" stage "$SRC" "$dir" --quiet ;;
    nodes2) "$MOVERCTL" stage "$SRC" "$dir" --node 0/2 --quiet \
      && "$MOVERCTL" stage "$SRC" "$dir" --node 1/2 --quiet ;;
    evict) "$MOVERCTL" stage "$SRC" "$dir" --evict --quiet ;;
  esac
  t1=$(secs)
  if [ "$row" != evict ]; then
    local n
    n=$(find "$dir" -type f -name 'sample-*' | wc -l)
    [ "$n" -eq "$COUNT" ] || { echo "$row: $n files, want $COUNT" >&2; exit 1; }
  fi
  python3 -c "print(round($t1 - $t0, 3))"
}

declare -A T
for r in $(seq 1 "$ROUNDS"); do
  for row in copy stage nodes2 rerun evict; do
    T[$row]="${T[$row]:-} $(run_row "$row" "$r")"
  done
done
{
  echo "# stage against copy ($(date -u +%F))"
  echo
  echo "$COUNT objects x $SIZE bytes, Garage (shared test server) -> local folder, $ROUNDS rounds, medians; $(basename "$(dirname "$MOVERCTL")") build."
  echo
  echo "| row | seconds (median) | MB/s | time / copy |"
  echo "|---|---|---|---|"
  copy_med=$(python3 -c "import statistics,sys; print(statistics.median(map(float, sys.argv[1:])))" ${T[copy]})
  for row in copy stage nodes2 rerun evict; do
    python3 - "$row" "$copy_med" "$COUNT" "$SIZE" ${T[$row]} <<'PY'
import statistics, sys
row, copy, n, size = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
m = statistics.median(map(float, sys.argv[5:]))
rate = n * size / m / 1e6 if row not in ("rerun", "evict") else float("nan")
print(f"| {row} | {m:.3f} | {rate:.1f} | {m / copy:.2f} |")
PY
  done
} | tee "$OUT"
