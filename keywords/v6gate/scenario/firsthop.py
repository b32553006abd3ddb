"""The tester as the DUT's only router (IPv6 Ready "Common Test Setup 1.1"):
TR1 advertises itself as a default router and a prefix; off-link
correspondents talk to the DUT through TR1 ("forwarded" by it: TR1's MAC,
the correspondent's off-link address); which first hop the DUT uses for its
answer (TR1, another router, or the correspondent directly after resolving
it) shows its next-hop determination (RFC 4861 §5.2), its Default Router
List (§6.3.4) and its Destination Cache (redirects, §8.3).

Checks using this need ``exclusive_router``: another router's RAs would
change what the DUT's next hop is.
"""

from __future__ import annotations

import ipaddress
import secrets

from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, ICMPv6ND_NS, IPv6
from scapy.layers.l2 import Ether

from ..core.context import CheckContext
from ..core.verdict import Deviation
from ..net import packets as P
from ..net.nd import fresh_prefix, is_dad_ns_for, prefix_option, router_advertisement
from ..net.nodes import EmulatedNode
from ..net.port import Frame
from .nce import advertised_retrans
from .offlink import HELD_SETTLE_S

DEFAULT_ROUTER_LIFETIME = 1800  # RFC 4861 §6.2.1 AdvDefaultLifetime default (3 x MaxRtrAdvInterval)
#: the check that judges whether the DUT sends off-link traffic through its default router (RFC 4861 §5.2)
FIRST_HOP_JUDGE = "rd.offlink_destination_goes_to_default_router#"


class Answer:
    """The DUT's Echo Reply to one forwarded Echo Request, and the Neighbor
    Solicitations it sent meanwhile."""

    def __init__(self, since: float, reply: Frame | None, ns: list[Frame]):
        self.since = since
        self.reply = reply
        self.ns = ns

    @property
    def mac(self) -> str | None:
        return self.reply.pkt[Ether].dst.lower() if self.reply else None

    def solicited(self, address: str) -> bool:
        return any(P.same_address(f.pkt[ICMPv6ND_NS].tgt, address) for f in self.ns)

    def describe(self, names: dict[str, str]) -> str:
        if self.reply is None:
            text = "no Echo Reply"
        else:
            text = f"Echo Reply sent to {names.get(self.mac, self.mac)} at +{self.reply.time - self.since:.2f} s"
        if self.ns:
            text += "; NS for " + ", ".join(sorted({f.pkt[ICMPv6ND_NS].tgt for f in self.ns}))
        return text


