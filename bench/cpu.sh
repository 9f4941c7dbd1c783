#!/usr/bin/env bash
# The CPU cost of a GiB (issue 15): moverctl's checksum-only path against its MD5 path
# (`--verify md5`), rclone 1.60 `copy --checksum`, and cp / dd, on one private Garage.
#
#   bench/cpu.sh                       4 x 256 MiB (1 GiB) for rows 1-3, 8 x 256 MiB (2 GiB) for
#                                      row 4, 3 rounds
#   ROUNDS=1 N=2 SIZE_MIB=64 SC_N=2 bench/cpu.sh     a quick look
#
# Rows (each tool on the same corpus and server; the tools' order rotates from round to round):
#   1  local -> S3        moverctl (checksum path: its destination prefix probed first),
#                         moverctl --verify md5, rclone copy --checksum
#      and a first-time copy (a fresh state folder, nothing saved about the destination): at
#      the defaults (the probe on first use grants the checksum path), and with --no-probe (what
#      a first copy got before the probe on first use: the MD5 path)
#   2  S3 -> S3, source uploaded by rclone in 5 MiB parts (rclone's default chunk size: foreign
#      multipart objects whose only digest is their multipart ETag): the same three tools
#   3  S3 -> S3, source uploaded by moverctl into a probed prefix (it carries moverctl's CRC64
#      metadata and a stored full-object CRC64): the same three tools
#   4  one core (`taskset -c 0` around the client; Garage is not pinned), SC_N x SIZE_MIB:
#      local -> local: moverctl --fsync never (and with --part-concurrency 1), rclone copy
#      --checksum, cp -r, dd bs=16M (none of these syncs the files); local -> S3: moverctl,
#      moverctl --verify md5, rclone
#   ref  md5sum over the row-1 corpus: what one MD5 pass costs on this CPU; and the physical
#        reference of the S3 rows: one `curl --aws-sigv4` PUT per row-1 file (UNSIGNED-PAYLOAD,
#        all at once, no hashing), and one curl GET per row-3 source object into /dev/null. A
#        copy's floor on this machine's loopback is their CPU: local -> S3 the PUTs', S3 -> S3
#        the GETs' and the PUTs' added (the kernel's loopback TCP work, charged to the client,
#        is most of it)
# Every S3 -> S3 moverctl run passes --no-server-side (the two buckets share one Garage and one
# key, so it would otherwise copy on the server). Both tools run at their defaults otherwise
# (moverctl: 64 MiB parts, 64 transfers; rclone: 5 MiB chunks, 4 transfers).
#
# Before every run the file systems are synced (outside the measurement), so no writeback of an
# earlier run's dirty pages lands in its window. Measured per run by bench/lib/measure.py (GNU time -v): user and system CPU of the client,
# wall time, peak RSS, and Garage's CPU in the window. Each run then passes
# bench/lib/cpu_check.py: exit 0, moverctl's --json summary copied every object and its
# verified_by labels are the row's (e.g. ...+dest-checksum on the checksum path, no
# dest-checksum under --verify md5), and the destination holds every object and byte (local
# destinations compared with cmp). A failed check fails the script (exit 1) after the report.
#
# Environment: N (4) SIZE_MIB (256) SC_N (8: row 4's file count) ROUNDS (3) ROWS ("1 2 3 4 ref")
# PORT (3980: the private Garage's S3 port; RPC +1, admin +3) OUT (report; default
# bench/results/<date>-cpu.md, raw records in the .jsonl beside it) BENCH_DIR (target/bench)
# MOVERCTL_BIN (a built moverctl to measure instead of building one) RCLONE_BIN (the rclone to
# run; default the one on PATH) ROW1_TOOLS ("m m5 r mf mfn"; also "mt": moverctl through a remote
# with trailing_checksum = true, a local file's parts streamed with their CRC64 in a trailer)
# KEEP=1 keeps the corpora and the Garage data (the Garage is stopped either way).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
N="${N:-4}"
SIZE_MIB="${SIZE_MIB:-256}"
SC_N="${SC_N:-8}"
ROUNDS="${ROUNDS:-3}"
ROWS="${ROWS:-1 2 3 4 ref}"
PORT="${PORT:-3980}"
WORK="${BENCH_DIR:-$ROOT/target/bench}/cpu"
OUT="${OUT:-$ROOT/bench/results/$(date -u +%Y-%m-%d)-cpu.md}"
RAW="${OUT%.md}.jsonl"
SIZE=$((SIZE_MIB << 20))
BYTES1=$((N * SIZE))
BYTES4=$((SC_N * SIZE))
((SC_N >= N)) || {
  echo "SC_N ($SC_N) must be at least N ($N)" >&2
  exit 2
}

