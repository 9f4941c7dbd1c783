#!/usr/bin/env bash
# Memory of a run driven by an inventory of N objects (issue 30), through the real engine and
# nothing else: an S3 Inventory (CSV, gzipped, 4 files in reverse key order) of N objects under
# moverctl-a/inv/src/ is written locally, then `copy --inventory MANIFEST --dry-run --json` into
# an empty local folder reads it (sorted in a temporary SQLite file), joins it with the
# destination and decides every object (N `would_copy` lines, counted), with no request to the
# source. Resident memory is read every 4 s and the peak from /usr/bin/time -v.
#
# Environment: N (10000000) DIR (work folder; default target/bench/inventory, deleted afterwards
# unless KEEP=1) MOVERCTL_BIN (default: the release build under CARGO_TARGET_DIR or target/)
# OUT (report, appended; default bench/results/<date>-list.md). The source is named on the test
# servers' Garage (scripts/servers.sh start; ENV_SH): a run checks once that its endpoint answers,
# then reads no object and lists nothing there.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
N="${N:-10000000}"
DIR="${DIR:-$ROOT/target/bench/inventory}"
OUT="${OUT:-$ROOT/bench/results/$(date -u +%F)-list.md}"
M="${MOVERCTL_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/moverctl}"
[[ -x $M ]] || { echo "no moverctl at $M (cargo build --release, or MOVERCTL_BIN)" >&2; exit 2; }
rm -rf "$DIR"; mkdir -p "$DIR/data" "$DIR/empty" "$DIR/tmp"
[[ ${KEEP:-} == 1 ]] || trap 'rm -rf "$DIR"' EXIT
python3 - "$DIR" "$N" <<'EOF'
import gzip, sys
d, n = sys.argv[1], int(sys.argv[2])
per, files = -(-n // 4), []
for f in range(4):
    name = f"data/f{f}.csv.gz"
    with gzip.open(f"{d}/{name}", "wt", compresslevel=1) as out:
        for i in range(min(n, (f + 1) * per) - 1, f * per - 1, -1):
            out.write(f'"moverctl-a","inv/src/d{i // 1000:05d}/f{i:09d}","262144",'
                      f'"{(i * 0x9e3779b97f4a7c15) % (1 << 128):032x}","STANDARD"\n')
    files.append(f'{{"key":"inv/moverctl-a/cfg/{name}","size":1,"MD5checksum":"x"}}')
open(f"{d}/manifest.json", "w").write(
    '{"sourceBucket":"moverctl-a","destinationBucket":"arn:aws:s3:::moverctl-a","version":"2016-11-30",'
    '"creationTimestamp":"1767225600000","fileFormat":"CSV","fileSchema":"Bucket, Key, Size, ETag, StorageClass",'
    '"files":[' + ",".join(files) + "]}")
EOF
ENV_SH=${ENV_SH:-$ROOT/target/test-servers/env.sh}
[[ -f $ENV_SH ]] || { echo "no test servers ($ENV_SH): scripts/servers.sh start" >&2; exit 2; }
# shellcheck disable=SC1090
source "$ENV_SH"
printf '[remotes.g]\ntype = "s3"\nprovider = "onprem"\nendpoint = "%s"\nregion = "%s"\naccess_key_id_env = "MOVERCTL_TEST_S3_KEY_ID"\nsecret_access_key_env = "MOVERCTL_TEST_S3_SECRET"\n' \
  "$MOVERCTL_TEST_S3_ENDPOINT" "$MOVERCTL_TEST_S3_REGION" >"$DIR/remotes.toml"
export MOVERCTL_STATE_DIR="$DIR/state" TMPDIR="$DIR/tmp" MOVERCTL_NO_PROBE=1
( /usr/bin/time -v -o "$DIR/time.txt" "$M" --config "$DIR/remotes.toml" copy --inventory "$DIR/manifest.json" \
    --dry-run -q --json g:moverctl-a/inv/src/ "$DIR/empty" 2>"$DIR/err.txt" |
    python3 -c 'import sys
n = 0; last = ""
for line in sys.stdin:
    n += line.startswith("{\"bytes\"") and "would_copy" in line; last = line
open(sys.argv[1], "w").write(f"{n}\n{last}")' "$DIR/out.txt" ) &
sleep 1
pid=$(pgrep -f "^$M --config $DIR/remotes.toml" | head -1 || true)
: >"$DIR/rss.txt"; t0=$(date +%s)
while [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; do
  echo "$(( $(date +%s) - t0 )) $(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null)" >>"$DIR/rss.txt"; sleep 4
done
wait
python3 - "$DIR" "$N" "$OUT" <<'EOF'
import json, re, sys
d, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t = open(f"{d}/time.txt").read()
num = lambda p: float(re.search(p, t).group(1))
lines = open(f"{d}/out.txt").read().split("\n", 1)
decided, s = int(lines[0]), json.loads(lines[1])
rss = [tuple(map(int, l.split())) for l in open(f"{d}/rss.txt") if len(l.split()) == 2]
assert decided == n and s["would_copy"]["objects"] == n, (decided, s["would_copy"])
assert s["requests"]["list_source"] == 0
samples = ", ".join(f"{sec} s: {kb / 1024:.0f}" for sec, kb in rss[:: max(1, len(rss) // 8)])
text = [f"## A run driven by an inventory of {n:,} objects (bench/inventory_memory.sh)", "",
        f"`copy --inventory` (S3 Inventory, CSV, 4 gzipped files in reverse key order) `--dry-run --json` "
        f"into an empty folder: {decided:,} objects decided, {s['requests']['list_source']} source LISTs, "
        f"wall {re.search(r'Elapsed.*: (.*)', t).group(1)}, CPU {num(r'User time .*: ([0-9.]+)') + num(r'System time .*: ([0-9.]+)'):.0f} s, "
        f"peak RSS {num(r'Maximum resident set size .*: ([0-9]+)') / 1024:.0f} MB; resident MB over the run: {samples}.", ""]
open(out, "a").write("\n".join(text) + "\n")
print("\n".join(text))
EOF
