"""The common test setup: before a check's probes, the tester makes sure the
DUT has what the check presupposes, as the IPv6 Ready specs' Common Test
Setup does, so that one root cause gives one FAIL.

* ``nce``: the DUT holds a neighbour entry for every emulated node address
  a probe comes from.  The node sends the DUT a Neighbor Solicitation from
  that address with its Source Link-Layer Address option (RFC 4861 §7.2.3:
  the recipient creates or updates a STALE entry) and waits for the NA,
  retrying as the spec's setup does.  The DUT's answers to the probes then
  leave without waiting for address resolution, so a DUT that loses packets
  awaiting resolution (judged by ``nd.packets_wait_for_address_resolution``,
  which keeps probing a cold cache) does not FAIL every Echo, error and
  MTU check too.  A DUT that never answers is NOT_JUDGED for the dependant
  (precondition ``nce:<node>``), judged by the NS-processing check.

Areas whose checks take the setup by default are in ``AREA_SETUP``; a check
overrides it with ``@check(common_setup=...)`` (``()`` keeps a cold cache).
"""

from __future__ import annotations

from scapy.layers.inet6 import ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr, IPv6

from ..net import packets as P

#: area -> what its checks presuppose, unless a check says otherwise
AREA_SETUP: dict[str, tuple[str, ...]] = {"icmpv6": ("nce",), "ipv6": ("nce",), "pmtu": ("nce",)}

#: the check (#part) that judges each precondition
JUDGED_BY = {
    "nce": "nd.ns_is_answered_without_nce#A",
    "global-address": "slaac.global_address_is_formed_and_probed#A",
}

#: NS/NA exchanges the setup tries before it gives up
NCE_TRIES = 3


def setup_of(check) -> tuple[str, ...]:
    explicit = getattr(check, "common_setup", None)
    return tuple(explicit) if explicit is not None else AREA_SETUP.get(check.area, ())


def ensure_neighbour(t, node, addr: str) -> None:
    """Make sure the DUT has a neighbour entry for ``node`` at ``addr`` (a
    unicast address of the node) before a probe from it; raise NOT_JUDGED
    when the DUT does not answer the setup's solicitations."""
    if not addr or P.is_multicast(addr) or P.same_address(addr, P.UNSPECIFIED) or addr in t.primed:
        return
    target = t.dut.link_local
    ns = (node.ipv6(P.solicited_node(target), "", src=addr, hlim=255) / ICMPv6ND_NS(tgt=target)
          / ICMPv6NDOptSrcLLAddr(lladdr=node.mac))

    def answer(p):
        return (ICMPv6ND_NA in p and P.same_address(p[ICMPv6ND_NA].tgt, target)
                and P.same_address(p[IPv6].dst, addr))

    first = t.port.now()
    for i in range(NCE_TRIES):
        since = t.port.send(ns)
        na = t.port.expect(t.from_dut(answer), max(t.reply_timeout / NCE_TRIES, 0.5), since=since)
        if na is not None:
            t.primed.add(addr)
            t.note(f"setup: the DUT knows {node.name} at {addr} (NA after NS {i + 1} of {NCE_TRIES}, "
                   f"+{na.time - since:.3f} s)")
            return
    t.record_dut_sent(first, what=f"NA to {node.name}'s setup NS")
    raise t.not_judged(f"nce:{node.name}", JUDGED_BY["nce"],
                       f"the DUT answered none of {NCE_TRIES} Neighbor Solicitations from {node.name} ({addr}, with "
                       f"its link-layer address) for {target}, so it holds no neighbour entry for {node.name}")
