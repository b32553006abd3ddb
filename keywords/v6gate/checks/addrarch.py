"""Address architecture: interface identifiers and source address selection
— RFC 7217 / RFC 8064 (stable opaque IIDs), RFC 8981 (temporary addresses),
RFC 6724 (default source address selection, where the wire shows it).

What the DUT forms is read from its DAD probes after the tester's RAs; what
it selects is read from the source of Echo Requests it is made to send
(control adapter: ping).  Checks of optional behaviour run only when the
target claims it (Stable-IID, Temp-Addr); the lab runs them in the DUT
configurations 'stable-iid' and 'temp-addr' of its topology.  In those the
DUT's link-local address is not EUI-64 either, so these checks learn it
from the wire instead of trusting the target file."""

from __future__ import annotations

import ipaddress
import subprocess

from scapy.layers.inet6 import ICMPv6EchoRequest, ICMPv6ND_NS, IPv6

from ..core.check import Part, check
from ..core.context import CheckContext
from ..core.ledger import ADDRESS_LEASE_S
from ..core.verdict import Deviation
from ..net import match as M
from ..net import packets as P
from ..net.nd import fresh_prefix, is_dad_ns_for, prefix_option, router_advertisement
from ..scenario.observe import FORMING, dad_window, formed_in


def _iid(addr: str) -> int:
    return int(ipaddress.IPv6Address(addr)) & (2**64 - 1)


def _mac_derived(t: CheckContext, addr: str) -> str | None:
    """How ``addr``'s interface identifier embeds the DUT's MAC, if it does
    (modified EUI-64, or the 48 bits in any position)."""
    iid = _iid(addr)
    if iid == P.eui64_iid(t.dut.mac):
        return "it is the modified EUI-64 of the MAC"
    mac = int(t.dut.mac.replace(":", ""), 16)
    for shift in range(0, 17):
        if (iid >> shift) & (2**48 - 1) in (mac, mac ^ (0x02 << 40)):
            return "it contains the MAC's 48 bits"
    return None


def _link_local_of(t: CheckContext) -> str | None:
    """The DUT's link-local address, from its answer to an all-nodes Echo
    Request sent from a link-local source."""
    tn = t.node("TNLL")
    for seq in (1, 2, 3):
        req = tn.ipv6(P.ALL_NODES, "") / ICMPv6EchoRequest(id=0xA7, seq=seq, data=P.nonce(8))
        frame = t.expect_reply(req, M.echo_reply_to(req), what="Echo Reply to an all-nodes Echo Request")
        if frame is not None:
            return frame.pkt[IPv6].src
    return None


def _addresses_in(t: CheckContext, prefix: ipaddress.IPv6Network, **pio) -> tuple[list[str], float]:
    """Announce ``prefix`` and return every address the DUT probes in it."""
    since = t.send(router_advertisement(t.tr1, router_lifetime=600, prefixes=[
        prefix_option(prefix, **({"valid": 600, "preferred": 600} | pio))]), label=f"RA with prefix {prefix}")
    t.wait(dad_window(t))
    found = formed_in(t, prefix, since)
    if found:
        t.wait(t.retrans_timer + 0.2)  # let DAD finish
    return found, since


def _none_formed(t: CheckContext, prefix: ipaddress.IPv6Network, what: str = ""):
    """The address the check needs did not form: NOT_JUDGED (v6LC.3.2.1 judges forming addresses)."""
    return t.not_judged(f"address:{prefix}", FORMING, f"the DUT formed no address from {prefix}{what} (no DAD probe "
                                                      "within the window, RFC 4862 §5.5.3)")


#: the check that judges whether the DUT forms temporary addresses
TEMPORARY = "addrarch.temporary_address_is_formed#"


# -- RFC 7217 / RFC 8064: stable opaque interface identifiers --------------------------------------

_STABLE = dict(capabilities=["Addr_Arch", "Stable-IID"], dut_config="stable-iid", liveness=None)


@check(area="addrarch", title="Stable IID: the same address for the same prefix after a restart",
       rfc="RFC 7217 §5", needs=["reset"], fault="dut_random_iid_per_boot", **_STABLE,
       expect="the address the DUT forms in a prefix is the same after its interface restarts and the prefix is "
              "advertised again (stable within the subnet)")
