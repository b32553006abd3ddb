"""A bulk transfer through a TCP echo service (RFC 862): send N octets and
read them back, so the *server* (the DUT) sends N octets to this client.
Used by area plpmtud and its gate, run on the node behind the narrower path
(standard library only; ``python3 bulk_echo.py ADDRESS PORT OCTETS
TIMEOUT_S [SOURCE]``; SOURCE: the local address to connect from, which
picks the path where the node has one address per path).  Prints one JSON
line:

    {"sent": N, "received": M, "seconds": S, "complete": true|false,
     "error": null | "what went wrong", "dut_fault": true|false}

``seconds`` is from the connection's start to the last octet echoed back.
A connection refused or reset, or a timeout, is the DUT's doing
(``dut_fault``); a bad argument is not.
"""

from __future__ import annotations

import json
import socket
import struct
import sys
import threading
import time

CHUNK = 16384


def transfer(address: str, port: int, octets: int, timeout_s: float, source: str | None = None) -> dict:
    start = time.monotonic()
    deadline = start + timeout_s
    out = {"sent": 0, "received": 0, "seconds": None, "complete": False, "error": None, "dut_fault": False}
    try:
        sock = socket.create_connection((address, port), timeout=max(0.1, deadline - time.monotonic()),
                                        source_address=(source, 0) if source else None)
    except OSError as exc:
        out.update(error=f"connect to [{address}]:{port}: {exc}", dut_fault=True)
        return out
    payload = bytes(range(256)) * (CHUNK // 256)

    def sender():
        while out["sent"] < octets and time.monotonic() < deadline:
            try:
                out["sent"] += sock.send(payload[:min(CHUNK, octets - out["sent"])])
            except TimeoutError:  # the window is shut while the DUT cannot echo (a stalled path): wait on
                continue
            except OSError:
                return

    sock.settimeout(0.5)
    thread = threading.Thread(target=sender, daemon=True)
    thread.start()
    try:
        while out["received"] < octets and time.monotonic() < deadline:
            try:
                data = sock.recv(65536)
            except TimeoutError:
                continue
            if not data:
                out.update(error="the DUT closed the connection", dut_fault=True)
                break
            out["received"] += len(data)
    except OSError as exc:
        out.update(error=f"receive: {exc}", dut_fault=True)
    if out["received"] >= octets:
        out.update(complete=True, seconds=round(time.monotonic() - start, 4))
    elif out["error"] is None:
        out.update(error=f"timed out after {timeout_s:g} s", dut_fault=True)
    if not out["complete"]:  # reset, not closed: a server stuck sending into a black hole is freed at once
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    return out


def main(argv: list[str]) -> int:
    try:
        address, port, octets, timeout_s = argv[0], int(argv[1]), int(argv[2]), float(argv[3])
        source = argv[4] if len(argv) > 4 else None
    except (IndexError, ValueError):
        print(json.dumps({"error": "usage: bulk_echo.py ADDRESS PORT OCTETS TIMEOUT_S [SOURCE]", "dut_fault": False}))
        return 2
    print(json.dumps(transfer(address, port, octets, timeout_s, source)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
