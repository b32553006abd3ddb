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
from ..core.setup import JUDGED_BY
from ..net import match as M
from ..net import packets as P
from ..net.nd import fresh_prefix, is_dad_ns_for, prefix_option, router_advertisement
from ._observe import dad_window


def _iid(addr: str) -> int:
    return int(ipaddress.IPv6Address(addr)) & (2**64 - 1)


def _mac_derived(t, addr: str) -> str | None:
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


def _link_local_of(t) -> str | None:
    """The DUT's link-local address, from its answer to an all-nodes Echo
    Request sent from a link-local source."""
    tn = t.node("TNLL")
    for seq in (1, 2, 3):
        req = tn.ipv6(P.ALL_NODES, "") / ICMPv6EchoRequest(id=0xA7, seq=seq, data=P.nonce(8))
        frame = t.expect_reply(req, M.echo_reply_to(req), what="Echo Reply to an all-nodes Echo Request")
        if frame is not None:
            return frame.pkt[IPv6].src
    return None


def _addresses_in(t, prefix: ipaddress.IPv6Network, **pio) -> tuple[list[str], float]:
    """Announce ``prefix`` and return every address the DUT probes in it."""
    since = t.send(router_advertisement(t.tr1, router_lifetime=600, prefixes=[
        prefix_option(prefix, **({"valid": 600, "preferred": 600} | pio))]), label=f"RA with prefix {prefix}")
    t.wait(dad_window(t))
    probes = t.collect(lambda p: is_dad_ns_for(p, prefix), 0, since=since)
    found = sorted({f.pkt[ICMPv6ND_NS].tgt for f in probes})
    if found:
        t.wait(t.retrans_timer + 0.2)  # let DAD finish
    return found, since


# -- RFC 7217 / RFC 8064: stable opaque interface identifiers --------------------------------------

_STABLE = dict(capabilities=["Addr_Arch", "Stable-IID"], dut_config="stable-iid", liveness=None)


@check(area="addrarch", title="Stable IID: the same address for the same prefix after a restart",
       rfc="RFC 7217 §5", needs=["reset"], fault="dut_random_iid_per_boot", **_STABLE,
       expect="the address the DUT forms in a prefix is the same after its interface restarts and the prefix is "
              "advertised again (stable within the subnet)")
def stable_iid_is_stable_per_prefix(t):
    """RFC 7217 §5: the interface identifier is F(Prefix, Net_Iface,
    Network_ID, DAD_Counter, secret_key), so 'the resulting Interface
    Identifier will be the same ... when the node is connected to the same
    subnet' and stays stable over restarts."""
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    first, _ = _addresses_in(t, prefix)
    if not first:
        return t.failed(f"no address formed from {prefix}")
    t.restart_dut()
    t.wait(float(t.retrans_timer) + 0.5)
    second, _ = _addresses_in(t, prefix)
    if not second:
        return t.failed(f"no address formed from {prefix} after the restart")
    detail = f"in {prefix}: {first} before the restart, {second} after"
    return t.verdict(set(first) == set(second), detail)


@check(area="addrarch", title="Stable IID: different identifiers in different prefixes",
       rfc="RFC 7217 §5, §6", fault="dut_uses_eui64_iids", **_STABLE,
       expect="the DUT's addresses in two prefixes advertised together have different interface identifiers "
              "(an identifier changes with the prefix, so a node cannot be tracked across networks)")
def stable_iids_differ_across_prefixes(t):
    """RFC 7217 §5: 'the resulting Interface Identifier ... MUST be different
    when the node is connected to a different subnet' (the prefix is an input
    of F())."""
    p1, p2 = fresh_prefix(avoid=t.target.link_prefix), fresh_prefix(avoid=t.target.link_prefix)
    a1, _ = _addresses_in(t, p1)
    a2, _ = _addresses_in(t, p2)
    if not a1 or not a2:
        return t.failed(f"addresses formed: {p1}: {a1}, {p2}: {a2}")
    shared = {f"{_iid(x):016x}" for x in a1} & {f"{_iid(y):016x}" for y in a2}
    detail = f"{p1}: {a1}; {p2}: {a2}"
    return t.failed(f"{detail}: the same interface identifier {sorted(shared)} in both") if shared else t.passed(detail)


