"""What router-discovery, SLAAC and address-architecture checks observe on
the wire, shared so each observation is written once:

* ``autoconfigure``: advertise a fresh prefix and learn the address the DUT
  forms in it (from its DAD probe; a DUT not seen probing any address may
  perform no DAD: then from the address it uses there);
* ``dad_probe_in``: the DUT's DAD probe for an address in a prefix (the
  sign that it accepted a prefix for autoconfiguration);
* ``formed_in`` / ``in_use``: the addresses the DUT formed in a prefix, by
  its DAD probes or, for a DUT that performs no DAD, by its answers;
* ``dad_judge`` / ``no_dad``: who judges a DUT that performs no DAD at all
  (one root cause: the DAD-validation parts are NOT_JUDGED ``dad``);
* ``next_hop_for``: the path the DUT chooses for its answer to an Echo
  Request (through which router, or on-link), from its first frames;
* ``echo_hop_limit``: the Hop Limit the DUT puts on an Echo Reply (its
  CurHopLimit, RFC 4861 §6.3.4).

Not a check module (the leading underscore keeps it out of the registry).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr, IPv6
from scapy.layers.l2 import Ether

from ..core.context import CheckContext
from ..core.ledger import ADDRESS_LEASE_S
from ..core.setup import JUDGED_BY
from ..core.verdict import Deviation
from ..net import match as M
from ..net import packets as P
from ..net.nd import fresh_prefix, is_dad_ns_for, prefix_option, router_advertisement
from ..net.nodes import EmulatedNode
from ..net.port import Frame
from ..net.rd import MAX_RTR_SOLICITATION_DELAY


def dad_window(t: CheckContext) -> float:
    """How long after an RA the DUT may take to probe a new address: a
    random delay up to MAX_RTR_SOLICITATION_DELAY (RFC 4862 §5.4.2) plus the
    reply timeout."""
    return t.reply_timeout + MAX_RTR_SOLICITATION_DELAY


def dad_probe_in(t: CheckContext, prefix: ipaddress.IPv6Network, since: float, within: float | None = None) -> Frame | None:
    """The DUT's DAD Neighbor Solicitation for an address in ``prefix``."""
    return t.port.expect(t.from_dut(lambda p: is_dad_ns_for(p, prefix)), dad_window(t) if within is None else within,
                         since=since)


def dad_done(t: CheckContext, probe: Frame) -> None:
    """Wait until DAD started by ``probe`` is over (DupAddrDetectTransmits
    probes RetransTimer apart; the lab sends one) plus a scheduling margin."""
    t.wait(max(0.0, probe.time + t.retrans_timer - t.now()) + 0.2)


#: the part that judges whether the DUT forms an address from a new prefix and probes it first (RFC 4862 §5.5.3,
#: §5.4): a check that only needs such an address is NOT_JUDGED (precondition ``address:<prefix>``) without it
FORMING = JUDGED_BY["global-address"]
#: the part that judges whether the DUT performs DAD at all: it restarts the DUT and watches its link-local DAD
DAD_AT_START = "slaac.link_local_address_is_probed_before_use#"


def dad_judge(t: CheckContext) -> str:
    """Who judges a DUT that performs no DAD at all: v6LC.3.1.1 where the
    control adapter can restart the DUT (it watches the DAD of the link-local
    address), else v6LC.3.2.1 A (the DAD of a global address)."""
    return DAD_AT_START if getattr(t.control, "can_reset", False) else FORMING


def seen_probing(t: CheckContext) -> bool:
    """The DUT was seen probing an address with DAD since it last started
    (its link-local address at a restart, any address of an earlier part;
    core/observer.py)."""
    observer = getattr(t.session, "observer", None)
    return observer is not None and observer.did_dad() is not None


