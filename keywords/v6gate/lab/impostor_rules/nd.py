"""Impostor rules for Neighbor Discovery."""

from scapy.layers.inet6 import ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptDstLLAddr, IPv6
from scapy.layers.l2 import Ether

from ...net.packets import ALL_NODES, UNSPECIFIED, multicast_mac, same_address
from ..impostor import rule


def _owns(dut: dict, addr: str) -> bool:
    return any(same_address(addr, a) for a in dut.get("addresses", []))


def _target_of(pkt) -> str | None:
    """The NS target, also from a truncated message (Scapy cannot dissect those)."""
    try:
        return pkt[ICMPv6ND_NS].tgt
    except (IndexError, AttributeError):
        return None


@rule("answer_ns_without_validation")
def answer_ns_without_validation(pkt, dut, any_target=False, **_):
    """Answer every NS for the DUT's addresses as a solicited NA, skipping the
    RFC 4861 §7.1.1 validity tests (hop limit, checksum, code, length,
    options).  A conforming kernel answers the valid ones as well; the
    invalid ones get an answer only from this impostor."""
    if IPv6 not in pkt or pkt[IPv6].nh != 58 or bytes(pkt[IPv6].payload)[:1] != b"\x87":
        return []
    tgt = _target_of(pkt)
    if tgt is None or (not _owns(dut, tgt) and not any_target):
        tgt = dut["link_local"] if any_target else None
    if tgt is None:
        return []
    src = pkt[IPv6].src
    if src == UNSPECIFIED:
        dst, dst_mac, s_flag = ALL_NODES, multicast_mac(ALL_NODES), 0
    else:
        dst, dst_mac, s_flag = src, pkt[Ether].src, 1
    src_addr = tgt if _owns(dut, tgt) else dut["link_local"]
    return [Ether(src=dut["mac"], dst=dst_mac) / IPv6(src=src_addr, dst=dst, hlim=255)
            / ICMPv6ND_NA(R=0, S=s_flag, O=1, tgt=tgt) / ICMPv6NDOptDstLLAddr(lladdr=dut["mac"])]
