"""Answering Neighbor Solicitations with no Neighbor Cache entry, and invalid NS (RFC 4861 §7.1.1, §7.2.3, §7.2.4)."""


from scapy.layers.inet6 import ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptDstLLAddr, ICMPv6NDOptSrcLLAddr, IPv6

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...net import packets as P
from ...net.mutate import break_one
from ...net.nd import ND_HOP_LIMIT, neighbor_solicitation
from ...scenario import nce
from ...scenario.nce import Expect, Neighbour


def _na_seen(t: CheckContext, frame, *, solicited: bool, dst: str) -> tuple[list[str], str]:
    """Judge an NA sent in answer to an NS (RFC 4861 §7.2.4)."""
    na = frame.pkt[ICMPv6ND_NA]
    ip = frame.pkt[IPv6]
    tlla = frame.pkt[ICMPv6NDOptDstLLAddr].lladdr if ICMPv6NDOptDstLLAddr in frame.pkt else None
    problems = []
    if ip.hlim != ND_HOP_LIMIT:
        problems.append(f"hop limit {ip.hlim}, not 255")
    if int(na.S) != int(solicited):
        problems.append(f"Solicited flag {na.S}, expected {int(solicited)}")
    if t.target.kind == "host" and na.R:
        problems.append("Router flag set by a host")
    if not P.same_address(ip.dst, dst):
        problems.append(f"sent to {ip.dst}, not to {dst}")
    if tlla is not None and tlla.lower() != t.dut.mac:
        problems.append(f"Target Link-Layer Address {tlla} is not the DUT's {t.dut.mac}")
    # §7.2.4: Override SHOULD be 0 without a TLLA (or for anycast/proxy targets), 1 otherwise
    if int(na.O) != int(tlla is not None):
        problems.append(f"Override flag {na.O} {'with' if tlla else 'without'} a Target Link-Layer Address option "
                        "(§7.2.4: it SHOULD be set exactly when the option is included for an own unicast address)")
    seen = (f"NA for {na.tgt} from {ip.src} to {ip.dst}, R={na.R} S={na.S} O={na.O}, "
            f"TLLA {'absent' if tlla is None else tlla}")
    return problems, seen


@check(
    area="nd",
    ipv6ready="v6LC.2.1.8",
    title="Neighbor Solicitation Processing, No NCE",
    rfc="RFC 4861 §7.2.3, §7.2.4",
    fault="dut_drops_neighbor_solicitation",
    liveness="echo",
    dut_config="nud-fast",
    forms_addresses=False,
    concurrent_parts=True,  # each part a TN1 of its own soliciting the DUT; no DUT state shared
    expect="a solicited Neighbor Advertisement (S=1, hop limit 255, R=0 for a host) for the target, sent "
           "to the soliciting node, with the DUT's link-layer address; the NS's source link-layer address "
           "lets the DUT answer without resolving the solicitor first and creates a STALE entry for it (an "
           "Echo Request is answered at once, then the entry is probed after DELAY_FIRST_PROBE_TIME)",
    parts=[
        Part("A", "Unicast Neighbor Solicitation", multicast=False, sllao=True),
        Part("B", "Multicast Neighbor Solicitation", multicast=True, sllao=True,
             expect="a solicited NA (S=1, hop limit 255) to the soliciting node carrying a Target "
                    "Link-Layer Address option (mandatory in answer to a multicast NS); the SLLA creates a STALE "
                    "entry (an Echo Request is answered at once, then probed after DELAY_FIRST_PROBE_TIME)",
             fault="dut_sends_na_with_hop_limit_254"),
        Part("C", "Unicast Neighbor Solicitation without SLL", multicast=False, sllao=False,
             expect="a solicited NA (S=1, hop limit 255) to the soliciting node, after the DUT resolves "
                    "the solicitor's address itself (the NS carried no SLLA, so it created no usable entry)"),
    ],
)
def ns_is_answered_without_nce(t: CheckContext):
    """A valid NS for one of the node's addresses is answered with a
    solicited NA to the solicitor (RFC 4861 §7.2.4).  The solicitor is a
    fresh node, so the DUT has no Neighbor Cache Entry for it; with a
    Source Link-Layer Address option 'the recipient SHOULD create or update
    the Neighbor Cache entry ... If an entry does not already exist, the node
    SHOULD create a new one and set its reachability state to STALE'
    (§7.2.3); without one it must resolve the solicitor to answer."""
    tn1 = t.tn1
    target = t.dut.link_local
    ns = neighbor_solicitation(tn1, target, dut_mac=t.dut.mac, multicast=t.p.multicast, sllao=t.p.sllao)
    since = t.now()
    frame = t.expect_reply(ns, lambda p: ICMPv6ND_NA in p and P.same_address(p[ICMPv6ND_NA].tgt, target)
                           and P.same_address(p[IPv6].dst, tn1.link_local), what="Neighbor Advertisement",
                           within=t.reply_timeout + 3 * t.retrans_timer)
    if frame is None:
        raise Deviation(f"no Neighbor Advertisement for {target} to {tn1.link_local}")
    problems, seen = _na_seen(t, frame, solicited=True, dst=tn1.link_local)
    if t.p.multicast and ICMPv6NDOptDstLLAddr not in frame.pkt:
        problems.append("no Target Link-Layer Address option in answer to a multicast NS")
    nb = Neighbour(t, tn1)
    if t.p.sllao:
        more, entry = nce.judge_by_echo(nb, Expect("stale", tn1.mac))
        problems += [f"entry: {m}" for m in more]
        seen += f"; then {entry}"
    else:
        resolved = t.collect(nb.is_multicast_ns_for_me, 0, since=since)
        if not resolved or resolved[0].time > frame.time:
            problems.append("the DUT answered an NS without SLLA without resolving the solicitor first")
        seen += f"; {len(resolved)} multicast NS for the solicitor before its NA"
    return t.conclude(seen, problems)


