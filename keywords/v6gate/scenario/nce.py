"""The DUT's Neighbor Cache, driven and observed from the wire (RFC 4861
§7.2, §7.3.2, §7.3.3), the way the IPv6 Ready tests do it.

The tester cannot read the DUT's cache; it puts an entry for one of its
emulated nodes into a state with packets and infers the state afterwards
from what the DUT sends when that node talks to it:

* no entry / INCOMPLETE: a packet from the node makes the DUT send
  multicast Neighbor Solicitations for it, and nothing reaches the node
  until one is answered;
* REACHABLE: the DUT answers at once, to the cached link-layer address,
  and sends no Neighbor Solicitation for the node while ReachableTime lasts;
* STALE: the DUT answers at once to the cached address (the entry enters
  DELAY) and DELAY_FIRST_PROBE_TIME later probes it with a unicast
  Neighbor Solicitation (PROBE);
* PROBE: unicast Neighbor Solicitations every RetransTimer, at most
  MAX_UNICAST_SOLICIT of them.

Timers come from the protocol (RFC 4861 §10) and the target's ``timing``;
the tester shortens ReachableTime with a Router Advertisement where a check
must age an entry (§6.3.4: hosts take ReachableTime and RetransTimer from
RAs), which needs the tester to be the only router (``exclusive_router``).
"""

from __future__ import annotations

import secrets
import weakref
from dataclasses import dataclass, field

from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6NDOptDstLLAddr,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
)
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from ..core.context import CheckContext
from ..core.verdict import Deviation
from ..net import packets as P
from ..net.nd import ND_HOP_LIMIT, router_advertisement
from ..net.port import Frame

# RFC 4861 §10 protocol constants
MAX_MULTICAST_SOLICIT = 3
MAX_UNICAST_SOLICIT = 3
REACHABLE_TIME_MS = 30_000
RETRANS_TIMER_MS = 1_000
DELAY_FIRST_PROBE_TIME = 5.0
MIN_RANDOM_FACTOR = 0.5
MAX_RANDOM_FACTOR = 1.5

#: how long the tester lets a message take effect before it probes the result (a bench allowance: a
#: node processes an ND message on receipt, but the probe must not overtake it on a loaded machine)
SETTLE_S = 0.3


#: which check judges each neighbour-cache transition a setup step relies on
STATE_JUDGES = {
    "incomplete": "nd.address_resolution_solicits_correctly#A",
    "reachable": "nd.packets_wait_for_address_resolution#A",
    "stale": "nd.unreachability_detection_probes#A",
    "probe": "nd.unreachability_detection_probes#A",
}


@dataclass(frozen=True)
class NudTiming:
    """The DUT's Neighbor Unreachability Detection timers as the tester
    must assume them (seconds)."""

    retrans: float  # RetransTimer
    delay_first_probe: float  # DELAY_FIRST_PROBE_TIME
    reply: float  # how long a reply may take on this bench

    @classmethod
    def of(cls, t: CheckContext) -> NudTiming:
        ext = (t.target.extensions or {}).get("nd") or {}
        dfp = ext.get("delay_first_probe_time_s", DELAY_FIRST_PROBE_TIME)
        if not isinstance(dfp, int | float) or isinstance(dfp, bool) or not 0 < dfp <= 60:
            from ..errors import UsageError

            raise UsageError(f"{t.target.source}: extensions.nd.delay_first_probe_time_s must be a number of "
                             f"seconds in (0, 60], not {dfp!r}")
        return cls(retrans=getattr(t, "nd_advertised_retrans", None) or t.retrans_timer, delay_first_probe=float(dfp),
                   reply=t.reply_timeout)

    @property
    def resolution(self) -> float:
        """Address resolution gives up after MAX_MULTICAST_SOLICIT solicitations
        RetransTimer apart (§7.2.2)."""
        return MAX_MULTICAST_SOLICIT * self.retrans

    @property
    def probing(self) -> float:
        """PROBE lasts MAX_UNICAST_SOLICIT x RetransTimer (§7.3.3)."""
        return MAX_UNICAST_SOLICIT * self.retrans

    @property
    def probe_window(self) -> float:
        """After a packet to a STALE entry: DELAY_FIRST_PROBE_TIME, then the
        first unicast probe (plus the bench's reply allowance)."""
        return self.delay_first_probe + self.retrans + self.reply

    @property
    def short_reachable_ms(self) -> int:
        """A ReachableTime short enough to age entries within seconds, long
        enough that even its shortest random draw (x MIN_RANDOM_FACTOR)
        outlasts DELAY_FIRST_PROBE_TIME after the packet that created the
        entry (a node may move an entry used that recently to DELAY rather
        than STALE)."""
        return int((2 * self.delay_first_probe + 0.5) * 1000)

    def ageing(self, reachable_ms: int) -> float:
        """Seconds after confirmation by which an entry is STALE for sure."""
        return MAX_RANDOM_FACTOR * reachable_ms / 1000 + max(0.25, self.retrans)


