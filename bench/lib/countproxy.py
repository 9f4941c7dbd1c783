#!/usr/bin/env python3
"""A TCP relay that counts the bytes passing through it, both ways.

  countproxy.py LISTEN_PORT UPSTREAM_HOST:PORT OUT.json

Every connection to 127.0.0.1:LISTEN_PORT is relayed to the upstream; the totals (bytes from the
clients, bytes to the clients, connections) are written to OUT.json every half second and when
the relay is stopped (SIGTERM). Used by bench/server_side.sh to show how many bytes of a copy pass
through the host: a server-side copy sends requests and small XML answers, a streamed copy every
object byte twice (GET answers in, PUT bodies out).
"""
import json
import signal
import socket
import sys
import threading
import time

port = int(sys.argv[1])
up_host, up_port = sys.argv[2].rsplit(":", 1)
out = sys.argv[3]
lock = threading.Lock()
totals = {"from_clients": 0, "to_clients": 0, "connections": 0}


def dump():
    with lock:
        data = dict(totals)
    with open(out + ".tmp", "w") as f:
        json.dump(data, f)
    import os

    os.replace(out + ".tmp", out)


def pump(src, dst, key):
    try:
        while True:
            b = src.recv(1 << 16)
            if not b:
                break
            dst.sendall(b)
            with lock:
                totals[key] += len(b)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(client):
    try:
        upstream = socket.create_connection((up_host, int(up_port)))
    except OSError:
        client.close()
        return
    with lock:
        totals["connections"] += 1
    a = threading.Thread(target=pump, args=(client, upstream, "from_clients"), daemon=True)
    b = threading.Thread(target=pump, args=(upstream, client, "to_clients"), daemon=True)
    a.start()
    b.start()


def stop(*_):
    dump()
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(512)


def ticker():
    while True:
        time.sleep(0.5)
        dump()


threading.Thread(target=ticker, daemon=True).start()
dump()
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
