"""The audit's dissector in Python: the tshark fields of ``tshark.FIELDS``
for one frame, formatted as ``tshark -T fields -E occurrence=a -E
aggregator=,`` prints them (tshark 4.0), so that ``hosts.Audit.add`` gives
the same findings whichever produced them.  Like tshark with the audit's
preferences: checksums verified (status "1" good, "0" bad, "2" not
verified: truncated, UDP/IPv4 without one, or inside an ICMP error), no
reassembly (a fragment's payload is not dissected), the packet inside an
ICMP error dissected too (its fields follow the outer ones, as tshark
aggregates them).  Anything malformed ends the dissection at that layer:
what was decoded so far is kept, as tshark does.

It is the Python path of the fast engine (``fast.scan``: without a C
compiler, or for a capture the C engine cannot judge exactly) and the C
engine's reference: ``engine/dissect.c`` holds the same dissector, a
function per function here (where Python would raise, it stops the same
way), and runs by default.  A change here must be made there too;
``tests/unit/test_audit_engine.py`` compares the two host by host (and
``test_audit_fast.py`` this one with tshark, field by field) and fails
until they agree.
"""

from __future__ import annotations

import socket
import struct

from .tshark import FIELDS, F

LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_RAW_OLD = 1, 101, 12
LINKTYPE_SLL, LINKTYPE_SLL2, LINKTYPE_IPV4, LINKTYPE_IPV6 = 113, 276, 228, 229
VLAN_TYPES = (0x8100, 0x88A8, 0x9100)
DNS_PORTS = (53, 5353, 5355)  # DNS, mDNS, LLMNR: tshark decodes all three with the dns fields
DHCP_PORTS = (67, 68, 4011)
EXT_HEADERS = (0, 43, 60, 135, 139, 140)  # HBH, routing, destination options, mobility, HIP, shim6
_H = struct.Struct("!H")
_HH = struct.Struct("!HH")


def ntop6(b: bytes) -> str:
    """An IPv6 address as tshark prints it (glibc's inet_ntop: RFC 5952
    compression, and ::ffff:a.b.c.d / ::a.b.c.d for IPv4-mapped and
    -compatible addresses)."""
    return socket.inet_ntop(socket.AF_INET6, b)


def ntop4(b: bytes) -> str:
    return f"{b[0]}.{b[1]}.{b[2]}.{b[3]}"


def mac(b: bytes) -> str:
    return b.hex(":")


def inet_sum(data: bytes) -> int:
    """The Internet checksum's ones'-complement sum of ``data`` (padded)."""
    if len(data) % 2:
        data += b"\0"
    s = int.from_bytes(data, "big") % 0xFFFF
    return s


def checksum_ok(pseudo: bytes, segment: bytes) -> bool:
    """True when the ones'-complement sum over pseudo header + segment
    (which holds its checksum) is all ones."""
    total = int.from_bytes(pseudo, "big") % 0xFFFF + inet_sum(segment)
    return total % 0xFFFF == 0


_NFIELDS = len(FIELDS)


class _Out:
    """The fields of one frame, each its occurrences joined by "," as tshark
    aggregates them (None: none yet)."""

    __slots__ = ("v",)

    def __init__(self):
        self.v: list[str | None] = [None] * _NFIELDS

    def add(self, name: str, value) -> None:
        i = F[name]
        cur = self.v[i]
        self.v[i] = str(value) if cur is None else f"{cur},{value}"

    def fields(self) -> list[str]:
        return ["" if x is None else x for x in self.v]


def time_text(ns: int) -> str:
    """A frame's time as the "time" field shows it (tshark's frame.time_epoch)."""
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


def fields_of(frame: bytes, linktype: int, orig_len: int, ns: int) -> list[str]:
    out = _Out()
    out.add("time", time_text(ns))
    out.add("len", orig_len)
    try:
        _link(out, frame, linktype)
    except (IndexError, struct.error, ValueError):
        pass  # malformed: keep what was decoded
    return out.fields()


