"""Rewrite rules for the offload area (``protocol: tcp``): what a broken
segmentation or checksum engine does to the segments the DUT's stack built
(``direction: out``), and a stack that ignores the MSS its peer announced
(``direction: in``: the SYN arrives with a larger MSS, so the DUT's real
stack sends segments larger than what was announced on the wire)."""

from __future__ import annotations

import struct

from ...net import exthdr as X
from ...net import frag as F
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


_ends: dict[tuple, int] = {}


def _rotated(data: bytes) -> bytes:
    """``data`` with its first 8 octets moved to the end: the same 16-bit
    words (the checksum still verifies), the application's bytes changed."""
    return data[8:] + data[:8]


@repair("tcp_data_corrupted_when")
def tcp_data_corrupted_when(packet: bytes, dut: dict, when: str = "dstopts", **_):
    """A receive engine (GRO/LRO, a NIC's coalescing or reassembly) that
    changes the data of some incoming TCP segments, keeping their checksum
    valid (the kernel then delivers the wrong bytes):

    * ``dstopts``: a segment behind a Destination Options header has its
      data offset miscounted by the header's length (the header's octets
      read as data, the last ones lost);
    * ``out_of_order``: a segment that fills a hole (arrives after a later
      one) is merged with its octets out of place;
    * ``fragment``: the first fragment of a fragmented segment has its
      first data octets out of place."""
    if len(packet) < 60 or packet[0] >> 4 != 6:
        return None
    chain = F.header_chain(packet)
    if when == "fragment":
        for i, (nh, start, _) in enumerate(chain[:-1]):
            if nh == X.NH_FRAGMENT and packet[start] == O.NH_TCP:
                offset_m = struct.unpack("!H", packet[start + 2:start + 4])[0]
                if offset_m >> 3 or not offset_m & 1:
                    return None  # only first fragments of fragmented segments
                tcp = chain[i + 1][1]
                ds = tcp + (packet[tcp + 12] >> 4) * 4
                if len(packet) - ds < 16:
                    return None
                return packet[:ds] + _rotated(packet[ds:ds + 16]) + packet[ds + 16:]
        return None
    found = _tcp(packet)
    if not found:
        return None
    start = found[1]
    ds = start + (packet[start + 12] >> 4) * 4
    if len(packet) - ds < 16:
        return None
    if when == "dstopts":
        at = next((s for nh, s, _ in chain[:-1] if nh == X.NH_DEST_OPTS), None)
        if at is None:
            return None
        hdr = packet[at:at + (packet[at + 1] + 1) * 8]
        ip = bytearray(packet[:ds] + (hdr + packet[ds:])[:len(packet) - ds])
        return _with_checksum(ip, start)
    if when == "out_of_order":
        seq = struct.unpack("!I", packet[start + 4:start + 8])[0]
        key = (packet[8:24], packet[24:40], packet[start:start + 4])
        end = seq + len(packet) - ds
        late = key in _ends and end <= _ends[key]
        _ends[key] = max(_ends.get(key, 0), end)
        return packet[:ds] + _rotated(packet[ds:]) if late else None
    return None