def advertised_retrans(t: CheckContext, retrans_ms: int) -> None:
    """Record on the check's context that it advertised ``retrans_ms`` as
    RetransTimer (it replaces the target's for the rest of that check)."""
    t.nd_advertised_retrans = retrans_ms / 1000


def set_nd_timers(t: CheckContext, *, reachable_ms: int | None = None, retrans_ms: int | None = None) -> None:
    """A Router Advertisement from the tester (Router Lifetime 0: not a
    default router; no SLLA: no neighbour entry) that sets the DUT's
    BaseReachableTime and/or RetransTimer (RFC 4861 §6.3.4).  Checks whose
    judgement depends on RetransTimer intervals advertise the protocol's
    RETRANS_TIMER (1 s): bench scheduling jitter of tens of milliseconds is
    then small against it."""
    if retrans_ms:
        advertised_retrans(t, retrans_ms)
    tr = t.node("TR0", router=True)
    t.send(router_advertisement(tr, router_lifetime=0, reachable_ms=reachable_ms or 0,
                                retrans_ms=retrans_ms or 0, sllao=False),
           label=f"RA (lifetime 0) ReachableTime {reachable_ms or 'unchanged'} ms, "
                 f"RetransTimer {retrans_ms or 'unchanged'} ms")


def once_for_batch(t: CheckContext, what: str, step):
    """``step()``'s value.  A part on its own runs the step; beside other
    parts of its check (core/together.py) the first part that gets here runs
    it for all of them and each takes its value: a step that sets DUT state
    they share (the RA timers) or learns it (the DUT's address)."""
    batch = getattr(t, "together", None)
    if batch is None:
        return step()
    value, by = batch.shared(what, lambda: (step(), t.part))
    if by != t.part:
        t.note(f"{what}: done once for the parts side by side, by part {by}" + (f" ({value})" if value else ""))
    return value


def fresh_mac() -> str:
    return P.random_mac()


@dataclass
class Seen:
    """What the DUT sent after a probe: its Echo Reply (if any) and the
    Neighbor Solicitations for the neighbour's address."""

    since: float
    reply: Frame | None
    ns: list[Frame] = field(default_factory=list)

    @property
    def reply_mac(self) -> str | None:
        return self.reply.pkt[Ether].dst.lower() if self.reply else None

    def unicast_ns(self) -> list[Frame]:
        return [f for f in self.ns if not P.is_multicast(f.pkt[IPv6].dst)]

    def multicast_ns(self) -> list[Frame]:
        return [f for f in self.ns if P.is_multicast(f.pkt[IPv6].dst)]

    def describe(self) -> str:
        parts = []
        if self.reply is not None:
            parts.append(f"Echo Reply to {self.reply_mac} at +{self.reply.time - self.since:.2f} s")
        else:
            parts.append("no Echo Reply")
        for f in self.ns:
            kind = "multicast" if P.is_multicast(f.pkt[IPv6].dst) else "unicast"
            parts.append(f"{kind} NS to {f.pkt[Ether].dst} at +{f.time - self.since:.2f} s")
        if not self.ns:
            parts.append("no NS for it")
        return ", ".join(parts)


