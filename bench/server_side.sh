#!/usr/bin/env bash
# Server-side copy (issue 15): two buckets of one Garage, moverctl vs rclone, with every byte
# between the tools and Garage counted by a relay (bench/lib/countproxy.py).
#
#   bench/server_side.sh              8 x 256 MiB and 20,000 x 16 KiB, 3 rounds
#   LARGE_N=2 SMALL_N=200 ROUNDS=1 bench/server_side.sh     a quick look
#
# Rows, per corpus (moverctl-a -> moverctl-b, one endpoint, one key, a fresh prefix per run):
#   moverctl                  defaults: CopyObject / UploadPartCopy where provable
#   moverctl --no-server-side the bytes streamed through this host and verified
#   rclone                    `rclone copy` between two remotes of the same Garage with
#                             --server-side-across-configs (its server-side copy), --checksum
# Reported: wall time (median), bytes through the host (client -> server + server -> client at
# the relay, median), user+system CPU. The corpus is uploaded once by rclone in 5 MiB parts
# (multipart ETags; the small objects single-part).
#
# Environment: LARGE_N (8) LARGE_MIB (256) SMALL_N (20000) ROUNDS (3) PORT (3999, the relay)
# OUT (report; default bench/results/<date>-server-side.md) PROFILE (release)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LARGE_N="${LARGE_N:-8}"
LARGE_MIB="${LARGE_MIB:-256}"
SMALL_N="${SMALL_N:-20000}"
ROUNDS="${ROUNDS:-3}"
PORT="${PORT:-3999}"
PROFILE="${PROFILE:-release}"
WORK="${BENCH_DIR:-$ROOT/target/bench}/server-side"
OUT="${OUT:-$ROOT/bench/results/$(date -u +%Y-%m-%d)-server-side.md}"
ENV_SH="${MOVERCTL_TEST_SERVERS_DIR:-${MOVERCTL_SERVERS_DIR:-$ROOT/target/test-servers}}/env.sh"
# shellcheck disable=SC1090
source "$ENV_SH"

log() { printf '[bench-ss %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [[ $PROFILE == release ]]; then
  (cd "$ROOT" && cargo build --release --quiet)
else
  (cd "$ROOT" && cargo build --quiet)
fi
mkdir -p "$WORK/bin"
cp "$ROOT/target/$PROFILE/moverctl" "$WORK/bin/moverctl"
M="$WORK/bin/moverctl"
export MOVERCTL_STATE_DIR="$WORK/state"

# The relay in front of Garage; both tools talk to it only.
python3 "$ROOT/bench/lib/countproxy.py" "$PORT" "${MOVERCTL_TEST_S3_ENDPOINT#http://}" "$WORK/count.json" &
RELAY=$!
trap 'kill $RELAY 2>/dev/null || true' EXIT
sleep 0.5
EP="http://127.0.0.1:$PORT"

REMOTES="$WORK/remotes.toml"
for r in bsrc bdst; do
  cat <<EOT
[remotes.$r]
type = "s3"
provider = "onprem"
endpoint = "$EP"
region = "$MOVERCTL_TEST_S3_REGION"
access_key_id_env = "MOVERCTL_TEST_S3_KEY_ID"
secret_access_key_env = "MOVERCTL_TEST_S3_SECRET"

EOT
done >"$REMOTES"
export RCLONE_CONFIG=/dev/null
for r in BSRC BDST; do
  export "RCLONE_CONFIG_${r}_TYPE=s3" "RCLONE_CONFIG_${r}_PROVIDER=Other" \
    "RCLONE_CONFIG_${r}_ENDPOINT=$EP" \
    "RCLONE_CONFIG_${r}_ACCESS_KEY_ID=$MOVERCTL_TEST_S3_KEY_ID" \
    "RCLONE_CONFIG_${r}_SECRET_ACCESS_KEY=$MOVERCTL_TEST_S3_SECRET" \
    "RCLONE_CONFIG_${r}_REGION=$MOVERCTL_TEST_S3_REGION" \
    "RCLONE_CONFIG_${r}_FORCE_PATH_STYLE=true" "RCLONE_CONFIG_${r}_NO_CHECK_BUCKET=true"
done
RCLONE=(env -u AWS_CA_BUNDLE rclone)
A="$MOVERCTL_TEST_S3_BUCKET_A"
B="$MOVERCTL_TEST_S3_BUCKET_B"

# Corpora, uploaded once (reused when the prefix holds them).
gen() { # gen DIR N BYTES
  python3 - "$@" <<'PY'
import os, random, sys
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
r = random.Random(f"ss:{n}:{size}")
for i in range(n):
    p = os.path.join(d, f"{i // 1000:03d}/obj-{i:06d}.bin")
    os.makedirs(os.path.dirname(p), exist_ok=True)
    if not os.path.exists(p) or os.path.getsize(p) != size:
        with open(p, "wb") as f:
            left = size
            while left:
                k = min(left, 1 << 20)
                f.write(r.randbytes(k))
                left -= k
PY
}
LARGE="large-${LARGE_N}x${LARGE_MIB}"
SMALL="small-${SMALL_N}x16k"
for c in "$LARGE:$LARGE_N:$((LARGE_MIB << 20))" "$SMALL:$SMALL_N:16384"; do
  IFS=: read -r name n size <<<"$c"
  have=$("$M" --config "$REMOTES" ls "bsrc:$A/bench-ss/$name" 2>/dev/null | tail -1 | awk '{print $1}' || true)
  if [[ $have -ne $n ]]; then
    log "generating and uploading $name"
    gen "$WORK/$name" "$n" "$size"
    "${RCLONE[@]}" copy --checksum --transfers 32 --s3-chunk-size 5M --s3-upload-cutoff 5M \
      "$WORK/$name" "bsrc:$A/bench-ss/$name" 2>/dev/null
    [[ ${KEEP:-0} == 1 ]] || rm -rf "${WORK:?}/$name"
  fi
done

rm -f "$WORK"/j-*.sqlite
RAW="$WORK/raw.tsv"
: >"$RAW"
run() { # run CORPUS ROW N command...
  local corpus=$1 row=$2 n=$3
  shift 3
  local before after t="$WORK/time.txt"
  before=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["from_clients"]+d["to_clients"])' "$WORK/count.json")
  if ! /usr/bin/time -f '%e %U %S %M' -o "$t" "$@" >"$WORK/out.txt" 2>&1; then
    log "FAILED: $corpus $row"
    tail -5 "$WORK/out.txt" >&2
    return 1
  fi
  sleep 0.6
  after=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["from_clients"]+d["to_clients"])' "$WORK/count.json")
  read -r wall user sys rss <"$t"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$corpus" "$row" "$wall" "$user" "$sys" "$rss" "$((after - before))" >>"$RAW"
  log "$corpus | $row: ${wall}s cpu $(python3 -c "print(round($user+$sys,2))")s through host $((after - before)) B"
}

