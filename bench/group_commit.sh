#!/usr/bin/env bash
# Group commit (issue 28): moverctl's durable default (--fsync batch) against --fsync object,
# --fsync never, rclone and cp, local -> local on the destination's disk.
#
#   bench/group_commit.sh                  both corpora, 3 rounds
#   CORPORA=small ROUNDS=5 bench/group_commit.sh
#
# Corpora: small = 2,000 x 64 KiB, large = 4 x 256 MiB (CORPORA="small large").
# Rows, in a rotating order each round (so no tool always runs first or last in a round):
#   moverctl                   the default, --fsync batch: files synced in groups, then journaled
#   moverctl --fsync object    each file and its folder entry synced before it is journaled
#   moverctl --fsync never     nothing synced
#   rclone copy --transfers T  rclone (RCLONE_TRANSFERS, default 16; `rclone-latest.sh` finds it)
#   cp -r
# Only the first two leave their files on disk when they exit; rclone, cp and `never` leave them
# in the page cache. So every run is followed by a timed `sync` (after the tool has exited, not
# in its time), and the report gives both the tool's own time and the time to durable (tool +
# sync). Before each run the destination is removed and the file system synced; the source files
# are warm in the page cache. Every file is compared with `cmp` after each run.
#
# Environment: CORPORA, ROUNDS (3), RCLONE_TRANSFERS (16), BENCH_DIR (target/bench), OUT
# (default bench/results/<date>-group-commit.md), KEEP=1 keeps the corpora.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CORPORA="${CORPORA:-small large}"
ROUNDS="${ROUNDS:-3}"
RT="${RCLONE_TRANSFERS:-16}"
WORK="${BENCH_DIR:-$ROOT/target/bench}/group-commit"
OUT="${OUT:-$ROOT/bench/results/$(date -u +%Y-%m-%d)-group-commit.md}"
RCLONE="$(/work/shared/tools/rclone-latest.sh 2>/dev/null || command -v rclone)"

log() { printf '[bench-gc %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

(cd "$ROOT" && cargo build --release --quiet)
mkdir -p "$WORK/bin"
cp "$ROOT/target/release/moverctl" "$WORK/bin/moverctl"
MOVERCTL="$WORK/bin/moverctl"
export MOVERCTL_STATE_DIR="$WORK/state" RCLONE_CONFIG=/dev/null

# gen NAME COUNT KIB
gen() {
  local dir="$WORK/src-$1"
  if [[ $(find "$dir" -type f 2>/dev/null | wc -l) -ne $2 ]]; then
    log "generating $1: $2 x $3 KiB"
    rm -rf "$dir" && mkdir -p "$dir"
    python3 - "$dir" "$2" "$3" <<'EOF'
import os, random, sys
d, n, kib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = random.Random(42)
for i in range(n):
    sub = os.path.join(d, f"d{i % 20:02d}")
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, f"f{i:05d}.bin"), "wb") as f:
        for _ in range(0, kib, 1024):
            f.write(r.randbytes(min(1024, kib) << 10))
EOF
  fi
}

RAW="$WORK/raw.tsv"
: >"$RAW"
# run CORPUS ROW command...: one measured run into a fresh $WORK/dst, then a timed sync.
run() {
  local corpus="$1" name="$2"
  shift 2
  rm -rf "$WORK/dst" "$WORK/state" "$WORK/j.sqlite" && mkdir -p "$WORK/dst"
  sync
  local t="$WORK/time.txt"
  if ! /usr/bin/time -f '%e %U %S %M' -o "$t" "$@" >"$WORK/out.txt" 2>&1; then
    log "FAILED: $corpus $name"
    tail -5 "$WORK/out.txt" >&2
    return 1
  fi
  local s0 s1
  s0="$(date +%s.%N)"
  sync
  s1="$(date +%s.%N)"
  diff -r -q "$WORK/src-$corpus" "$WORK/dst" >/dev/null || {
    log "WRONG BYTES: $corpus $name"
    return 1
  }
  read -r wall user sys rss <"$t"
  local after
  after="$(python3 -c "print(f'{$s1 - $s0:.2f}')")"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$corpus" "$name" "$wall" "$user" "$sys" "$rss" "$after" >>"$RAW"
  log "$corpus | $name: ${wall}s (+ sync ${after}s) user ${user}s sys ${sys}s rss ${rss}KB"
}