class Neighbour:
    """One of the tester's emulated nodes as the DUT's neighbour.  It does
    not answer Neighbor Solicitations by itself: the check does, so that
    it decides the entry's state."""

    def __init__(self, t: CheckContext, node, addr: str | None = None, dut_addr: str | None = None):
        node.answers_ns = False
        self.t = t
        self.node = node
        self.addr = addr or node.link_local
        self.dut_addr = dut_addr or t.dut.link_local
        self.mac = node.mac.lower()
        self.ident = secrets.randbelow(0xFFFF) + 1
        self.seq = 0
        self.pending: list[Packet] = []

    @property
    def name(self) -> str:
        return self.node.name

    # -- packets ----------------------------------------------------------------
    def echo_request(self, *, src_mac: str | None = None) -> Packet:
        self.seq += 1
        req = (Ether(src=src_mac or self.mac, dst=self.t.dut.mac)
               / IPv6(src=self.addr, dst=self.dut_addr, hlim=64)
               / ICMPv6EchoRequest(id=self.ident, seq=self.seq, data=P.nonce(16)))
        self.pending.append(req)
        return req

    def na(self, *, s: int, o: int, r: int = 0, tlla: str | bool | None = True, multicast: bool = False,
           hlim: int = ND_HOP_LIMIT, target: str | None = None) -> Packet:
        """A Neighbor Advertisement for this node's address: to the DUT (or
        all-nodes), with the Target Link-Layer Address option carrying
        ``tlla`` (True: the node's own MAC; a MAC; None/False: no option)."""
        dst = P.ALL_NODES if multicast else self.dut_addr
        pkt = (Ether(src=self.mac, dst=P.multicast_mac(dst) if multicast else self.t.dut.mac)
               / IPv6(src=self.addr, dst=dst, hlim=hlim)
               / ICMPv6ND_NA(R=r, S=s, O=o, tgt=target or self.addr))
        if tlla:
            pkt = pkt / ICMPv6NDOptDstLLAddr(lladdr=self.mac if tlla is True else tlla)
        return pkt

    def ns(self, *, multicast: bool, sll: str | bool | None = True, target: str | None = None) -> Packet:
        """A Neighbor Solicitation from this node for the DUT's address, with
        the Source Link-Layer Address option carrying ``sll`` (True: the
        node's MAC; a MAC; None/False: no option)."""
        target = target or self.dut_addr
        dst = P.solicited_node(target) if multicast else target
        pkt = (Ether(src=self.mac, dst=P.multicast_mac(dst) if multicast else self.t.dut.mac)
               / IPv6(src=self.addr, dst=dst, hlim=ND_HOP_LIMIT) / ICMPv6ND_NS(tgt=target))
        if sll:
            pkt = pkt / ICMPv6NDOptSrcLLAddr(lladdr=self.mac if sll is True else sll)
        return pkt

    # -- matchers ---------------------------------------------------------------
    def is_ns_for_me(self, p) -> bool:
        return ICMPv6ND_NS in p and P.same_address(p[ICMPv6ND_NS].tgt, self.addr)

    def is_multicast_ns_for_me(self, p) -> bool:
        return self.is_ns_for_me(p) and P.same_address(p[IPv6].dst, P.solicited_node(self.addr))

    def is_unicast_ns_for_me(self, p) -> bool:
        return self.is_ns_for_me(p) and not P.is_multicast(p[IPv6].dst)

    def is_reply(self, p) -> bool:
        return (ICMPv6EchoReply in p and p[ICMPv6EchoReply].id == self.ident
                and P.same_address(p[IPv6].dst, self.addr))

    def is_na_for_me(self, p) -> bool:
        """The DUT's Neighbor Advertisement sent to this node."""
        return ICMPv6ND_NA in p and P.same_address(p[IPv6].dst, self.addr)

    # -- observation ------------------------------------------------------------
    def collect(self, since: float, window: float, until=None) -> Seen:
        """The DUT's Echo Reply to this node and its NS for it since ``since``,
        watched for ``window`` seconds or until ``until(Seen)`` holds."""
        def seen_of(frames) -> Seen:
            reply = next((f for f in frames if self.is_reply(f.pkt)), None)
            return Seen(since, reply, [f for f in frames if self.is_ns_for_me(f.pkt)])

        frames = self.t.port.collect(self.t.from_dut(lambda p: self.is_reply(p) or self.is_ns_for_me(p)), window,
                                     since=since, until=(lambda fs: until(seen_of(fs))) if until else None)
        return seen_of(frames)

    def observe(self, window: float | None = None, until=None) -> Seen:
        """Send an Echo Request from this node and watch, for ``window``
        seconds (or until ``until(Seen)``), the DUT's Echo Reply and its
        Neighbor Solicitations for the node (default window: long enough for
        a STALE entry to be probed)."""
        timing = NudTiming.of(self.t)
        window = timing.probe_window if window is None else window
        since = self.t.send(self.echo_request(), label=f"Echo Request from {self.name} {self.addr}")
        seen = self.collect(since, window, until)
        self.t.note(f"{self.name}: {seen.describe()}")
        return seen


# -- driving an entry into a state ----------------------------------------------------------------
def incomplete(nb: Neighbour) -> Frame:
    """No entry -> INCOMPLETE: an Echo Request from the node makes the DUT
    queue its reply and solicit the node (RFC 4861 §7.2.2).  Returns the
    first multicast NS."""
    t = nb.t
    since = t.send(nb.echo_request(), label=f"Echo Request from {nb.name} {nb.addr} (no entry yet)")
    ns = t.port.expect(t.from_dut(nb.is_ns_for_me), t.reply_timeout, since=since)
    if ns is None:
        raise Deviation(f"setup: no Neighbor Solicitation for {nb.addr} within {t.reply_timeout:g} s of an Echo "
                        "Request from it (address resolution, RFC 4861 §7.2.2)", name=f"nce-incomplete:{nb.name}",
                        judged_by=STATE_JUDGES["incomplete"])
    if not nb.is_multicast_ns_for_me(ns.pkt):
        raise Deviation(f"setup: the DUT solicited {nb.addr} with {ns.summary()} to {ns.pkt[IPv6].dst}, not its "
                        "solicited-node group, although it had no entry for it (§7.2.2)",
                        name=f"nce-incomplete:{nb.name}", judged_by=STATE_JUDGES["incomplete"])
    t.note(f"{nb.name} INCOMPLETE: multicast NS at +{ns.time - since:.3f} s")
    return ns