log() { printf '[bench-cpu %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# Disk: the row-4 corpus (the row-1 corpus is hard links into it), one local destination at a
# time, and Garage's data (it deduplicates blocks, so copies of the corpus add little).
mkdir -p "$WORK"
need=$(((3 * SC_N + 2 * N) * SIZE_MIB))
avail=$(df -Pm "$WORK" | awk 'NR==2{print $4}')
if ((avail < need + 2048)); then
  log "ERROR: $avail MiB free under $WORK, need about $need MiB"
  exit 1
fi

mkdir -p "$WORK/bin"
if [[ -n ${MOVERCTL_BIN:-} ]]; then
  cp "$MOVERCTL_BIN" "$WORK/bin/moverctl"
else
  (cd "$ROOT" && cargo build -j 2 --release --quiet --bin moverctl)
  cp "${CARGO_TARGET_DIR:-$ROOT/target}/release/moverctl" "$WORK/bin/moverctl"
fi
M="$WORK/bin/moverctl"
export MOVERCTL_STATE_DIR="$WORK/state"
rm -rf "$MOVERCTL_STATE_DIR"

GDIR="$WORK/garage"
"$ROOT/bench/lib/own-garage.sh" start "$GDIR" "$PORT" >/dev/null
cleanup() {
  "$ROOT/bench/lib/own-garage.sh" stop "$GDIR" || true
  if [[ ${KEEP:-0} != 1 ]]; then
    rm -rf "${WORK:?}/sc" "$WORK/c1" "$WORK/sc.complete" "$WORK/dst" "$GDIR/data" "$GDIR/meta"
  fi
}
trap cleanup EXIT
# shellcheck disable=SC1091
source "$GDIR/env.sh"
GPID=$(cat "$GDIR/garage.pid")

REMOTES="$WORK/remotes.toml"
for r in gsrc gdst gfirst gtrail; do
  cat <<EOT
[remotes.$r]
type = "s3"
provider = "onprem"
endpoint = "$MOVERCTL_TEST_S3_ENDPOINT"
region = "$MOVERCTL_TEST_S3_REGION"
access_key_id_env = "MOVERCTL_TEST_S3_KEY_ID"
secret_access_key_env = "MOVERCTL_TEST_S3_SECRET"
$([[ $r == gtrail ]] && echo "trailing_checksum = true")

EOT
done >"$REMOTES"
export RCLONE_CONFIG=/dev/null
for r in GSRC GDST; do
  export "RCLONE_CONFIG_${r}_TYPE=s3" "RCLONE_CONFIG_${r}_PROVIDER=Other" \
    "RCLONE_CONFIG_${r}_ENDPOINT=$MOVERCTL_TEST_S3_ENDPOINT" \
    "RCLONE_CONFIG_${r}_ACCESS_KEY_ID=$MOVERCTL_TEST_S3_KEY_ID" \
    "RCLONE_CONFIG_${r}_SECRET_ACCESS_KEY=$MOVERCTL_TEST_S3_SECRET" \
    "RCLONE_CONFIG_${r}_REGION=$MOVERCTL_TEST_S3_REGION" \
    "RCLONE_CONFIG_${r}_FORCE_PATH_STYLE=true" "RCLONE_CONFIG_${r}_NO_CHECK_BUCKET=true"
done
RCLONE=(env -u AWS_CA_BUNDLE "${RCLONE_BIN:-rclone}")
A="$MOVERCTL_TEST_S3_BUCKET_A"
B="$MOVERCTL_TEST_S3_BUCKET_B"

# Corpora: SC_N seeded files (bench/lib/gen.py, seed 42); the row-1..3 corpus is the first N of
# them, hard-linked.
SC="$WORK/sc"
C1="$WORK/c1"
log "corpus: $SC_N x $SIZE_MIB MiB (reused when its marker matches)"
python3 "$ROOT/bench/lib/gen.py" files "$SC" "$SC_N" "$SIZE" 42
rm -rf "$C1" && mkdir -p "$C1"
find "$SC" -maxdepth 1 -type f -name '*.bin' | sort | head -n "$N" | xargs -I{} ln {} "$C1/"
cat "$SC"/* >/dev/null # warm the page cache

# Saved probes of every moverctl destination (the checksum-only path is granted only by the
# catalog or a saved probe of the exact location) and of the row-3 source prefix.
probe() {
  "$M" --config "$REMOTES" probe "$1" --size 1MiB --streams 2 --requests 3 >"$WORK/probe.txt" 2>&1 || {
    log "probe of $1 failed"
    tail -5 "$WORK/probe.txt" >&2
    exit 1
  }
  grep -q 'x-amz-checksum-crc64nvme: wrong value rejected *┆ yes' "$WORK/probe.txt" || {
    log "the probe of $1 did not see a wrong CRC64 refused"
    exit 1
  }
}
SRC_RCLONE="gsrc:$A/cpu/src-rclone-5m"
SRC_CRC="gsrc:$A/cpu/src-moverctl-crc"
log "probing the destinations"
for d in "$SRC_CRC" gdst:"$B"/cpu/{r1,r2,r3,r4}-{m,m5} "gtrail:$B/cpu/r1-mt"; do
  probe "$d"
done

rm -f "$RAW"
mkdir -p "$(dirname "$RAW")"
FAILED=0
ROUND=0

# measure ROW TOOL BYTES -- CMD...: one measured run, recorded in RAW.
measure() {
  local row=$1 tool=$2 bytes=$3
  shift 4
  sync # no dirty pages of an earlier run (Garage's writes, a local copy) in this run's window
  python3 "$ROOT/bench/lib/measure.py" --out "$RAW" --server-pid "$GPID" \
    --meta "row=\"$row\"" --meta "tool=\"$tool\"" --meta "round=$ROUND" --meta "bytes=$bytes" \
    --stdout "$WORK/out.txt" --stderr "$WORK/err.txt" -- "$@" || {
    log "FAILED: $row | $tool (exit $?)"
    tail -5 "$WORK/err.txt" >&2
  }
}
# check ARGS...: bench/lib/cpu_check.py on the last record.
check() {
  if python3 "$ROOT/bench/lib/cpu_check.py" "$RAW" "$@"; then
    python3 - "$RAW" <<'PY' >&2
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
cpu = r["user_s"] + r["sys_s"]
vb = ",".join(f"{k}:{v}" for k, v in ((r.get("summary") or {}).get("verified_by") or {}).items())
print(f"  {r['row']} | {r['tool']}: wall {r['wall_s']:.2f}s cpu {cpu:.2f}s "
      f"({cpu / (r['bytes'] / 2**30):.2f} s/GiB) rss {r['rss_kb'] // 1024} MB {vb}")
PY
  else
    FAILED=1
  fi
}
s3clear() { "${RCLONE[@]}" delete "$1" >/dev/null 2>&1 || true; }
j() { rm -f "$WORK/j.sqlite"* && echo "$WORK/j.sqlite"; }

CRC_LOCAL='source-size\+dest-checksum'
MD5_WRITE='dest-(md5|multipart-etag)'

# One run of each row and tool. $1 = tool id.
run_r1() {
  local d="gdst:$B/cpu/r1-$1" row="1 local->S3"
  s3clear "$d"
  case $1 in
    m) measure "$row" "moverctl" "$BYTES1" -- "$M" --config "$REMOTES" copy "$C1" "$d" --json --journal "$(j)"
       check --objects "$N" --bytes "$BYTES1" --labels "$CRC_LOCAL" --s3-dest "$d" ;;
    m5) measure "$row" "moverctl --verify md5" "$BYTES1" -- "$M" --config "$REMOTES" copy "$C1" "$d" --verify md5 --json --journal "$(j)"
       check --objects "$N" --bytes "$BYTES1" --labels "source-size\+$MD5_WRITE" --forbid checksum --s3-dest "$d" ;;
    # Parts streamed as they are read, their CRC64 in a trailer (the remote's trailing_checksum).
    mt) measure "$row" "moverctl, trailing checksum" "$BYTES1" -- "$M" --config "$REMOTES" copy "$C1" "gtrail:$B/cpu/r1-mt" --json --journal "$(j)"
       check --objects "$N" --bytes "$BYTES1" --labels "$CRC_LOCAL" --s3-dest "$d" ;;
    r) measure "$row" "rclone --checksum" "$BYTES1" -- "${RCLONE[@]}" copy --checksum "$C1" "$d"
       check --objects "$N" --bytes "$BYTES1" --s3-dest "$d" ;;
    # First-time copies: a state folder of their own, empty, so nothing is saved about gfirst.
    mf) rm -rf "$WORK/state-first"
       measure "$row" "moverctl, first copy" "$BYTES1" -- env MOVERCTL_STATE_DIR="$WORK/state-first" "$M" --config "$REMOTES" copy "$C1" "gfirst:$B/cpu/r1-mf" --json --journal "$(j)"
       check --objects "$N" --bytes "$BYTES1" --labels "$CRC_LOCAL" --s3-dest "$d" ;;
    mfn) rm -rf "$WORK/state-first"
       measure "$row" "moverctl, first copy --no-probe" "$BYTES1" -- env MOVERCTL_STATE_DIR="$WORK/state-first" "$M" --config "$REMOTES" copy "$C1" "gfirst:$B/cpu/r1-mfn" --no-probe --json --journal "$(j)"
       check --objects "$N" --bytes "$BYTES1" --labels "source-size\+$MD5_WRITE" --forbid checksum --s3-dest "$d" ;;
  esac
}
run_s3s3() { # run_s3s3 ROWNUM ROWNAME SRC READ-LABEL-REGEX TOOL
  local n=$1 row=$2 src=$3 read=$4 d="gdst:$B/cpu/r$1-$5"
  s3clear "$d"
  case $5 in
    m) measure "$row" "moverctl" "$BYTES1" -- "$M" --config "$REMOTES" copy --no-server-side "$src" "$d" --json --journal "$(j)"
       check --objects "$N" --bytes "$BYTES1" --labels "$read\+dest-checksum" --s3-dest "$d" ;;
    m5) measure "$row" "moverctl --verify md5" "$BYTES1" -- "$M" --config "$REMOTES" copy --no-server-side "$src" "$d" --verify md5 --json --journal "$(j)"
       check --objects "$N" --bytes "$BYTES1" --labels "source-[a-z0-9-]+\+$MD5_WRITE" --forbid dest-checksum --s3-dest "$d" ;;
    r) measure "$row" "rclone --checksum" "$BYTES1" -- "${RCLONE[@]}" copy --checksum "$src" "$d"
       check --objects "$N" --bytes "$BYTES1" --s3-dest "$d" ;;
  esac
  : "$n"
}
run_r2() { run_s3s3 2 "2 S3->S3 rclone-written source" "$SRC_RCLONE" 'source-parts-etag' "$1"; }
run_r3() { run_s3s3 3 "3 S3->S3 moverctl-written source" "$SRC_CRC" 'source-(crc64|checksum)' "$1"; }
# shellcheck disable=SC2016 # cp's and dd's arguments are expanded by the inner sh
run_r4() {
  local dst="$WORK/dst" d="gdst:$B/cpu/r4-$1" ll="4 one core local->local" ls="4 one core local->S3"
  local T=(taskset -c 0)
  rm -rf "$dst" && mkdir -p "$dst"
  case $1 in
    lm) measure "$ll" "moverctl --fsync never" "$BYTES4" -- "${T[@]}" "$M" copy "$SC" "$dst" --fsync never --json --journal "$(j)"
        check --objects "$SC_N" --bytes "$BYTES4" --labels 'source-size\+dest-written-crc64' --local-dest "$dst" --local-src "$SC" ;;
    lm1) measure "$ll" "moverctl --fsync never --part-concurrency 1" "$BYTES4" -- "${T[@]}" "$M" copy "$SC" "$dst" --fsync never --part-concurrency 1 --json --journal "$(j)"
        check --objects "$SC_N" --bytes "$BYTES4" --labels 'source-size\+dest-written-crc64' --local-dest "$dst" --local-src "$SC" ;;
    lr) measure "$ll" "rclone --checksum" "$BYTES4" -- "${T[@]}" "${RCLONE[@]}" copy --checksum "$SC" "$dst"
        check --objects "$SC_N" --bytes "$BYTES4" --local-dest "$dst" --local-src "$SC" ;;
    lc) measure "$ll" "cp -r" "$BYTES4" -- "${T[@]}" sh -c 'cp -r "$1"/. "$2"/' sh "$SC" "$dst"
        check --objects "$SC_N" --bytes "$BYTES4" --local-dest "$dst" --local-src "$SC" ;;
    ld) measure "$ll" "dd bs=16M" "$BYTES4" -- "${T[@]}" sh -c 'for f in "$1"/*; do dd if="$f" of="$2/${f##*/}" bs=16M status=none; done' sh "$SC" "$dst"
        check --objects "$SC_N" --bytes "$BYTES4" --local-dest "$dst" --local-src "$SC" ;;
    m) s3clear "$d"
       measure "$ls" "moverctl" "$BYTES4" -- "${T[@]}" "$M" --config "$REMOTES" copy "$SC" "$d" --json --journal "$(j)"
       check --objects "$SC_N" --bytes "$BYTES4" --labels "$CRC_LOCAL" --s3-dest "$d" ;;
    m5) s3clear "$d"
       measure "$ls" "moverctl --verify md5" "$BYTES4" -- "${T[@]}" "$M" --config "$REMOTES" copy "$SC" "$d" --verify md5 --json --journal "$(j)"
       check --objects "$SC_N" --bytes "$BYTES4" --labels "source-size\+$MD5_WRITE" --forbid checksum --s3-dest "$d" ;;
    r) d="gdst:$B/cpu/r4-r"
       s3clear "$d"
       measure "$ls" "rclone --checksum" "$BYTES4" -- "${T[@]}" "${RCLONE[@]}" copy --checksum "$SC" "$d"
       check --objects "$SC_N" --bytes "$BYTES4" --s3-dest "$d" ;;
  esac
  rm -rf "$dst"
}
# curl_all put|get DIR-OR-PREFIX BUCKET/PREFIX: one curl per row-1 file, all at once.
curl_all() {
  local f name pids=()
  for f in "$C1"/*; do
    name="${f##*/}"
    if [[ $1 == put ]]; then
      curl -sf -o /dev/null -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
        --aws-sigv4 "aws:amz:$MOVERCTL_TEST_S3_REGION:s3" \
        -u "$MOVERCTL_TEST_S3_KEY_ID:$MOVERCTL_TEST_S3_SECRET" \
        -T "$f" "$MOVERCTL_TEST_S3_ENDPOINT/$2/$name" &
    else
      curl -sf -o /dev/null -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
        --aws-sigv4 "aws:amz:$MOVERCTL_TEST_S3_REGION:s3" \
        -u "$MOVERCTL_TEST_S3_KEY_ID:$MOVERCTL_TEST_S3_SECRET" \
        "$MOVERCTL_TEST_S3_ENDPOINT/$2/$name" &
    fi
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || return 1; done
}
export -f curl_all
export C1
run_rref() {
  measure "ref one MD5 pass" "md5sum" "$BYTES1" -- md5sum "$C1"/*
  check --objects "$N" --bytes "$BYTES1"
  s3clear "gdst:$B/cpu/ref-curl"
  measure "ref physical" "curl PUT, one per file" "$BYTES1" -- bash -c 'curl_all put "$1"' _ "$B/cpu/ref-curl"
  check --objects "$N" --bytes "$BYTES1" --s3-dest "gdst:$B/cpu/ref-curl"
  measure "ref physical" "curl GET, one per object" "$BYTES1" -- bash -c 'curl_all get "$1"' _ "$A/cpu/src-moverctl-crc"
  check --objects "$N" --bytes "$BYTES1"
}

# Sources of rows 2 and 3, written once (not measured).
if [[ " $ROWS " == *" 2 "* ]]; then
  log "row-2 source: rclone, 5 MiB parts -> $SRC_RCLONE"
  s3clear "$SRC_RCLONE"
  "${RCLONE[@]}" copy --checksum --s3-chunk-size 5M --s3-upload-cutoff 5M "$C1" "$SRC_RCLONE"
fi
if [[ " $ROWS " == *" 3 "* ]]; then
  log "row-3 source: moverctl into the probed $SRC_CRC"
  s3clear "$SRC_CRC"
  "$M" --config "$REMOTES" copy "$C1" "$SRC_CRC" --json --journal "$(j)" >"$WORK/seed.txt"
  tail -1 "$WORK/seed.txt" | grep -q '"verified_by":{"source-size+dest-checksum":'"$N"'}' || {
    log "the row-3 source was not written on the checksum path: $(tail -1 "$WORK/seed.txt")"
    exit 1
  }
fi

LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
STARTED="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
for ROUND in $(seq 1 "$ROUNDS"); do
  for row in $ROWS; do
    case $row in
      1) read -ra tools <<<"${ROW1_TOOLS:-m m5 r mf mfn}" ;;
      2 | 3) tools=(m m5 r) ;;
      4) tools=(lm lm1 lr lc ld m m5 r) ;;
      ref) tools=(x) ;;
      *) log "unknown row $row"; exit 2 ;;
    esac
    k=${#tools[@]}
    log "round $ROUND, row $row (load $(cut -d' ' -f1 /proc/loadavg))"
    for i in $(seq 0 $((k - 1))); do
      "run_r$row" "${tools[$(((i + ROUND - 1) % k))]}"
    done
  done
done
LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg)"

mkdir -p "$(dirname "$OUT")"
python3 "$ROOT/bench/lib/cpu_report.py" "$RAW" \
  --n "$N" --size-mib "$SIZE_MIB" --sc-n "$SC_N" --rounds "$ROUNDS" \
  --load-start "$LOAD_START" --load-end "$LOAD_END" --started "$STARTED" \
  --commit "$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- src || echo '+dirty src')" \
  --garage "$("${MOVERCTL_TOOLS:-$HOME/.cache/moverctl/tools}/bin/garage" --version 2>/dev/null | head -1 || echo '?')" \
  --rclone "$(rclone version 2>/dev/null | head -1)" >"$OUT"
log "report: $OUT (raw: $RAW)"
cat "$OUT"
if ((FAILED)); then
  log "some runs failed their checks (see the report)"
  exit 1
fi
