#!/usr/bin/env python3
"""The report of bench/small.sh: small_report.py RESULTS.jsonl MACHINE.txt ROUNDS > report.md"""
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
bad = {r["run_id"] for r in rows if "check_failed" in r}
runs = [r for r in rows if "wall_s" in r and r.get("rc") == 0 and r["run_id"] not in bad]
rounds = int(sys.argv[3])
print("# Small objects at the server's limit: lean client, moverctl, rclone\n")
print("```")
print(open(sys.argv[2]).read().rstrip())
print("```\n")
print("Medians of the successful rounds; `load` is the 1-minute load average at each run's start")
print("(min–max over the rounds). Throughput ratios: lean best s / moverctl s and rclone best s /")
print("moverctl s (1.00 = as fast).\n")
counts = sorted({int(r["count"]) for r in runs})
for n in counts:
    group = {}
    for r in runs:
        if int(r["count"]) == n:
            group.setdefault((r["tool"], r["setting"]), []).append(r)
    size = next(int(r.get("size", 16384)) for r in runs if int(r["count"]) == n)
    label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
    print(f"## {n:,} × {label} S3 → S3\n")
    print("| tool | setting | rounds | median s | objects/s | min–max s | client CPU s | server CPU s | load | requests |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    med = {}
    for (tool, setting), rs in sorted(group.items(), key=lambda kv: (kv[0][0], str(kv[0][1]) != "default", str(kv[0][1]).zfill(6))):
        w = [r["wall_s"] for r in rs]
        m = statistics.median(w)
        med[(tool, setting)] = m
        cpu = statistics.median([r.get("user_s", 0) + r.get("sys_s", 0) for r in rs])
        srv = [r["server_cpu_s"] for r in rs if r.get("server_cpu_s") is not None]
        loads = [float(r["load1"]) for r in rs]
        req = rs[-1].get("requests") or {}
        reqs = ", ".join(f"{k} {v}" for k, v in sorted(req.items())) if req else "–"
        flag = "" if len(rs) >= rounds else f" (of {rounds})"
        print(f"| {tool} | {setting} | {len(rs)}{flag} | {m:.2f} | {n / m:,.0f} | {min(w):.2f}–{max(w):.2f} | {cpu:.2f} | "
              f"{statistics.median(srv) if srv else float('nan'):.2f} | {min(loads):.1f}–{max(loads):.1f} | {reqs} |")
    def best(tool):
        c = [(m, s) for (t, s), m in med.items() if t == tool]
        return min(c, key=lambda x: x[0]) if c else (None, None)
    lean, ls = best("lean")
    rcl, rs_ = best("rclone")
    mv = med.get(("moverctl", "default"))
    print()
    if mv and lean:
        print(f"- moverctl defaults: **{lean / mv:.2f}** of the lean client's best ({ls} in flight, {lean:.2f} s vs {mv:.2f} s); target ≥ 0.85")
    if mv and rcl:
        print(f"- moverctl defaults against rclone's best ({rs_} transfers): **{rcl / mv:.2f}×** ({rcl:.2f} s vs {mv:.2f} s); target ≥ 1.15")
    for (t, s), m in sorted(med.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        if t == "moverctl" and s != "default" and lean:
            print(f"- moverctl --transfers {s}: {lean / m:.2f} of the lean client's best")
    print()
