"""Multicast Listener Discovery messages (RFC 2710 MLDv1, RFC 3810 MLDv2):
queries as the tester's querier sends them, reports as other listeners send
them, and readers for what the DUT sends."""

from __future__ import annotations

import ipaddress
import secrets
from dataclasses import dataclass

from scapy.layers.inet6 import (
    ICMPv6MLDone,
    ICMPv6MLQuery,
    ICMPv6MLQuery2,
    ICMPv6MLReport,
    ICMPv6MLReport2,
    IPv6,
    IPv6ExtHdrHopByHop,
    PadN,
    RouterAlert,
)
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from . import packets as P
from .nodes import EmulatedNode

MLD_HOP_LIMIT = 1  # RFC 2710 §3, RFC 3810 §5
ROUTER_ALERT_MLD = 0  # RFC 2711: Router Alert value 0 = "Datagram contains a Multicast Listener Discovery message"
#: RFC 3810 §5.2.12 record types
MODE_IS_INCLUDE, MODE_IS_EXCLUDE, CHANGE_TO_INCLUDE, CHANGE_TO_EXCLUDE, ALLOW_NEW, BLOCK_OLD = 1, 2, 3, 4, 5, 6
RECORD_TYPES = {1: "MODE_IS_INCLUDE", 2: "MODE_IS_EXCLUDE", 3: "CHANGE_TO_INCLUDE_MODE",
                4: "CHANGE_TO_EXCLUDE_MODE", 5: "ALLOW_NEW_SOURCES", 6: "BLOCK_OLD_SOURCES"}
#: RFC 3810 §9: default Query Interval 125 s, Query Response Interval 10 s, Robustness 2
UNSOLICITED_REPORT_INTERVAL_V1 = 10.0  # RFC 2710 §7.10
ROBUSTNESS_VARIABLE = 2  # RFC 3810 §9.1 default
UNSOLICITED_REPORT_INTERVAL = 1.0  # RFC 3810 §9.11 default (seconds)
CURRENT_STATE = (MODE_IS_INCLUDE, MODE_IS_EXCLUDE)
STATE_CHANGE = (CHANGE_TO_INCLUDE, CHANGE_TO_EXCLUDE, ALLOW_NEW, BLOCK_OLD)
#: short names of the record types, as RFC 3810 §6.1 writes them in its tables
SHORT = {1: "IS_IN", 2: "IS_EX", 3: "TO_IN", 4: "TO_EX", 5: "ALLOW", 6: "BLOCK"}


def _hbh(router_alert: bool):
    return IPv6ExtHdrHopByHop(options=[RouterAlert(value=ROUTER_ALERT_MLD), PadN(optdata=b"")]) if router_alert \
        else IPv6ExtHdrHopByHop(options=[PadN(optdata=b"\x00\x00\x00\x00")])


def mld_query(querier: EmulatedNode, *, version: int = 1, mrd_ms: int = 1000, group: str = "::",
              dst: str | None = None, hlim: int = MLD_HOP_LIMIT, src: str | None = None, router_alert: bool = True,
              code: int = 0, reserved: int = 0, qrv: int = 2, qqic: int = 125, sources=()) -> Packet:
    """A General Query (``group`` ::, to ff02::1) or a Multicast-Address-
    Specific Query (to the group), MLDv1 (24 octets) or MLDv2 (28+, with the
    querier's Robustness Variable ``qrv`` and Query Interval Code ``qqic``);
    with ``sources``, an MLDv2 Multicast Address and Source Specific Query
    (RFC 3810 §5.1.10)."""
    dst = dst or (P.ALL_NODES if group == "::" else group)
    if sources and version != 2:
        raise ValueError("only an MLDv2 Query carries sources")
    body = (ICMPv6MLQuery(mrd=mrd_ms, mladdr=group, code=code, reserved=reserved) if version == 1
            else ICMPv6MLQuery2(mrd=mrd_ms, mladdr=group, code=code, reserved=reserved, QRV=qrv, QQIC=qqic,
                                sources=list(sources), sources_number=len(sources)))
    return (Ether(src=querier.mac, dst=P.multicast_mac(dst)) / IPv6(src=src or querier.link_local, dst=dst, hlim=hlim)
            / _hbh(router_alert) / body)


def mld_report_v1(node: EmulatedNode, group: str, *, mrd_ms: int = 0, code: int = 0, reserved: int = 0) -> Packet:
    """Another listener's MLDv1 Report for ``group`` (to the group)."""
    return (Ether(src=node.mac, dst=P.multicast_mac(group)) / IPv6(src=node.link_local, dst=group, hlim=MLD_HOP_LIMIT)
            / _hbh(True) / ICMPv6MLReport(mladdr=group, mrd=mrd_ms, code=code, reserved=reserved))


def is_v1_report(pkt: Packet, group: str | None = None) -> bool:
    return ICMPv6MLReport in pkt and (group is None or P.same_address(pkt[ICMPv6MLReport].mladdr, group))


