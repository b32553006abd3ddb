"""Rewrite rules for the source addresses the DUT picks (``direction:
out``): a stack whose default source address selection (RFC 6724 §5) is
wrong in one way."""

from __future__ import annotations

import ipaddress

from ..repair import repair
from .nd import _checksum

_seen: dict[bytes, None] = {}  # the DUT's own addresses, learnt from what it sends (DAD probes, sources)


def _learn(packet: bytes) -> None:
    src = packet[8:24]
    if src == bytes(16):
        if packet[6] == 58 and len(packet) >= 64 and packet[40] == 135:
            _seen[bytes(packet[48:64])] = None
    elif not ipaddress.IPv6Address(src).is_multicast:
        _seen[bytes(src)] = None


@repair("echo_source_swap")
def echo_source_swap(packet: bytes, dut: dict, to: str = "link_local", **_):
    """Send the DUT's Echo Requests from the wrong one of its addresses:
    ``to: link_local`` uses its link-local address for a global
    destination; ``to: other_global`` uses a global address other than the
    one the kernel chose."""
    if len(packet) < 48 or packet[0] >> 4 != 6:
        return None
    _learn(packet)
    if packet[6] != 58 or packet[40] != 128:
        return None
    src, dst = ipaddress.IPv6Address(packet[8:24]), ipaddress.IPv6Address(packet[24:40])
    mine = [ipaddress.IPv6Address(a) for a in _seen]
    if to == "link_local":
        if dst.is_link_local or src.is_link_local:
            return None
        new = next((a for a in reversed(mine) if a.is_link_local), ipaddress.IPv6Address(dut["link_local"]))
    else:
        if src.is_link_local:
            return None
        new = next((a for a in reversed(mine) if not a.is_link_local and a != src
                    and int(a) >> 64 != int(src) >> 64), None)
        if new is None:
            return None
    ip, icmp = bytearray(packet[:40]), bytearray(packet[40:])
    ip[8:24] = new.packed
    icmp[2:4] = b"\0\0"
    icmp[2:4] = _checksum(bytes(ip[8:24]), bytes(ip[24:40]), bytes(icmp)).to_bytes(2, "big")
    return bytes(ip) + bytes(icmp)
