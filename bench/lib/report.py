#!/usr/bin/env python3
"""Turns bench/run.sh's raw records into a markdown report (medians and moverctl/rclone ratios).

  report.py RESULTS.jsonl CHECKS.jsonl MACHINE.txt [--expect-rounds N] [--title T]

Prints the report on stdout. Exit status 1 when a run failed, a destination check failed, or a
(workload, setting, tool) group has fewer successful rounds than --expect-rounds.
"""
import argparse
import json
import statistics
import sys
from collections import OrderedDict, defaultdict

P = argparse.ArgumentParser()
P.add_argument("results")
P.add_argument("checks")
P.add_argument("machine")
P.add_argument("--expect-rounds", type=int, default=1)
P.add_argument("--title", default="moverctl vs rclone")
A = P.parse_args()


TITLES = {
    "w1": "1 small S3→S3",
    "w2": "2 large S3→S3",
    "w3a": "3a small local→S3",
    "w3b": "3b large local→S3",
    "w4": "4 no-op re-run of 1",
    "w5-plan": "`plan --inventory` (CSV)",
    "w5-dryrun": "`copy --dry-run` local→local tree",
    "w5-ls": "`ls` of a local tree (rclone: `lsf -R`)",
    "bw": "`--bwlimit` local→S3 (large corpus)",
}


def title(wl):
    return TITLES.get(wl, wl)


