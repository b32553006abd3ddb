"""RA validity (RFC 4861 §6.1.2) and fragmented RAs (RFC 6980 §5): discarded, with a valid RA's effect required after."""

from __future__ import annotations

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...net.nd import fresh_prefix, prefix_option, router_advertisement
from ...net.rd import (
    fragmented,
    invalid_ra,
)
from ...scenario.observe import (
    dad_window,
    echo_hop_limit,
)
from ...scenario.rd import _INVALID_RA_PARTS, _ra_effects, _random_hop_limit, _valid_ra_takes_effect


@check(
    area="rd", scope="host",
    ipv6ready="v6LC.2.2.12",
    title="Router Advertisement Processing, Validity",
    rfc="RFC 4861 §6.1.2",
    needs=["exclusive_router"],
    fault="dut_skips_ra_validation",
    liveness="echo",
    expect="the invalid Router Advertisement is silently discarded: the DUT forms no address from its prefix "
           "and keeps its Cur Hop Limit (its Echo Replies do not carry the RA's value)",
    parts=[Part(letter, title, how=how) for letter, title, how in [
        ("A", "Global Source Address", "global_source"),
        ("B", "Hop Limit less than 255", "hop_limit_254"),
        ("C", "Invalid Checksum", "bad_checksum"),
        ("D", "Invalid ICMP Code", "code_1"),
        ("E", "Invalid ICMP Length", "short_length"),
        ("F", "Option of Length 0", "zero_length_option"),
    ]],
)
def invalid_ra_is_ignored(t: CheckContext):
    """'A node MUST silently discard any received Router Advertisement
    messages that do not satisfy all of the following validity checks'
    (RFC 4861 §6.1.2): link-local source, hop limit 255, valid checksum,
    code 0, ICMP length 16 or more, every option longer than zero."""
    tr1, prefix = t.tr1, fresh_prefix(avoid=t.target.link_prefix)
    before, _ = echo_hop_limit(t, t.node("TN1"))
    chlim = _random_hop_limit(avoid=before or 64)
    lease = t.lease_for_probes(0)  # a DAD probe in its prefix is all that is watched for (the Echo goes to the link-local)
    ra = invalid_ra(tr1, t.p.how, router_lifetime=600, cur_hop_limit=chlim,
                    prefixes=[prefix_option(prefix, valid=lease, preferred=lease)])
    since = t.send(ra, label=f"invalid RA ({_INVALID_RA_PARTS[t.p.how]}), Cur Hop Limit {chlim}, prefix {prefix}")
    effects = _ra_effects(t, tr1, prefix, chlim, since)
    if effects:
        raise Deviation(f"the DUT processed the invalid RA ({_INVALID_RA_PARTS[t.p.how]}): {'; '.join(effects)}")
    if not t.alive(method="echo"):
        raise Deviation("no effect of the RA, but the DUT stopped answering afterwards")
    took, after = _valid_ra_takes_effect(t, tr1, chlim)
    seen = (f"no DAD probe in {prefix} within {dad_window(t):g} s and its Echo Replies kept hop limit {before} "
            f"(the invalid RA said {chlim})")
    if not took:
        raise Deviation(f"{seen}; {after}")
    return t.conclude(f"{seen}; {after}", [])


def _fragmented_ra(t: CheckContext, atomic: bool):
    tr1, prefix = t.tr1, fresh_prefix(avoid=t.target.link_prefix)
    before, _ = echo_hop_limit(t, t.node("TN1"))
    chlim = _random_hop_limit(avoid=before or 64)
    lease = t.lease_for_probes(0)  # a DAD probe in its prefix is all that is watched for (the Echo goes to the link-local)
    ra = router_advertisement(tr1, router_lifetime=600, cur_hop_limit=chlim,
                              prefixes=[prefix_option(prefix, valid=lease, preferred=lease)])
    frames = fragmented(ra, atomic=atomic)
    since = t.now()
    for f in frames:
        t.send(f, label=f"RA in {'an atomic fragment' if atomic else f'{len(frames)} fragments'}")
    effects = _ra_effects(t, tr1, prefix, chlim, since)
    if effects:
        raise Deviation(f"the DUT processed the fragmented RA: {'; '.join(effects)}")
    if not t.alive(method="echo"):
        raise Deviation("no effect of the RA, but the DUT stopped answering afterwards")
    took, after = _valid_ra_takes_effect(t, tr1, chlim)
    seen = f"no DAD probe in {prefix} and hop limit still {before} (the fragmented RA said {chlim})"
    if not took:
        raise Deviation(f"{seen}; {after}")
    return t.conclude(f"{seen}; {after}", [])


@check(
    area="rd", scope="host",
    ipv6ready="v6LC.2.2.26",
    title="Router Advertisement in an atomic fragment is ignored",
    rfc="RFC 6980 §5",
    needs=["exclusive_router"],
    fault="dut_skips_ra_validation",
    liveness="echo",
    expect="an RA carried in an atomic fragment (Fragment header, offset 0, M=0) is silently discarded: no "
           "address from its prefix, its Cur Hop Limit not used",
    parts=[Part("A", "Router Advertisement with Atomic Fragment (Host Only)")],
)
def ra_in_atomic_fragment_is_ignored(t: CheckContext):
    """'A node MUST silently ignore any IPv6 packets that contain a Fragment
    Header and ... an ICMPv6 Router Advertisement' etc. (RFC 6980 §5),
    including atomic fragments."""
    return _fragmented_ra(t, atomic=True)


@check(
    area="rd", scope="host",
    ipv6ready="v6LC.2.2.27",
    title="Fragmented Router Advertisement is ignored",
    rfc="RFC 6980 §5",
    needs=["exclusive_router"],
    fault="dut_skips_ra_validation",
    liveness="echo",
    expect="an RA split in two fragments is silently discarded after reassembly: no address from its prefix, "
           "its Cur Hop Limit not used",
    parts=[Part("A", "Router Advertisement in two fragments (Host Only)")],
)
def fragmented_ra_is_ignored(t: CheckContext):
    """'Nodes MUST silently ignore ... Neighbor Discovery messages if the
    packets are fragmented' (RFC 6980 §5)."""
    return _fragmented_ra(t, atomic=False)