def in_use(t: CheckContext, prefix: ipaddress.IPv6Network) -> str | None:
    """The DUT's address in ``prefix`` when it uses one, probed or not: the
    address its MAC predicts (``dut.iid`` eui64 or unset) answers a Neighbor
    Solicitation, or an all-nodes Echo Request from a node of the prefix is
    answered from an address in it (RFC 6724 source selection picks it)."""
    tn = t.node("TNUSE", prefix=prefix)
    if t.target.dut_iid in (None, "eui64"):
        guess = P.address_in(prefix, P.eui64_iid(t.dut.mac))
        ns = (tn.ipv6(P.solicited_node(guess), "", src=tn.link_local, hlim=255) / ICMPv6ND_NS(tgt=guess)
              / ICMPv6NDOptSrcLLAddr(lladdr=tn.mac))
        if t.expect_reply(ns, M.na_for(guess), what=f"Neighbor Advertisement for {guess}") is not None:
            return guess
    req = tn.ipv6(P.ALL_NODES, "", src=tn.global_addr) / ICMPv6EchoRequest(id=0x05E0, seq=1, data=P.nonce(8))
    frame = t.expect_reply(req, M.echo_reply_to(req), what=f"Echo Reply from an address in {prefix}")
    if frame is not None and ipaddress.IPv6Address(frame.pkt[IPv6].src) in prefix:
        return frame.pkt[IPv6].src
    return None


def formed_in(t: CheckContext, prefix: ipaddress.IPv6Network, since: float) -> list[str]:
    """Every address the DUT formed in ``prefix`` since ``since``: its DAD
    probes; for a DUT not seen probing any address since it started (it may
    perform no DAD), the address it uses there."""
    probes = sorted({f.pkt[ICMPv6ND_NS].tgt for f in t.collect(lambda p: is_dad_ns_for(p, prefix), 0, since=since)})
    if probes or seen_probing(t) or prefix.is_link_local:
        return probes
    used = in_use(t, prefix)
    return [used] if used else []


def no_dad(t: CheckContext, address: str, prefix: ipaddress.IPv6Network, problem: str, *, judge_here: bool = False):
    """The DUT assigned ``address`` without probing it.  A DUT never seen
    probing any address since it started performs no DAD at all: one root
    cause, judged by ``dad_judge``; this part is NOT_JUDGED (precondition
    ``dad``) unless it is that judge (``judge_here``).  A DUT that probes its
    other addresses got this one wrong: the part's own FAIL."""
    if not seen_probing(t):
        judge = dad_judge(t)
        if not (judge_here and judge.split("#")[0] == t.check.id):
            raise t.not_judged("dad", judge, f"{problem}; it was not seen probing any address since it started: it "
                                             "performs no Duplicate Address Detection")
    raise Deviation(problem)


@dataclass
class Autoconf:
    prefix: ipaddress.IPv6Network
    address: str | None
    probe: Frame | None
    sent: float = 0.0  # port time of the RA

    @property
    def start(self) -> float:
        """When the address was formed: its DAD probe, or the RA (no DAD)."""
        return self.probe.time if self.probe is not None else self.sent

    def missing(self) -> str:
        return (f"the DUT formed no address from prefix {self.prefix} (no DAD probe within the window; "
                "RFC 4862 §5.5.3), so the behaviour under test cannot be observed")

    def require(self, t: CheckContext) -> str:
        """The address, or NOT_JUDGED (precondition address:<prefix>, judged by the SLAAC check)."""
        if self.address is None:
            raise t.not_judged(f"address:{self.prefix}", FORMING, self.missing())
        return self.address


def autoconfigure(t: CheckContext, router: EmulatedNode, prefix: ipaddress.IPv6Network | None = None, *,
                  valid: int = ADDRESS_LEASE_S, preferred: int = ADDRESS_LEASE_S, **ra_fields) -> Autoconf:
    """Send an RA from ``router`` with a fresh /64 (A=1, L=1) and wait for the
    DUT's address in it to leave DAD (a DUT that performs no DAD: the
    address it uses there, formed when the RA came)."""
    prefix = prefix or fresh_prefix(avoid=t.target.link_prefix)
    since = t.send(router_advertisement(router, prefixes=[prefix_option(prefix, valid=valid, preferred=preferred)],
                                        **ra_fields))
    probe = dad_probe_in(t, prefix, since)
    if probe is None:
        t.record_dut_sent(since, what=f"a DAD probe for an address in {prefix}")
        used = None if seen_probing(t) else in_use(t, prefix)
        if used is not None:
            t.note(f"the DUT uses {used} from {prefix} without having probed it (it performs no DAD)")
        return Autoconf(prefix, used, None, since)
    dad_done(t, probe)
    return Autoconf(prefix, probe.pkt[ICMPv6ND_NS].tgt, probe, since)


def offlink_node(t: CheckContext, name: str = "TN2") -> EmulatedNode:
    """A node beyond the routers: its address is in a prefix no RA announces."""
    return t.node(name, prefix=fresh_prefix(avoid=t.target.link_prefix))


