"""Helpers for reactive impostor rules: lenient parsing of what the DUT
received (as a stack that skips validity tests would read it) and changes
to the lab DUT kernel's neighbour cache and routes, so that the kernel
then behaves as that stack would."""

from __future__ import annotations

import contextlib
import ipaddress
import struct
import subprocess
import time

ETH_HEADER = 14
IPV6_HEADER = 40

# neighbour states as `ip neigh` prints them
CONFIRMED = {"REACHABLE", "PERMANENT", "NOARP"}


def icmp_bytes(pkt) -> tuple[bytes, bytes, bytes] | None:
    """(source, destination, ICMPv6 bytes) of an Ether/IPv6/ICMPv6 frame,
    reading past the IPv6 payload length into any trailer (what a parser
    that ignores the length would see).  None for other frames."""
    raw = bytes(pkt)
    if len(raw) < ETH_HEADER + IPV6_HEADER + 4 or raw[12:14] != b"\x86\xdd":
        return None
    ip = raw[ETH_HEADER:ETH_HEADER + IPV6_HEADER]
    if ip[6] != 58:
        return None
    return ip[8:24], ip[24:40], raw[ETH_HEADER + IPV6_HEADER:]


def addr(b: bytes) -> str:
    return str(ipaddress.IPv6Address(b))


def mac(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b[:6])


def ether_source(pkt) -> str:
    return mac(bytes(pkt)[6:12])


def options(body: bytes, start: int) -> dict[int, bytes]:
    """ND options from ``start``; a zero length ends the walk (a lenient
    parser must stop somewhere)."""
    out: dict[int, bytes] = {}
    i = start
    while i + 2 <= len(body):
        kind, length = body[i], body[i + 1] * 8
        if length == 0:
            break
        out.setdefault(kind, body[i + 2:i + length])
        i += length
    return out


def run_ip(dut: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "-n", dut["netns"], "-6", *args], capture_output=True, text=True, timeout=5)


def neigh_state(dut: dict, address: str) -> tuple[str, str | None]:
    """The kernel's entry for ``address``: (state, lladdr); ('NONE', None)
    when there is none."""
    cp = run_ip(dut, "neigh", "show", address, "dev", dut["ifname"])
    words = cp.stdout.split()
    if not words:
        return "NONE", None
    lladdr = words[words.index("lladdr") + 1] if "lladdr" in words else None
    return words[-1], lladdr


def set_neigh(dut: dict, address: str, lladdr: str | None, state: str) -> None:
    """Put ``address`` into ``state`` (reachable/stale/delay/probe), with
    ``lladdr`` (None: keep the cached one)."""
    args = ["neigh", "replace" if lladdr else "change", address]
    if lladdr:
        args += ["lladdr", lladdr]
    run_ip(dut, *args, "dev", dut["ifname"], "nud", state.lower())


def wait_state(dut: dict, address: str, states: set[str], timeout: float = 0.3) -> str:
    """Poll the entry until it is in one of ``states`` (the kernel handles a
    frame at about the moment the impostor sees it)."""
    deadline = time.monotonic() + timeout
    while True:
        state, _ = neigh_state(dut, address)
        if state in states or time.monotonic() > deadline:
            return state
        time.sleep(0.01)


def default_routers(dut: dict) -> list[str]:
    cp = run_ip(dut, "route", "show", "default", "dev", dut["ifname"])
    out = []
    for line in cp.stdout.splitlines():
        words = line.split()
        if "via" in words:
            out.append(words[words.index("via") + 1])
    return out


def once_per(dut: dict, key: str) -> int:
    """How many times ``key`` was seen before (state kept in the rule's dut dict)."""
    seen = dut.setdefault("_seen", {})
    n = seen.get(key, 0)
    seen[key] = n + 1
    return n


def u32(b: bytes, off: int) -> int:
    with contextlib.suppress(struct.error):
        return struct.unpack_from("!I", b, off)[0]
    return 0
