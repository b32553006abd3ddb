"""Stateless address autoconfiguration (RFC 4862) — IPv6 Ready Core v6LC.3."""

import ipaddress

from scapy.layers.inet6 import ICMPv6EchoRequest, ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr, IPv6
from scapy.layers.l2 import Ether

from ..core.check import Part, check
from ..core.context import CheckContext, NotApplicable
from ..core.ledger import ADDRESS_LEASE_S, EXPIRY_GRACE_S
from ..core.verdict import Deviation
from ..net import match as M
from ..net import packets as P
from ..net.dad import dad_na, dad_ns
from ..net.nd import (
    ND_HOP_LIMIT,
    fresh_prefix,
    is_dad_ns_for,
    neighbor_solicitation,
    pd_preferred,
    prefix_option,
    router_advertisement,
)
from ..scenario.observe import DAD_AT_START, FORMING, autoconfigure, formed_in, in_use, no_dad

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


def _early_use(t: CheckContext, frames, address: str, until: float) -> str | None:
    """A packet from the tentative address before DAD could have finished."""
    for f in frames:
        if f.time < until and IPv6 in f.pkt and P.same_address(f.pkt[IPv6].src, address):
            return f.summary()
    return None


def _usable(t: CheckContext, node, address: str) -> tuple[bool, str]:
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
def link_local_address_is_probed_before_use(t: CheckContext):
    """A node forms its link-local address when the interface becomes
    enabled (§5.3) and MUST run Duplicate Address Detection on it before
    assigning it (§5.4); during DAD the tentative address is not used as a
    source (§5.4)."""
    since = t.restart_dut()  # the old boot's last frames (its leave reports) are not the new boot's "use"
    window = float(t.timing["ready_timeout_s"]) if not t.target.is_lab else 5.0
    dad = t.port.expect(t.from_dut(lambda p: is_dad_ns_for(p, LINK_LOCAL)), window, since=since)
    frames = t.collect(M.anything(), 0, since=since)
    if dad is None:
        early = next((f for f in frames if IPv6 in f.pkt and ipaddress.IPv6Address(f.pkt[IPv6].src) in LINK_LOCAL), None)
        used = f"; it sent {early.summary()} from {early.pkt[IPv6].src} without probing it" if early else ""
        raise Deviation(f"no DAD Neighbor Solicitation for a link-local address within {window:g} s of the "
                         f"restart{used}")
    address = dad.pkt[ICMPv6ND_NS].tgt
    t.note(f"DAD NS for {address} at +{dad.time - since:.3f} s")
    problems = _judge_dad_ns(dad)
    done = dad.time + t.retrans_timer  # DupAddrDetectTransmits (1) x RetransTimer
    t.wait(max(0.0, done - t.now()) + 0.2)
    early = _early_use(t, t.collect(M.anything(), 0, since=since), address, dad.time)
    if early:
        problems.append(f"used the tentative address before probing it: {early}")
    ok, seen = _usable(t, t.tn1, address)
    if not ok:
        problems.append(seen)
    detail = f"DAD NS for {address} {dad.time - since:.3f} s after the restart; {seen}"
    return t.conclude(detail, problems)


def _prefix_of_kind(t: CheckContext, kind: str) -> ipaddress.IPv6Network:
    fresh = fresh_prefix(avoid=t.target.link_prefix)
    if kind == "zero_fields":  # 2001:db8:x:0::/64 -> written 2001:db8:x::/64
        return ipaddress.IPv6Network((int(fresh.network_address) & ~(0xFFFF << 64), 64))
    if kind == "site_local":
        return ipaddress.IPv6Network((int(ipaddress.IPv6Address("fec0::")) | (int(fresh.network_address) & (2**80 - 1)
                                                                              & ~(2**64 - 1)), 64))
    return fresh


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
        Part("B", "Unicast Autoconfigured Address – Prefix ending in zero valued fields", kind="zero_fields",
             expect="after an RA announcing a /64 whose last 16-bit groups are zero (2001:db8:x::/64), the DUT "
                    "forms an address in it, probes it with DAD first, and then answers Echo Requests to it"),
        Part("C", "Unicast Autoconfigured Address – Site-Local", kind="site_local", rfc="RFC 4862 §5.5.3; RFC 3879 §4",
             expect="a prefix in the deprecated site-local range fec0::/10 is treated like any global prefix "
                    "(RFC 3879 §4): the DUT forms an address in it, probes it, and answers Echo Requests to it"),
    ],
)
def global_address_is_formed_and_probed(t: CheckContext):
    """For a Prefix Information option with the autonomous flag set and a
    /64 prefix not yet in use, the host forms an address from the prefix
    and its interface identifier (§5.5.3(d)) and runs DAD on it (§5.4).
    Site-local prefixes get no special treatment any more (RFC 3879 §4)."""
    prefix = _prefix_of_kind(t, t.p.kind)
    tr1 = t.tr1
    # a lifetime that outlasts the check and little more: the address runs out soon after on a DUT the run
    # cannot reset (an RA cannot take it back, RFC 4862 §5.5.3 e), so a bounded table has room again; the check
    # uses it for its DAD probe (or, without DAD, in_use) and one Echo Request after
    lease = t.lease_for_probes(1, waits=0.0)
    ra = router_advertisement(tr1, prefixes=[prefix_option(prefix, valid=lease, preferred=lease)])
    since = t.send(ra)
    wait = t.reply_timeout + 1.0  # RFC 4862 §5.4.2 allows a random delay up to MAX_RTR_SOLICITATION_DELAY (1 s)
    dad = t.port.expect(t.from_dut(lambda p: is_dad_ns_for(p, prefix)), wait, since=since)
    if dad is None:
        frames = t.collect(M.anything(), 0, since=since)
        early = next((f for f in frames if IPv6 in f.pkt and ipaddress.IPv6Address(f.pkt[IPv6].src) in prefix), None)
        address = early.pkt[IPv6].src if early else in_use(t, prefix)
        missing = f"no DAD Neighbor Solicitation for an address in {prefix} within {wait:g} s of the RA"
        if address is None:
            raise Deviation(f"{missing}, and no address of it in use")
        how = f"it sent {early.summary()} from it" if early else "it answers for it"
        # one root cause: a DUT that performs no DAD at all is judged once (v6LC.3.1.1, or this check's part A)
        no_dad(t, address, prefix, f"{missing}; {how} without probing it ({address})", judge_here=t.part == "A")
    address = dad.pkt[ICMPv6ND_NS].tgt
    t.note(f"DAD NS for {address} at +{dad.time - since:.3f} s")
    problems = _judge_dad_ns(dad)
    t.wait(max(0.0, dad.time + t.retrans_timer - t.now()) + 0.2)
    early = _early_use(t, t.collect(M.anything(), 0, since=since), address, dad.time)
    if early:
        problems.append(f"used the tentative address before probing it: {early}")
    ok, seen = _usable(t, t.node("TN1", prefix=prefix), address)
    if not ok:
        problems.append(seen)
    detail = f"DAD NS for {address} {dad.time - since:.3f} s after the RA; {seen}"
    return t.conclude(detail, problems)