@dataclass
class Path:
    kind: str  # "router", "on-link", "other" or "none"
    router: EmulatedNode | None
    frame: Frame | None

    def describe(self) -> str:
        if self.kind == "none":
            return "nowhere (the DUT sent nothing toward the source)"
        how = self.frame.summary() if self.frame else ""
        if self.kind == "router":
            return f"through {self.router.name} ({self.router.mac}): {how}"
        if self.kind == "on-link":
            return f"on-link, straight to the source: {how}"
        return f"elsewhere: {how} to {self.frame.pkt[Ether].dst}"


def next_hop_for(t: CheckContext, source: EmulatedNode, dut_addr: str, *, via: EmulatedNode | None = None,
                 routers: list[EmulatedNode] = (), within: float | None = None,
                 src: str | None = None, tries: int = 2) -> Path:
    """Send an Echo Request from ``source`` (its global address unless
    ``src``) to ``dut_addr``, arriving through ``via`` (a router's MAC) or
    straight from the source, and classify the DUT's first frame about the
    answer: an Echo Reply or a Neighbor Solicitation for a router (the
    router is the next hop), for the source (on-link), or nothing (after
    ``tries`` requests: one lost to a busy DUT is no verdict)."""
    path = Path("none", None, None)
    for _ in range(tries):
        path = _next_hop_once(t, source, dut_addr, via=via, routers=routers, within=within, src=src)
        if path.kind != "none":
            break
    return path


def _next_hop_once(t: CheckContext, source, dut_addr, *, via, routers, within, src) -> Path:
    src = src or source.global_addr or source.link_local
    sender = via or source
    req = (Ether(src=sender.mac, dst=t.dut.mac) / IPv6(src=src, dst=dut_addr, hlim=64 if via is None else 63)
           / ICMPv6EchoRequest(id=P.random_iid() & 0xFFFF, seq=1, data=P.nonce(8)))
    routers = list(routers) or ([via] if via else [])
    by_mac = {r.mac: r for r in routers}

    def relevant(p) -> bool:
        if ICMPv6EchoReply in p and M.echo_reply_to(req)(p):
            return True
        if ICMPv6ND_NS in p and p[IPv6].src != P.UNSPECIFIED and P.is_multicast(p[IPv6].dst):
            # address resolution for the answer's next hop; a unicast NS is a NUD probe of an entry
            # that exists already, and tells nothing about this answer
            tgt = p[ICMPv6ND_NS].tgt
            return P.same_address(tgt, src) or any(r.owns(tgt) for r in routers)
        return False

    frame = t.expect_reply(req, relevant, what="Echo Reply or Neighbor Solicitation about the answer",
                           within=within if within is not None else t.reply_timeout + 3 * t.retrans_timer)
    if frame is None:
        return Path("none", None, None)
    p = frame.pkt
    if ICMPv6ND_NS in p:
        tgt = p[ICMPv6ND_NS].tgt
        for r in routers:
            if r.owns(tgt):
                return Path("router", r, frame)
        return Path("on-link", None, frame)
    dst_mac = p[Ether].dst.lower()
    if dst_mac in by_mac:
        return Path("router", by_mac[dst_mac], frame)
    if dst_mac == source.mac:
        return Path("on-link", None, frame)
    return Path("other", None, frame)


def echo_hop_limit(t: CheckContext, node: EmulatedNode, dst: str | None = None, tries: int = 3) -> tuple[int | None, list[int]]:
    """The Hop Limit of the DUT's Echo Reply to ``node`` (and of every reply
    that arrived: an impostor or a second stack shows up as a second value).
    Up to ``tries`` requests, so that one lost to a busy DUT is no verdict."""
    for _ in range(tries):
        req = t.to_dut(node, dst or t.dut.link_local) / ICMPv6EchoRequest(id=P.random_iid() & 0xFFFF, seq=1,
                                                                            data=P.nonce(8))
        since = t.now()
        frame = t.expect_reply(req, M.echo_reply_to(req), what="Echo Reply",
                               within=t.reply_timeout + 3 * t.retrans_timer)
        if frame is not None:
            t.wait(0.1)
            return frame.pkt[IPv6].hlim, [f.pkt[IPv6].hlim for f in t.collect(M.echo_reply_to(req), 0, since=since)]
    return None, []