def stable_iid_is_stable_per_prefix(t: CheckContext):
    """RFC 7217 §5: the interface identifier is F(Prefix, Net_Iface,
    Network_ID, DAD_Counter, secret_key), so 'the resulting Interface
    Identifier will be the same ... when the node is connected to the same
    subnet' and stays stable over restarts."""
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    first, _ = _addresses_in(t, prefix)
    if not first:
        raise _none_formed(t, prefix)
    t.restart_dut()
    t.wait(float(t.retrans_timer) + 0.5)
    second, _ = _addresses_in(t, prefix)
    if not second:
        raise _none_formed(t, prefix, " after the restart")
    detail = f"in {prefix}: {first} before the restart, {second} after"
    if set(first) != set(second):
        raise Deviation(detail)
    return t.conclude(detail, [])


@check(area="addrarch", title="Stable IID: different identifiers in different prefixes",
       rfc="RFC 7217 §5, §6", fault="dut_uses_eui64_iids", **_STABLE,
       expect="the DUT's addresses in two prefixes advertised together have different interface identifiers "
              "(an identifier changes with the prefix, so a node cannot be tracked across networks)")
def stable_iids_differ_across_prefixes(t: CheckContext):
    """RFC 7217 §5: 'the resulting Interface Identifier ... MUST be different
    when the node is connected to a different subnet' (the prefix is an input
    of F())."""
    p1, p2 = fresh_prefix(avoid=t.target.link_prefix), fresh_prefix(avoid=t.target.link_prefix)
    a1, _ = _addresses_in(t, p1)
    a2, _ = _addresses_in(t, p2)
    if not a1 or not a2:
        raise _none_formed(t, p2 if a1 else p1)
    shared = {f"{_iid(x):016x}" for x in a1} & {f"{_iid(y):016x}" for y in a2}
    detail = f"{p1}: {a1}; {p2}: {a2}"
    if shared:
        raise Deviation(f"{detail}: the same interface identifier {sorted(shared)} in both")
    return t.conclude(detail, [])


@check(area="addrarch", title="Stable IID: no interface identifier derived from the MAC",
       rfc="RFC 8064 §3; RFC 7217 §5", fault="dut_uses_eui64_iids", **_STABLE,
       expect="neither the DUT's link-local address nor its autoconfigured global address embeds its MAC "
              "address (no modified EUI-64)")
def stable_iid_is_not_derived_from_mac(t: CheckContext):
    """RFC 8064 §3: 'nodes SHOULD NOT employ IPv6 address generation schemes
    that embed a stable link-layer address in the IID'; RFC 7217 §5 is the
    RECOMMENDED default instead."""
    ll = _link_local_of(t)
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    glob, _ = _addresses_in(t, prefix)
    if not glob:
        raise _none_formed(t, prefix)
    if ll is None:
        raise Deviation(f"link-local address not found (no answer to an all-nodes Echo Request from a link-local "
                        f"source), addresses in {prefix}: {glob}")
    problems = [f"{a}: {why}" for a in (ll, *glob) if (why := _mac_derived(t, a))]
    detail = f"link-local {ll}, global {glob}, MAC {t.dut.mac}"
    return t.conclude(detail, problems)


# -- RFC 8981: temporary addresses --------------------------------------------------------------

_TEMP = dict(capabilities=["Addr_Arch", "Temp-Addr"], dut_config="temp-addr", liveness=None)


def _split_temporary(t: CheckContext, addresses: list[str]) -> tuple[list[str], list[str]]:
    """(public, temporary): the public address is the one whose identifier
    the DUT also uses in its other prefixes / link-local (EUI-64 or stable);
    every other one is a temporary candidate."""
    ll = _link_local_of(t)
    public = [a for a in addresses if ll and _iid(a) == _iid(ll)]
    if not public and t.target.dut_iid in (None, "eui64"):
        public = [a for a in addresses if _iid(a) == P.eui64_iid(t.dut.mac)]
    return public, [a for a in addresses if a not in public]


@check(area="addrarch", title="Temporary address is formed next to the public one",
       rfc="RFC 8981 §3.3, §3.4", fault="dut_forms_no_temporary_addresses", **_TEMP,
       expect="for an autoconfigured prefix the DUT forms, besides its public address, a temporary address with a "
              "different, randomized interface identifier (not derived from the MAC), and probes it with DAD")
def temporary_address_is_formed(t: CheckContext):
    """RFC 8981 §3.4: 'When a new public address is created ... the node
    SHOULD also create a new temporary address'; its interface identifier
    is random (§3.3.1) and it is subject to DAD (§3.4 step 7)."""
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    found, _ = _addresses_in(t, prefix)
    if not found:
        raise _none_formed(t, prefix)
    public, temporary = _split_temporary(t, found)
    if not temporary:
        raise Deviation(f"addresses probed in {prefix}: {found}; no temporary address besides the public {public}")
    problems = [f"{a}: {why}" for a in temporary if (why := _mac_derived(t, a))]
    detail = f"in {prefix}: public {public}, temporary {temporary}"
    return t.conclude(detail, problems)


