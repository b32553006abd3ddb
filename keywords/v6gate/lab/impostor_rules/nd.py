"""Impostor rules for Neighbor Discovery."""

from scapy.layers.inet6 import ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptDstLLAddr, IPv6
from scapy.layers.l2 import Ether

from ...net.packets import ALL_NODES, UNSPECIFIED, multicast_mac, same_address
from ..impostor import rule
from . import _kernel as K


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


# -- reactive rules: the kernel is made to do what a lax stack would ----------------------------------
# Each simulates a stack that skips one rule of RFC 4861 §7.1.2/§7.2.3/§7.2.5: it watches what the
# DUT receives and applies the effect that stack would give the message to the kernel's cache, so
# the kernel's own traffic afterwards shows it.  They send nothing themselves.

def _na(pkt):
    """(target, flags S, O, R, TLLA or None) of a Neighbor Advertisement, read leniently."""
    got = K.icmp_bytes(pkt)
    if got is None or len(got[2]) < 24 or got[2][0] != 136:
        return None
    body = got[2]
    flags = body[4]
    tlla = K.options(body, 24).get(2)
    return K.addr(body[8:24]), bool(flags & 0x40), bool(flags & 0x20), bool(flags & 0x80), (
        K.mac(tlla) if tlla else None)


def _ns(pkt):
    """(source, target, SLLA or None) of a Neighbor Solicitation, read leniently."""
    got = K.icmp_bytes(pkt)
    if got is None or len(got[2]) < 24 or got[2][0] != 135:
        return None
    sll = K.options(got[2], 24).get(1)
    return K.addr(got[0]), K.addr(got[2][8:24]), K.mac(sll) if sll else None


@rule("na_applied_without_validation")
def na_applied_without_validation(pkt, dut, tlla_from_ethernet=False, create=False, **_):
    """A stack that applies every Neighbor Advertisement, read past its ICMP
    length and whatever its checksum, hop limit or code: the target's entry
    takes the TLLA (or, with ``tlla_from_ethernet``, the frame's source
    MAC when there is no TLLA) and becomes REACHABLE (S=1) or STALE (S=0);
    with ``create`` also when the DUT had no entry (RFC 4861 §7.2.5 says
    discard)."""
    na = _na(pkt)
    if na is None:
        return []
    target, s, _o, _r, tlla = na
    lladdr = tlla or (K.ether_source(pkt) if tlla_from_ethernet else None)
    if lladdr is None or lladdr == dut["mac"]:
        return []
    state, _ = K.neigh_state(dut, target)
    if state in ("NONE", "FAILED") and not create:
        return []
    K.set_neigh(dut, target, lladdr, "reachable" if s else "stale")
    return []


@rule("na_sets_entry_state")
def na_sets_entry_state(pkt, dut, when=("REACHABLE",), to="stale", skip_first=True, **_):
    """A stack that moves an entry in one of the states ``when`` to ``to`` on
    any NA for it (after the first NA for the target, which completes its
    resolution), whatever the advertisement's flags and address say."""
    na = _na(pkt)
    if na is None:
        return []
    target = na[0]
    if skip_first and K.once_per(dut, f"na:{target}") == 0:
        return []
    state, _ = K.neigh_state(dut, target)
    if state in set(when):
        K.set_neigh(dut, target, None, to)
    return []


@rule("ns_sets_entry_state")
def ns_sets_entry_state(pkt, dut, when=("REACHABLE",), to="stale", **_):
    """A stack that moves the solicitor's entry in one of the states ``when``
    to ``to`` on an NS from it, although the SLLA matches the cached address
    (RFC 4861 §7.2.3: then the entry is not changed)."""
    ns = _ns(pkt)
    if ns is None or ns[0] == "::":
        return []
    # the kernel answers the NS (and may move the entry to DELAY) before this runs
    state = K.wait_state(dut, ns[0], set(when), timeout=0.1)
    if state in set(when):
        K.set_neigh(dut, ns[0], None, to)
    return []


@rule("ns_source_from_ethernet")
def ns_source_from_ethernet(pkt, dut, **_):
    """A stack that, for an NS without a Source Link-Layer Address option,
    takes the solicitor's address from the frame's source MAC and completes
    a pending resolution with it (RFC 4861 §7.2.3 updates the cache only
    from the SLLA)."""
    ns = _ns(pkt)
    if ns is None or ns[0] == "::" or ns[2] is not None:
        return []
    if K.neigh_state(dut, ns[0])[0] == "INCOMPLETE":
        K.set_neigh(dut, ns[0], K.ether_source(pkt), "stale")
    return []


@rule("ns_from_router_clears_isrouter")
def ns_from_router_clears_isrouter(pkt, dut, **_):
    """A stack that clears the IsRouter flag of a router's entry when the
    router sends it an NS, and so drops it from the Default Router List
    (RFC 4861 §7.2.3: the IsRouter flag is not changed by an NS)."""
    ns = _ns(pkt)
    if ns is None or ns[0] == "::":
        return []
    if any(K.ipaddress.IPv6Address(r) == K.ipaddress.IPv6Address(ns[0]) for r in K.default_routers(dut)):
        K.run_ip(dut, "route", "del", "default", "via", ns[0], "dev", dut["ifname"])
    return []