# -- DAD for a tentative address (v6LC.3.1.2 - 3.1.5) ------------------------------------------------
#
# The tentative address is a global one formed from a fresh prefix: the tester times its messages
# against its own RA (no reboot, and a lab fault is in place before the DUT starts DAD).  RFC 4862
# §5.4.3 / §5.4.4 apply to every tentative address alike.


def _is_assigned(t: CheckContext, address: str, tries: int = 3) -> tuple[bool, str]:
    """Does the DUT use ``address``?  A multicast NS for it from a fresh node
    must get a Neighbor Advertisement (RFC 4861 §7.2.3); up to ``tries``
    NSes, so that one lost to a busy DUT is no verdict.  The first waits
    out DAD's further probes too (a DUT that sends more than one,
    DupAddrDetectTransmits > 1, still holds the address tentative and drops
    an NS for it unanswered, §5.4.3); by the next, DAD is over, and an
    assigned address answers within the DUT's reply time."""
    tn = t.node("TN3")
    for i in range(tries):
        ns = neighbor_solicitation(tn, address, dut_mac=t.dut.mac, multicast=True, src=tn.link_local)
        frame = t.expect_reply(ns, lambda p: ICMPv6ND_NA in p and P.same_address(p[ICMPv6ND_NA].tgt, address),
                               what=f"Neighbor Advertisement for {address}",
                               within=t.reply_timeout + (3 * t.retrans_timer if i == 0 else 0))
        if frame is not None:
            return True, f"{address} answered a Neighbor Solicitation"
    return False, f"no Neighbor Advertisement for {address} in answer to {tries} Neighbor Solicitations"


def _meet_dad(t: CheckContext, react) -> tuple[str | None, ipaddress.IPv6Network, float]:
    """Announce a fresh prefix and, the moment the DUT's DAD probe for its
    address in it arrives, send what ``react(tentative)`` returns (from the
    port's receive thread: DAD lasts only RetransTimer).  Returns the
    tentative address (None without a probe), the prefix and the probe time."""
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    seen: dict = {}

    def responder(port, frame):
        if "probe" in seen or frame.outgoing or frame.pkt[Ether].src.lower() != t.dut.mac:
            return
        if is_dad_ns_for(frame.pkt, prefix):
            seen["probe"] = frame
            for pkt in react(frame.pkt[ICMPv6ND_NS].tgt):
                port.send(pkt)
            seen["sent"] = port.now()

    # the tentative address matters only until _is_assigned's Neighbor Solicitations (up to 3) are answered: the
    # first waits out further DAD probes too, the other two a reply time each
    lease = t.lease_for_probes(1, quick=2)
    t.port.add_responder(responder)
    try:
        since = t.send(router_advertisement(t.tr1, prefixes=[prefix_option(prefix, valid=lease, preferred=lease)]),
                       label=f"RA with prefix {prefix}")
        probe = t.port.expect(t.from_dut(lambda p: is_dad_ns_for(p, prefix)), t.reply_timeout + 1.0, since=since)
    finally:
        t.port.remove_responder(responder)
    if probe is None or "probe" not in seen:
        return None, prefix, 0.0
    tentative = seen["probe"].pkt[ICMPv6ND_NS].tgt
    t.note(f"DAD NS for {tentative}; tester's answer sent {seen['sent'] - seen['probe'].time:.4f} s later")
    # DupAddrDetectTransmits (1) x RetransTimer, then the address is assigned or not
    t.wait(max(0.0, seen["probe"].time + t.retrans_timer - t.now()) + 0.3)
    return tentative, prefix, seen["probe"].time