def _originated_source(t: CheckContext, dst: str) -> tuple[str | None, str]:
    """Make the DUT ping ``dst`` and return the source of its Echo Request."""
    since = t.now()
    proc = t.control.ping(dst, count=1, wait_s=max(1.0, t.reply_timeout))
    try:
        frame = t.port.expect(t.from_dut(lambda p: ICMPv6EchoRequest in p and P.same_address(p[IPv6].dst, dst)),
                              t.reply_timeout + 3 * t.retrans_timer + 1.0, since=since)
    finally:
        if isinstance(proc, subprocess.Popen):
            proc.kill()
            proc.wait(5)
    if frame is None:
        return None, f"the DUT sent no Echo Request to {dst} when told to ping it"
    t.note(f"Echo Request to {dst} from {frame.pkt[IPv6].src}")
    return frame.pkt[IPv6].src, f"its Echo Request to {dst} came from {frame.pkt[IPv6].src}"


@check(area="addrarch", title="Temporary address is the source of new outgoing traffic",
       rfc="RFC 6724 §5 rule 7; RFC 8981 §3.1", needs=["originate", "exclusive_router"],
       fault="dut_prefers_public_addresses", **_TEMP,
       expect="when the DUT starts a communication with an off-link destination, it uses its temporary address "
              "as the source, not its public one (the default of RFC 6724 rule 7)")
def temporary_address_is_preferred(t: CheckContext):
    """RFC 6724 §5 rule 7: 'Prefer temporary addresses ... if SA is a
    temporary address and SB is a public address, then prefer SA'."""
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    found, _ = _addresses_in(t, prefix)
    public, temporary = _split_temporary(t, found)
    if not temporary:
        raise t.not_judged(f"temporary-address:{prefix}", TEMPORARY,
                           f"no temporary address in {prefix} (probed {found})")
    dst = P.address_in(fresh_prefix(avoid=t.target.link_prefix), P.random_iid())
    src, seen = _originated_source(t, dst)
    if src is None:
        raise Deviation(seen)
    seen = f"{seen}; public {public}, temporary {temporary}"
    if src not in temporary:
        raise Deviation(seen)
    return t.conclude(seen, [])


# -- RFC 6724: default source address selection ------------------------------------------------------

def _two_prefixes(t: CheckContext, *, deprecate_first: bool):
    p1, p2 = fresh_prefix(avoid=t.target.link_prefix), fresh_prefix(avoid=t.target.link_prefix)
    a1, _ = _addresses_in(t, p1, preferred=0 if deprecate_first else 600)
    a2, _ = _addresses_in(t, p2)
    return (p1, a1), (p2, a2)


@check(area="addrarch", title="Default source address selection",
       rfc="RFC 6724 §5", capabilities=["Core", "Addr_Arch"], needs=["originate", "exclusive_router"],
       liveness="echo",
       expect="the DUT picks the source of a new communication as RFC 6724 §5 orders it",
       parts=[
           Part("scope", "Rule 2: a source of the destination's scope", rule="scope",
                fault="dut_sources_global_traffic_from_link_local",
                expect="to a link-local destination the DUT sends from its link-local address, to an off-link "
                       "global destination from a global address"),
           Part("deprecated", "Rule 3: avoid deprecated addresses", rule="deprecated",
                fault="dut_picks_another_global_source",
                expect="with one address deprecated (preferred lifetime 0) and one preferred, an off-link "
                       "destination gets the preferred address as source"),
           Part("longest_match", "Rule 8: longest matching prefix", rule="longest_match",
                fault="dut_picks_another_global_source",
                expect="with addresses in two prefixes, a destination inside the second prefix gets the address "
                       "of that prefix as source"),
       ])
