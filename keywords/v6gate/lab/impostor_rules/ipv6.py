"""Impostor rules for the IPv6 header, extension header and fragmentation
checks: stacks that process what RFC 8200 has them discard, report what
they must not, or reassemble what does not belong together."""

from __future__ import annotations

import ipaddress
import struct
import threading

from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6ParamProblem,
    ICMPv6TimeExceeded,
    IPv6,
    IPv6ExtHdrFragment,
)
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from ...net.exthdr import (
    IPV6_MIN_MTU,
    NH_DEST_OPTS,
    NH_FRAGMENT,
    NH_HOP_BY_HOP,
    NH_ICMPV6,
    NH_NONE,
    NH_ROUTING,
)
from ...net.packets import UNSPECIFIED, is_multicast, same_address
from ..impostor import rule

ECHO_REQUEST = 128
#: options a stack knows besides padding: Router Alert, Jumbo Payload
_KNOWN_OPTIONS = {0x00, 0x01, 0x05, 0xC2}
_QUOTE = IPV6_MIN_MTU - 48


def _ip_bytes(pkt) -> bytes | None:
    if Ether not in pkt or pkt[Ether].type != 0x86DD:
        return None
    data = bytes(pkt[Ether].payload)
    return data if len(data) >= 40 else None


def _addr(b: bytes) -> str:
    return str(ipaddress.IPv6Address(b))


def _owns(dut: dict, addr: str) -> bool:
    return any(same_address(addr, a) for a in dut.get("addresses", []))


def _for_dut(dut: dict, dst: str) -> bool:
    return _owns(dut, dst) or is_multicast(dst)


def _reply_source(dut: dict, dst: str) -> str:
    return dst if _owns(dut, dst) else dut["link_local"]


def _options(ip: bytes, start: int):
    """(offset, type) of every option of the options header at ``start``."""
    end = min(len(ip), start + (ip[start + 1] + 1) * 8)
    i = start + 2
    while i < end:
        yield i, ip[i]
        i += 1 if ip[i] == 0 else 2 + (ip[i + 1] if i + 1 < end else 0)


def _echo_reply(dut: dict, pkt, src: str, dst: str, icmp: bytes) -> Ether:
    ident, seq = struct.unpack("!HH", icmp[4:8])
    return (Ether(src=dut["mac"], dst=pkt[Ether].src) / IPv6(src=_reply_source(dut, dst), dst=src)
            / ICMPv6EchoReply(id=ident, seq=seq, data=icmp[8:]))


@rule("echo_reply_despite_header_errors")
def echo_reply_despite_header_errors(pkt, dut, **_):
    """Find an Echo Request however it is wrapped — any Version, octets
    after a Next Header of 59, options whatever their action, Routing
    headers whatever Segments Left, an atomic Fragment header — and answer
    it.  Plain Echo Requests are left to the real stack."""
    ip = _ip_bytes(pkt)
    if ip is None:
        return []
    src, dst = _addr(ip[8:24]), _addr(ip[24:40])
    if not _for_dut(dut, dst) or src == UNSPECIFIED:
        return []
    unusual = ip[0] >> 4 != 6
    nh, pos = ip[6], 40
    for _ in range(16):
        if nh in (NH_HOP_BY_HOP, NH_ROUTING, NH_DEST_OPTS) and pos + 2 <= len(ip):
            unusual = True
            nh, pos = ip[pos], pos + (ip[pos + 1] + 1) * 8
        elif nh == NH_FRAGMENT and pos + 8 <= len(ip) and struct.unpack("!H", ip[pos + 2:pos + 4])[0] == 0:
            unusual = True
            nh, pos = ip[pos], pos + 8
        elif nh == NH_NONE:
            unusual = True
            nh = NH_ICMPV6
        else:
            break
    if not unusual or nh != NH_ICMPV6 or pos + 8 > len(ip) or ip[pos] != ECHO_REQUEST:
        return []
    return [_echo_reply(dut, pkt, src, dst, ip[pos:])]


