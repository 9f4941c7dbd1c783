#!/usr/bin/env python3
"""The report of bench/local.sh from its raw.tsv: RAW N SIZE_MIB ROUNDS MAX_BUFFER."""
import statistics, sys, collections, platform
raw, n, size, rounds, maxbuf = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
rows = collections.OrderedDict()
for line in open(raw):
    name, wall, user, sys_, rss = line.rstrip("\n").split("\t")
    rows.setdefault(name, []).append((float(wall), float(user), float(sys_), int(rss)))
gib = n * size / 1024
total = n * size * (1 << 20)
print(f"# Local destinations: {n} x {size} MiB ({gib:.2f} GiB), medians of {rounds} rounds\n")
print(f"Machine: {platform.node()} ({platform.machine()}), shared with other work; page cache: "
      "source files warm, destinations written into the page cache (`--fsync object` syncs each "
      f"file before the run ends; the other rows do not sync). moverctl `--max-buffer {maxbuf}`.\n")
print("| workload | tool | time s | MB/s | user CPU s | system CPU s | system CPU s/GiB | peak RSS MB | rounds (s) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---|")
med = {}
for name, v in rows.items():
    w, tool = [x.strip() for x in name.split("|")]
    m = lambda i: statistics.median(x[i] for x in v)
    med[name] = m(0)
    print(f"| {w} | {tool} | {m(0):.2f} | {total / m(0) / 1e6:.0f} | {m(1):.2f} | {m(2):.2f} | "
          f"{m(2) / gib:.2f} | {max(x[3] for x in v) / 1024:.0f} | {', '.join(f'{x[0]:.2f}' for x in v)} |")
def ratio(a, b):
    if a in med and b in med:
        print(f"- {a.split('|')[1].strip()} vs {b.split('|')[1].strip()} ({a.split('|')[0].strip()}): "
              f"**{med[b] / med[a]:.2f}x** ({med[a]:.2f} s vs {med[b]:.2f} s)")
print()
ratio("local->local | moverctl (--fsync object)", "local->local | rclone --checksum")
ratio("local->local | moverctl --fsync never", "local->local | rclone --checksum")
ratio("local->local | moverctl --fsync never", "local->local | cp -r")
ratio("S3->local | moverctl (--fsync object)", "S3->local | rclone --checksum")
ratio("S3->local | moverctl --fsync never", "S3->local | rclone --checksum")
print("\n(peak RSS is the largest of the rounds.)")