def load(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    out.append(json.loads(line))
    except OSError:
        pass
    return out


recs = load(A.results)
checks = {c["run_id"]: c for c in load(A.checks)}
problems = []
for r in recs:
    c = checks.get(r.get("run_id"))
    r["ok"] = r.get("rc") == 0 and not r.get("server_restarted") and (c is None or c.get("ok"))
    if not r["ok"]:
        why = []
        if r.get("rc") != 0:
            why.append(f"exit {r.get('rc')}")
        if r.get("server_restarted"):
            why.append("server restarted during the run")
        if c is not None and not c.get("ok"):
            why.append(c.get("detail", "destination check failed"))
        problems.append(f"{r.get('workload')} {r.get('setting')} {r.get('tool')} round {r.get('round')}: {'; '.join(why)}")


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def f(x, nd=1):
    if x is None:
        return "–"
    if isinstance(x, float) and nd == 0:
        return f"{x:,.0f}"
    if isinstance(x, (int,)) and not isinstance(x, bool):
        return f"{x:,}"
    return f"{x:,.{nd}f}"


def ratio(a, b):
    if a is None or b in (None, 0):
        return None
    return a / b


def cpu(r):
    if r.get("user_s") is None:
        return None
    return r["user_s"] + r.get("sys_s", 0)


def group(kind):
    g = OrderedDict()
    for r in recs:
        if r.get("kind") != kind:
            continue
        g.setdefault((r["workload"], r["setting"]), OrderedDict()).setdefault(r["tool"], []).append(r)
    return g


def stats(rs):
    ok = [r for r in rs if r["ok"]]
    if not ok:
        return None
    wall = med([r["wall_s"] for r in ok])
    walls = [r["wall_s"] for r in ok]
    b = ok[0].get("bytes", 0)
    n = ok[0].get("objects", 0)
    return {
        "n": len(ok),
        "wall": wall,
        "spread": (max(walls) - min(walls)) / wall * 100 if wall else None,
        "mbs": med([b / r["wall_s"] / 1e6 for r in ok]) if b else None,
        "ops": med([n / r["wall_s"] for r in ok]) if n else None,
        "rss": med([r.get("rss_kb") for r in ok]),
        "cpu": med([cpu(r) for r in ok]),
        "scpu": med([r.get("server_cpu_s") for r in ok]),
        "req": med([r.get("requests_total") for r in ok if r.get("requests") is not None]),
        "self": med([sum(r["summary"]["requests"].values()) for r in ok if r.get("summary") and r["summary"].get("requests")]),
        "foreign": med([r.get("foreign_requests") for r in ok]),
        "classes": {k: med([r.get("requests", {}).get(k, 0) for r in ok]) for k in sorted({k for r in ok for k in r.get("requests", {})})},
        "verified_by": ok[-1].get("summary", {}).get("verified_by") if ok[-1].get("summary") else None,
        "bytes": b,
        "objects": n,
    }


out = []
w = out.append
machine = open(A.machine).read().strip() if A.machine else ""
w(f"# {A.title}\n")
w("```\n" + machine + "\n```\n")
w("How to read: every number is the **median** over the rounds (n); *spread* is (max − min) / median "
  "of the wall time. MB/s is 10^6 bytes per second of object data. *client CPU* is user+sys of the "
  "tool's process, *server CPU* the Garage process's CPU time in the same window (it includes any "
  "other client of the shared test server; *other reqs* counts those requests). *requests* are "
  "counted from Garage's request log for the run's own prefixes, the same way for both tools; "
  "*self* is what moverctl's `--json` summary reports. Ratios are moverctl / rclone: below 1 "
  "means moverctl took less time, memory, CPU or requests.\n")

# ---- copy workloads
copy = group("copy")
if copy:
    w("## Copies\n")
    w("| workload | setting | tool | n | wall s | spread | MB/s | obj/s | peak RSS KB | client CPU s | server CPU s | requests | self | other reqs |")
    w("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (wl, setting), tools in copy.items():
        for tool, rs in tools.items():
            s = stats(rs)
            if s is None:
                w(f"| {title(wl)} | {setting} | {tool} | 0 | failed | | | | | | | | | |")
                continue
            w(f"| {title(wl)} | {setting} | {tool} | {s['n']} | {f(s['wall'], 2)} | {f(s['spread'], 0)} % | {f(s['mbs'])} | {f(s['ops'], 0)} | "
              f"{f(s['rss'])} | {f(s['cpu'], 2)} | {f(s['scpu'], 2)} | {f(s['req'])} | {f(s['self'])} | {f(s['foreign'])} |")
    w("")
    w("### Ratios moverctl / rclone (per setting)\n")
    w("| workload | setting | wall time | throughput (rclone/moverctl time) | peak RSS | client CPU | server CPU | requests |")
    w("|---|---|---:|---:|---:|---:|---:|---:|")
    for (wl, setting), tools in copy.items():
        m, r = stats(tools.get("moverctl", [])), stats(tools.get("rclone", []))
        if not m or not r:
            continue
        tr = ratio(m["wall"], r["wall"])
        w(f"| {title(wl)} | {setting} | {f(tr, 2)} | {f(ratio(r['wall'], m['wall']), 2)}× | {f(ratio(m['rss'], r['rss']), 2)} | "
          f"{f(ratio(m['cpu'], r['cpu']), 2)} | {f(ratio(m['scpu'], r['scpu']), 2)} | {f(ratio(m['req'], r['req']), 2)} |")
    w("")
    w("### Requests by class (Garage log, median per run)\n")
    w("| workload | setting | tool | by class | moverctl self-report | verified by |")
    w("|---|---|---|---|---|---|")
    for (wl, setting), tools in copy.items():
        for tool, rs in tools.items():
            s = stats(rs)
            if s is None:
                continue
            cls = ", ".join(f"{k} {f(v)}" for k, v in s["classes"].items() if v)
            ok = [r for r in rs if r["ok"] and r.get("summary")]
            selfr = ""
            if ok and ok[-1]["summary"].get("requests"):
                selfr = ", ".join(f"{k} {v}" for k, v in ok[-1]["summary"]["requests"].items())
            vb = ", ".join(f"{k} {v}" for k, v in (s["verified_by"] or {}).items())
            w(f"| {title(wl)} | {setting} | {tool} | {cls} | {selfr} | {vb} |")
    w("")

    # What bounds each workload: the fastest setting of each tool.
    w("### What bounds the result (fastest setting of each tool)\n")
    nproc = 2
    lb = None
    for line in machine.splitlines():
        if line.startswith("nproc:"):
            nproc = int(line.split(":")[1])
        if line.startswith("loopback"):
            try:
                lb = float(line.split(":")[1].split()[0])
            except (ValueError, IndexError):
                pass
    w(f"Cores: {nproc}. *client cores* = client CPU / wall, *server cores* = Garage CPU / wall, "
      f"*machine* = (client + server CPU) / (wall × {nproc}). *loopback MB/s* counts each byte once per "
      "hop (S3→S3: GET and PUT, 2 hops; local→S3: 1 hop)" + (f"; a Python sender/receiver pair moved {lb:,.0f} MB/s over loopback on this machine." if lb else ".") + "\n")
    w("| workload | tool | fastest setting | wall s | client cores | server cores | machine | loopback MB/s |")
    w("|---|---|---|---:|---:|---:|---:|---:|")
    by_wl = OrderedDict()
    for (wl, setting), tools in copy.items():
        for tool, rs in tools.items():
            s = stats(rs)
            if s:
                by_wl.setdefault(wl, {}).setdefault(tool, []).append((setting, s, rs[0]))
    for wl, tools in by_wl.items():
        for tool, lst in tools.items():
            setting, s, r0 = min(lst, key=lambda t: t[1]["wall"])
            hops = 2 if r0.get("src_kind") == "s3" else 1
            cc = ratio(s["cpu"], s["wall"])
            sc = ratio(s["scpu"], s["wall"])
            mach = (s["cpu"] + s["scpu"]) / (s["wall"] * nproc) if s["cpu"] is not None and s["scpu"] is not None else None
            w(f"| {title(wl)} | {tool} | {setting} | {f(s['wall'], 2)} | {f(cc, 2)} | {f(sc, 2)} | {f(mach * 100 if mach is not None else None, 0)} % | {f(s['bytes'] * hops / s['wall'] / 1e6, 0)} |")
    w("")

# ---- no-op re-runs
noop = group("noop")
if noop:
    w("## No-op re-run (everything already at the destination)\n")
    w("| workload | tool | n | wall s | spread | peak RSS KB | client CPU s | server CPU s | requests | by class | time vs rclone |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for (wl, setting), tools in noop.items():
        rs_ = stats(tools.get("rclone", []))
        for tool, rs in tools.items():
            s = stats(rs)
            if s is None:
                w(f"| {title(wl)} | {tool} | 0 | failed | | | | | | | |")
                continue
            cls = ", ".join(f"{k} {f(v)}" for k, v in s["classes"].items() if v)
            rt = f(ratio(s["wall"], rs_["wall"]), 2) if rs_ and tool != "rclone" else ""
            w(f"| {title(wl)} ({setting}) | {tool} | {s['n']} | {f(s['wall'], 2)} | {f(s['spread'], 0)} % | {f(s['rss'])} | {f(s['cpu'], 2)} | {f(s['scpu'], 2)} | {f(s['req'])} | {cls} | {rt} |")
    w("")

# ---- listing at scale
lst = group("list")
if lst:
    w("## Listing and diffing at scale (peak RSS must stay flat)\n")
    w("| command | tool | entries | n | wall s | entries/s | peak RSS KB | client CPU s |")
    w("|---|---|---:|---:|---:|---:|---:|---:|")
    flat = defaultdict(list)
    for (wl, setting), tools in lst.items():
        for tool, rs in tools.items():
            s = stats(rs)
            if s is None:
                w(f"| {title(wl)} | {tool} | {setting} | 0 | failed | | | |")
                continue
            w(f"| {title(wl)} | {tool} | {f(s['objects'])} | {s['n']} | {f(s['wall'], 2)} | {f(s['ops'], 0)} | {f(s['rss'])} | {f(s['cpu'], 2)} |")
            flat[(wl, tool)].append((s["objects"], s["rss"]))
    w("")
    w("| command | tool | smallest → largest | peak RSS | growth | flat (≤ 20 %)? |")
    w("|---|---|---|---|---:|---|")
    for (wl, tool), pts in flat.items():
        pts.sort()
        if len(pts) < 2:
            continue
        (n0, r0), (n1, r1) = pts[0], pts[-1]
        g = (r1 - r0) / r0 * 100
        verdict = "yes" if g <= 20 else "**no**"
        if tool != "moverctl":
            verdict += " (peer, for reference)"
        w(f"| {title(wl)} | {tool} | {n0:,} → {n1:,} | {r0:,.0f} → {r1:,.0f} KB | {g:+.0f} % | {verdict} |")
        if tool == "moverctl" and g > 20:
            problems.append(f"{title(wl)}: moverctl peak RSS grew {g:.0f} % from {n0:,} to {n1:,} entries")
    w("")

# ---- bandwidth limit
bw = [r for r in recs if r.get("kind") == "bwlimit"]
if bw:
    w("## `--bwlimit` accuracy\n")
    w("*rate* is bytes over time (the average the acceptance criterion is about); *wire* is the "
      "loopback rate in each second of the run (sampled from /proc/net/dev), which shows whether "
      "the limit holds on the network too.\n")
    w("| run | target | bytes | wall s | moverctl seconds | rate (wall) | rate (summary) | error | wire: peak 1 s / seconds above target+10 % / seconds idle | acceptance (≥ 30 s, within 5 %) |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    after = []
    for r in bw:
        tgt = r["target_bps"]
        secs = (r.get("summary") or {}).get("seconds")
        rw = r["bytes"] / r["wall_s"]
        rsum = r["bytes"] / secs if secs else None
        err = (rsum if rsum else rw) / tgt - 1
        long_enough = (secs or r["wall_s"]) >= 30
        if not r["ok"]:
            verdict = "**failed run**"
        elif not long_enough:
            verdict = "too short to judge (smoke)"
        else:
            verdict = "pass" if abs(err) <= 0.05 else "**fail**"
        net = r.get("net_mib_per_s")
        if net:
            t = tgt / 2**20
            wire = f"{max(net):.0f} MiB/s / {sum(1 for x in net if x > t * 1.1)} of {len(net)} / {sum(1 for x in net if x < 1)}"
        else:
            wire = "–"
        w(f"| {title(r['workload'])} | {tgt / 2**20:.0f} MiB/s | {r['bytes']:,} | {r['wall_s']:.1f} | {f(secs, 1)} | "
          f"{rw / 2**20:.2f} MiB/s | {f(rsum / 2**20 if rsum else None, 2)} MiB/s | {err * 100:+.1f} % | {wire} | {verdict} |")
        if net:
            after.append("Wire MiB/s, second by second: " + " ".join(f"{x:.0f}" for x in net))
        if r["ok"] and long_enough and abs(err) > 0.05:
            problems.append(f"--bwlimit: measured {err * 100:+.1f} % off the target")
    w("")
    for line in after:
        w(line + "\n")

# ---- every round, for the noise
timed = [r for r in recs if r.get("kind") in ("copy", "noop")]
if timed:
    w("## Every round (wall seconds, in round order; * = failed)\n")
    w("| workload | setting | tool | rounds |")
    w("|---|---|---|---|")
    seen = OrderedDict()
    for r in timed:
        seen.setdefault((r["workload"], r["setting"], r["tool"]), []).append(r)
    for (wl, setting, tool), rs in seen.items():
        rs.sort(key=lambda r: r.get("round", 0))
        w(f"| {title(wl)} | {setting} | {tool} | " + " · ".join(f"{r['wall_s']:.2f}" + ("" if r["ok"] else "*") for r in rs) + " |")
    w("")

# ---- completeness
groups = defaultdict(int)
for r in recs:
    if r["ok"] and r.get("kind") in ("copy", "noop"):
        groups[(r["kind"], r["workload"], r["setting"], r["tool"])] += 1
for r in recs:
    k = (r.get("kind"), r.get("workload"), r.get("setting"), r.get("tool"))
    if r.get("kind") in ("copy", "noop") and groups.get(k, 0) < A.expect_rounds:
        problems.append(f"{k[1]} {k[2]} {k[3]}: {groups.get(k, 0)} successful round(s), expected {A.expect_rounds}")
        groups[k] = A.expect_rounds  # report once
if not recs:
    problems.append("no results at all")

if problems:
    w("## Problems\n")
    for p in problems:
        w(f"- {p}")
    w("")
print("\n".join(out))
sys.exit(1 if problems else 0)