def source_address_selection(t: CheckContext):
    """RFC 6724 §5: 'Rule 2: Prefer appropriate scope ... Rule 3: Avoid
    deprecated addresses ... Rule 8: Use longest matching prefix'."""
    if t.p.rule == "scope":
        glob, _ = _addresses_in(t, fresh_prefix(avoid=t.target.link_prefix))
        ll = t.dut.link_local
        src_ll, seen_ll = _originated_source(t, t.tn1.link_local)
        src_gl, seen_gl = _originated_source(t, P.address_in(fresh_prefix(), P.random_iid()))
        problems = []
        if src_ll is None or not ipaddress.IPv6Address(src_ll).is_link_local:
            problems.append(seen_ll)
        if src_gl is None or ipaddress.IPv6Address(src_gl).is_link_local:
            problems.append(seen_gl)
        detail = f"{seen_ll}; {seen_gl} (link-local {ll}, global {glob})"
        return t.conclude(detail, [f"wrong scope: {p}" for p in problems])
    (p1, a1), (p2, a2) = _two_prefixes(t, deprecate_first=t.p.rule == "deprecated")
    if not a1 or not a2:
        raise _none_formed(t, p2 if a1 else p1)
    if t.p.rule == "deprecated":
        dst = P.address_in(fresh_prefix(avoid=t.target.link_prefix), P.random_iid())
        why = f"{a1} deprecated, {a2} preferred"
    else:
        tn = t.node("TN5", prefix=p2)
        dst = tn.global_addr
        why = f"destination {dst} inside {p2}; addresses {a1} and {a2}"
    src, seen = _originated_source(t, dst)
    if src is None:
        raise Deviation(seen)
    if src not in a2:
        raise Deviation(f"{seen} ({why})")
    return t.conclude(f"{seen} ({why})", [])



# -- RFC 8981: no temporary address where SLAAC is not allowed ---------------------------------------


@check(area="addrarch", title="No temporary address for a prefix with A=0",
       rfc="RFC 8981 §3.4; RFC 4862 §5.5.3(a)", needs=["exclusive_router"],
       fault="dut_ignores_autonomous_flag", **_TEMP,
       expect="from an RA with two prefixes, one A=1 and one A=0 (both L=1), the DUT forms its public and "
              "temporary addresses in the A=1 prefix and no address at all, temporary or public, in the A=0 one")
def no_temporary_address_without_autonomous_flag(t: CheckContext):
    """RFC 8981 §3.4 generates temporary addresses for prefixes used in
    stateless address autoconfiguration — an option whose autonomous flag
    is clear is not (RFC 4862 §5.5.3(a): 'If the Autonomous
    flag is not set, silently ignore the Prefix Information option').  The
    A=1 prefix in the same RA shows the DUT processed it."""
    slaac, managed = fresh_prefix(avoid=t.target.link_prefix), fresh_prefix(avoid=t.target.link_prefix)
    since = t.send(router_advertisement(t.tr1, router_lifetime=600, prefixes=[
        prefix_option(managed, valid=ADDRESS_LEASE_S, preferred=ADDRESS_LEASE_S, autonomous=0),
        prefix_option(slaac, valid=ADDRESS_LEASE_S, preferred=ADDRESS_LEASE_S)]), label=f"RA: {managed} with A=0, {slaac} with A=1")
    t.wait(dad_window(t))
    probes = t.collect(lambda p: is_dad_ns_for(p), 0, since=since)
    formed = {net: sorted({f.pkt[ICMPv6ND_NS].tgt for f in probes if is_dad_ns_for(f.pkt, net)})
              for net in (slaac, managed)}
    if not formed[slaac]:
        raise _none_formed(t, slaac, " (A=1), so the A=0 rule cannot be judged")
    public, temporary = _split_temporary(t, formed[slaac])
    if not temporary:
        raise t.not_judged(f"temporary-address:{slaac}", TEMPORARY,
                           f"no temporary address in the A=1 prefix {slaac} either (probed {formed[slaac]}), so the "
                           "A=0 rule cannot be judged")
    seen = f"A=1 {slaac}: public {public}, temporary {temporary}; A=0 {managed}: {formed[managed] or 'nothing'}"
    if formed[managed]:
        _, temp_managed = _split_temporary(t, formed[managed])
        raise Deviation(f"the DUT formed {formed[managed]} in the A=0 prefix {managed}"
                         f"{' (temporary: ' + ', '.join(temp_managed) + ')' if temp_managed else ''}: {seen}")
    return t.conclude(seen, [])


# -- RFC 8981 §3.4: a new temporary address before the current one deprecates ------------------------

#: RFC 8981 §3.8: TEMP_IDGEN_RETRIES, and MAX_DESYNC_FACTOR's default share of TEMP_PREFERRED_LIFETIME
TEMP_IDGEN_RETRIES = 3
MAX_DESYNC_SHARE = 0.4
#: the DUT's timer granularity and a loaded bench: how much earlier than REGEN_ADVANCE a new address may come
REGEN_SLACK_S = 1.0