def reachable(nb: Neighbour) -> Frame:
    """No entry -> REACHABLE: resolution answered by a solicited NA
    (S=1, O=1, TLLA); the queued Echo Reply goes to the node (§7.2.5)."""
    t = nb.t
    incomplete(nb)
    since = t.send(nb.na(s=1, o=1), label=f"solicited NA from {nb.name} (S=1 O=1 TLLA {nb.mac})")
    reply = t.port.expect(t.from_dut(nb.is_reply), t.reply_timeout, since=since)
    if reply is None:
        raise Deviation(f"setup: no Echo Reply to {nb.addr} within {t.reply_timeout:g} s of a solicited NA that "
                        "completed its address resolution (§7.2.5: the queued packet is sent)",
                        name=f"nce-reachable:{nb.name}", judged_by=STATE_JUDGES["reachable"])
    if reply.pkt[Ether].dst.lower() != nb.mac:
        raise Deviation(f"setup: the queued Echo Reply went to {reply.pkt[Ether].dst}, not to the advertised "
                        f"link-layer address {nb.mac}", name=f"nce-reachable:{nb.name}",
                        judged_by=STATE_JUDGES["reachable"])
    t.note(f"{nb.name} REACHABLE ({nb.mac})")
    return reply


def stale(nb: Neighbour) -> None:
    """No entry -> REACHABLE -> STALE by ageing (§7.3.3: 'more than
    ReachableTime milliseconds have elapsed since the last positive
    confirmation').  Shortens ReachableTime with an RA first, restores the
    protocol default afterwards (so a later REACHABLE entry outlasts any
    observation window).  The node must not be probed meanwhile: a probe
    means the DUT used the entry and it is not STALE.

    On a DUT the run does not rebuild, the wait (1.5 x ReachableTime: 16.75 s
    with the default DELAY_FIRST_PROBE_TIME) is shared with the check's next
    parts: up to ``STALE_POOL`` more neighbours are aged with this one, and
    a later part of the same check takes one (unused since, so still STALE)
    instead of ageing its own (``_adopt_aged``)."""
    t = nb.t
    batch = getattr(t, "together", None)  # (core/together.py)
    if batch is None and _adopt_aged(nb):
        return
    timing = NudTiming.of(t)
    short = timing.short_reachable_ms
    if batch is None:
        set_nd_timers(t, reachable_ms=short)
        confirmed = reachable(nb).time
        extras = _age_with(nb)
        last = max([confirmed, *(c for _, c in extras)])
    else:  # the parts beside it age theirs under the same short ReachableTime (core/together.py)
        extras = []
        batch.once("nd:short-reachable", lambda: set_nd_timers(t, reachable_ms=short))
        confirmed = reachable(nb).time
        last = batch.meet("nd:confirmed", t.part, confirmed)
    wait = timing.ageing(short)
    t.note(f"waiting {wait:.2f} s for {nb.name}'s entry to age to STALE (ReachableTime {short} ms)"
           + (f", with {len(extras)} more neighbour(s) for the check's next parts" if extras else "")
           + (f", with the neighbours of the parts beside it (the last confirmed {last - confirmed:.2f} s later)"
              if batch is not None else ""))
    probes = t.collect(nb.is_ns_for_me, max(0.0, last + wait - t.port.now()), since=confirmed)
    if batch is None:
        set_nd_timers(t, reachable_ms=REACHABLE_TIME_MS)
    else:  # restored once every part's entry has aged
        batch.meet("nd:aged", t.part, t.port.now())
        batch.once("nd:reachable-restored", lambda: set_nd_timers(t, reachable_ms=REACHABLE_TIME_MS))
        t.note(f"ReachableTime {REACHABLE_TIME_MS} ms again (one RA for the batch, once every part's entry aged)")
    if probes:
        raise Deviation(f"setup: the DUT sent {probes[0].summary()} for {nb.addr} {probes[0].time - confirmed:.2f} s "
                        "after its entry was confirmed, with no traffic to it: the entry should have aged to STALE "
                        "silently (§7.3.3)", name=f"nce-stale:{nb.name}", judged_by=STATE_JUDGES["stale"])
    _keep_aged(nb, extras, last + wait)
    t.note(f"{nb.name} STALE")