def _no_probe(t: CheckContext, prefix):
    """There is no tentative address to test: the DUT assigned the address
    without probing it (without DAD a duplicate goes unnoticed: a DUT that
    performs no DAD at all is NOT_JUDGED ``dad``, else its FAIL), or formed
    none (NOT_JUDGED: the SLAAC check judges forming addresses)."""
    used = in_use(t, prefix)
    if used is not None:
        no_dad(t, used, prefix, f"the DUT assigned {used} from the RA's prefix without probing it (no DAD NS): a "
                                "duplicate would go unnoticed (RFC 4862 §5.4)")
    raise t.not_judged(f"address:{prefix}", FORMING, f"no DAD probe for an address in {prefix} after the RA, and no "
                                                     "address of it in use: there is no tentative address to test")


def _used_after(t: CheckContext, address: str, since: float) -> str | None:
    """A packet from ``address`` after ``since`` (a duplicate must not be used)."""
    for f in t.collect(M.ipv6_from(address), 0, since=since):
        if ICMPv6ND_NS not in f.pkt or f.pkt[IPv6].src != P.UNSPECIFIED:
            return f.summary()
    return None


def _dad_outcome(t: CheckContext, tentative, prefix, probe_time, *, duplicate: bool, told: str):
    if tentative is None:
        _no_probe(t, prefix)
    assigned, seen = _is_assigned(t, tentative)
    if duplicate:
        used = _used_after(t, tentative, probe_time + t.retrans_timer)
        if assigned or used:
            raise Deviation(f"after {told}, the DUT still uses its tentative address: "
                             f"{seen if assigned else 'it sent ' + used}")
        t.room.duplicate(prefix)
        return t.conclude(f"after {told}, {tentative} stayed unassigned: {seen}", [])
    if not assigned:
        raise Deviation(f"after {told}, the DUT gave up {tentative} as a duplicate: {seen}")
    return t.conclude(f"after {told}, {seen}", [])


@check(
    area="slaac",
    ipv6ready="v6LC.3.1.2",
    title="Receiving DAD Neighbor Solicitations and Advertisements",
    rfc="RFC 4862 §5.4.3, §5.4.4, §5.4.5",
    liveness="echo",
    expect="while its address is tentative, the DUT treats a DAD NS or an NA for that address as a duplicate "
           "(it does not assign the address) and ignores DAD messages for other addresses",
    parts=[
        Part("A", "NUT receives DAD NS (target != NUT)", message="ns", same=False, fault="dut_dad_matches_any_target",
             expect="a DAD NS for another address does not stop DAD: the DUT assigns its address and answers NS for it"),
        Part("B", "NUT receives DAD NS (target == NUT)", message="ns", same=True, fault="dut_skips_dad_on_new_addresses",
             expect="a DAD NS for the tentative address is a duplicate: the DUT does not assign nor use the address"),
        Part("C", "NUT receives DAD NA (target != NUT)", message="na", same=False, fault="dut_dad_matches_any_target",
             expect="an NA for another address does not stop DAD: the DUT assigns its address"),
        Part("D", "NUT receives DAD NA (target == NUT)", message="na", same=True, fault="dut_skips_dad_on_new_addresses",
             expect="an NA for the tentative address means it is in use: the DUT does not assign nor use it"),
    ],
)
def dad_messages_for_the_tentative_address(t: CheckContext):
    """'If the target address is tentative, and the source address is the
    unspecified address, the solicitation's sender is performing Duplicate
    Address Detection' and the address is a duplicate (RFC 4862 §5.4.3);
    'If the target address matches a tentative address, the tentative
    address is not unique' on an NA (§5.4.4); a duplicate 'MUST NOT be
    assigned' (§5.4.5)."""
    tn1 = t.tn1

    def react(tentative):
        target = tentative if t.p.same else P.address_in(ipaddress.IPv6Network(f"{tentative}/64", strict=False),
                                                         P.random_iid())
        if t.p.message == "ns":
            return [dad_ns(tn1, target, t.dut.mac)]
        return [dad_na(tn1, target)]

    tentative, prefix, at = _meet_dad(t, react)
    told = f"a DAD {t.p.message.upper()} for {'its tentative address' if t.p.same else 'another address'}"
    return _dad_outcome(t, tentative, prefix, at, duplicate=t.p.same, told=told)


def _validation_parts(table, message: str, skips_validation: str) -> list[Part]:
    """Parts of v6LC.3.1.3 / 3.1.4: invalid messages must be discarded (the
    fault: a stack that skips the validity tests), valid oddities still
    reveal a duplicate (the fault: a stack that skips DAD)."""
    valid = (f"the {message} is valid (Reserved is ignored, other options skipped): the address is a duplicate "
             "and the DUT neither assigns nor uses it")
    invalid = f"the invalid {message} is discarded: DAD succeeds and the address answers Neighbor Solicitations"
    return [Part(letter, title, how=how, duplicate=dup, expect=valid if dup else invalid,
                 fault="dut_skips_dad_on_new_addresses" if dup else skips_validation)
            for letter, title, how, dup in table]


def _dad_with(t: CheckContext, message: str, make):
    """Answer the DUT's DAD probe with ``make(tentative)`` and judge."""
    tentative, prefix, at = _meet_dad(t, lambda tent: [make(tent)])
    return _dad_outcome(t, tentative, prefix, at, duplicate=t.p.duplicate,
                        told=f"{message} for its tentative address ({t.p.how.replace('_', ' ')})")


