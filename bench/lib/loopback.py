#!/usr/bin/env python3
"""Loopback TCP baseline: one sender and one receiver process over 127.0.0.1, 1 MiB writes.

  loopback.py [MiB]    prints MB/s (10^6 bytes/s) for MiB mebibytes (default 2048)

Python is the slower end here, so this is a lower bound of what the loopback carries on this
machine; it only needs to show that the copy rates measured are far below it.
"""
import os
import socket
import sys
import time

total = int(sys.argv[1] if len(sys.argv) > 1 else 2048) << 20
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
port = srv.getsockname()[1]
pid = os.fork()
if pid == 0:
    c = socket.create_connection(("127.0.0.1", port))
    buf = b"\0" * (1 << 20)
    left = total
    while left > 0:
        c.sendall(buf[: min(left, len(buf))])
        left -= len(buf)
    c.close()
    os._exit(0)
conn, _ = srv.accept()
buf = bytearray(1 << 20)
got = 0
t0 = time.monotonic()
while True:
    n = conn.recv_into(buf)
    if n == 0:
        break
    got += n
dt = time.monotonic() - t0
os.waitpid(pid, 0)
print(f"{got / dt / 1e6:.0f}")
