"""The lab DUT's application that connects to a name: a Happy Eyeballs
client (RFC 8305), for the Happy Eyeballs gate and any check that makes the
DUT connect (control adapter ``connect``) under the DUT configuration
``he-client``.

The connection logic is async_stagger 0.4.1's ``create_connected_sock`` (a
third-party asyncio implementation of RFC 8305: A and AAAA resolved
concurrently through the system's getaddrinfo, one call per family, with a
Resolution Delay for a late AAAA; attempts interleaved by family, IPv6 first,
started a Connection Attempt Delay apart; the first to connect wins), not
ours: Python's own ``asyncio.open_connection(happy_eyeballs_delay=...)``
resolves both families in one getaddrinfo call (no Resolution Delay: a late
AAAA delays everything) and glibc + a connect loop is not Happy Eyeballs at
all.  Its settings are the DUT's configuration, read from
``<lab dir>/dut-connect.json`` (written by the he-client service, changed by
faults):

* ``delay``: the Connection Attempt Delay in seconds, or null: attempts one
  after the other, each waiting for the previous to fail (the kernel's TCP
  connect timeout): the "waits for the TCP timeout" DUT;
* ``resolution_delay``: seconds to wait for AAAA after A (concurrent resolver);
* ``resolver``: ``concurrent`` (one getaddrinfo per family) or ``basic`` (one
  getaddrinfo for both, sorted by the system's RFC 6724 policy: gai.conf).

Prints one JSON line (family, peer, seconds) and exits 0 when connected;
exits 1 with the reason on stderr otherwise.

    python -m v6gate.lab.he_client HOST PORT TIMEOUT_S CONFIG_JSON
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time
from functools import partial


async def connect(host: str, port: int, timeout: float, conf: dict) -> dict:
    import async_stagger
    from async_stagger import resolvers

    if conf.get("resolver", "concurrent") == "basic":
        resolver = resolvers.basic_resolver
    else:
        resolver = partial(resolvers.concurrent_resolver, resolution_delay=float(conf.get("resolution_delay", 0.05)))
    delay = conf.get("delay", 0.25)
    t0 = time.monotonic()
    sock = await asyncio.wait_for(async_stagger.create_connected_sock(
        host, port, delay=None if delay is None else float(delay), resolver=resolver), timeout)
    try:
        return {"family": 6 if sock.family == socket.AF_INET6 else 4, "peer": sock.getpeername()[0],
                "seconds": round(time.monotonic() - t0, 4)}
    finally:
        sock.close()


def main(argv: list[str]) -> int:
    host, port, timeout = argv[0], int(argv[1]), float(argv[2])
    try:
        with open(argv[3]) as f:
            conf = json.loads(f.read(4096))
    except (OSError, ValueError) as exc:
        print(f"he_client: cannot read its configuration {argv[3]}: {exc}", file=sys.stderr)
        return 2
    try:
        print(json.dumps(asyncio.run(connect(host, port, timeout, conf))), flush=True)
    except Exception as exc:  # OSError, TimeoutError, and async_stagger's own errors (every attempt failed)
        print(f"he_client: no connection to {host} port {port}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
