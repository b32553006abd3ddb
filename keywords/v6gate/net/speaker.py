"""The output contract of the protocol speakers in this package that run as
programs on the storage client node (``python -m v6gate.net.iscsi|nfs4|
nvme_tcp ...``): one JSON object on stdout, the answer or the error, with
``dut_fault`` saying whether the DUT caused it (it refused, reset or timed
out the connection, or broke its protocol) or the bench did."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable


def recv_exact(sock: socket.socket, n: int, peer: str = "the server") -> bytes:
    """Exactly ``n`` bytes from a stream; the peer closing first is its fault (ConnectionResetError)."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionResetError(f"{peer} closed the connection ({len(buf)} of {n} bytes)")
        buf += chunk
    return bytes(buf)


def answer(call: Callable[[], dict], errors: tuple[type[BaseException], ...],
           dut_errors: tuple[type[BaseException], ...]) -> int:
    try:
        out = call()
    except errors as exc:
        out = {"error": f"{exc.__class__.__name__}: {exc}", "dut_fault": isinstance(exc, dut_errors)}
    print(json.dumps(out))
    return 0
