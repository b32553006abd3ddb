"""Multicast Listener Discovery messages (RFC 2710 MLDv1, RFC 3810 MLDv2):
queries as the tester's querier sends them, reports as other listeners send
them, and readers for what the DUT sends."""

from __future__ import annotations

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


def _hbh(router_alert: bool):
    return IPv6ExtHdrHopByHop(options=[RouterAlert(value=ROUTER_ALERT_MLD), PadN(optdata=b"")]) if router_alert \
        else IPv6ExtHdrHopByHop(options=[PadN(optdata=b"\x00\x00\x00\x00")])


def mld_query(querier: EmulatedNode, *, version: int = 1, mrd_ms: int = 1000, group: str = "::",
              dst: str | None = None, hlim: int = MLD_HOP_LIMIT, src: str | None = None, router_alert: bool = True,
              code: int = 0, reserved: int = 0, qrv: int = 2, qqic: int = 125) -> Packet:
    """A General Query (``group`` ::, to ff02::1) or a Multicast-Address-
    Specific Query (to the group), MLDv1 (24 octets) or MLDv2 (28+, with the
    querier's Robustness Variable ``qrv`` and Query Interval Code ``qqic``)."""
    dst = dst or (P.ALL_NODES if group == "::" else group)
    body = (ICMPv6MLQuery(mrd=mrd_ms, mladdr=group, code=code, reserved=reserved) if version == 1
            else ICMPv6MLQuery2(mrd=mrd_ms, mladdr=group, code=code, reserved=reserved, QRV=qrv, QQIC=qqic))
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


def v2_records(pkt: Packet) -> list[Record]:
    if ICMPv6MLReport2 not in pkt:
        return []
    return [Record(r.rtype, r.dst, list(r.sources), r.auxdata_len or 0, r.sources_number or 0)
            for r in pkt[ICMPv6MLReport2].records]


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