def _link(out: _Out, d: bytes, linktype: int) -> None:
    if linktype == LINKTYPE_ETHERNET:
        if len(d) < 14:
            return
        out.add("edst", mac(d[0:6]))
        out.add("esrc", mac(d[6:12]))
        etype = _H.unpack_from(d, 12)[0]
        if etype <= 1500:  # 802.3 length: LLC follows, nothing the audit reads
            return
        out.add("etype", f"0x{etype:04x}")
        off = 14
        while etype in VLAN_TYPES:
            if len(d) < off + 4:
                return
            tag, etype = etype, _H.unpack_from(d, off + 2)[0]
            if tag != 0x88A8:  # an 802.1ad service tag is tshark's ieee8021ad, without vlan.etype
                out.add("vlan_etype", f"0x{etype:04x}")
            off += 4
        _l3(out, d, off, etype)
    elif linktype == LINKTYPE_SLL:
        _l3(out, d, 16, _H.unpack_from(d, 14)[0])
    elif linktype == LINKTYPE_SLL2:
        _l3(out, d, 20, _H.unpack_from(d, 0)[0])
    elif linktype in (LINKTYPE_RAW, LINKTYPE_RAW_OLD, LINKTYPE_IPV4, LINKTYPE_IPV6) and d:
        _l3(out, d, 0, 0x86DD if d[0] >> 4 == 6 else 0x0800 if d[0] >> 4 == 4 else 0)


def _l3(out: _Out, d: bytes, off: int, etype: int, in_error: bool = False) -> None:
    if etype == 0x86DD:
        _ipv6(out, d, off, in_error)
    elif etype == 0x0800:
        _ipv4(out, d, off, in_error)
    elif etype == 0x0806 and not in_error:
        _arp(out, d, off)


def _arp(out: _Out, d: bytes, off: int) -> None:
    ptype = _H.unpack_from(d, off + 2)[0]
    hlen, plen = d[off + 4], d[off + 5]
    op = _H.unpack_from(d, off + 6)[0]
    out.add("arp_op", op)
    if ptype == 0x0800 and plen == 4:
        spa = off + 8 + hlen
        tpa = spa + 4 + hlen
        if len(d) >= tpa + 4:
            out.add("arp_spa", ntop4(d[spa:spa + 4]))
            out.add("arp_tpa", ntop4(d[tpa:tpa + 4]))


def _ipv4(out: _Out, d: bytes, off: int, in_error: bool) -> None:
    if len(d) < off + 20 or d[off] >> 4 != 4:
        return
    ihl = (d[off] & 0x0F) * 4
    if ihl < 20 or len(d) < off + ihl:
        return
    total = _H.unpack_from(d, off + 2)[0]
    out.add("ip_src", ntop4(d[off + 12:off + 16]))
    out.add("ip_dst", ntop4(d[off + 16:off + 20]))
    out.add("ip_ck", 1 if inet_sum(d[off:off + ihl]) == 0 else 0)
    if total < ihl:
        return
    flags_frag = _H.unpack_from(d, off + 6)[0]
    if flags_frag & 0x1FFF:  # a later fragment: tshark does not dissect it without reassembly
        return
    fragment = bool(flags_frag & 0x2000)  # the first one is dissected, its checksum not verified
    proto = d[off + 9]
    end = min(len(d), off + total)
    truncated = len(d) < off + total
    _l4(out, d, off + ihl, end, proto, (d[off + 12:off + 20], total - ihl), truncated, fragment, 4, in_error)


def _ipv6(out: _Out, d: bytes, off: int, in_error: bool) -> None:
    if len(d) < off + 8 or d[off] >> 4 != 6:
        return
    plen = _H.unpack_from(d, off + 4)[0]
    nh, hlim = d[off + 6], d[off + 7]
    out.add("hlim", hlim)  # tshark adds each field the capture holds, as far as it goes
    if len(d) < off + 24:
        return
    src, dst = d[off + 8:off + 24], d[off + 24:off + 40]
    out.add("v6_src", ntop6(src))
    if len(d) < off + 40:
        return
    out.add("v6_dst", ntop6(dst))
    end = min(len(d), off + 40 + plen)
    truncated = len(d) < off + 40 + plen
    o = off + 40
    fragment = False
    while nh in EXT_HEADERS or nh == 44 or nh == 51:
        if o + 8 > end:
            return
        if nh == 44:  # fragment: a later one is not dissected without reassembly, the first one is
            offm = _H.unpack_from(d, o + 2)[0]
            if offm & 0xFFF8:
                return
            fragment = bool(offm & 1)
            nh, o = d[o], o + 8
            continue
        hl = (d[o + 1] + 2) * 4 if nh == 51 else (d[o + 1] + 1) * 8
        nh, o = d[o], o + hl
    if o > end:
        return
    _l4(out, d, o, end, nh, (src + dst, (off + 40 + plen) - o), truncated, fragment, 6, in_error)


def _pseudo(addrs: bytes, length: int, proto: int, family: int) -> bytes:
    if family == 4:
        return addrs + bytes((0, proto)) + _H.pack(length & 0xFFFF)
    return addrs + struct.pack("!IxxxB", max(length, 0), proto)