def is_v1_done(pkt: Packet, group: str | None = None) -> bool:
    return ICMPv6MLDone in pkt and (group is None or P.same_address(pkt[ICMPv6MLDone].mladdr, group))


def is_v2_report(pkt: Packet) -> bool:
    return ICMPv6MLReport2 in pkt


@dataclass
class Record:
    rtype: int
    group: str
    sources: list[str]
    aux_len: int
    declared_sources: int

    def describe(self) -> str:
        """``ALLOW {2001:db8::1, 2001:db8::2} for ff1e::1`` (RFC 3810 §6.1 notation)."""
        return f"{SHORT.get(self.rtype, f'type {self.rtype}')} {{{', '.join(self.sources)}}} for {self.group}"


def v2_records(pkt: Packet) -> list[Record]:
    """The Multicast Address Records of an MLDv2 Report, read from its bytes
    (RFC 3810 §5.2): Scapy's record list holds the first record only, the
    others nested in its payload.  Reading stops at the end of the message
    or of the declared records; a record cut short is returned with the
    sources that are there (its ``declared_sources`` says how many it
    claimed)."""
    if ICMPv6MLReport2 not in pkt:
        return []
    raw = bytes(pkt[ICMPv6MLReport2])
    return parse_records(raw[8:], int.from_bytes(raw[6:8], "big"))


def parse_records(body: bytes, count: int) -> list[Record]:
    """``count`` Multicast Address Records from ``body`` (bounded by its length)."""
    out, off = [], 0
    while len(out) < count and off + 20 <= len(body):
        rtype, aux, nsrc = body[off], body[off + 1], int.from_bytes(body[off + 2:off + 4], "big")
        group = str(ipaddress.IPv6Address(body[off + 4:off + 20]))
        end = min(len(body), off + 20 + 16 * nsrc)
        sources = [str(ipaddress.IPv6Address(body[o:o + 16])) for o in range(off + 20, end - 15, 16)]
        out.append(Record(rtype, group, sources, aux, nsrc))
        off += 20 + 16 * nsrc + 4 * aux
    return out


def records_for(pkt: Packet, group: str) -> list[Record]:
    """The records of an MLDv2 Report about ``group``."""
    return [r for r in v2_records(pkt) if P.same_address(r.group, group)]


def fresh_sources(n: int) -> list[str]:
    """``n`` distinct source addresses for filters (2001:db8::/32 documentation space)."""
    base = secrets.randbelow(0xFFFF) + 1
    return [f"2001:db8:5c:{base:x}::{i + 1:x}" for i in range(n)]


def fresh_group(ssm: bool = False) -> str:
    """A multicast address of a fresh group: organisation-local ASM (ff18::/16),
    or in the SSM range ff3x::/96 (RFC 4607 §1, RFC 3306 §6) with a dynamic
    group ID (0x80000000-0xffffffff, RFC 3307 §4.3)."""
    if ssm:
        return str(ipaddress.IPv6Address((0xFF3E << 112) | (0x80000000 + secrets.randbelow(0x7FFFFFFF))))
    return f"ff18::5c:{secrets.randbelow(0xFFFF) + 1:x}:{secrets.randbelow(0xFFFF) + 1:x}"


def in_ssm_range(addr: str) -> bool:
    """ff3x::/96 (RFC 4607 §1): prefix length 0 and prefix 0 of RFC 3306."""
    a = int(ipaddress.IPv6Address(addr))
    return (a >> 120) == 0xFF and ((a >> 116) & 0xF) == 3 and (a >> 32) & ((1 << 80) - 1) == 0


def reports_group(pkt: Packet, group: str) -> bool:
    """Any report (v1 or v2) that names ``group``."""
    if is_v1_report(pkt, group):
        return True
    return any(P.same_address(r.group, group) for r in v2_records(pkt))


def router_alert_value(pkt: Packet) -> int | None:
    if IPv6ExtHdrHopByHop not in pkt:
        return None
    for opt in pkt[IPv6ExtHdrHopByHop].options:
        if isinstance(opt, RouterAlert):
            return opt.value
    return None


def judge_common(pkt: Packet, dut_ll: str | None = None) -> list[str]:
    """RFC 2710 §3 / RFC 3810 §5.2.13-5.2.14: what every MLD message the DUT
    sends must look like (hop limit 1, link-local or :: source, Router Alert
    with value 0 in a Hop-by-Hop header)."""
    ip = pkt[IPv6]
    problems = []
    if ip.hlim != MLD_HOP_LIMIT:
        problems.append(f"hop limit {ip.hlim}, not 1")
    src = ip.src
    if not (P.is_link_scoped(src) and not P.is_multicast(src)) and src != P.UNSPECIFIED:
        problems.append(f"source {src} is not a link-local address")
    ra = router_alert_value(pkt)
    if ra is None:
        problems.append("no Router Alert option in a Hop-by-Hop Options header")
    elif ra != ROUTER_ALERT_MLD:
        problems.append(f"Router Alert value {ra}, not 0 (MLD)")
    return problems
