"""Rewrite rules for the offload area (``protocol: tcp``): what a broken
segmentation or checksum engine does to the segments the DUT's stack built
(``direction: out``), and a stack that ignores the MSS its peer announced
(``direction: in``: the SYN arrives with a larger MSS, so the DUT's real
stack sends segments larger than what was announced on the wire)."""

from __future__ import annotations

import struct

from ...net import offload as O
from ..repair import repair

_counts: dict[tuple, int] = {}


def _tcp(packet: bytes):
    if len(packet) < 60 or packet[0] >> 4 != 6:
        return None
    found = O.transport(packet)
    return found if found and found[0] == O.NH_TCP else None


def _with_checksum(ip: bytearray, start: int) -> bytes:
    seg = bytes(ip[start:])
    ip[start + 16:start + 18] = O.l4_checksum(bytes(ip[8:24]), bytes(ip[24:40]), O.NH_TCP, seg).to_bytes(2, "big")
    return bytes(ip)


@repair("tcp_syn_mss")
def tcp_syn_mss(packet: bytes, dut: dict, mss: int = 1440, **_):
    """SYNs arrive announcing ``mss`` instead of what the peer sent."""
    found = _tcp(packet)
    if not found:
        return None
    start = found[1]
    if packet[start + 13] & 0x12 != 0x02:
        return None
    ip = bytearray(packet)
    off, end = start + 20, start + (packet[start + 12] >> 4) * 4
    while off < end:
        kind = ip[off]
        if kind == 0:
            break
        if kind == 1:
            off += 1
            continue
        if kind == 2 and ip[off + 1] == 4:
            struct.pack_into("!H", ip, off + 2, mss)
            return _with_checksum(ip, start)
        off += max(2, ip[off + 1])
    return None


@repair("tcp_segments_broken_after")
def tcp_segments_broken_after(packet: bytes, dut: dict, action: str = "corrupt_checksum", after: int = 2, **_):
    """The DUT's data segments of a connection, from the ``after``+1-th on,
    leave broken by its offload engine: ``corrupt_checksum`` (the checksum
    changed after the stack computed it), ``strip_dstopts`` (the
    Destination Options header the socket set is missing), ``flow_label``
    (a different flow label)."""
    found = _tcp(packet)
    if not found:
        return None
    start = found[1]
    hlen = (packet[start + 12] >> 4) * 4
    if len(packet) - start - hlen <= 0:
        return None  # no data
    key = (packet[8:24], packet[24:40], packet[start:start + 4])
    _counts[key] = n = _counts.get(key, 0) + 1
    if n <= after:
        return None
    ip = bytearray(packet)
    if action == "corrupt_checksum":
        ip[start + 16] ^= 0x5A
        return bytes(ip)
    if action == "flow_label":
        flow = (struct.unpack("!I", ip[0:4])[0] & 0xFFFFF) ^ 0x5A5A5
        struct.pack_into("!I", ip, 0, (struct.unpack("!I", ip[0:4])[0] & ~0xFFFFF) | flow)
        return bytes(ip)
    if action == "strip_dstopts":
        if ip[6] != 60:
            return None
        length = (ip[41] + 1) * 8
        nh = ip[40]
        out = ip[:40] + ip[40 + length:]
        out[6] = nh
        struct.pack_into("!H", out, 4, len(out) - 40)
        return bytes(out)
    return None
