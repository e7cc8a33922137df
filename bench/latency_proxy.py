#!/usr/bin/env python3
"""A TCP pass-through proxy on 127.0.0.1 that adds a fixed one-way delay in each
direction, to run the benchmark as if the API server were a network hop away
(a managed cluster seen from a CI agent), not on loopback.

TLS goes through untouched (the client still verifies the API server's
certificate, which names 127.0.0.1). Every chunk is forwarded ``--delay-ms``
after it arrived, in order, without limiting throughput: a request/response
round trip costs 2 x delay more, as over a real link with that RTT.

    python bench/latency_proxy.py --target 127.0.0.1:6443 --delay-ms 10
    # prints the port it listens on (127.0.0.1 only), then serves until killed
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import time


async def pump(reader, writer, delay):
    queue = asyncio.Queue()

    async def read():
        try:
            while True:
                data = await reader.read(65536)
                queue.put_nowait((time.monotonic() + delay, data))
                if not data:
                    return
        except (ConnectionError, OSError):
            queue.put_nowait((time.monotonic(), b""))

    async def write():
        try:
            while True:
                due, data = await queue.get()
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            return

    await asyncio.gather(read(), write())


async def handle(client_reader, client_writer, target, delay):
    host, port = target
    try:
        server_reader, server_writer = await asyncio.open_connection(host, port)
    except OSError:
        client_writer.close()
        return
    try:
        await asyncio.gather(pump(client_reader, server_writer, delay), pump(server_reader, client_writer, delay))
    finally:
        for w in (server_writer, client_writer):
            try:
                w.close()
            except Exception:  # noqa: BLE001
                pass


async def main_async(args):
    host, _, port = args.target.rpartition(":")
    if host not in ("127.0.0.1", "localhost"):
        raise SystemExit("only a target on 127.0.0.1")
    delay = args.delay_ms / 1000.0
    server = await asyncio.start_server(lambda r, w: handle(r, w, (host, int(port)), delay), "127.0.0.1",
                                        args.port)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", required=True, help="127.0.0.1:PORT of the API server")
    parser.add_argument("--delay-ms", type=float, default=10.0, help="one-way delay (RTT = 2x); default 10")
    parser.add_argument("--port", type=int, default=0, help="port to listen on, 127.0.0.1 (default: any free)")
    args = parser.parse_args(argv)
    try:
        asyncio.run(main_async(args))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
