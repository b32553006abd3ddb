"""The tester as the DUT's only router: TR1 advertises a fresh prefix and a
default route, so that nodes on other links ("off-link", TAHI's TN2,
Host1, ...) can reach the DUT through it.

A check using this declares ``needs=["exclusive_router"]`` (the lab stops
its own router and rebuilds the DUT; a real link must have no other
router).  Frames from off-link nodes carry TR1's MAC as their source, and
the DUT's answers to them go to TR1's MAC, as on a real routed path.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from ..core.context import CheckContext
from ..core.ledger import ADDRESS_LEASE_S
from ..core.verdict import NotJudged
from ..errors import BenchError
from ..net import packets as P
from ..net.nd import fresh_prefix, is_dad_ns_for, prefix_option, router_advertisement
from ..net.nodes import EmulatedNode

#: RFC 4861 §6.2.1 AdvDefaultLifetime upper bound is 9000 s; 600 s outlives any check
ROUTER_LIFETIME = 600
#: RFC 4862 §5.4.2: a node may delay its first DAD probe by up to MAX_RTR_SOLICITATION_DELAY
MAX_RTR_SOLICITATION_DELAY = 1.0


@dataclass
class OffLinkPath:
    """The DUT's routed path through the emulated router TR1."""

    t: CheckContext
    router: EmulatedNode
    prefix: ipaddress.IPv6Network  # advertised on the DUT's link
    dut: str  # the DUT's address in that prefix
    remotes: dict = field(default_factory=dict)

    @property
    def router_global(self) -> str:
        """TR1's address in the advertised prefix (same interface identifier
        as its link-local address)."""
        iid = int(ipaddress.IPv6Address(self.router.link_local)) & ((1 << 64) - 1)
        return P.address_in(self.prefix, iid)

    def remote(self, name: str) -> EmulatedNode:
        """A node on a link beyond TR1 (its own fresh /64)."""
        if name not in self.remotes:
            node = EmulatedNode.fresh(name, fresh_prefix(avoid=self.prefix))
            node.answers_ns = False  # not on the DUT's link
            self.remotes[name] = node
            self.t.note(f"{name} is off-link at {node.global_addr} (via TR1)")
        return self.remotes[name]

    def onlink(self, name: str) -> EmulatedNode:
        """A node on the DUT's link, with an address in the advertised prefix."""
        return self.t.node(name, prefix=self.prefix)

    def from_remote(self, node: EmulatedNode, dst: str | None = None, **fields) -> Packet:
        """Ether/IPv6 from an off-link node, as TR1 forwards it to the DUT."""
        dst = dst or self.dut
        dst_mac = P.multicast_mac(dst) if P.is_multicast(dst) else self.t.dut.mac
        return Ether(src=self.router.mac, dst=dst_mac) / IPv6(src=node.global_addr, dst=dst, **fields)

    def from_router(self, dst: str | None = None, src: str | None = None, **fields) -> Packet:
        """Ether/IPv6 sent by TR1 itself (its link-local address by default)."""
        dst = dst or self.dut
        return Ether(src=self.router.mac, dst=self.t.dut.mac) / IPv6(src=src or self.router.link_local, dst=dst,
                                                                    **fields)


def become_router(t: CheckContext, *, mtu: int | None = None, router_lifetime: int = ROUTER_LIFETIME,
                  prefix: ipaddress.IPv6Network | None = None, lease_s: int = ADDRESS_LEASE_S) -> OffLinkPath:
    """TR1 advertises ``prefix`` (default: a fresh /64, autonomous and
    on-link) and itself as default router; returns once the DUT has
    configured its address in it (RFC 4862 §5.5.3, DAD done).

    A check that declares ``any_address`` needs only some global address of
    the DUT behind TR1.  On a DUT the run does not rebuild it uses the one
    the DUT holds in the link prefix (TR1's prefix then on-link only, A=0)
    where the DUT's address table is known to be small (declared or
    discovered: the room is for checks that need an address of their own),
    or where the fresh prefix formed no address."""
    prefix = prefix or fresh_prefix(avoid=t.target.link_prefix)
    held = t.dut.held_link_address() if t.check.any_address and t.target.external else None
    if held is not None and t.room.small():
        t.send(router_advertisement(t.tr1, prefixes=[prefix_option(prefix, valid=lease_s, preferred=lease_s,
                                                                   autonomous=0)],
                                    router_lifetime=router_lifetime, mtu=mtu),
               label=f"RA from TR1 for {prefix} (A=0: the DUT's address table is small; it uses its address {held})")
        t.wait(HELD_SETTLE_S)
        return _use_held(t, prefix, held, "its address table is small (the room is for checks that need an "
                                          "address of their own)")
    try:
        return advertise_prefix(t, prefix, mtu=mtu, router_lifetime=router_lifetime, lease_s=lease_s)
    except NotJudged:
        if held is None:
            raise
        return _use_held(t, prefix, held, "it formed no address in that prefix")


#: after TR1's RA when the DUT forms no address from it: the RA is processed on receipt; a little scheduling slack
HELD_SETTLE_S = 0.3


def _use_held(t: CheckContext, prefix: ipaddress.IPv6Network, held: str, why: str) -> OffLinkPath:
    t.note(f"the DUT uses {held}, its address in the link prefix, not one in TR1's {prefix}: {why}; a path "
           "through TR1 needs only some global address of the DUT")
    t.used_held_address = True  # its fresh prefix forming nothing is no sign of a full table (core/room.py)
    return OffLinkPath(t, t.tr1, prefix, held)


def advertise_prefix(t: CheckContext, prefix: ipaddress.IPv6Network, *, mtu: int | None = None,
                     router_lifetime: int = 0, lease_s: int = ADDRESS_LEASE_S) -> OffLinkPath:
    """TR1 advertises ``prefix`` (autonomous, on-link, valid and preferred
    for ``lease_s``: the check's probes and little more, ADDRESS_LEASE_S by
    default; a check that probes longer asks for longer, or its address
    expires mid-check); with the default Router Lifetime of 0 it does not
    become a default router, so the check needs no exclusive router.
    Returns once the DUT uses its address in it."""
    tr1 = t.tr1
    since = t.now()
    t.send(router_advertisement(tr1, prefixes=[prefix_option(prefix, valid=lease_s, preferred=lease_s)],
                                router_lifetime=router_lifetime, mtu=mtu), label=f"RA from TR1 for {prefix}")
    dad = t.port.expect(t.from_dut(lambda p: is_dad_ns_for(p, prefix)),
                        t.reply_timeout + MAX_RTR_SOLICITATION_DELAY, since=since)
    if dad is not None:
        t.wait(max(0.0, dad.time + t.retrans_timer - t.now()) + 0.1)
    try:
        dut = t.dut.global_address(prefix)
    except (BenchError, NotJudged):
        t.wait(t.retrans_timer * 3 + t.reply_timeout)
        dut = t.dut.global_address(prefix)
    t.note(f"the DUT configured {dut} from TR1's {prefix}")
    return OffLinkPath(t, tr1, prefix, dut)
