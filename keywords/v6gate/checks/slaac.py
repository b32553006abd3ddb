"""Stateless address autoconfiguration (RFC 4862) — IPv6 Ready Core v6LC.3."""

import ipaddress

from scapy.layers.inet6 import ICMPv6EchoRequest, ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr, IPv6

from ..core.check import Part, check
from ..net import match as M
from ..net import packets as P
from ..net.nd import ND_HOP_LIMIT, fresh_prefix, is_dad_ns_for, prefix_option, router_advertisement

LINK_LOCAL = ipaddress.IPv6Network("fe80::/64")


def _judge_dad_ns(frame) -> list[str]:
    """RFC 4862 §5.4.2: the DAD probe's fields."""
    pkt = frame.pkt
    tgt = pkt[ICMPv6ND_NS].tgt
    problems = []
    if pkt[IPv6].hlim != ND_HOP_LIMIT:
        problems.append(f"hop limit {pkt[IPv6].hlim}, not 255")
    if not P.same_address(pkt[IPv6].dst, P.solicited_node(tgt)):
        problems.append(f"sent to {pkt[IPv6].dst}, not to the solicited-node group {P.solicited_node(tgt)}")
    if ICMPv6NDOptSrcLLAddr in pkt:
        problems.append("carries a Source Link-Layer Address option (must not, source is ::)")
    return problems


def _early_use(t, frames, address: str, until: float) -> str | None:
    """A packet from the tentative address before DAD could have finished."""
    for f in frames:
        if f.time < until and IPv6 in f.pkt and P.same_address(f.pkt[IPv6].src, address):
            return f.summary()
    return None


def _usable(t, node, address: str) -> tuple[bool, str]:
    req = t.to_dut(node, address) / ICMPv6EchoRequest(id=0x5AAC, seq=7, data=P.nonce(16))
    reply = t.expect_reply(req, M.echo_reply_to(req), what="Echo Reply from the new address")
    if reply is None:
        return False, f"no Echo Reply from {address} after DAD"
    if not P.same_address(reply.pkt[IPv6].src, address):
        return False, f"Echo Reply came from {reply.pkt[IPv6].src}, not {address}"
    return True, f"{address} answered an Echo Request"


@check(
    area="slaac",
    ipv6ready="v6LC.3.1.1",
    title="Address Autoconfiguration and Duplicate Address Detection",
    rfc="RFC 4862 §5.3, §5.4, §5.4.2",
    fault="dut_skips_dad",
    needs=["reset"],
    expect="when its interface starts, the DUT forms a link-local address and probes it with a DAD Neighbor "
           "Solicitation (source ::, destination the address's solicited-node group, hop limit 255, no "
           "source link-layer option) before using it; afterwards the address answers Echo Requests",
)
def link_local_address_is_probed_before_use(t):
    """A node forms its link-local address when the interface becomes
    enabled (§5.3) and MUST run Duplicate Address Detection on it before
    assigning it (§5.4); during DAD the tentative address is not used as a
    source (§5.4)."""
    since = t.port.now()
    t.restart_dut()
    window = float(t.timing["ready_timeout_s"]) if not t.target.is_lab else 5.0
    dad = t.port.expect(t.from_dut(lambda p: is_dad_ns_for(p, LINK_LOCAL)), window, since=since)
    frames = t.collect(M.anything(), 0, since=since)
    if dad is None:
        early = next((f for f in frames if IPv6 in f.pkt and ipaddress.IPv6Address(f.pkt[IPv6].src) in LINK_LOCAL), None)
        used = f"; it sent {early.summary()} from {early.pkt[IPv6].src} without probing it" if early else ""
        return t.failed(f"no DAD Neighbor Solicitation for a link-local address within {window:g} s of the "
                        f"restart{used}")
    address = dad.pkt[ICMPv6ND_NS].tgt
    t.note(f"DAD NS for {address} at +{dad.time - since:.3f} s")
    problems = _judge_dad_ns(dad)
    done = dad.time + t.retrans_timer  # DupAddrDetectTransmits (1) x RetransTimer
    t.wait(max(0.0, done - t.port.now()) + 0.2)
    early = _early_use(t, t.collect(M.anything(), 0, since=since), address, dad.time)
    if early:
        problems.append(f"used the tentative address before probing it: {early}")
    ok, seen = _usable(t, t.tn1, address)
    if not ok:
        problems.append(seen)
    detail = f"DAD NS for {address} {dad.time - since:.3f} s after the restart; {seen}"
    return t.failed(f"{detail}: {'; '.join(problems)}") if problems else t.passed(detail)


@check(
    area="slaac",
    ipv6ready="v6LC.3.2.1",
    title="Global Address Autoconfiguration and DAD",
    rfc="RFC 4862 §5.5.3, §5.4",
    capabilities=["Core", "SLAAC"],
    fault="dut_skips_dad_on_new_addresses",
    expect="after a Router Advertisement with a Prefix Information option (A=1, L=1, /64), the DUT forms an "
           "address in the prefix, probes it with a DAD Neighbor Solicitation before use, and then answers "
           "Echo Requests sent to it",
    parts=[
        Part("A", "Unicast Autoconfigured Address - Global", kind="global"),
    ],
)
def global_address_is_formed_and_probed(t):
    """For a Prefix Information option with the autonomous flag set and a
    /64 prefix not yet in use, the host forms an address from the prefix
    and its interface identifier (§5.5.3(d)) and runs DAD on it (§5.4)."""
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    tr1 = t.tr1
    ra = router_advertisement(tr1, prefixes=[prefix_option(prefix, valid=120, preferred=120)])
    since = t.port.now()
    t.send(ra)
    wait = t.reply_timeout + 1.0  # RFC 4862 §5.4.2 allows a random delay up to MAX_RTR_SOLICITATION_DELAY (1 s)
    dad = t.port.expect(t.from_dut(lambda p: is_dad_ns_for(p, prefix)), wait, since=since)
    if dad is None:
        frames = t.collect(M.anything(), 0, since=since)
        early = next((f for f in frames if IPv6 in f.pkt and ipaddress.IPv6Address(f.pkt[IPv6].src) in prefix), None)
        used = f"; it sent {early.summary()} from {early.pkt[IPv6].src} without probing it" if early else ""
        return t.failed(f"no DAD Neighbor Solicitation for an address in {prefix} within {wait:g} s of the RA{used}")
    address = dad.pkt[ICMPv6ND_NS].tgt
    t.note(f"DAD NS for {address} at +{dad.time - since:.3f} s")
    problems = _judge_dad_ns(dad)
    t.wait(max(0.0, dad.time + t.retrans_timer - t.port.now()) + 0.2)
    early = _early_use(t, t.collect(M.anything(), 0, since=since), address, dad.time)
    if early:
        problems.append(f"used the tentative address before probing it: {early}")
    ok, seen = _usable(t, t.node("TN1", prefix=prefix), address)
    if not ok:
        problems.append(seen)
    detail = f"DAD NS for {address} {dad.time - since:.3f} s after the RA; {seen}"
    return t.failed(f"{detail}: {'; '.join(problems)}") if problems else t.passed(detail)
