#!/usr/bin/env bash
# The fast tier: moverctl vs rclone (--checksum) vs cp on local destinations.
#
#   bench/local.sh                 8 x 256 MiB, 3 rounds: local -> local and S3 -> local
#   N=2 SIZE_MIB=2048 bench/local.sh   2 x 2 GiB (check `df` first: needs ~3 x N x SIZE free)
#
# Rows (same files, same machine, medians of ROUNDS):
#   local->local  moverctl (--fsync object, the default), moverctl --fsync never, rclone copy
#                 --checksum, cp -r
#   S3->local     moverctl, moverctl --fsync never, rclone copy --checksum (Garage bucket
#                 moverctl-a, corpus uploaded once by rclone: multipart ETags), and the physical
#                 reference: N parallel `curl --aws-sigv4` GETs into files (no verification)
#   hash          md5sum of the files (one core): what verifying by MD5 costs any tool
# The server's CPU in each run is read from /proc (Garage shares the machine's cores), and the
# report gives the floor of an S3->local copy verified by MD5 on this machine: the curl run's
# client and server CPU plus md5sum's, over the cores.
# Each run writes into an empty folder. Page cache: the source files are read once before the
# rounds (warm); destinations are written into the page cache (only --fsync object forces them to
# disk before the run ends). Reported: wall time, MB/s, user and system CPU, system CPU per GiB,
# peak RSS (GNU time).
#
# Environment: N (8) SIZE_MIB (256) ROUNDS (3) MAX_BUFFER (128MiB) OUT (report path; default
# bench/results/<date>-local-<N>x<SIZE>.md) KEEP=1 keeps the corpus.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
N="${N:-8}"
SIZE_MIB="${SIZE_MIB:-256}"
ROUNDS="${ROUNDS:-3}"
MAX_BUFFER="${MAX_BUFFER:-128MiB}"
WORK="${BENCH_DIR:-$ROOT/target/bench}/local-${N}x${SIZE_MIB}"
OUT="${OUT:-$ROOT/bench/results/$(date -u +%Y-%m-%d)-local-${N}x${SIZE_MIB}.md}"
ENV_SH="${MOVERCTL_TEST_SERVERS_DIR:-/work/main/target/test-servers}/env.sh"
# shellcheck disable=SC1090
source "$ENV_SH"