_DAD_NS_PARTS = [
    ("A", "NUT receives invalid DAD NS (ICMP length < 24 octets)", "short_length", False),
    ("B", "NUT receives invalid DAD NS (HopLimit !=255)", "hop_limit_254", False),
    ("C", "NUT receives invalid DAD NS (Dst = NUT's tentative address)", "dst_tentative", False),
    ("D", "NUT receives invalid DAD NS (Dst = allnode)", "dst_all_nodes", False),
    ("E", "NUT receives invalid DAD NS (ICMP code != zero)", "code_1", False),
    ("F", "NUT receives invalid DAD NS (Invalid Checksum)", "bad_checksum", False),
    ("G", "NUT receives invalid DAD NS (target == multicast address)", "target_multicast", False),
    ("H", "NUT receives invalid DAD NS (contains SLL)", "with_sllao", False),
    ("I", "NUT receives valid DAD NS (Reserved Field)", "reserved_set", True),
    ("J", "NUT receives valid DAD NS (contains TLL)", "with_tllao", True),
]


@check(
    area="slaac",
    ipv6ready="v6LC.3.1.3",
    title="Validation of DAD Neighbor Solicitations",
    rfc="RFC 4862 §5.4.3; RFC 4861 §7.1.1",
    liveness="echo",
    expect="an invalid DAD NS for the tentative address is silently discarded (the DUT assigns the address); "
           "a valid one with a non-zero Reserved field or an unexpected option still reveals a duplicate",
    parts=_validation_parts(_DAD_NS_PARTS, "DAD NS", "dut_skips_ns_validation"),
)
def dad_ns_validation(t: CheckContext):
    """'A node MUST silently discard any received Neighbor Solicitation
    messages that do not satisfy all of the following validity checks'
    (RFC 4861 §7.1.1), DAD probes included (RFC 4862 §5.4.3); the Reserved
    field 'MUST be ignored by the receiver' and unrecognised options skipped
    (RFC 4861 §4.3, §4.6)."""
    tn1 = t.tn1
    return _dad_with(t, "a DAD NS", lambda tent: dad_ns(tn1, tent, t.dut.mac, t.p.how))


_DAD_NA_PARTS = [
    ("A", "NUT receives invalid DAD NA (ICMP length < 24 octets)", "short_length", False),
    ("B", "NUT receives invalid DAD NA (HopLimit != 255)", "hop_limit_254", False),
    ("C", "NUT receives invalid DAD NA (ICMP code != zero)", "code_1", False),
    ("D", "NUT receives invalid DAD NA (Invalid Checksum)", "bad_checksum", False),
    ("E", "NUT receives invalid DAD NA (SolicitedFlag == 1)", "solicited_set", False),
    ("F", "NUT receives invalid DAD NA (target == multicast address)", "target_multicast", False),
    ("G", "NUT receives invalid DAD NA (option length == zero)", "zero_length_option", False),
    ("H", "NUT receives valid DAD NA (Reserved Field)", "reserved_set", True),
    ("I", "NUT receives valid DAD NA (contains SLL)", "with_sllao", True),
]


@check(
    area="slaac",
    ipv6ready="v6LC.3.1.4",
    title="Validation of DAD Neighbor Advertisements",
    rfc="RFC 4862 §5.4.4; RFC 4861 §7.1.2",
    liveness="echo",
    expect="an invalid NA for the tentative address is silently discarded (the DUT assigns the address); a "
           "valid one with a non-zero Reserved field or an extra option still reveals a duplicate",
    parts=_validation_parts(_DAD_NA_PARTS, "NA", "dut_skips_na_validation"),
)
def dad_na_validation(t: CheckContext):
    """'A node MUST silently discard any received Neighbor Advertisement
    messages that do not satisfy all of the following validity checks'
    (RFC 4861 §7.1.2); an NA that passes them and names a tentative address
    makes it a duplicate (RFC 4862 §5.4.4)."""
    tn1 = t.tn1
    return _dad_with(t, "an NA", lambda tent: dad_na(tn1, tent, t.p.how))


@check(
    area="slaac",
    ipv6ready="v6LC.3.1.5",
    title="Receiving Neighbor Solicitations for Address Resolution",
    rfc="RFC 4862 §5.4.3",
    fault="dut_takes_resolution_ns_as_dad",
    liveness="echo",
    expect="a Neighbor Solicitation from a unicast source for the tentative address gets no answer while the "
           "address is tentative and does not stop DAD: the DUT assigns the address",
    parts=[
        Part("A", "NUT receives NS (src == unicast)", unicast_dst=False),
        Part("B", "NUT receives NS (Src == unicast && Dst == NUT's tentative address)", unicast_dst=True),
    ],
)
def resolution_ns_for_tentative_address_is_ignored(t: CheckContext):
    """'If the source address of the Neighbor Solicitation is a unicast
    address, the solicitation's sender is performing address resolution on
    the target; the solicitation should be silently ignored' while the
    target is tentative (RFC 4862 §5.4.3); it is no sign of a duplicate."""
    tn1 = t.tn1

    def react(tentative):
        return [neighbor_solicitation(tn1, tentative, dut_mac=t.dut.mac, multicast=not t.p.unicast_dst,
                                      src=tn1.link_local)]

    tentative, prefix, at = _meet_dad(t, react)
    if tentative is None:
        _no_probe(t, prefix)
    answered = t.collect(lambda p: ICMPv6ND_NA in p and P.same_address(p[ICMPv6ND_NA].tgt, tentative), 0, since=at)
    early = [f for f in answered if f.time < at + t.retrans_timer]
    if early:
        raise Deviation(f"the DUT answered the NS for its tentative address {tentative} during DAD: "
                         f"{early[0].summary()} {early[0].time - at:.3f} s after its probe")
    assigned, seen = _is_assigned(t, tentative)
    if not assigned:
        raise Deviation(f"no answer during DAD; afterwards {seen}")
    return t.conclude(f"no answer during DAD; afterwards {seen}", [])


