#!/usr/bin/env python3
"""Runs one benchmark command and appends one JSON record about it to a results file.

  measure.py --out RESULTS.jsonl --meta k=v ... [--server-pid PID] [--server-log FILE]
             [--match TOKEN ...] --stdout FILE --stderr FILE -- CMD ARGS...

Measured, per run:
  wall_s             monotonic clock around the whole process (start to exit)
  rss_kb, user_s, sys_s, exit status: from `/usr/bin/time -v` wrapped around CMD
  server_cpu_s       utime+stime of the Garage process (/proc/PID/stat) after minus before; it
                     includes any other client's traffic in the window (see foreign_requests)
  requests           requests Garage logged in the window whose path or list prefix contains
                     one of the --match tokens, by class (Garage logs every request at info);
                     the same counter for both tools
  foreign_requests   requests in the window that matched no token: other clients on the shared
                     server (noise indicator)
  summary            moverctl's --json summary (last stdout line), when there is one
  net_mib_per_s      with --sample-net: loopback MiB/s in each second of the run (all local
                     traffic, so other clients' too)

The exit status is CMD's; the record is written either way.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse

REQ = re.compile(r"generic_server: \S+ \(key [^)]*\) ([A-Z]+) (\S+)")
ERR = re.compile(r"generic_server: error (\d+)")
TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    """utime+stime of PID in seconds, or None."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    fields = s[s.rindex(")") + 2 :].split()
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / TICK


def lo_bytes():
    """Bytes received on the loopback interface so far (every local TCP byte passes once)."""
    with open("/proc/net/dev") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name.strip() == "lo":
                return int(rest.split()[0])
    return 0


def file_size(path):
    try:
        return os.path.getsize(path) if path else None
    except OSError:
        return None


def classify(method, target):
    path, _, query = target.partition("?")
    params = urllib.parse.parse_qs(query, keep_blank_values=True)
    parts = path.lstrip("/").split("/", 1)
    has_key = len(parts) == 2 and parts[1] != ""
    if not has_key:
        if method == "GET" and ("list-type" in params or "prefix" in params or "delimiter" in params):
            return "LIST"
        if method == "POST" and "delete" in params:
            return "DELETE_MULTI"
        return f"BUCKET_{method}"
    if method == "PUT" and "partNumber" in params:
        return "PUT_PART"
    if method == "POST" and "uploads" in params:
        return "MPU_CREATE"
    if method == "POST" and "uploadId" in params:
        return "MPU_COMPLETE"
    if method == "DELETE" and "uploadId" in params:
        return "MPU_ABORT"
    if method == "GET" and "uploadId" in params:
        return "LIST_PARTS"
    return method


def count_requests(log, start, end, tokens):
    counts, foreign, errors = {}, 0, {}
    with open(log, "rb") as f:
        f.seek(start)
        data = f.read(max(0, end - start))
    for raw in data.decode("utf-8", "replace").splitlines():
        m = ERR.search(raw)
        if m:
            if any(t in urllib.parse.unquote(raw) for t in tokens):
                errors[m.group(1)] = errors.get(m.group(1), 0) + 1
            continue
        m = REQ.search(raw)
        if not m:
            continue
        method, target = m.group(1), m.group(2)
        if any(t in urllib.parse.unquote(target) for t in tokens):
            c = classify(method, target)
            counts[c] = counts.get(c, 0) + 1
        else:
            foreign += 1
    return counts, foreign, errors


def parse_time(path):
    out = {}
    try:
        text = open(path).read()
    except OSError:
        return out
    for line in text.splitlines():
        k, _, v = line.strip().rpartition(": ")
        if k == "Maximum resident set size (kbytes)":
            out["rss_kb"] = int(v)
        elif k == "User time (seconds)":
            out["user_s"] = float(v)
        elif k == "System time (seconds)":
            out["sys_s"] = float(v)
        elif k == "Exit status":
            out["time_exit"] = int(v)
    return out


def last_summary(path):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 65536))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        line = line.strip()
        if line.startswith("{"):
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if v.get("event") == "summary":
                return v
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--meta", action="append", default=[])
    ap.add_argument("--server-pid", type=int, default=0)
    ap.add_argument("--server-log")
    ap.add_argument("--match", action="append", default=[])
    ap.add_argument("--stdout", required=True)
    ap.add_argument("--stderr", required=True)
    ap.add_argument("--timeout", type=float, default=0, help="kill the run (exit 124) after this many seconds")
    ap.add_argument("--sample-net", action="store_true",
                    help="sample loopback bytes every second (net_mib_per_s: the wire rate per second)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        sys.exit("measure.py: no command")
    rec = {}
    for kv in a.meta:
        k, _, v = kv.partition("=")
        try:
            rec[k] = json.loads(v)
        except ValueError:
            rec[k] = v
    timefile = a.stderr + ".time"
    log_start = file_size(a.server_log)
    cpu0 = proc_cpu(a.server_pid)
    t0 = time.monotonic()
    timed_out = False
    with open(a.stdout, "wb") as so, open(a.stderr, "wb") as se:
        # Own session, so a timeout or Ctrl-C can stop the tool and everything it started.
        p = subprocess.Popen(["/usr/bin/time", "-v", "-o", timefile, *cmd], stdout=so, stderr=se,
                             start_new_session=True)
        net = []
        try:
            if a.sample_net:
                deadline = t0 + a.timeout if a.timeout else None
                last_t, last_b = t0, lo_bytes()
                while True:
                    try:
                        rc = p.wait(timeout=1.0)
                        break
                    except subprocess.TimeoutExpired:
                        now, b = time.monotonic(), lo_bytes()
                        net.append(round((b - last_b) / (now - last_t) / 2**20, 1))
                        last_t, last_b = now, b
                        if deadline and now > deadline:
                            raise
            else:
                rc = p.wait(timeout=a.timeout or None)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = 124
        except BaseException:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise
    wall = time.monotonic() - t0
    time.sleep(0.3)  # let the server finish logging the last requests
    cpu1 = proc_cpu(a.server_pid)
    log_end = file_size(a.server_log)
    rec.update(
        {
            "cmd": " ".join(cmd),
            "rc": rc,
            "timed_out": timed_out,
            **({"net_mib_per_s": net} if a.sample_net else {}),
            "wall_s": round(wall, 3),
            "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "server_cpu_s": None if cpu0 is None or cpu1 is None else round(cpu1 - cpu0, 2),
        }
    )
    rec.update(parse_time(timefile))
    if a.server_log and log_start is not None and log_end is not None:
        if log_end < log_start:
            rec["server_restarted"] = True
        else:
            counts, foreign, errors = count_requests(a.server_log, log_start, log_end, a.match)
            rec["requests"] = counts
            rec["requests_total"] = sum(counts.values())
            rec["foreign_requests"] = foreign
            rec["request_errors"] = errors
    if a.server_pid and cpu1 is None:
        rec["server_restarted"] = True
    s = last_summary(a.stdout)
    if s is not None:
        rec["summary"] = {
            k: s.get(k)
            for k in ("copied", "skipped", "failed", "requests", "verified_by", "reasons", "seconds", "retries")
        }
    with open(a.out, "a") as f:
        f.write(json.dumps(rec, sort_keys=True) + "\n")
    sys.exit(rc)


if __name__ == "__main__":
    main()