class FirstHop:
    """TR1 as the DUT's only default router on the link prefix (or
    ``prefix``), with the DUT's global address in it learned."""

    def __init__(self, t: CheckContext, *, prefix: ipaddress.IPv6Network | None = None,
                 router_lifetime: int = DEFAULT_ROUTER_LIFETIME, on_link: bool = True, valid: int = 2592000,
                 preferred: int = 604800, reachable_ms: int = 0, retrans_ms: int = 0, autonomous: int = 1,
                 sllao: bool = True, router: EmulatedNode | None = None):
        self.t = t
        self.prefix = ipaddress.IPv6Network(prefix or t.target.link_prefix)
        self.tr1 = router or t.node("TR1", router=True, prefix=self.prefix)
        self.router_lifetime = router_lifetime
        self.on_link = on_link
        self.valid = valid
        self.preferred = preferred
        self.reachable_ms = reachable_ms
        self.retrans_ms = retrans_ms
        self.autonomous = autonomous
        self.sllao = sllao
        self.dut_global: str | None = None
        self.names: dict[str, str] = {t.dut.mac: "the DUT"}
        self.name(self.tr1)
        self.ident = secrets.randbelow(0xFFFF) + 1
        self.seq = 0

    def name(self, node: EmulatedNode) -> EmulatedNode:
        self.names[node.mac.lower()] = f"{node.name} ({node.mac})"
        return node

    # -- set-up ---------------------------------------------------------------
    def ra(self, *, router_lifetime: int | None = None, valid: int | None = None, preferred: int | None = None,
           on_link: bool | None = None, src_node: EmulatedNode | None = None, with_prefix: bool = True):
        router = src_node or self.tr1
        prefixes = [prefix_option(self.prefix, valid=self.valid if valid is None else valid,
                                  preferred=self.preferred if preferred is None else preferred,
                                  on_link=int(self.on_link if on_link is None else on_link),
                                  autonomous=self.autonomous)] if with_prefix else []
        # the Prefix Information option first (before the SLLA), so lab faults find its fields at fixed offsets
        return router_advertisement(router, router_lifetime=self.router_lifetime if router_lifetime is None
                                    else router_lifetime, prefixes=prefixes, sllao=False,
                                    reachable_ms=self.reachable_ms, retrans_ms=self.retrans_ms,
                                    options=[_sllao(router)] if self.sllao else [])

    def start(self) -> FirstHop:
        """Advertise TR1 and the prefix; learn the DUT's address in it (from
        its DAD probe, RFC 4862 §5.4, or from the target/control adapter when
        it had one already) and let DAD finish."""
        t = self.t
        since = t.send(self.ra(), label=f"RA from TR1: router lifetime {self.router_lifetime} s, prefix {self.prefix} "
                                        f"(L={int(self.on_link)}, A={self.autonomous}, valid {self.valid} s)")
        self.started = since
        if not self.autonomous:
            t.note(f"TR1 {self.tr1.link_local} ({self.tr1.mac}) is the DUT's router")
            return self
        held = self._held()
        if held is not None:
            # a prefix the DUT holds an address in: re-advertising it starts no DAD (RFC 4862 §5.5.3 e only
            # updates the lifetimes), so there is no probe to wait for; the RA is processed on receipt
            self.dut_global = held
            if self.retrans_ms:
                advertised_retrans(t, self.retrans_ms)
            t.wait(HELD_SETTLE_S)
            t.note(f"DUT global address {held} (held since earlier in the run: no DAD to wait for); TR1 "
                   f"{self.tr1.link_local} ({self.tr1.mac}) is its router")
            return self
        # RFC 4862 §5.4.2: DAD may be delayed up to MAX_RTR_SOLICITATION_DELAY (1 s)
        dad = t.port.expect(t.from_dut(lambda p: is_dad_ns_for(p, self.prefix)), t.reply_timeout + 1.0, since=since)
        if self.retrans_ms:
            advertised_retrans(t, self.retrans_ms)
        retrans = self.retrans_ms / 1000 if self.retrans_ms else t.retrans_timer
        if dad is not None:
            self.dut_global = dad.pkt[ICMPv6ND_NS].tgt
            # DupAddrDetectTransmits (1) x RetransTimer, and a margin for the DUT to mark it preferred
            t.wait(max(0.0, dad.time + retrans - t.now()) + max(0.2, retrans))
        else:
            self.dut_global = t.dut.global_address(self.prefix)
        t.note(f"DUT global address {self.dut_global}; TR1 {self.tr1.link_local} ({self.tr1.mac}) is its router")
        return self

    @classmethod
    def beside(cls, t: CheckContext, first: FirstHop) -> FirstHop:
        """For a part that runs beside ``first``'s (core/together.py): the same
        TR1, already the DUT's only default router by ``first``'s RA, with
        this part's own Echo identifier and names."""
        fh = cls(t, prefix=first.prefix, router_lifetime=first.router_lifetime, on_link=first.on_link,
                 valid=first.valid, preferred=first.preferred, reachable_ms=first.reachable_ms,
                 retrans_ms=first.retrans_ms, autonomous=first.autonomous, sllao=first.sllao, router=first.tr1)
        fh.dut_global, fh.started = first.dut_global, first.started
        t.note(f"TR1 is {first.tr1.mac} {first.tr1.link_local}, the DUT's router for the parts beside this one too "
               f"(one RA, sent in part {first.t.part}); DUT global address {fh.dut_global}")
        return fh

    def _held(self) -> str | None:
        """The DUT's address in the link prefix where the run already knows it
        holds one (a DUT the run does not rebuild or reset, the target file or
        an earlier check): None where it must be learned from its DAD probe."""
        t = self.t
        if not t.target.external or "reset" in t.check.needs or self.prefix != ipaddress.IPv6Network(
                t.target.link_prefix):
            return None
        return t.dut.held_link_address()

    # -- correspondents -----------------------------------------------------------
    def offlink_node(self, name: str, prefix: ipaddress.IPv6Network | None = None) -> EmulatedNode:
        """A node whose (global) address is in a prefix that is not on-link;
        it still answers NS for it on this link (so the DUT can reach it
        directly once redirected there)."""
        node = self.t.node(name)
        net = prefix or fresh_prefix(avoid=self.prefix)
        off = P.address_in(net, P.random_iid())
        node.extra_addrs.append(off)
        node.offlink = off
        self.t.note(f"{name} off-link address {off}")
        return self.name(node)

    def router(self, name: str) -> EmulatedNode:
        return self.name(self.t.node(name, router=True, prefix=self.prefix))

    def forwarded_echo(self, src: str, *, via: EmulatedNode | None = None, dst: str | None = None):
        """An Echo Request from ``src`` as a router (TR1) forwards it to the DUT."""
        self.seq += 1
        router = via or self.tr1
        return (Ether(src=router.mac, dst=self.t.dut.mac)
                / IPv6(src=src, dst=dst or self.dut_global, hlim=63)
                / ICMPv6EchoRequest(id=self.ident, seq=self.seq, data=P.nonce(16)))

    def ask(self, src: str, *, via: EmulatedNode | None = None, window: float | None = None,
            dst: str | None = None) -> Answer:
        """Forward an Echo Request from ``src``; return where the DUT sent its reply."""
        t = self.t
        req = self.forwarded_echo(src, via=via, dst=dst)
        seq = req[ICMPv6EchoRequest].seq
        since = t.send(req, label=f"Echo Request from {src} forwarded by {(via or self.tr1).name}")
        window = t.reply_timeout + 3 * t.retrans_timer if window is None else window

        def is_reply(p):
            return (ICMPv6EchoReply in p and p[ICMPv6EchoReply].id == self.ident and p[ICMPv6EchoReply].seq == seq
                    and P.same_address(p[IPv6].dst, src))

        frames = t.port.collect(t.from_dut(lambda p: is_reply(p) or ICMPv6ND_NS in p), window, since=since,
                                until=lambda fs: any(is_reply(f.pkt) for f in fs))
        reply = next((f for f in frames if is_reply(f.pkt)), None)
        ns = [f for f in frames if ICMPv6ND_NS in f.pkt and f.pkt[IPv6].src != P.UNSPECIFIED]
        answer = Answer(since, reply, ns)
        t.note(f"answer to {src}: {answer.describe(self.names)}")
        return answer

    def require_first_hop(self, src: str, node: EmulatedNode, step: str) -> Answer:
        """A setup step: the DUT must answer ``src`` through ``node``.  An
        Echo Request that got no answer at all is repeated once (the DUT may
        still have been finishing DAD or resolving the router on a loaded
        bench); an answer through the wrong hop is not."""
        answer = self.ask(src)
        if answer.reply is None:
            self.t.note(f"no answer to {src} yet ({step}); asking once more")
            answer = self.ask(src)
        if answer.mac != node.mac.lower():
            # a precondition: off-link traffic through the only default router is v6LC.2.2.18's to judge
            raise Deviation(f"setup ({step}): the DUT's answer to {src} went "
                            f"{'nowhere' if answer.mac is None else 'to ' + self.names.get(answer.mac, answer.mac)}"
                            f", not through {node.name} ({node.mac}), its only router", name="first-hop",
                            judged_by=FIRST_HOP_JUDGE)
        return answer


def _sllao(node: EmulatedNode):
    from scapy.layers.inet6 import ICMPv6NDOptSrcLLAddr

    return ICMPv6NDOptSrcLLAddr(lladdr=node.mac)