# -- RA processing and address lifetimes (v6LC.3.2.2 - 3.2.5) -------------------------------------


def _probes_in(t: CheckContext, prefix: ipaddress.IPv6Network, since: float) -> list[str]:
    """Every address in ``prefix`` the DUT formed since ``since``: its DAD
    probes (a DUT that performs no DAD: the address it uses there)."""
    return formed_in(t, prefix, since)


def _assigned_at(t: CheckContext, address: str, at: float) -> tuple[bool, str]:
    t.wait(max(0.0, at - t.now()))
    return _is_assigned(t, address)


@check(
    area="slaac", scope="host",
    ipv6ready="v6LC.3.2.2",
    title="Address Lifetime Expiry",
    rfc="RFC 4862 §5.5.4",
    fault="dut_never_expires_addresses",
    liveness="echo",
    expect="an autoconfigured address (valid lifetime 4 s) answers Neighbor Solicitations before its valid "
           "lifetime ends, and no longer once it has (2 s later: lifetimes count whole seconds, and a host may "
           "run its expiry timer up to the next one)",
)
def address_expires_with_its_valid_lifetime(t: CheckContext):
    """'An address (and its association with an interface) becomes invalid
    when its valid lifetime expires.  An invalid address MUST NOT be used as
    a source address in outgoing communications and MUST NOT be recognized
    as a destination on a receiving interface' (RFC 4862 §5.5.4)."""
    valid = 4
    conf = autoconfigure(t, t.tr1, valid=valid, preferred=valid // 2, router_lifetime=0)
    conf.require(t)
    start = conf.start
    before, seen_before = _assigned_at(t, conf.address, start + valid / 2)
    if not before:
        raise Deviation(f"{valid / 2:g} s into its {valid} s valid lifetime: {seen_before}")
    grace = EXPIRY_GRACE_S
    after, seen_after = _assigned_at(t, conf.address, start + valid + grace)
    if after:
        raise Deviation(f"{valid + grace:g} s after the RA (valid lifetime {valid} s), {seen_after}: the address did "
                         "not expire")
    if not t.alive(method="echo"):
        raise Deviation("the address disappeared, but the DUT stopped answering altogether")
    return t.conclude(f"at {valid / 2:g} s {seen_before}; at {valid + grace:g} s {seen_after} (expired); the DUT still "
                       "answers", [])


@check(
    area="slaac", scope="host",
    ipv6ready="v6LC.3.2.3",
    title="Multiple Prefixes and Network Renumbering",
    rfc="RFC 4862 §5.5.3, §5.5.4",
    fault="dut_uses_first_prefix_only",
    liveness="echo",
    expect="the DUT forms an address from each of two prefixes in one RA; when a later RA deprecates the first "
           "(preferred lifetime 0) and adds a third, it forms the third, keeps the deprecated one until its "
           "valid lifetime (5 s) ends, then drops it and keeps the others",
)
def multiple_prefixes_and_renumbering(t: CheckContext):
    """A host forms an address for every acceptable Prefix Information option
    (RFC 4862 §5.5.3(d)); renumbering deprecates the old prefix (preferred
    lifetime 0, the address stays valid, §5.5.4) and lets it expire."""
    tr1 = t.tr1
    t.needs_addresses(3)  # the deprecated first prefix's address lives on beside the second and the third
    p1, p2, p3 = (fresh_prefix(avoid=t.target.link_prefix) for _ in range(3))
    valid1 = 5
    since = t.send(router_advertisement(tr1, prefixes=[prefix_option(p1, valid=valid1, preferred=valid1),
                                                       prefix_option(p2, valid=ADDRESS_LEASE_S, preferred=ADDRESS_LEASE_S)]),
                   label=f"RA with {p1} (valid {valid1} s) and {p2}")
    t.wait(t.reply_timeout + 1.0)
    first = {p: _probes_in(t, p, since) for p in (p1, p2)}
    missing = [str(p) for p, a in first.items() if not a]
    if missing:
        raise Deviation(f"no address formed from {', '.join(missing)} (probes: {first})")
    a1, a2 = first[p1][0], first[p2][0]
    renumbered = t.send(router_advertisement(tr1, prefixes=[prefix_option(p1, valid=valid1, preferred=0),
                                                            prefix_option(p3, valid=ADDRESS_LEASE_S, preferred=ADDRESS_LEASE_S)]),
                        label=f"renumbering RA: {p1} deprecated (preferred 0), new {p3}")
    t.wait(t.reply_timeout + 1.0)
    probes3 = _probes_in(t, p3, renumbered)
    if not probes3:
        raise Deviation(f"no address formed from the new prefix {p3} after renumbering")
    a3 = probes3[0]
    problems, seen = [], []
    for addr, want in ((a1, True), (a2, True), (a3, True)):
        ok, how = _is_assigned(t, addr)
        seen.append(how)
        if ok != want:
            problems.append(how)
    t.wait(max(0.0, renumbered + valid1 + EXPIRY_GRACE_S - t.now()))
    for addr, want in ((a1, False), (a2, True), (a3, True)):
        ok, how = _is_assigned(t, addr)
        seen.append(f"after {p1} expired: {how}")
        if ok != want:
            problems.append(f"after {p1} expired: {how}")
    return t.conclude("; ".join(seen), problems)


def _pio_case(t: CheckContext, case: str, prefix: ipaddress.IPv6Network) -> tuple[list, str]:
    """The Prefix Information options of one v6LC.3.2.4 part, and what they are."""
    if case == "multiple":
        extra = [fresh_prefix(avoid=t.target.link_prefix) for _ in range(2)]
        return [prefix_option(p, valid=ADDRESS_LEASE_S, preferred=ADDRESS_LEASE_S) for p in (prefix, *extra)], f"three prefixes {prefix}, {extra}"
    if case == "no_autonomous":
        return [prefix_option(prefix, valid=ADDRESS_LEASE_S, preferred=ADDRESS_LEASE_S, autonomous=0)], "A=0"
    if case == "link_local":
        return [prefix_option("fe80::/64", valid=3, preferred=3)], "the link-local prefix fe80::/64, valid 3 s"
    if case == "preferred_gt_valid":
        return [prefix_option(prefix, valid=20, preferred=40)], "preferred lifetime 40 s > valid lifetime 20 s"
    if case.startswith("length_"):
        n = int(case.split("_")[1])
        return [prefix_option(prefix, valid=ADDRESS_LEASE_S, preferred=ADDRESS_LEASE_S, length=n)], f"prefix length {n}"
    if case == "valid_zero":
        return [prefix_option(prefix, valid=0, preferred=0)], "valid lifetime 0"
    if case == "valid_infinite":
        return [prefix_option(prefix, valid=0xFFFFFFFF, preferred=0xFFFFFFFF)], "valid lifetime 0xffffffff (infinity)"
    return [prefix_option(prefix, valid=ADDRESS_LEASE_S, preferred=ADDRESS_LEASE_S)], "a valid prefix"


_PIO_PARTS = [
    ("A", "Router Advertisement with multiple Prefix Options", "multiple", True, "dut_uses_first_prefix_only"),
    ("B", "Autonomous Flag not set", "no_autonomous", False, "dut_ignores_autonomous_flag"),
    ("C", "prefix is set to link-local prefix", "link_local", False, "dut_applies_prefix_lifetime_to_link_local"),
    ("D", "preferred lifetime > valid lifetime", "preferred_gt_valid", False, "dut_clamps_preferred_lifetime"),
    ("E", "prefix length > 128 bits", "length_129", False, "dut_ignores_prefix_length"),
    ("F", "prefix length < 64 bits", "length_48", False, "dut_ignores_prefix_length"),
    ("G", "(64 bits < prefix length < 128 bits)", "length_120", False, "dut_ignores_prefix_length"),
    ("H", "Valid Lifetime is zero", "valid_zero", False, "dut_forms_addresses_with_zero_lifetime"),
    ("I", "Invalid RA with Hop Limit 254", "hop_limit_254", False, "dut_skips_ra_validation"),
    ("J", "Valid Lifetime is 0xffffffff", "valid_infinite", True, "dut_reads_infinite_lifetime_as_zero"),
]
_PIO_EXPECT = {
    True: "the DUT forms an address from every prefix of the option(s) and probes it with DAD",
    False: "the DUT forms no address from the option (no DAD probe for one) and keeps working",
}


@check(
    area="slaac", scope="host",
    ipv6ready="v6LC.3.2.4",
    title="Prefix-Information Option Processing",
    rfc="RFC 4862 §5.5.3; RFC 4861 §6.1.2",
    liveness="echo",
    expect="Prefix Information options are used for autoconfiguration exactly as RFC 4862 §5.5.3 (a)-(d) says",
    parts=[Part(letter, title, case=case, forms=forms, fault=fault, lasting=case == "valid_infinite",
                expect=_PIO_EXPECT[forms] if case != "link_local" else
                "the link-local prefix is ignored: no DAD probe, and the DUT's link-local address does not take the "
                "option's 3 s lifetime (it still answers Neighbor Solicitations 4 s later)")
           for letter, title, case, forms, fault in _PIO_PARTS],
)
def prefix_option_processing(t: CheckContext):
    """RFC 4862 §5.5.3: '(a) If the Autonomous flag is not set, silently
    ignore the Prefix Information option. (b) If the prefix is the
    link-local prefix, silently ignore ... (c) If the preferred lifetime is
    greater than the valid lifetime, silently ignore ... (d) If the prefix
    advertised is not equal to the prefix of an address configured by
    stateless autoconfiguration already ... and if the Valid Lifetime is not
    0, form an address ... If the sum of the prefix length and interface
    identifier length does not equal 128 bits, the Prefix Information option
    MUST be ignored.'  An RA failing RFC 4861 §6.1.2 is discarded whole."""
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    if t.p.case == "hop_limit_254":
        options, what = _pio_case(t, "valid", prefix)
        ra = router_advertisement(t.tr1, prefixes=options, hlim=254)
        what = f"{what} in an RA with hop limit 254"
    else:
        options, what = _pio_case(t, t.p.case, prefix)
        ra = router_advertisement(t.tr1, prefixes=options)
    since = t.send(ra, label=f"RA with {what}")
    t.wait(t.reply_timeout + 1.0)  # MAX_RTR_SOLICITATION_DELAY before DAD
    nets = [ipaddress.IPv6Network(f"{o.prefix}/64", strict=False) for o in options]
    probed = {str(n): _probes_in(t, n, since) for n in nets}
    if t.p.forms:
        missing = [n for n, a in probed.items() if not a]
        if missing:
            raise Deviation(f"RA with {what}: no address formed from {', '.join(missing)}")
        return t.conclude(f"RA with {what}: probed {sorted(a for v in probed.values() for a in v)}", [])
    formed = [a for v in probed.values() for a in v]
    if formed:
        raise Deviation(f"RA with {what}: the DUT formed {formed} (DAD probe)")
    if t.p.case == "link_local":
        t.wait(max(0.0, since + 4.0 - t.now()))
        ok, how = _is_assigned(t, t.dut.link_local)
        if not ok:
            raise Deviation(f"4 s after an RA with {what}: {how} (the link-local address took the option's lifetime)")
    if not t.alive(method="echo"):
        raise Deviation(f"RA with {what}: no address formed, but the DUT stopped answering")
    seen = f"RA with {what}: no DAD probe for an address from it within {t.reply_timeout + 1.0:g} s"
    # no vacuous PASS: a valid prefix right after must form an address, or the DUT may ignore every RA
    valid = fresh_prefix(avoid=t.target.link_prefix)
    lease = t.lease_for_probes(0, rebuilt=30)  # its DAD probe is all this needs
    since = t.send(router_advertisement(t.tr1, prefixes=[prefix_option(valid, valid=lease, preferred=lease)]),
                   label=f"RA with a valid prefix {valid} (an address from it is required)")
    t.wait(t.reply_timeout + 1.0)
    got = _probes_in(t, ipaddress.IPv6Network(valid), since)
    if not got:
        # the effect that shows the DUT processes RAs did not come: forming addresses is judged by v6LC.3.2.1
        raise t.not_judged(f"address:{valid}", FORMING, f"{seen}; then a valid prefix {valid} formed no address "
                                                        f"either (no DAD probe within {t.reply_timeout + 1.0:g} s): "
                                                        "the DUT ignores every RA, so the discard proves nothing")
    return t.conclude(f"{seen}; a valid prefix right after formed {sorted(got)}", [])


@check(
    area="slaac", scope="host",
    ipv6ready="v6LC.3.2.5",
    title="Prefix-Information Option Processing, Lifetime",
    rfc="RFC 4862 §5.5.3(e)",
    liveness="echo",
    expect="a later Prefix Information option for the prefix sets the address's valid lifetime as the two-hour "
           "rule says: the address is still valid 5.5 s after the first RA",
    parts=[
        Part("A", "Prefix Lifetime greater than Remaining Lifetime", stored=3, advertised=8,
             fault="dut_never_extends_address_lifetime",
             expect="stored 3 s, advertised 8 s (more than the remaining lifetime): the valid lifetime becomes 8 s, "
                    "so the address is still valid after 3 s"),
        Part("B", "Prefix Lifetime greater than 2 hours", stored=3, advertised=7300, lasting=True,
             fault="dut_never_extends_address_lifetime",
             expect="stored 3 s, advertised 7300 s (more than 2 hours): the valid lifetime becomes 7300 s"),
        Part("C", "Prefix Lifetime less than the Remaining Lifetime and the Remaining Lifetime is less than 2 hours",
             stored=8, advertised=3, fault="dut_honours_every_prefix_lifetime",
             expect="stored 8 s, advertised 3 s (remaining lifetime under 2 hours): the advertised valid lifetime "
                    "is ignored, so the address is still valid after 4 s"),
        Part("D", "Prefix Lifetime less than 2 hours and the Stored Lifetime is greater than 2 hours",
             stored=10800, advertised=3, lasting=True, fault="dut_honours_every_prefix_lifetime",
             expect="stored 3 hours, advertised 3 s: the valid lifetime becomes 2 hours, not 3 s, so the address "
                    "is still valid after 4 s"),
    ],
)
def two_hour_rule(t: CheckContext):
    """RFC 4862 §5.5.3(e): '1. If the received Valid Lifetime is greater than
    2 hours or greater than RemainingLifetime, set the valid lifetime of the
    corresponding address to the advertised Valid Lifetime.  2. If
    RemainingLifetime is less than or equal to 2 hours, ignore the Prefix
    Information option with regards to the valid lifetime, unless the Router
    Advertisement ... has been authenticated ... 3. Otherwise, reset the
    valid lifetime of the corresponding address to 2 hours.'"""
    stored, advertised = t.p.stored, t.p.advertised
    conf = autoconfigure(t, t.tr1, valid=stored, preferred=stored, router_lifetime=0)
    conf.require(t)
    start = conf.start
    t.wait(max(0.0, start + 1.0 - t.now()))
    t.send(router_advertisement(t.tr1, prefixes=[prefix_option(conf.prefix, valid=advertised,
                                                               preferred=min(advertised, stored))]),
           label=f"RA with the same prefix, valid lifetime {advertised} s")
    ok, how = _assigned_at(t, conf.address, start + 5.5)
    detail = (f"address formed with valid lifetime {stored} s, then advertised {advertised} s 1 s later; "
              f"5.5 s after it was formed: {how}")
    if not ok:
        raise Deviation(detail)
    return t.conclude(detail, [])


@check(
    area="slaac",
    title="A duplicate hardware-derived link-local address disables IP on the interface",
    rfc="RFC 4862 §5.4.5",
    needs=["reset", "exclusive_router"],
    liveness=None,
    fault="dut_skips_dad",
    expect="when DAD finds the link-local address formed from the MAC (EUI-64) in use, the DUT does not assign "
           "it and disables IP operation on the interface: it forms no address from a later RA and sends no "
           "IPv6 packet (a SHOULD)",
)
def duplicate_hardware_link_local_disables_ip(t: CheckContext):
    """'If the address is a link-local address formed from an interface
    identifier based on the hardware address, which is supposed to be
    uniquely assigned (e.g., EUI-64 for an Ethernet interface), IP operation
    on the interface SHOULD be disabled' (RFC 4862 §5.4.5)."""
    if t.target.dut_iid not in (None, "eui64"):
        raise NotApplicable(f"the DUT forms interface identifiers as {t.target.dut_iid}, not from its MAC")
    tn1 = t.tn1
    seen: dict = {}

    def responder(port, frame):
        if "probe" not in seen and not frame.outgoing and frame.pkt[Ether].src.lower() == t.dut.mac \
                and is_dad_ns_for(frame.pkt, LINK_LOCAL):
            seen["probe"] = frame
            port.send(dad_na(tn1, frame.pkt[ICMPv6ND_NS].tgt))

    t.port.add_responder(responder)
    try:
        since = t.restart_dut()
        probe = t.port.expect(t.from_dut(lambda p: is_dad_ns_for(p, LINK_LOCAL)), float(t.timing["ready_timeout_s"]),
                              since=since)
    finally:
        t.port.remove_responder(responder)
    if probe is None or "probe" not in seen:
        # no DAD at all after a restart is v6LC.3.1.1's FAIL; without a probe there is no duplicate to answer
        raise t.not_judged("dad", DAD_AT_START, "no DAD probe for a link-local address after the restart, so no "
                                                "duplicate could be shown to it")
    tentative = seen["probe"].pkt[ICMPv6ND_NS].tgt
    if ipaddress.IPv6Address(tentative).packed[8:] != ipaddress.IPv6Address(P.link_local_from_mac(t.dut.mac)).packed[8:]:
        raise NotApplicable(f"the DUT's link-local address {tentative} is not derived from its MAC")
    t.wait(t.retrans_timer + 0.3)
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    after = t.send(router_advertisement(t.tr1, router_lifetime=600, prefixes=[prefix_option(prefix, valid=ADDRESS_LEASE_S, preferred=ADDRESS_LEASE_S)]),
                   label=f"RA with prefix {prefix} after the duplicate")
    t.wait(t.reply_timeout + 1.0)
    sent = [f for f in t.collect(lambda p: IPv6 in p, 0, since=after)]
    if sent:
        raise Deviation(f"after its link-local address {tentative} was found a duplicate, the DUT kept IP running: "
                         f"{len(sent)} IPv6 packet(s) after an RA, first {sent[0].summary()} "
                         f"({', '.join(_probes_in(t, prefix, after)) or 'no address formed'})")
    return t.conclude(f"{tentative} was a duplicate; after an RA with {prefix} the DUT sent no IPv6 packet for "
                       f"{t.reply_timeout + 1.0:g} s (IP operation disabled)", [])


@check(
    area="slaac", scope="host",
    title="A prefix with the P flag forms no SLAAC address",
    rfc="RFC 9762 (updating RFC 4862 §5.5.3)",
    needs=["exclusive_router"],
    capabilities=["RFC9762"],
    fault="dut_ignores_pio_p_flag",
    liveness="echo",
    expect="from an RA with two Prefix Information options, both A=1, the DUT forms an address (DAD probe) in the "
           "one without the P flag and none in the one with P=1 ('DHCPv6-PD preferred'): the A flag is ignored "
           "there",
)
def pio_with_p_flag_forms_no_address(t: CheckContext):
    """RFC 9762 updates RFC 4862 so that the Autonomous flag of a Prefix
    Information option is ignored when the option has the P flag set (the
    network prefers that the host gets a prefix by DHCPv6 Prefix Delegation
    instead).  The second option, without P, is the effect that shows the RA
    was processed at all."""
    plain = fresh_prefix(avoid=t.target.link_prefix)
    flagged = fresh_prefix(avoid=plain)
    since = t.send(router_advertisement(t.tr1, router_lifetime=600, prefixes=[
        pd_preferred(prefix_option(flagged, valid=ADDRESS_LEASE_S, preferred=ADDRESS_LEASE_S)),
        prefix_option(plain, valid=ADDRESS_LEASE_S, preferred=ADDRESS_LEASE_S)]),
        label=f"RA: {flagged} with L=1 A=1 P=1, {plain} with L=1 A=1 P=0")
    t.wait(t.reply_timeout + 1.0)  # DAD may wait MAX_RTR_SOLICITATION_DELAY (RFC 4862 §5.4.2)
    in_plain = formed_in(t, plain, since)
    in_flagged = formed_in(t, flagged, since)
    if not in_plain:
        # the effect that shows the RA was processed did not come: forming addresses is judged by v6LC.3.2.1
        raise t.not_judged(f"address:{plain}", FORMING, f"the DUT formed no address from {plain} (A=1, P=0) either "
                                                        f"(no DAD probe within {t.reply_timeout + 1.0:g} s): it did "
                                                        "not process the RA, so the P flag cannot be judged")
    if in_flagged:
        raise Deviation(f"the DUT formed {', '.join(sorted(set(in_flagged)))} from {flagged}, whose option has P=1 "
                         f"(it also formed {in_plain[0]} from {plain})")
    return t.conclude(f"an address from {plain} ({in_plain[0]}); none from {flagged} (P=1) in "
                       f"{t.reply_timeout + 1.0:g} s", [])
