"""Rewrite rules for the MLD messages the DUT sends (``direction: out``):
a stack that builds its Reports wrongly in one field, for the checks that
judge the DUT's own Reports (RFC 2710 §3, RFC 3810 §5.2)."""

from __future__ import annotations

import struct

from ..repair import repair
from .nd import _checksum

MLD_REPORTS = (131, 132, 143)


def _split(packet: bytes):
    """(IPv6 header, Hop-by-Hop header or b'', ICMPv6 message) of an MLD message."""
    if len(packet) < 48 or packet[0] >> 4 != 6:
        return None
    ip = bytearray(packet[:40])
    if packet[6] == 0:
        hlen = (packet[41] + 1) * 8
        hbh, icmp = bytearray(packet[40:40 + hlen]), bytearray(packet[40 + hlen:])
        if not hbh or hbh[0] != 58:
            return None
    elif packet[6] == 58:
        hbh, icmp = bytearray(), bytearray(packet[40:])
    else:
        return None
    if not icmp or icmp[0] not in MLD_REPORTS:
        return None
    return ip, hbh, icmp


@repair("mld_report_wrong")
def mld_report_wrong(packet: bytes, dut: dict, field: str = "hop_limit", **_):
    """Send the DUT's MLD Reports (v1 and v2) and Dones with one field wrong:
    hop_limit (2), source (a global address), destination (ff02::1),
    router_alert (none), reserved (non-zero), record_type (7, undefined),
    aux_data (an auxiliary word), max_resp_delay (non-zero in a v1 Report)."""
    parts = _split(packet)
    if parts is None:
        return None
    ip, hbh, icmp = parts
    v2 = icmp[0] == 143 and len(icmp) >= 28
    if field == "hop_limit":
        ip[7] = 2
    elif field == "source":
        ip[8:24] = bytes.fromhex("20010db8ffff00000000000000000002")
    elif field == "destination":
        ip[24:40] = bytes.fromhex("ff020000000000000000000000000001")
    elif field == "router_alert" and hbh:
        hbh = bytearray([58, 0, 1, 4, 0, 0, 0, 0])  # the Hop-by-Hop header keeps only padding
    elif field == "reserved":
        icmp[4 if icmp[0] == 143 else 6] |= 0x80
    elif field == "max_resp_delay" and icmp[0] == 131:
        icmp[4:6] = struct.pack("!H", 1000)
    elif field == "record_type" and v2:
        icmp[8] = 7
    elif field == "aux_data" and v2:
        pos = 28 + 16 * struct.unpack("!H", icmp[10:12])[0]  # after the first record's sources
        icmp[9] = 1
        icmp[pos:pos] = b"\0\0\0\0"
    else:
        return None
    icmp[2:4] = b"\0\0"
    icmp[2:4] = struct.pack("!H", _checksum(bytes(ip[8:24]), bytes(ip[24:40]), bytes(icmp)))
    ip[4:6] = struct.pack("!H", len(hbh) + len(icmp))
    return bytes(ip) + bytes(hbh) + bytes(icmp)


def _query(packet: bytes):
    """(IPv6 header, Hop-by-Hop header, ICMPv6) of an MLD Query."""
    if len(packet) < 72 or packet[0] >> 4 != 6 or packet[6] != 0:
        return None
    hlen = (packet[41] + 1) * 8
    hbh, icmp = bytearray(packet[40:40 + hlen]), bytearray(packet[40 + hlen:])
    if not hbh or hbh[0] != 58 or len(icmp) < 24 or icmp[0] != 130:
        return None
    return bytearray(packet[:40]), hbh, icmp


def _requery(ip: bytearray, hbh: bytearray, icmp: bytearray) -> bytes:
    icmp[2:4] = b"\0\0"
    icmp[2:4] = struct.pack("!H", _checksum(bytes(ip[8:24]), bytes(ip[24:40]), bytes(icmp)))
    ip[4:6] = struct.pack("!H", len(hbh) + len(icmp))
    return bytes(ip) + bytes(hbh) + bytes(icmp)


@repair("mld_query_delay")
def mld_query_delay(packet: bytes, dut: dict, factor: float = 1.0, floor_ms: int = 0, keep_zero: bool = False, **_):
    """A stack that misreads a Query's Maximum Response Delay: multiplied by
    ``factor`` and never below ``floor_ms`` (so it answers late, or keeps a
    longer running timer); ``keep_zero``: a delay of 0 ("respond at once")
    is still read as 0."""
    parts = _query(packet)
    if parts is None:
        return None
    ip, hbh, icmp = parts
    mrd = struct.unpack("!H", icmp[4:6])[0]
    if keep_zero and mrd == 0:
        return None
    new = min(0xFFFF if len(icmp) == 24 else 0x7FFF, max(int(mrd * factor), floor_ms))
    if new == mrd:
        return None
    icmp[4:6] = struct.pack("!H", new)
    return _requery(ip, hbh, icmp)


@repair("mld_query_as_v2")
def mld_query_as_v2(packet: bytes, dut: dict, **_):
    """A stack that handles an MLDv1 Query (24 octets) as an MLDv2 Query
    (it never enters MLDv1 compatibility mode): the Query arrives as a
    28-octet MLDv2 Query (QRV 2, QQIC 125, no sources)."""
    parts = _query(packet)
    if parts is None or len(parts[2]) != 24:
        return None
    ip, hbh, icmp = parts
    icmp += bytes([0x02, 125, 0, 0])
    return _requery(ip, hbh, icmp)
