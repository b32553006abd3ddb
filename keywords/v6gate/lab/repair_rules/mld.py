"""Rewrite rules for the MLD messages the DUT sends (``direction: out``):
a stack that builds its Reports wrongly in one field, for the checks that
judge the DUT's own Reports (RFC 2710 §3, RFC 3810 §5.2)."""

from __future__ import annotations

import struct
import time

from ..repair import DROP, repair
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


# -- MLDv2 source filtering (RFC 3810 §5.2.12, §6.1, §6.3) -------------------------------------------------

SOLICITED_NODE = bytes.fromhex("ff0200000000000000000001ff")  # ff02::1:ff00:0/104, the groups ND needs


def _records(icmp: bytes) -> list[tuple[int, bytes, list[bytes], bytes]] | None:
    """(type, group, sources, aux data) of each record of an MLDv2 Report; None if malformed."""
    out, off, count = [], 8, struct.unpack("!H", icmp[6:8])[0]
    for _ in range(count):
        if off + 20 > len(icmp):
            return None
        rtype, aux, nsrc = icmp[off], icmp[off + 1], struct.unpack("!H", icmp[off + 2:off + 4])[0]
        end = off + 20 + 16 * nsrc + 4 * aux
        if end > len(icmp):
            return None
        sources = [bytes(icmp[o:o + 16]) for o in range(off + 20, off + 20 + 16 * nsrc, 16)]
        out.append((rtype, bytes(icmp[off + 4:off + 20]), sources, bytes(icmp[off + 20 + 16 * nsrc:end])))
        off = end
    return out


def _report(ip: bytearray, hbh: bytearray, icmp: bytearray, records) -> bytes:
    """The MLDv2 Report rebuilt with ``records`` (checksum and lengths recomputed)."""
    body = bytearray(icmp[:8])
    body[6:8] = struct.pack("!H", len(records))
    for rtype, group, sources, aux in records:
        body += bytes([rtype, len(aux) // 4]) + struct.pack("!H", len(sources)) + group + b"".join(sources) + aux
    body[2:4] = b"\0\0"
    body[2:4] = struct.pack("!H", _checksum(bytes(ip[8:24]), bytes(ip[24:40]), bytes(body)))
    ip[4:6] = struct.pack("!H", len(hbh) + len(body))
    return bytes(ip) + bytes(hbh) + bytes(body)


def _v2_report(packet: bytes):
    parts = _split(packet)
    if parts is None or parts[2][0] != 143 or len(parts[2]) < 8:
        return None
    records = _records(parts[2])
    return None if records is None else (*parts, records)


@repair("mld_record_wrong")
def mld_record_wrong(packet: bytes, dut: dict, swap: dict | None = None, drop_source: bool = False,
                     drop_types: list | None = None, **_):
    """The DUT's MLDv2 Reports leave with the records of its other groups
    (not the solicited-node groups ND needs) wrong: ``swap`` maps record
    types (a stack that picks the wrong row of RFC 3810 Table 1, e.g.
    {5: 6, 6: 5}), ``drop_source`` leaves the last source out of each record
    that has one (a stack that loses a source of its filter), ``drop_types``
    removes records of those types (a Report left with none is not sent)."""
    parsed = _v2_report(packet)
    if parsed is None:
        return None
    ip, hbh, icmp, records = parsed
    swap = {int(k): int(v) for k, v in (swap or {}).items()}
    out, changed = [], False
    for rtype, group, sources, aux in records:
        if group.startswith(SOLICITED_NODE):
            out.append((rtype, group, sources, aux))
            continue
        if drop_types and rtype in drop_types:
            changed = True
            continue
        new_type = swap.get(rtype, rtype)
        new_sources = sources[:-1] if drop_source and sources else sources
        changed |= new_type != rtype or new_sources != sources
        out.append((new_type, group, new_sources, aux))
    if not changed:
        return None
    return _report(ip, hbh, icmp, out) if out else DROP


@repair("mld_report_once")
def mld_report_once(packet: bytes, dut: dict, repairer=None, window_s: float = 10.0, **_):
    """A stack that sends each State-Change record once (no retransmission,
    RFC 3810 §6.1): a state-change record (types 3-6) that repeats one sent
    in the last ``window_s`` seconds is left out of the Report (a Report
    left with nothing is held back); current-state records pass."""
    parsed = _v2_report(packet)
    if parsed is None or repairer is None:
        return None
    ip, hbh, icmp, records = parsed
    now = time.monotonic()
    sent = repairer.state.setdefault("sent", {})
    out = []
    for rtype, group, sources, aux in records:
        key = (rtype, group, tuple(sorted(sources)))
        if rtype in (3, 4, 5, 6) and now - sent.get(key, -1e9) <= window_s:
            continue
        if rtype in (3, 4, 5, 6):
            sent[key] = now
        out.append((rtype, group, sources, aux))
    if len(out) == len(records):
        return None
    return _report(ip, hbh, icmp, out) if out else DROP


@repair("mld_source_query_as_group_query")
def mld_source_query_as_group_query(packet: bytes, dut: dict, **_):
    """A stack that takes a Multicast Address and Source Specific Query for a
    Multicast Address Specific one (RFC 3810 §6.2, §6.3): the MLDv2 Query
    arrives with its source list removed."""
    parts = _query(packet)
    if parts is None or len(parts[2]) < 28:
        return None
    ip, hbh, icmp = parts
    if struct.unpack("!H", icmp[26:28])[0] == 0:
        return None
    del icmp[28:]
    icmp[26:28] = b"\0\0"
    return _requery(ip, hbh, icmp)


@repair("mld_exclude_answer_per_table_3")
def mld_exclude_answer_per_table_3(packet: bytes, dut: dict, repairer=None, **_):
    """The lab DUT with RFC 3810 Table 3's row for EXCLUDE (direction both):
    Linux answers a Multicast Address and Source Specific Query (sources B)
    for a group in EXCLUDE (A) with its whole state, IS_EX (A), where the
    RFC says IS_IN (B-A); this rule remembers the Query on the way in and
    rewrites that answer on the way out (no Report when B-A is empty)."""
    if repairer is None:
        return None
    pending = repairer.state.setdefault("queried", {})
    parts = _query(packet)
    if parts is not None:  # in: a Query
        icmp = parts[2]
        if len(icmp) >= 28:
            n = struct.unpack("!H", icmp[26:28])[0]
            if n and len(icmp) >= 28 + 16 * n:
                group = bytes(icmp[8:24])
                pending.setdefault(group, set()).update(bytes(icmp[o:o + 16]) for o in range(28, 28 + 16 * n, 16))
        return None
    parsed = _v2_report(packet)
    if parsed is None or not pending:
        return None
    ip, hbh, icmp, records = parsed
    out, changed = [], False
    for rtype, group, sources, aux in records:
        if rtype == 2 and group in pending:  # MODE_IS_EXCLUDE answering the pending source-specific query
            rest = sorted(pending.pop(group) - set(sources))
            changed = True
            if rest:
                out.append((1, group, rest, aux))
            continue
        out.append((rtype, group, sources, aux))
    if not changed:
        return None
    return _report(ip, hbh, icmp, out) if out else DROP