def _l4(out: _Out, d: bytes, o: int, end: int, proto: int, ph: tuple, truncated: bool, fragment: bool,
        family: int, in_error: bool) -> None:
    """``ph``: (the pseudo header's addresses, the upper-layer length the IP header declares)."""
    no_verify = truncated or fragment
    if proto == 17:
        _udp(out, d, o, end, ph, fragment, family, in_error)
    elif proto == 6:
        _tcp(out, d, o, end, _pseudo(ph[0], ph[1], 6, family), no_verify, in_error)
    elif proto == 58 and family == 6:
        _icmp6(out, d, o, end, _pseudo(ph[0], ph[1], 58, family), no_verify, in_error)
    elif proto == 1 and family == 4:
        _icmp4(out, d, o, end, no_verify, in_error)


def _udp(out: _Out, d: bytes, o: int, end: int, ph: tuple, fragment: bool, family: int, in_error: bool):
    if o + 8 > len(d):
        return
    sport, dport, ulen, ck = struct.unpack_from("!HHHH", d, o)
    out.add("sport", sport)
    out.add("dport", dport)
    if ck == 0:  # "not present" over IPv4, "illegal" over IPv6 (RFC 8200 §8.1): neither is a bad checksum
        out.add("udp_ck", 3 if family == 4 else 4)
    elif fragment or ulen < 8 or o + ulen > len(d):
        out.add("udp_ck", 2)
    else:  # tshark's pseudo header carries the UDP length
        out.add("udp_ck", 1 if checksum_ok(_pseudo(ph[0], ulen, 17, family), d[o:o + ulen]) else 0)
    pend = min(end, o + ulen) if ulen >= 8 else end
    body = o + 8
    if family == 4 and (sport in DHCP_PORTS or dport in DHCP_PORTS):
        _dhcp(out, d, body, pend)
        return
    if sport in DNS_PORTS or dport in DNS_PORTS:
        _dns(out, d, body, pend)


def _tcp(out: _Out, d: bytes, o: int, end: int, pseudo: bytes, no_verify: bool, in_error: bool) -> None:
    if o + 4 > len(d):
        return
    sport, dport = _HH.unpack_from(d, o)
    out.add("tcp_dport", dport)
    if o + 14 > len(d):
        return
    flags = d[o + 13]
    out.add("tcp_syn", 1 if flags & 0x02 else 0)
    out.add("tcp_ack", 1 if flags & 0x10 else 0)
    if o + 20 > len(d):
        return
    if no_verify or o > end:
        out.add("tcp_ck", 2)
    else:
        out.add("tcp_ck", 1 if checksum_ok(pseudo, d[o:end]) else 0)
    hl = (d[o + 12] >> 4) * 4
    if hl >= 20 and 53 in (sport, dport) and end - (o + hl) >= 2:
        body = o + hl
        mlen = _H.unpack_from(d, body)[0]
        _dns(out, d, body + 2, min(end, body + 2 + mlen))


def _icmp4(out: _Out, d: bytes, o: int, end: int, no_verify: bool, in_error: bool) -> None:
    if o + 4 > len(d):
        return
    t = d[o]
    out.add("icmp_type", t)
    if t in (3, 4, 5, 11, 12) and not in_error and o + 8 < end:
        _ipv4(out, d[:end], o + 8, True)


def _icmp6(out: _Out, d: bytes, o: int, end: int, pseudo: bytes, no_verify: bool, in_error: bool) -> None:
    if o + 4 > len(d):
        return
    t = d[o]
    out.add("icmp6_type", t)
    if no_verify:
        out.add("icmp6_ck", 2)
    else:
        out.add("icmp6_ck", 1 if checksum_ok(pseudo, d[o:end]) else 0)
    if t < 128:
        if not in_error and o + 8 < end:
            _ipv6(out, d[:end], o + 8, True)
        return
    if t == 135 and o + 24 <= end:
        out.add("ns_target", ntop6(d[o + 8:o + 24]))
        _nd_options(out, d, o + 24, end)
    elif t == 134 and o + 16 <= end:
        out.add("ra_flag_o", 1 if d[o + 5] & 0x40 else 0)
        out.add("ra_lifetime", _H.unpack_from(d, o + 6)[0])
        _nd_options(out, d, o + 16, end)
    elif t == 133:
        _nd_options(out, d, o + 8, end)
    elif t == 136:
        _nd_options(out, d, o + 24, end)
    elif t == 137:
        _nd_options(out, d, o + 40, end)


