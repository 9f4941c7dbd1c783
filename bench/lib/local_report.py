#!/usr/bin/env python3
"""The report of bench/local.sh from its raw.tsv: RAW N SIZE_MIB ROUNDS MAX_BUFFER."""
import statistics, sys, collections, platform
raw, n, size, rounds, maxbuf = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
rows = collections.OrderedDict()
for line in open(raw):
    f = line.rstrip("\n").split("\t")
    name, wall, user, sys_, rss = f[:5]
    server = float(f[5]) if len(f) > 5 else 0.0
    rows.setdefault(name, []).append((float(wall), float(user), float(sys_), int(rss), server))
gib = n * size / 1024
total = n * size * (1 << 20)
print(f"# Local destinations: {n} x {size} MiB ({gib:.2f} GiB), medians of {rounds} rounds\n")
print(f"Machine: {platform.node()} ({platform.machine()}), shared with other work; page cache: "
      "source files warm, destinations written into the page cache (`--fsync object` syncs each "
      f"file before the run ends; the other rows do not sync). moverctl `--max-buffer {maxbuf}`.\n")
print("The server CPU column is the S3 server's (Garage's) CPU in the run's window; it shares the "
      "2 cores with the client.\n")
print("| workload | tool | time s | MB/s | user CPU s | system CPU s | system CPU s/GiB | server CPU s | peak RSS MB | rounds (s) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
med = {}
cpu = {}
for name, v in rows.items():
    w, tool = [x.strip() for x in name.split("|")]
    m = lambda i: statistics.median(x[i] for x in v)
    med[name] = m(0)
    cpu[name] = (m(1) + m(2), m(4))
    print(f"| {w} | {tool} | {m(0):.2f} | {total / m(0) / 1e6:.0f} | {m(1):.2f} | {m(2):.2f} | "
          f"{m(2) / gib:.2f} | {m(4):.2f} | {max(x[3] for x in v) / 1024:.0f} | "
          f"{', '.join(f'{x[0]:.2f}' for x in v)} |")
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
curl = "S3->local | curl, one GET per object (no verification)"
md5 = "hash | md5sum (one core)"
if curl in cpu and md5 in cpu:
    import os
    cores = os.cpu_count() or 1
    c, srv = cpu[curl]
    h = cpu[md5][0]
    floor = max(med[curl], (c + srv + h) / cores)
    print(f"\nFloor of an S3->local copy verified by MD5 on this machine: the curl run's client and "
          f"server CPU plus md5sum's, over {cores} cores: ({c:.2f} + {srv:.2f} + {h:.2f}) / {cores} = "
          f"**{floor:.2f} s** (and no less than the curl run's {med[curl]:.2f} s).")
    for tool in ("moverctl --fsync never", "rclone --checksum"):
        key = f"S3->local | {tool}"
        if key in med:
            print(f"- {tool}: {med[key]:.2f} s = {med[key] / floor:.2f}x the floor")
print("\n(peak RSS is the largest of the rounds.)")