row() {
  local corpus="$1" src="$WORK/src-$1" i="$2"
  case "$i" in
    0) run "$corpus" "moverctl (default: --fsync batch)" "$MOVERCTL" copy "$src" "$WORK/dst" --journal "$WORK/j.sqlite" ;;
    1) run "$corpus" "moverctl --fsync object" "$MOVERCTL" copy "$src" "$WORK/dst" --fsync object --journal "$WORK/j.sqlite" ;;
    2) run "$corpus" "moverctl --fsync never" "$MOVERCTL" copy "$src" "$WORK/dst" --fsync never --journal "$WORK/j.sqlite" ;;
    3) run "$corpus" "rclone copy --transfers $RT" "$RCLONE" copy "$src" "$WORK/dst" --transfers "$RT" ;;
    4) run "$corpus" "cp -r" sh -c "cp -r '$src'/. '$WORK/dst'/" ;;
  esac
}

for c in $CORPORA; do
  case "$c" in
    small) gen small 2000 64 ;;
    large) gen large 4 262144 ;;
  esac
  find "$WORK/src-$c" -type f -exec cat {} + >/dev/null
done
for r in $(seq 1 "$ROUNDS"); do
  for c in $CORPORA; do
    log "round $r, $c"
    for k in 0 1 2 3 4; do
      row "$c" $(((k + r - 1) % 5))
    done
  done
done
rm -rf "$WORK/dst"

mkdir -p "$(dirname "$OUT")"
python3 - "$RAW" "$ROUNDS" "$("$RCLONE" version 2>/dev/null | head -1)" >"$OUT" <<'EOF'
import collections, os, platform, statistics, sys
raw, rounds, rclone = sys.argv[1], sys.argv[2], sys.argv[3]
rows = collections.OrderedDict()
for line in open(raw):
    c, name, wall, user, sys_, rss, after = line.rstrip("\n").split("\t")
    rows.setdefault((c, name), []).append((float(wall), float(user), float(sys_), int(rss), float(after)))
desc = {"small": "2,000 x 64 KiB (125 MiB)", "large": "4 x 256 MiB (1 GiB)"}
print(f"# Group commit: local -> local, medians of {rounds} rounds\n")
print(f"Machine: {platform.node()}, {os.cpu_count()} cores shared with other sessions (noisy: read "
      f"the ratios, not the seconds); destination on the root file system's disk. {rclone}.\n")
print("`time` is the tool's own wall time; `+ sync` is the `sync` run after it exited (what it "
      "left in the page cache); `to durable` is their sum. Only `--fsync batch` and `--fsync object` "
      "have their files on disk when they exit.\n")
print("| corpus | tool | time s | + sync s | to durable s | user s | sys s | peak RSS MB | rounds (time s) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---|")
med = {}
for (c, name), v in rows.items():
    m = lambda f: statistics.median(f(x) for x in v)
    med[(c, name)] = (m(lambda x: x[0]), m(lambda x: x[0] + x[4]))
    print(f"| {desc.get(c, c)} | {name} | {m(lambda x: x[0]):.2f} | {m(lambda x: x[4]):.2f} | "
          f"{m(lambda x: x[0] + x[4]):.2f} | {m(lambda x: x[1]):.2f} | {m(lambda x: x[2]):.2f} | "
          f"{max(x[3] for x in v) / 1024:.0f} | {', '.join(f'{x[0]:.2f}' for x in v)} |")
print("\nRatios of medians (> 1: the default is faster):\n")
for c in dict.fromkeys(k[0] for k in rows):
    base = med.get((c, "moverctl (default: --fsync batch)"))
    if not base:
        continue
    for (c2, name), (t, d) in med.items():
        if c2 == c and not name.startswith("moverctl (default"):
            print(f"- {desc.get(c, c)}: default vs {name}: {t / base[0]:.2f}x by the tool's time, "
                  f"{d / base[1]:.2f}x to durable")
EOF
log "report: $OUT"
cat "$OUT"
if [[ ${KEEP:-0} != 1 ]]; then
  rm -rf "$WORK"/src-*
fi
