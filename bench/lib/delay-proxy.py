#!/usr/bin/env python3
"""A TCP proxy on 127.0.0.1 that adds a fixed delay to every request (bench/list.sh DELAY_MS).

    delay-proxy.py LISTEN_PORT UPSTREAM_PORT DELAY_MS

Each chunk a client sends is held DELAY_MS before it goes upstream, so every HTTP request (a
LIST is one small chunk) waits that long, as over a path to a cloud region; answers flow back at
once. Connections are independent, so requests in flight on separate connections overlap as
they would on a real network. Test-only: loopback, no TLS.
"""
import asyncio
import sys


async def pump(reader, writer, delay):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            if delay:
                await asyncio.sleep(delay)
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def main():
    listen, upstream, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000

    async def handle(cr, cw):
        try:
            ur, uw = await asyncio.open_connection("127.0.0.1", upstream)
        except OSError:
            cw.close()
            return
        await asyncio.gather(pump(cr, uw, delay), pump(ur, cw, 0))

    server = await asyncio.start_server(handle, "127.0.0.1", listen, backlog=512)
    async with server:
        await server.serve_forever()


asyncio.run(main())