@check(area="addrarch", title="Stable IID: no interface identifier derived from the MAC",
       rfc="RFC 8064 §3; RFC 7217 §5", fault="dut_uses_eui64_iids", **_STABLE,
       expect="neither the DUT's link-local address nor its autoconfigured global address embeds its MAC "
              "address (no modified EUI-64)")
def stable_iid_is_not_derived_from_mac(t):
    """RFC 8064 §3: 'nodes SHOULD NOT employ IPv6 address generation schemes
    that embed a stable link-layer address in the IID'; RFC 7217 §5 is the
    RECOMMENDED default instead."""
    ll = _link_local_of(t)
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    glob, _ = _addresses_in(t, prefix)
    if ll is None or not glob:
        return t.failed(f"link-local address {ll or 'not found'}, addresses in {prefix}: {glob or 'none'}")
    problems = [f"{a}: {why}" for a in (ll, *glob) if (why := _mac_derived(t, a))]
    detail = f"link-local {ll}, global {glob}, MAC {t.dut.mac}"
    return t.conclude(detail, problems)


# -- RFC 8981: temporary addresses --------------------------------------------------------------

_TEMP = dict(capabilities=["Addr_Arch", "Temp-Addr"], dut_config="temp-addr", liveness=None)


def _split_temporary(t, addresses: list[str]) -> tuple[list[str], list[str]]:
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
def temporary_address_is_formed(t):
    """RFC 8981 §3.4: 'When a new public address is created ... the node
    SHOULD also create a new temporary address'; its interface identifier
    is random (§3.3.1) and it is subject to DAD (§3.4 step 7)."""
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    found, _ = _addresses_in(t, prefix)
    public, temporary = _split_temporary(t, found)
    if not temporary:
        return t.failed(f"addresses probed in {prefix}: {found}; no temporary address besides the public {public}")
    problems = [f"{a}: {why}" for a in temporary if (why := _mac_derived(t, a))]
    detail = f"in {prefix}: public {public}, temporary {temporary}"
    return t.conclude(detail, problems)


def _originated_source(t, dst: str) -> tuple[str | None, str]:
    """Make the DUT ping ``dst`` and return the source of its Echo Request."""
    since = t.port.now()
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
def temporary_address_is_preferred(t):
    """RFC 6724 §5 rule 7: 'Prefer temporary addresses ... if SA is a
    temporary address and SB is a public address, then prefer SA'."""
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    found, _ = _addresses_in(t, prefix)
    public, temporary = _split_temporary(t, found)
    if not temporary:
        raise t.not_judged(f"temporary-address:{prefix}", "addrarch.temporary_address_is_formed#",
                           f"no temporary address in {prefix} (probed {found})")
    dst = P.address_in(fresh_prefix(avoid=t.target.link_prefix), P.random_iid())
    src, seen = _originated_source(t, dst)
    if src is None:
        return t.failed(seen)
    return t.verdict(src in temporary, f"{seen}; public {public}, temporary {temporary}")


# -- RFC 6724: default source address selection ------------------------------------------------------

def _two_prefixes(t, *, deprecate_first: bool):
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
def source_address_selection(t):
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
        raise t.not_judged("addresses", JUDGED_BY["global-address"], f"addresses formed {p1}: {a1}, {p2}: {a2}")
    if t.p.rule == "deprecated":
        dst = P.address_in(fresh_prefix(avoid=t.target.link_prefix), P.random_iid())
        why = f"{a1} deprecated, {a2} preferred"
    else:
        tn = t.node("TN5", prefix=p2)
        dst = tn.global_addr
        why = f"destination {dst} inside {p2}; addresses {a1} and {a2}"
    src, seen = _originated_source(t, dst)
    if src is None:
        return t.failed(seen)
    return t.verdict(src in a2, f"{seen} ({why})")