@check(
    area="nd",
    title="Neighbor Solicitation for a global address is answered",
    rfc="RFC 4861 §7.2.3, §7.2.4",
    fault="dut_drops_neighbor_solicitation",
    liveness="echo",
    expect="a solicited Neighbor Advertisement (S=1, hop limit 255) for the DUT's global address, sent to "
           "the soliciting node's global address, with a Target Link-Layer Address option",
    parts=[
        Part("unicast", "Unicast NS from a global source", multicast=False),
        Part("multicast", "Multicast NS from a global source", multicast=True),
    ],
)
def ns_for_global_address_is_answered(t: CheckContext):
    """Address resolution works for every unicast address of the interface,
    not only its link-local one (RFC 4861 §7.2.3: the target is 'a valid
    unicast or anycast address assigned to the receiving interface')."""
    tn1 = t.tn1
    target = t.dut.global_address()
    ns = neighbor_solicitation(tn1, target, dut_mac=t.dut.mac, multicast=t.p.multicast, src=tn1.global_addr)
    frame = t.expect_reply(ns, lambda p: ICMPv6ND_NA in p and P.same_address(p[ICMPv6ND_NA].tgt, target),
                           what="Neighbor Advertisement")
    if frame is None:
        raise Deviation(f"no Neighbor Advertisement for {target}")
    problems, seen = _na_seen(t, frame, solicited=True, dst=tn1.global_addr)
    if ICMPv6NDOptDstLLAddr not in frame.pkt and t.p.multicast:
        problems.append("no Target Link-Layer Address option in answer to a multicast NS")
    return t.conclude(seen, problems)


def _invalid_ns(t: CheckContext, tn1, target: str, how: str):
    """A Neighbor Solicitation made invalid in one way (RFC 4861 §7.1.1)."""
    dut_mac = t.dut.mac
    if how == "multicast_target":
        return neighbor_solicitation(tn1, P.ALL_NODES, dut_mac=dut_mac, multicast=False, dst=target)
    if how == "dad_to_non_solicited_node":
        return neighbor_solicitation(tn1, target, dut_mac=dut_mac, src=P.UNSPECIFIED, dst=P.ALL_NODES, sllao=False)
    if how == "dad_with_sllao":
        ns = neighbor_solicitation(tn1, target, dut_mac=dut_mac, src=P.UNSPECIFIED, sllao=False)
        return ns / ICMPv6NDOptSrcLLAddr(lladdr=tn1.mac)
    # short_length: ICMP length 20 < 24 (type, code, checksum, reserved and only 12 octets of the target);
    # zero_length_option: the Source Link-Layer Address option's length octet
    return break_one(neighbor_solicitation(tn1, target, dut_mac=dut_mac, multicast=False), ICMPv6ND_NS, how,
                     length=20)


@check(
    area="nd",
    ipv6ready="v6LC.2.1.7",
    title="Invalid Neighbor Solicitation Handling",
    rfc="RFC 4861 §7.1.1",
    fault="impostor_answers_invalid_ns",
    liveness="echo",
    expect="the invalid Neighbor Solicitation is silently discarded: no Neighbor Advertisement within the "
           "silence window, and the DUT still answers afterwards",
    parts=[
        Part("A", "Invalid Target Address (multicast)", how="multicast_target",
             expect="no NA: 'Target Address is not a multicast address' fails (RFC 4861 §7.1.1)"),
        Part("B", "Invalid Destination Address (DAD NS not to a solicited-node group)", how="dad_to_non_solicited_node",
             expect="no NA: an NS from the unspecified address must be sent to a solicited-node group"),
        Part("C", "Invalid Source Link-layer Address Option (DAD NS with SLLA)", how="dad_with_sllao",
             expect="no NA: an NS from the unspecified address must not carry a source link-layer option"),
        Part("D", "Invalid Hop Limit (254)", how="hop_limit_254",
             expect="no NA: the IP Hop Limit of an NS must be 255"),
        Part("E", "Invalid Checksum", how="bad_checksum", expect="no NA: the ICMP checksum is not valid"),
        Part("F", "Invalid ICMP code (1)", how="code_1", expect="no NA: the ICMP Code of an NS must be 0"),
        Part("G", "Invalid ICMP length (20 < 24 octets)", how="short_length",
             expect="no NA: the ICMP length of an NS must be 24 or more octets"),
        Part("H", "Option of length 0", how="zero_length_option",
             expect="no NA: every included option must have a length greater than zero"),
    ],
)
def invalid_ns_is_ignored(t: CheckContext):
    """A node MUST silently discard any received Neighbor Solicitation that
    does not satisfy all of the validity checks of RFC 4861 §7.1.1."""
    tn1 = t.tn1
    target = t.dut.link_local
    ns = _invalid_ns(t, tn1, target, t.p.how)
    return t.expect_silence(ns, lambda p: ICMPv6ND_NA in p and (
        P.same_address(p[IPv6].dst, tn1.link_local) or P.same_address(p[IPv6].dst, P.ALL_NODES)),
        what="Neighbor Advertisement")