def _temp_timing(t: CheckContext) -> tuple[float, float]:
    """(TEMP_PREFERRED_LIFETIME, MAX_DESYNC_FACTOR) the target states
    (extensions.addrarch); the RFC default (1 day) is too long to watch."""
    ext = (t.target.extensions or {}).get("addrarch") or {}
    pref = ext.get("temp_preferred_lifetime_s")
    if pref is None:
        from ..core.context import NotApplicable

        raise NotApplicable("the target states no short TEMP_PREFERRED_LIFETIME (extensions.addrarch."
                            "temp_preferred_lifetime_s); with the RFC 8981 default of 1 day regeneration cannot be watched")
    desync = ext.get("max_desync_factor_s", MAX_DESYNC_SHARE * pref)
    for name, value in (("temp_preferred_lifetime_s", pref), ("max_desync_factor_s", desync)):
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 120:
            from ..errors import UsageError

            raise UsageError(f"{t.target.source}: extensions.addrarch.{name} must be a number of seconds in "
                             f"[0, 120], not {value!r}")
    return float(pref), float(desync)


@check(area="addrarch", scope="host", title="Temporary address is regenerated REGEN_ADVANCE before it deprecates",
       rfc="RFC 8981 §3.4, §3.8", needs=["exclusive_router"], fault="dut_regenerates_temporary_addresses_late",
       capabilities=["Addr_Arch", "Temp-Addr"], dut_config="temp-regen", liveness=None,
       expect="with TEMP_PREFERRED_LIFETIME shortened (the target states it), the DUT probes a new temporary address "
              "in the prefix between TEMP_PREFERRED_LIFETIME - MAX_DESYNC_FACTOR - REGEN_ADVANCE (less 1 s of timer "
              "slack) and TEMP_PREFERRED_LIFETIME after it probed the first one, i.e. before the first deprecates")
def temporary_address_is_regenerated_in_advance(t: CheckContext):
    """A node generates a new temporary address REGEN_ADVANCE before the
    current one becomes deprecated, so that a preferred temporary address is
    always available (RFC 8981 §3.4, §3.5);
    REGEN_ADVANCE = 2 + (TEMP_IDGEN_RETRIES * DupAddrDetectTransmits *
    RetransTimer / 1000) seconds, and a temporary address's preferred
    lifetime is TEMP_PREFERRED_LIFETIME - DESYNC_FACTOR at most (§3.8)."""
    temp_pref, max_desync = _temp_timing(t)
    regen_advance = 2 + TEMP_IDGEN_RETRIES * 1 * t.retrans_timer  # DupAddrDetectTransmits 1 (the RFC default)
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    found, since = _addresses_in(t, prefix)
    if not found:
        raise _none_formed(t, prefix)
    _public, temporary = _split_temporary(t, found)
    if not temporary:
        raise t.not_judged(f"temporary-address:{prefix}", TEMPORARY,
                           f"no temporary address in {prefix} to begin with (probed {found}): regeneration cannot "
                           "be judged")
    probes = t.collect(lambda p: is_dad_ns_for(p, prefix), 0, since=since)
    first = next(f for f in probes if f.pkt[ICMPv6ND_NS].tgt in temporary)
    earliest = first.time + temp_pref - max_desync - regen_advance - REGEN_SLACK_S
    latest = first.time + temp_pref
    t.note(f"first temporary {first.pkt[ICMPv6ND_NS].tgt}; a new one expected in [+{earliest - first.time:.2f}, "
           f"+{temp_pref:g}] s (TEMP_PREFERRED_LIFETIME {temp_pref:g}, MAX_DESYNC_FACTOR {max_desync:g}, "
           f"REGEN_ADVANCE {regen_advance:.2f})")
    known = set(found)
    new = t.port.expect(t.from_dut(lambda p: is_dad_ns_for(p, prefix) and p[ICMPv6ND_NS].tgt not in known),
                        max(0.0, latest - t.now()), since=first.time + 0.001)
    if new is None:
        raise Deviation(f"no new temporary address in {prefix} within TEMP_PREFERRED_LIFETIME ({temp_pref:g} s) of "
                         f"the first ({first.pkt[ICMPv6ND_NS].tgt}): it deprecates with no successor")
    after = new.time - first.time
    t.measure("regenerated_after_s", round(after, 3))
    seen = (f"new temporary {new.pkt[ICMPv6ND_NS].tgt} probed {after:.2f} s after the first "
            f"({first.pkt[ICMPv6ND_NS].tgt}), {temp_pref - after:.2f} s before it deprecates")
    if new.time < earliest:
        raise Deviation(f"{seen}: sooner than TEMP_PREFERRED_LIFETIME - MAX_DESYNC_FACTOR - REGEN_ADVANCE "
                         f"({earliest - first.time + REGEN_SLACK_S:.2f} s, less {REGEN_SLACK_S:g} s slack)")
    return t.conclude(seen, [])