log() { printf '[bench-local %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

need=$((3 * N * SIZE_MIB))
avail=$(($(df -Pm "$(dirname "$WORK")" 2>/dev/null | awk 'NR==2{print $4}' || echo 0)))
if ((avail > 0 && avail < need + 2048)); then
  log "ERROR: $avail MiB free under $(dirname "$WORK"), need about $need MiB"
  exit 1
fi

(cd "$ROOT" && cargo build --release --quiet)
mkdir -p "$WORK/bin"
cp "$ROOT/target/release/moverctl" "$WORK/bin/moverctl"
MOVERCTL="$WORK/bin/moverctl"
export MOVERCTL_STATE_DIR="$WORK/state"

SRC="$WORK/src"
if [[ $(find "$SRC" -type f 2>/dev/null | wc -l) -ne $N ]]; then
  log "generating $N x $SIZE_MIB MiB"
  rm -rf "$SRC" && mkdir -p "$SRC"
  for i in $(seq 0 $((N - 1))); do
    python3 - "$SRC/shard-$i.bin" "$SIZE_MIB" "$i" <<'EOF'
import random, sys
path, mib, i = sys.argv[1], int(sys.argv[2]), sys.argv[3]
r = random.Random(f"42:{i}")
with open(path, "wb") as f:
    for _ in range(mib):
        f.write(r.randbytes(1 << 20))
EOF
  done
fi

REMOTES="$WORK/remotes.toml"
cat >"$REMOTES" <<EOF
[remotes.bsrc]
type = "s3"
provider = "onprem"
endpoint = "$MOVERCTL_TEST_S3_ENDPOINT"
region = "$MOVERCTL_TEST_S3_REGION"
access_key_id_env = "MOVERCTL_TEST_S3_KEY_ID"
secret_access_key_env = "MOVERCTL_TEST_S3_SECRET"
EOF
export RCLONE_CONFIG=/dev/null
export RCLONE_CONFIG_BSRC_TYPE=s3 RCLONE_CONFIG_BSRC_PROVIDER=Other \
  RCLONE_CONFIG_BSRC_ENDPOINT="$MOVERCTL_TEST_S3_ENDPOINT" \
  RCLONE_CONFIG_BSRC_ACCESS_KEY_ID="$MOVERCTL_TEST_S3_KEY_ID" \
  RCLONE_CONFIG_BSRC_SECRET_ACCESS_KEY="$MOVERCTL_TEST_S3_SECRET" \
  RCLONE_CONFIG_BSRC_REGION="$MOVERCTL_TEST_S3_REGION" \
  RCLONE_CONFIG_BSRC_FORCE_PATH_STYLE=true RCLONE_CONFIG_BSRC_NO_CHECK_BUCKET=true
RCLONE=(env -u AWS_CA_BUNDLE rclone)
BUCKET_PREFIX="bench-local/${N}x${SIZE_MIB}-s42"
log "seeding s3://$MOVERCTL_TEST_S3_BUCKET_A/$BUCKET_PREFIX with rclone (reused when present)"
"${RCLONE[@]}" copy --checksum "$SRC" "bsrc:$MOVERCTL_TEST_S3_BUCKET_A/$BUCKET_PREFIX" 2>/dev/null

# Warm the page cache with the source files.
cat "$SRC"/* >/dev/null

# The S3 server's process, whose CPU each run reports (empty when it cannot be found).
SERVER_PID="$(cat "$(dirname "$ENV_SH")/run/garage-a.pid" 2>/dev/null || true)"
server_ticks() {
  if [[ -n $SERVER_PID && -r /proc/$SERVER_PID/stat ]]; then
    awk '{print $14 + $15}' "/proc/$SERVER_PID/stat"
  else
    echo 0
  fi
}
TICKS="$(getconf CLK_TCK)"
# curl_get DIR: the physical reference, every object with its own GET at once, written to DIR.
curl_get() {
  local i
  for f in "$SRC"/*; do
    i="$(basename "$f")"
    curl -sf -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
      --aws-sigv4 "aws:amz:$MOVERCTL_TEST_S3_REGION:s3" \
      -u "$MOVERCTL_TEST_S3_KEY_ID:$MOVERCTL_TEST_S3_SECRET" \
      -o "$1/$i" "$MOVERCTL_TEST_S3_ENDPOINT/$MOVERCTL_TEST_S3_BUCKET_A/$BUCKET_PREFIX/$i" &
  done
  wait
}
export -f curl_get
export SRC BUCKET_PREFIX

RAW="$WORK/raw.tsv"
: >"$RAW"
# run ROW-NAME command...: one measured run into a fresh $WORK/dst.
run() {
  local name="$1"
  shift
  rm -rf "$WORK/dst" "$WORK/state" && mkdir -p "$WORK/dst"
  sync
  local t="$WORK/time.txt" s0 s1
  s0="$(server_ticks)"
  if ! /usr/bin/time -f '%e %U %S %M' -o "$t" "$@" >"$WORK/out.txt" 2>&1; then
    log "FAILED: $name"
    tail -5 "$WORK/out.txt" >&2
    return 1
  fi
  s1="$(server_ticks)"
  # Every file must be exact (a hash row writes none).
  if [[ $name != hash* ]]; then
    for f in "$SRC"/*; do
      cmp -s "$f" "$WORK/dst/$(basename "$f")" || {
        log "WRONG BYTES: $name $(basename "$f")"
        return 1
      }
    done
  fi
  read -r wall user sys rss <"$t"
  local server
  server="$(python3 -c "print(f'{($s1 - $s0) / $TICKS:.2f}')")"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$wall" "$user" "$sys" "$rss" "$server" >>"$RAW"
  log "$name: ${wall}s user ${user}s sys ${sys}s rss ${rss}KB server ${server}s"
}

S3="bsrc:$MOVERCTL_TEST_S3_BUCKET_A/$BUCKET_PREFIX"
for r in $(seq 1 "$ROUNDS"); do
  log "round $r"
  run "local->local | moverctl (--fsync object)" "$MOVERCTL" copy "$SRC" "$WORK/dst" --max-buffer "$MAX_BUFFER" --journal "$WORK/j.sqlite"
  rm -f "$WORK/j.sqlite"
  run "local->local | moverctl --fsync never" "$MOVERCTL" copy "$SRC" "$WORK/dst" --fsync never --max-buffer "$MAX_BUFFER" --journal "$WORK/j.sqlite"
  rm -f "$WORK/j.sqlite"
  run "local->local | rclone --checksum" "${RCLONE[@]}" copy --checksum "$SRC" "$WORK/dst"
  run "local->local | cp -r" sh -c "cp -r '$SRC'/. '$WORK/dst'/"
  run "S3->local | moverctl (--fsync object)" "$MOVERCTL" --config "$REMOTES" copy "$S3" "$WORK/dst" --max-buffer "$MAX_BUFFER" --journal "$WORK/j.sqlite"
  rm -f "$WORK/j.sqlite"
  run "S3->local | moverctl --fsync never" "$MOVERCTL" --config "$REMOTES" copy "$S3" "$WORK/dst" --fsync never --max-buffer "$MAX_BUFFER" --journal "$WORK/j.sqlite"
  rm -f "$WORK/j.sqlite"
  run "S3->local | rclone --checksum" "${RCLONE[@]}" copy --checksum "$S3" "$WORK/dst"
  run "S3->local | curl, one GET per object (no verification)" bash -c "curl_get '$WORK/dst'"
  run "hash | md5sum (one core)" md5sum "$SRC"/*
done
rm -rf "$WORK/dst"

mkdir -p "$(dirname "$OUT")"
python3 "$ROOT/bench/lib/local_report.py" "$RAW" "$N" "$SIZE_MIB" "$ROUNDS" "$MAX_BUFFER" >"$OUT"
log "report: $OUT"
cat "$OUT"
if [[ ${KEEP:-0} != 1 ]]; then
  rm -rf "$SRC"
fi