@rule("parameter_problem_for_every_unknown_option")
def parameter_problem_for_every_unknown_option(pkt, dut, **_):
    """Send Parameter Problem code 2 for every unrecognized option whose
    action bits ask for one (10 or 11), to whatever source, for whatever
    destination and whatever the packet carries (ICMPv6 errors included)."""
    ip = _ip_bytes(pkt)
    if ip is None:
        return []
    src, dst = _addr(ip[8:24]), _addr(ip[24:40])
    if not _for_dut(dut, dst):
        return []
    nh, pos = ip[6], 40
    while nh in (NH_HOP_BY_HOP, NH_ROUTING, NH_DEST_OPTS) and pos + 2 <= len(ip):
        if nh != NH_ROUTING:
            for off, otype in _options(ip, pos):
                if otype not in _KNOWN_OPTIONS and otype >> 6 >= 2:
                    return [Ether(src=dut["mac"], dst=pkt[Ether].src)
                            / IPv6(src=_reply_source(dut, dst), dst=src)
                            / ICMPv6ParamProblem(code=2, ptr=off) / Raw(ip[:_QUOTE])]
        nh, pos = ip[pos], pos + (ip[pos + 1] + 1) * 8
    return []


_POOLS: dict[int, dict] = {}
_LOCK = threading.Lock()


@rule("reassemble_leniently")
def reassemble_leniently(pkt, dut, impostor=None, **_):
    """Reassemble fragments by offset alone — whatever their Identification,
    source or destination, later octets overwriting earlier ones — and
    answer the Echo Request that comes out."""
    ip = _ip_bytes(pkt)
    if ip is None or IPv6ExtHdrFragment not in pkt:
        return []
    src, dst = _addr(ip[8:24]), _addr(ip[24:40])
    if not _for_dut(dut, dst):
        return []
    fh = pkt[IPv6ExtHdrFragment]
    start = len(ip) - len(bytes(fh))
    data = ip[start + 8:40 + struct.unpack("!H", ip[4:6])[0]]
    with _LOCK:
        pool = _POOLS.setdefault(id(impostor), {"octets": {}, "first": None, "end": None})
        offset = fh.offset * 8
        for i, b in enumerate(data):
            pool["octets"][offset + i] = b
        if offset == 0:
            pool["first"] = (src, dst, fh.nh)
        if not fh.m:
            pool["end"] = offset + len(data)
        end, first = pool["end"], pool["first"]
        if first is None or end is None or any(i not in pool["octets"] for i in range(end)):
            return []
        body = bytes(pool["octets"][i] for i in range(end))
        _POOLS.pop(id(impostor), None)
    first_src, first_dst, nh = first
    if nh != NH_ICMPV6 or len(body) < 8 or body[0] != ECHO_REQUEST:
        return []
    return [_echo_reply(dut, pkt, first_src, first_dst, body)]


@rule("time_exceeded_after_reassembly_timeout")
def time_exceeded_after_reassembly_timeout(pkt, dut, impostor=None, first=False, delay_s=60.0, **_):
    """A reassembly timer that reports its expiry with Time Exceeded code 1
    for every fragment it starts on: non-first fragments (``first: false``)
    or first fragments (``first: true``), whatever the addresses."""
    ip = _ip_bytes(pkt)
    if ip is None or IPv6ExtHdrFragment not in pkt or impostor is None:
        return []
    fh = pkt[IPv6ExtHdrFragment]
    if fh.offset == 0 and not fh.m:
        return []
    if (fh.offset == 0) != bool(first):
        return []
    src, dst = _addr(ip[8:24]), _addr(ip[24:40])
    if not _for_dut(dut, dst):
        return []
    te = (Ether(src=dut["mac"], dst=pkt[Ether].src) / IPv6(src=_reply_source(dut, dst), dst=src)
          / ICMPv6TimeExceeded(code=1) / Raw(ip[:_QUOTE]))
    impostor.later(float(delay_s), [te])
    return []


@rule("echo_reply_as_atomic_fragment")
def echo_reply_as_atomic_fragment(pkt, dut, **_):
    """Answer Echo Requests to the DUT with an Echo Reply carrying a
    Fragment header although it is not fragmented (an atomic fragment)."""
    ip = _ip_bytes(pkt)
    if ip is None or ip[6] != NH_ICMPV6 or ip[40] != ECHO_REQUEST:
        return []
    src, dst = _addr(ip[8:24]), _addr(ip[24:40])
    if not _owns(dut, dst):
        return []
    plen = struct.unpack("!H", ip[4:6])[0]
    if 40 + 8 + plen > int(dut.get("mtu") or 1500):
        return []  # the atomic fragment would not fit the link: a frame the tester's port cannot even send
    reply = _echo_reply(dut, pkt, src, dst, ip[40:40 + plen])
    echo = reply[ICMPv6EchoReply]
    reply[IPv6].remove_payload()
    return [reply / IPv6ExtHdrFragment(nh=NH_ICMPV6, offset=0, m=0, id=0x8021) / echo]