#: neighbours aged to STALE with a part's own, for the same check's next parts, on a DUT the run does not rebuild:
#: at most this many (a small Neighbor Cache that replaces its oldest STALE entries first must still hold them) ...
STALE_POOL = 2
#: ... each taken within this long of the ageing (a stack may collect STALE entries it has not used for a while:
#: Linux's gc_stale_time is 60 s, once the cache holds more than gc_thresh1 entries)
STALE_POOL_MAX_AGE_S = 30.0

#: per session: (check id, neighbour name) -> [(node, port time it was STALE)], and the parts of each check run
_POOLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _pool(t: CheckContext) -> dict | None:
    """The run's STALE neighbours kept for later parts (None: the DUT is rebuilt or reset before each check)."""
    if t.session is None or not t.target.external or "reset" in t.check.needs:
        return None
    return _POOLS.setdefault(t.session, {})


def _pool_key(nb: Neighbour) -> tuple[str, str, bool] | None:
    """Only a neighbour that talks to the DUT from its link-local address to the DUT's stands in for another
    part's, and only for one of the same kind: a router for a router (the Redirect checks' TR2), a host for a
    host.  The entry is made by the same packets for both kinds (``reachable``: the same Echo Request and solicited
    NA, S=1 O=1 and the R flag clear either way; a Redirect naming TR2 as a better first hop is what makes it a
    router to the DUT, RFC 4861 §8.3), so an aged extra is what the part's own neighbour would have been."""
    node = nb.node
    plain = nb.addr == node.link_local and nb.dut_addr == nb.t.dut.link_local
    return (nb.t.check.id, nb.name, bool(node.is_router)) if plain else None


def _parts_left(t: CheckContext, pool: dict) -> int:
    done = pool.setdefault(("parts run", t.check.id), set())
    done.add(t.part)
    return len([p for p in t.check.parts if p.letter not in done])


def _age_with(nb: Neighbour) -> list[tuple[Neighbour, float]]:
    """More neighbours of the same kind brought to REACHABLE right after
    ``nb``, one per later part of the check (at most STALE_POOL)."""
    from ..net.nodes import EmulatedNode

    t, pool, key = nb.t, _pool(nb.t), _pool_key(nb)
    if pool is None or key is None:
        return []
    extras = []
    for i in range(max(0, min(STALE_POOL, _parts_left(t, pool)) - len(pool.get(key, [])))):
        # the same kind of node as the part's own: a router for a router (what the entry is made of is the same)
        other = Neighbour(t, EmulatedNode.fresh(f"{nb.name}'{i + 1}", t.target.link_prefix,
                                                router=nb.node.is_router))
        try:
            extras.append((other, reachable(other).time))
        except Deviation:
            break  # the DUT did not take another neighbour now: the next part ages its own
    return extras


def _keep_aged(nb: Neighbour, extras: list[tuple[Neighbour, float]], stale_at: float) -> None:
    pool, key = _pool(nb.t), _pool_key(nb)
    if pool is None or key is None or not extras:
        return
    # a neighbour the DUT solicited after its confirmation was used: not STALE, not kept
    kept = [(other.node, stale_at) for other, confirmed in extras
            if not nb.t.collect(other.is_ns_for_me, 0, since=confirmed + 0.001)]
    pool.setdefault(key, []).extend(kept)


def _adopt_aged(nb: Neighbour) -> bool:
    """Give ``nb`` the identity of a neighbour aged to STALE with an earlier
    part of the check (unused since, so still STALE)."""
    t, pool, key = nb.t, _pool(nb.t), _pool_key(nb)
    if pool is None or key is None:
        return False
    _parts_left(t, pool)
    now = t.port.now()
    waiting = [(n, at) for n, at in pool.get(key, []) if at <= now and now - at <= STALE_POOL_MAX_AGE_S]
    if not waiting:
        pool[key] = []
        return False
    (aged, at), pool[key] = waiting[0], waiting[1:]
    node = nb.node
    node.mac, node.link_local, node.global_addr = aged.mac, aged.link_local, aged.global_addr
    nb.mac, nb.addr = aged.mac.lower(), aged.link_local
    t.note(f"{nb.name} is {aged.mac} {aged.link_local}: a neighbour aged to STALE with an earlier part of the check "
           f"({now - at:.1f} s ago, unused since)")
    t.note(f"{nb.name} STALE")
    return True