for r in $(seq 1 "$ROUNDS"); do
  for corpus in "$LARGE" "$SMALL"; do
    n=$([[ $corpus == "$LARGE" ]] && echo "$LARGE_N" || echo "$SMALL_N")
    dst="bench-ss-out/r$r-$corpus-$$"
    run "$corpus" "moverctl (server-side)" "$n" "$M" --config "$REMOTES" copy \
      "bsrc:$A/bench-ss/$corpus" "bdst:$B/$dst/m" --journal "$WORK/j-$r-$corpus-m.sqlite"
    run "$corpus" "moverctl --no-server-side" "$n" "$M" --config "$REMOTES" copy --no-server-side \
      "bsrc:$A/bench-ss/$corpus" "bdst:$B/$dst/s" --journal "$WORK/j-$r-$corpus-s.sqlite"
    run "$corpus" "rclone --server-side-across-configs" "$n" "${RCLONE[@]}" copy --checksum \
      --server-side-across-configs --transfers 32 --checkers 32 \
      "bsrc:$A/bench-ss/$corpus" "bdst:$B/$dst/r"
    # Every copy byte-exact by listing: same keys and sizes (and moverctl verified each itself).
    for d in m s r; do
      got=$("$M" --config "$REMOTES" ls "bdst:$B/$dst/$d" 2>/dev/null | tail -1 | awk '{print $1}')
      [[ $got -eq $n ]] || { log "WRONG: $corpus $d has $got of $n objects"; exit 1; }
    done
    "${RCLONE[@]}" purge "bdst:$B/$dst" 2>/dev/null || true
  done
done

LOAD="$(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$RAW" "$OUT" "$ROUNDS" "$LOAD" "$LARGE" "$SMALL" <<'PY'
import statistics, sys, collections
raw, out, rounds, load, large, small = sys.argv[1:]
rows = collections.defaultdict(list)
for line in open(raw):
    c, row, wall, user, sys_, rss, through = line.rstrip("\n").split("\t")
    rows[(c, row)].append((float(wall), float(user) + float(sys_), int(rss), int(through)))
med = lambda v: statistics.median(v)
lines = [f"# Server-side copy: moverctl vs rclone on one Garage (moverctl-a -> moverctl-b)", "",
         f"{rounds} rounds, medians; load average at the end {load}. 'through host' counts every byte",
         "between the tool and Garage at a relay (requests, answers, bodies).", "",
         "| corpus | row | wall s | CPU s | peak RSS MB | through host | vs moverctl server-side |",
         "|---|---|---|---|---|---|---|"]
for c in (large, small):
    base = None
    for (cc, row), v in rows.items():
        if cc != c:
            continue
        w = med([x[0] for x in v]); cpu = med([x[1] for x in v]); rss = med([x[2] for x in v]) / 1024
        th = med([x[3] for x in v])
        if base is None and row.startswith("moverctl (server-side)"):
            base = w
        ratio = f"{w / base:.2f}x the time" if base else ""
        unit = f"{th / 1e6:.1f} MB" if th >= 1e5 else f"{th / 1e3:.1f} kB"
        lines.append(f"| {c} | {row} | {w:.2f} | {cpu:.2f} | {rss:.0f} | {unit} | {ratio} |")
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
log "report: $OUT"
