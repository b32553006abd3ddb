"""Steps shared by the plpmtud checks and the PLPMTUD gate: the node behind
the narrower path the target names (``extensions.plpmtud.client``), the
DUT's TCP echo service, and one bulk transfer through it
(``net/bulk_echo.py``, run in the client's namespace)."""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
from pathlib import Path

from ..core.context import CheckContext
from ..errors import BenchError, NotApplicable, UsageError
from ..util.proc import in_ns

TRANSFER_OCTETS = 1 << 20  # 1 MiB
DEFAULT_TIMEOUT_S = 30.0  # the time we state for it (RFC 4821 gives none); Linux's black-hole recovery: about 6.5 s
PATH_MTU = 1280  # the narrower hop of the lab's path (and of the bench a target names, by contract)
BULK_ECHO = Path(__file__).resolve().parent.parent / "net" / "bulk_echo.py"


def settings(t: CheckContext) -> tuple[str | None, str, float]:
    """(the client's namespace or None for this host, its address, the transfer's time limit)."""
    ext = (t.target.extensions or {}).get("plpmtud") or {}
    if not isinstance(ext, dict):
        raise UsageError(f"{t.target.source}: extensions.plpmtud must be a mapping {{client: {{netns, address}}, "
                         "transfer_timeout_s: S}")
    client = ext.get("client")
    if not isinstance(client, dict) or not client.get("address"):
        raise NotApplicable("the target names no node behind a narrower, Packet-Too-Big-dropping path "
                            "(extensions.plpmtud.client: {netns: NS or null, address: A}; the lab fills it in)")
    try:
        address = str(ipaddress.IPv6Address(str(client["address"])))
    except ValueError:
        raise UsageError(f"{t.target.source}: extensions.plpmtud.client.address must be an IPv6 address") from None
    timeout = ext.get("transfer_timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 1 <= timeout <= 600:
        raise UsageError(f"{t.target.source}: extensions.plpmtud.transfer_timeout_s must be seconds in [1, 600]")
    netns = client.get("netns")
    if netns is not None and not isinstance(netns, str):
        raise UsageError(f"{t.target.source}: extensions.plpmtud.client.netns must be a namespace name or null")
    return netns, address, float(timeout)


def echo_port(t: CheckContext) -> int:
    for s in t.target.services:
        if isinstance(s, dict) and s.get("name") == "echo" and s.get("proto", "tcp") == "tcp":
            return int(s["port"])
    raise NotApplicable("the target declares no TCP echo service (services: [{name: echo, port: 7, proto: tcp}]), "
                        "which the bulk transfer from the DUT goes through")


def transfer(netns: str | None, address: str, port: int, octets: int, timeout_s: float,
             source: str | None = None) -> dict:
    """One bulk echo run from the client node (net/bulk_echo.py), from ``source`` if given; its JSON answer."""
    argv = in_ns(netns, [sys.executable, str(BULK_ECHO), address, str(port), str(octets), str(timeout_s),
                         *([source] if source else [])])
    answer = client_answer(argv, timeout_s, "the bulk transfer client")
    if answer.get("error") and not answer.get("dut_fault"):
        raise BenchError(f"the bulk transfer client: {answer['error']}")
    return answer


def client_answer(argv: list[str], timeout_s: float, what: str) -> dict:
    """Run a transfer client that prints one JSON object as its last line (given ``timeout_s`` + 15 s to end);
    that object.  BenchError when it did not end or gave none."""
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s + 15)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{what} did not end {timeout_s + 15:g} s after it started") from None
    try:
        answer = json.loads(cp.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise BenchError(f"{what} gave no answer (exit {cp.returncode}): {cp.stderr.strip()[-300:]}") from None
    if not isinstance(answer, dict):
        raise BenchError(f"{what}'s answer is not an object: {cp.stdout.strip()[-200:]}")
    return answer