def enter(nb: Neighbour, state: str) -> None:
    """Put ``nb``'s entry in the DUT into ``state`` (none, incomplete,
    reachable, stale or probe) from the wire ("none": leave it absent), with the timers the state needs: the
    protocol's ReachableTime (the tester's reactions fit in REACHABLE) and,
    for PROBE, its RetransTimer (PROBE lasts MAX_UNICAST_SOLICIT x
    RetransTimer, so the default keeps the tester's reaction inside it)."""
    if state == "none":
        return
    if state == "incomplete":
        incomplete(nb)
    elif state == "stale":
        stale(nb)
    elif state in ("reachable", "probe"):
        set_nd_timers(nb.t, reachable_ms=REACHABLE_TIME_MS, retrans_ms=RETRANS_TIMER_MS if state == "probe" else None)
        if state == "reachable":
            reachable(nb)
        else:
            probing(nb)
    else:
        raise ValueError(f"no Neighbor Cache state {state!r}")


def probing(nb: Neighbour) -> Frame:
    """No entry -> INCOMPLETE -> STALE (unsolicited NA, S=0 O=1) -> DELAY
    (the queued Echo Reply is sent) -> PROBE after DELAY_FIRST_PROBE_TIME
    (§7.3.3).  Returns the first unicast probe; the entry is in PROBE for
    MAX_UNICAST_SOLICIT x RetransTimer after it."""
    t = nb.t
    timing = NudTiming.of(t)
    incomplete(nb)
    since = t.send(nb.na(s=0, o=1), label=f"unsolicited NA from {nb.name} (S=0 O=1 TLLA {nb.mac})")
    reply = t.port.expect(t.from_dut(nb.is_reply), t.reply_timeout, since=since)
    if reply is None:
        raise Deviation(f"setup: no Echo Reply to {nb.addr} after an NA (S=0, O=1, TLLA) answered its resolution "
                        "(§7.2.5: the entry becomes STALE and the queued packet is sent)",
                        name=f"nce-stale:{nb.name}", judged_by=STATE_JUDGES["reachable"])
    probe = t.port.expect(t.from_dut(nb.is_ns_for_me), timing.probe_window, since=reply.time)
    if probe is None:
        raise Deviation(f"setup: no Neighbor Solicitation for {nb.addr} within {timing.probe_window:g} s of the "
                        "Echo Reply sent to its STALE entry (§7.3.3: DELAY, then PROBE after "
                        f"DELAY_FIRST_PROBE_TIME {timing.delay_first_probe:g} s)", name=f"nce-probe:{nb.name}",
                        judged_by=STATE_JUDGES["probe"])
    if not nb.is_unicast_ns_for_me(probe.pkt):
        raise Deviation(f"setup: the DUT probed {nb.addr} with a multicast NS ({probe.pkt[IPv6].dst}); NUD probes "
                        "are unicast to the cached address (§7.3.3)", name=f"nce-probe:{nb.name}",
                        judged_by=STATE_JUDGES["probe"])
    t.note(f"{nb.name} PROBE: unicast NS {probe.time - reply.time:.2f} s after the Echo Reply")
    return probe


# -- judging ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Expect:
    """An entry's expected state ('none', 'incomplete', 'reachable',
    'stale', 'probe') and cached link-layer address."""

    state: str
    lla: str | None = None

    def words(self) -> str:
        return {"none": "no entry", "incomplete": "INCOMPLETE"}.get(self.state, self.state.upper()) + (
            f" with link-layer address {self.lla}" if self.lla else "")