def _nd_options(out: _Out, d: bytes, o: int, end: int) -> None:
    while o + 2 <= end:
        otype, olen = d[o], d[o + 1] * 8
        out.add("opt_types", otype)
        if olen == 0 or o + olen > end:
            return
        if otype == 25 and olen >= 24:  # RDNSS (RFC 8106 §5.1)
            for a in range(o + 8, o + olen - 15, 16):
                out.add("rdnss", ntop6(d[a:a + 16]))
        elif otype == 38 and olen >= 16:  # PREF64 (RFC 8781 §4)
            out.add("pref64_plc", f"0x{_H.unpack_from(d, o + 2)[0] & 0x7:04x}")
            out.add("pref64", ntop6(d[o + 4:o + 16] + bytes(4)))
        o += olen


def _dhcp(out: _Out, d: bytes, o: int, end: int) -> None:
    if o + 20 > end:
        return
    htype, hlen = d[o + 1], d[o + 2]
    out.add("dhcp_yiaddr", ntop4(d[o + 16:o + 20]))
    if htype == 1 and hlen == 6 and o + 34 <= end:
        out.add("dhcp_chaddr", mac(d[o + 28:o + 34]))
    if o + 240 > end or d[o + 236:o + 240] != b"\x63\x82\x53\x63":
        return
    p = o + 240
    while p < end:
        code = d[p]
        if code == 0:
            p += 1
            continue
        out.add("dhcp_opts", code)
        if code == 255:
            return
        if p + 2 > end:
            return
        olen = d[p + 1]
        val = d[p + 2:p + 2 + olen]
        if len(val) < olen:
            return
        if code == 53 and olen >= 1:
            out.add("dhcp_type", val[0])
        elif code == 55:
            for item in val:
                out.add("dhcp_prl", item)
        p += 2 + olen


def option_108(frame: bytes) -> int | None:
    """The IPv6-Only Preferred value (RFC 8925 §3.4, a 32-bit number of
    seconds) of the DHCPv4 message in an Ethernet frame, or None."""
    try:
        off = 14
        etype = _H.unpack_from(frame, 12)[0]
        while etype in VLAN_TYPES:
            etype, off = _H.unpack_from(frame, off + 2)[0], off + 4
        if etype != 0x0800:
            return None
        ihl = (frame[off] & 0x0F) * 4
        o = off + ihl + 8
        if frame[off + 9] != 17 or frame[o + 236:o + 240] != b"\x63\x82\x53\x63":
            return None
        p = o + 240
        while p < len(frame):
            code = frame[p]
            if code == 0:
                p += 1
                continue
            if code == 255:
                return None
            olen = frame[p + 1]
            if code == 108:
                return struct.unpack_from("!I", frame, p + 2)[0] if olen == 4 and p + 6 <= len(frame) else None
            p += 2 + olen
    except (IndexError, struct.error):
        return None
    return None


def _name(d: bytes, o: int, base: int, end: int) -> tuple[str, int]:
    """A DNS name at ``o`` (compression pointers relative to ``base``);
    returns (name, offset after it)."""
    labels, after, jumps = [], None, 0
    while True:
        if o >= end:
            raise ValueError("name runs past the message")
        n = d[o]
        if n & 0xC0 == 0xC0:
            if after is None:
                after = o + 2
            o = base + (((n & 0x3F) << 8) | d[o + 1])
            jumps += 1
            if jumps > 64:
                raise ValueError("compression loop")
            continue
        if n == 0:
            o += 1
            break
        label = d[o + 1:o + 1 + n]
        if len(label) < n:
            raise ValueError("label runs past the message")
        labels.append("".join(chr(c) if 0x20 < c < 0x7F and c != 0x5C else f"\\{c:03o}" for c in label))
        o += 1 + n
    return (".".join(labels) or "<Root>"), (after if after is not None else o)


def _dns(out: _Out, d: bytes, o: int, end: int) -> None:
    if o + 4 > end:
        return
    d = d[:end]
    out.add("dns_resp", 1 if d[o + 2] & 0x80 else 0)
    qd, an, ns, ar = struct.unpack_from("!HHHH", d, o + 4)
    p = o + 12
    for _ in range(qd):
        name, p = _name(d, p, o, end)
        qtype = _H.unpack_from(d, p)[0]
        out.add("dns_qname", name)
        out.add("dns_qtype", qtype)
        p += 4
    for _ in range(an + ns + ar):
        _, p = _name(d, p, o, end)
        rtype, _, _, rdlen = struct.unpack_from("!HHIH", d, p)
        p += 10
        rdata = d[p:p + rdlen]
        if len(rdata) < rdlen:
            return
        if rtype == 1 and rdlen == 4:
            out.add("dns_a", ntop4(rdata))
        elif rtype == 28 and rdlen == 16:
            out.add("dns_aaaa", ntop6(rdata))
        p += rdlen