def judge_by_echo(nb: Neighbour, expect: Expect, since: float | None = None,
                  delay_from: float | None = None) -> tuple[list[str], str]:
    """Send an Echo Request from the node and judge the entry's state and
    cached address from the DUT's reaction.  ``since``: when the message
    under test was sent; a REACHABLE or STALE entry is not probed, so any
    NS for the node between then and the Echo Request counts against it.
    ``delay_from`` (STALE only): when the DUT itself sent a packet to the
    node (its NA answering the node's NS).  That packet already moves a
    STALE entry to DELAY, then PROBE (RFC 4861 §7.3.3), so unicast probes to
    the expected address after it are the STALE entry's evidence, even if
    a busy tester sends its Echo Request only after they went out.
    Returns (problems, seen)."""
    timing = NudTiming.of(nb.t)
    nb.t.wait(SETTLE_S)
    early = [] if since is None and delay_from is None else \
        nb.t.collect(nb.is_ns_for_me, 0, since=since if since is not None else delay_from)
    probed_early = []
    if expect.state == "stale" and delay_from is not None:
        probed_early = [f for f in early if f.time >= delay_from and nb.is_unicast_ns_for_me(f.pkt)
                        and (not expect.lla or f.pkt[Ether].dst.lower() == expect.lla)]
        early = [f for f in early if f not in probed_early]
    if expect.state in ("none", "incomplete"):
        # decided by the first multicast NS (or an immediate reply)
        seen = nb.observe(max(timing.reply, timing.retrans * 2), until=lambda s: bool(s.ns) or s.reply is not None)
    elif expect.state == "stale":
        # decided once the reply and the first unicast probe after it are in (REACHABLE needs the whole window)
        seen = nb.observe(timing.probe_window, until=lambda s: s.reply is not None
                          and (bool(s.unicast_ns()) or bool(probed_early)))
    else:
        seen = nb.observe(timing.probe_window)
    problems = []
    if early and expect.state not in ("none", "incomplete"):
        problems.append(f"the DUT still solicited {nb.addr} ({early[0].pkt[IPv6].dst}) "
                        f"{early[0].time - since:.2f} s after the message: the entry was not {expect.state.upper()}")
    first_ns = seen.ns[0] if seen.ns else None
    if expect.state in ("none", "incomplete"):
        if seen.reply is not None and (first_ns is None or seen.reply.time < first_ns.time):
            problems.append(f"the DUT replied at once to {seen.reply_mac}: it had a usable entry for {nb.addr}")
        elif not seen.multicast_ns():
            problems.append(f"no multicast NS for {nb.addr}: the DUT did not start address resolution")
        return problems, seen.describe()
    if seen.reply is None:
        problems.append(f"no Echo Reply within {timing.probe_window:g} s")
    elif first_ns is not None and first_ns.time < seen.reply.time and P.is_multicast(first_ns.pkt[IPv6].dst):
        problems.append(f"the DUT resolved {nb.addr} again (multicast NS) before replying: it had no usable entry")
    elif expect.lla and seen.reply_mac != expect.lla:
        problems.append(f"the Echo Reply went to {seen.reply_mac}, not to {expect.lla}")
    if expect.state == "reachable" and seen.ns:
        problems.append(f"the DUT solicited {nb.addr} ({seen.ns[0].pkt[IPv6].dst}) "
                        f"{seen.ns[0].time - seen.since:.2f} s after the Echo Request: the entry was not REACHABLE")
    if expect.state == "stale" and seen.reply is not None and not seen.unicast_ns() and not probed_early:
        problems.append(f"no unicast NS (NUD probe) for {nb.addr} within {timing.probe_window:g} s of the Echo Reply: "
                        "the entry was not STALE (a packet to a STALE entry starts DELAY, then PROBE)")
    described = seen.describe()
    if probed_early and not problems:
        described += (f"; the DUT had already probed {nb.addr} at {probed_early[0].pkt[Ether].dst} "
                      f"{probed_early[0].time - delay_from:.2f} s after its own packet to it (DELAY, then PROBE)")
    return problems, described


def judge_probing_continues(nb: Neighbour, expect_lla: str, since: float) -> tuple[list[str], str]:
    """In PROBE, after a message that must not change the entry: the DUT
    keeps probing the cached address (a REACHABLE or STALE entry would not)."""
    timing = NudTiming.of(nb.t)
    window = timing.probing + timing.reply
    probes = nb.t.port.collect(nb.t.from_dut(nb.is_ns_for_me), window, since=since, until=bool)
    seen = ", ".join(f"NS to {f.pkt[Ether].dst} ({f.pkt[IPv6].dst}) at +{f.time - since:.2f} s" for f in probes)
    problems = []
    unicast = [f for f in probes if nb.is_unicast_ns_for_me(f.pkt)]
    if not unicast:
        problems.append(f"the DUT stopped probing {nb.addr}: no further unicast NS within {window:g} s (the entry left "
                        "PROBE)")
    elif any(f.pkt[Ether].dst.lower() != expect_lla for f in unicast):
        bad = next(f for f in unicast if f.pkt[Ether].dst.lower() != expect_lla)
        problems.append(f"probe sent to {bad.pkt[Ether].dst}, not the cached {expect_lla}: the address was changed")
    return problems, seen or f"no NS for {nb.addr} within {window:g} s"


def judge_resolution_completed(nb: Neighbour, lla: str, since: float, state: str,
                               by: str = "the message") -> tuple[list[str], str]:
    """INCOMPLETE -> ``state`` ('reachable' or 'stale') with ``lla`` by the
    message sent at ``since``: the queued Echo Reply goes to ``lla``
    (§7.2.2); a STALE entry is then probed after DELAY_FIRST_PROBE_TIME,
    a REACHABLE one is not."""
    timing = NudTiming.of(nb.t)
    window = timing.probe_window + timing.reply
    seen = nb.collect(since, window, until=(lambda s: s.reply is not None and bool(s.unicast_ns()))
                      if state == "stale" else None)
    nb.t.note(f"{nb.name}: {seen.describe()}")
    problems = []
    if seen.reply is None and not any(nb.is_multicast_ns_for_me(f.pkt) for f in seen.ns):
        # the DUT stopped soliciting: the resolution completed, but the packet that waited for it was lost;
        # keeping that packet is what v6LC.2.1.2 judges, not this check
        raise Deviation(f"{by} completed the address resolution of {nb.addr} (the DUT stopped soliciting it), but "
                        "the Echo Reply queued for it was never sent (RFC 4861 §7.2.2 queue)",
                        name=f"queue:{nb.name}", judged_by=STATE_JUDGES["reachable"])
    if seen.reply is None:
        problems.append(f"the queued Echo Reply was not sent: {by} did not complete the address resolution")
    elif seen.reply_mac != lla:
        problems.append(f"the queued Echo Reply went to {seen.reply_mac}, not {lla}")
    elif state == "reachable" and seen.unicast_ns():
        problems.append(f"a unicast NS followed: the entry was not REACHABLE after {by}")
    elif state == "stale" and not seen.unicast_ns():
        problems.append(f"no unicast NS probe within {window:g} s of the Echo Reply: the entry was not STALE after {by}")
    return problems, seen.describe()


def judge_resolution_continues(nb: Neighbour, since: float) -> tuple[list[str], str]:
    """In INCOMPLETE, after a message that must not resolve the entry: no
    Echo Reply reaches the node while the DUT keeps soliciting."""
    t = nb.t
    timing = NudTiming.of(t)
    window = timing.resolution + timing.reply
    frames = t.collect(lambda p: nb.is_reply(p) or nb.is_ns_for_me(p), window, since=since)
    replies = [f for f in frames if nb.is_reply(f.pkt)]
    ns = [f for f in frames if nb.is_ns_for_me(f.pkt)]
    seen = (f"{len(ns)} more NS for {nb.addr}" + (f", Echo Reply to {replies[0].pkt[Ether].dst} at "
                                                 f"+{replies[0].time - since:.2f} s" if replies else ", no Echo Reply"))
    problems = []
    if replies:
        problems.append(f"the queued Echo Reply was sent to {replies[0].pkt[Ether].dst}: the message resolved the entry")
    return problems, seen


def trials(t: CheckContext, run_once, *, n: int = 3):
    """Repeat a timing-sensitive procedure: each trial returns (ok, seen);
    stop when a majority of ``n`` agrees.  The verdict carries k/n."""
    need = n // 2 + 1
    results: list[tuple[bool, str]] = []
    while len(results) < n:
        try:
            ok, seen = run_once(len(results))
        except Deviation as exc:
            ok, seen = False, str(exc)
        results.append((ok, seen))
        t.note(f"trial {len(results)}: {'conforms' if ok else 'deviates'}: {seen}")
        passed = sum(1 for ok_, _ in results if ok_)
        failed = len(results) - passed
        if passed >= need or failed >= need:
            break
    passed = sum(1 for ok_, _ in results if ok_)
    t.measure("trials", f"{passed}/{len(results)}")
    if passed < need:
        bad = next(s for ok_, s in results if not ok_)
        raise Deviation(f"{len(results) - passed}/{len(results)} trials deviate; {bad}")
    good = results[-1][1] if results[-1][0] else next(s for ok_, s in results if ok_)
    return t.conclude(f"{passed}/{len(results)} trials conform; {good}", [])


def fragments(pkt: Packet, first: int = 16) -> list[Packet]:
    """The Ether/IPv6/ICMPv6 frame ``pkt`` as two IPv6 fragments (RFC 8200
    §4.5), the first carrying ``first`` octets (a multiple of 8) of the
    ICMPv6 message, the second the rest."""
    from scapy.layers.inet6 import IPv6ExtHdrFragment

    built = pkt.__class__(bytes(pkt))
    ip = built[IPv6]
    body = bytes(ip.payload)
    ident = secrets.randbelow(0xFFFFFFFF) + 1
    out = []
    for offset, chunk, more in ((0, body[:first], 1), (first, body[first:], 0)):
        head = IPv6(src=ip.src, dst=ip.dst, hlim=ip.hlim, tc=ip.tc, fl=ip.fl)
        frag = IPv6ExtHdrFragment(nh=ip.nh, offset=offset // 8, m=more, id=ident)
        out.append(Ether(src=built[Ether].src, dst=built[Ether].dst) / head / frag / chunk)
    return out
