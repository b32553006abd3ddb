"""What a check function works with: ``t``.

A check reads like its RFC clause: state the intent, build the probe from
fresh emulated nodes, send it, and decide with one of the polarity-explicit
helpers:

* ``t.expect_reply(probe, match, what=...)``  -> the matching frame or None
* ``t.expect_silence(probe, match, what=...)`` -> PASS only if nothing
  matching arrived *and* the DUT is still alive afterwards
* ``return t.conclude(seen, problems)``: the one end of a check: FAIL
  listing the problems (each problem first: "hop limit 254, not 255"), else
  PASS with what was observed.
* ``raise Deviation(problem)`` (core/verdict.py): the DUT did not do what a
  step requires, so the check cannot go on: its FAIL (the session maps it);
  from a shared step with ``judged_by=`` another check: NOT_JUDGED.
* ``raise t.not_judged(name, judged_by, detail)``: the DUT did not reach what
  the check presupposes (verdict NOT_JUDGED; the check ``judged_by`` judges it).

``t.passed`` / ``t.failed`` are the two halves ``conclude`` is made of; a
check does not call them.

When an expected answer does not come, ``expect_reply`` keeps what the DUT
did send in the window (``t.dut_sent``, decoded, with times); a FAIL or
NOT_JUDGED carries it into the result.

Anything the bench cannot do raises ``BenchError`` (verdict ERROR) or
``NotApplicable`` / ``NotSupported`` (verdict SKIP with the reason).
"""

from __future__ import annotations

import ipaddress
import time
from types import SimpleNamespace

from scapy.layers.inet6 import (
    ICMPv6EchoRequest,
    ICMPv6ND_NS,
    ICMPv6ND_RA,
    ICMPv6NDOptMTU,
    ICMPv6NDOptPrefixInfo,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
)
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from ..errors import BenchError
from ..errors import NotApplicable as NotApplicable  # where checks have always imported it from
from ..net import decode
from ..net import match as M
from ..net import packets as P
from ..net.nodes import EmulatedNode
from ..net.port import Frame, Port
from .check import Check, Part
from .control import Control
from .dut import DutView
from .ledger import ADDRESS_LEASE_S, short_lease, span_lease
from .room import AddressRoom
from .setup import JUDGED_BY, ensure_neighbour, setup_of
from .verdict import NotJudged, Outcome, Verdict

#: what an RA of the tester sets back when a check changed it on a DUT the run does not reset (RFC 4861 §10)
RESTORE_REACHABLE_MS, RESTORE_RETRANS_MS = 30_000, 1_000


class CheckContext:
    def __init__(self, *, check: Check, part: Part, port: Port, target, control: Control, dut: DutView,
                 session=None, pcap=None):
        self.check = check
        self.part_spec = part
        self.part = part.letter
        self.p = SimpleNamespace(**part.params)
        self.port = port
        self.target = target
        self.control = control
        self.dut = dut
        self.session = session
        #: the check's pcap (evidence written beside it: e.g. ikev2's Wireshark decryption tables)
        self.pcap = pcap
        pace = getattr(session, "pace", None)  # a DUT the run does not rebuild: windows from its answers (core/pace.py)
        self.timing = pace.timing() if pace is not None else target.timing
        self.reply_timeout = float(self.timing["reply_timeout_s"])
        self.silence = float(self.timing["silence_s"])
        self.retrans_timer = float(target.timing["retrans_timer_s"])
        self.timeline: list[tuple[float, str]] = []
        self.measurements: dict = {}
        self.nodes: dict[str, EmulatedNode] = {}
        self._deferred: list = []
        self.cleanup_errors: list[str] = []  # exceptions of deferred cleanups (logged into the result)
        self.dut_sent: list[str] = []
        self._advertised: dict[tuple[str, str], dict] = {}  # router (mac, ll) -> {(prefix, len): (L, A)}
        self._link_parameters: list = [set(), None]  # RA fields this check set on the DUT, and the last router
        self.primed: set[str] = set()  # node addresses the DUT was given a neighbour entry for (common setup)
        self.fresh: list = []  # prefixes this part advertised that the DUT held no address in (core/room.py)
        self.attempt = 1  # 2: the part's second attempt after room was made in a discovered table (core/room.py)
        #: the part went on with an address the DUT held (scenario/offlink.py): its fresh prefix forming nothing is
        #: no sign of a full table
        self.used_held_address = False
        #: the batch this part runs in, beside other parts of its check (core/together.py), or None
        self.together = None
        #: the RetransTimer (s) an RA of this check advertised: it replaces the target's for the rest of the check
        self.nd_advertised_retrans: float | None = None
        self.setup = setup_of(check)
        self.t0 = port.now()

    # -- emulated nodes ---------------------------------------------------------
    def node(self, name: str, *, router: bool = False, prefix=None) -> EmulatedNode:
        """A fresh emulated node (new MAC and IID) answering ND for its addresses."""
        if name not in self.nodes:
            n = EmulatedNode.fresh(name, prefix or self.target.link_prefix, router=router)
            self.nodes[name] = n
            self.port.add_responder(n.responder)
            self.note(f"{name} is {n.mac} {n.link_local} {n.global_addr or ''}".strip())
        return self.nodes[name]

    @property
    def tn1(self) -> EmulatedNode:
        return self.node("TN1")

    @property
    def tn2(self) -> EmulatedNode:
        return self.node("TN2")

    @property
    def tr1(self) -> EmulatedNode:
        return self.node("TR1", router=True)

    def defer(self, fn) -> None:
        """Run ``fn()`` when the check ends, whatever its outcome (e.g. remove
        a responder an area's helper added to the port)."""
        self._deferred.append(fn)

    def dut_keeps_state(self, seconds: float, why: str, *, matters_to: tuple[str, ...] = ()) -> None:
        """This check leaves the DUT in a state that its own timer ends
        ``seconds`` from now (e.g. MLDv1 compatibility mode): the next check,
        unless the DUT is reset first, waits it out (a DUT the run cannot reset
        would otherwise carry it into another check's verdict).  With
        ``matters_to`` (areas) only the next check of those areas waits: a
        check of another area, whose verdict the state cannot touch, runs at
        once while the timer runs."""
        if self.session is None:
            return
        areas, until = frozenset(matters_to), time.monotonic() + seconds
        kept = self.session.settle.get(areas)
        if kept is None or kept[0] < until:
            self.session.settle[areas] = (until, why)

    def withdraw(self) -> None:
        """Leave the DUT as found: every emulated router that advertised
        itself or prefixes in this check sends a last RA with Router Lifetime
        0 and those prefixes with zero lifetimes (an on-link prefix leaves
        the DUT's prefix list at once; an address is deprecated, and RFC 4862
        §5.5.3 e) lets it run out its remaining valid lifetime)."""
        for (mac, ll), prefixes in self._advertised.items():
            ra = (Ether(src=mac, dst=P.multicast_mac(P.ALL_NODES)) / IPv6(src=ll, dst=P.ALL_NODES, hlim=255)
                  / ICMPv6ND_RA(routerlifetime=0, chlim=0) / ICMPv6NDOptSrcLLAddr(lladdr=mac))
            for (prefix, plen), (onlink, auto) in prefixes.items():
                try:
                    net = ipaddress.IPv6Network(f"{prefix}/{plen}", strict=False)
                except ValueError:
                    continue
                if net.overlaps(self.target.link_prefix):
                    # the link's own prefix is the link's router's to withdraw, not the check's; on-link, it stays in
                    # the DUT's Prefix List until the next check that needs the tester as the only router
                    left = getattr(getattr(self, "dut", None), "link_prefix_left_on_link", None)
                    if onlink and left is not None:
                        left()
                    continue
                ra = ra / ICMPv6NDOptPrefixInfo(prefix=prefix, prefixlen=plen, L=onlink, A=auto, validlifetime=0,
                                                preferredlifetime=0)
            try:
                room = self.room
                room.record(room.withdrawn(ra), self.port.send(ra))
            except BenchError:
                return
        self._advertised.clear()

    def _remember_advertisement(self, pkt) -> None:
        if not isinstance(pkt, Packet) or ICMPv6ND_RA not in pkt or Ether not in pkt:
            return
        ra = pkt[ICMPv6ND_RA]
        prefixes = {}
        opt = pkt.getlayer(ICMPv6NDOptPrefixInfo)
        i = 1
        while opt is not None:
            if opt.validlifetime and 0 < opt.prefixlen <= 128:  # a deliberately invalid option configured nothing
                prefixes[(opt.prefix, opt.prefixlen)] = (opt.L, opt.A)
            i += 1
            opt = pkt.getlayer(ICMPv6NDOptPrefixInfo, i)
        if ra.routerlifetime or prefixes:
            key = (pkt[Ether].src, pkt[IPv6].src)
            self._advertised.setdefault(key, {}).update(prefixes)
        mtu = pkt.getlayer(ICMPv6NDOptMTU)
        # a field the RA leaves unspecified (0) or sets to the value restore_link_parameters would set changes nothing
        changed = {name for name, value, default in (
            ("chlim", ra.chlim, 64), ("reachabletime", ra.reachabletime, RESTORE_REACHABLE_MS),
            ("retranstimer", ra.retranstimer, RESTORE_RETRANS_MS),
            ("mtu", mtu.mtu if mtu is not None else 0, mtu is not None and self.target.link_mtu))
            if value and value != default}
        if changed:
            self._link_parameters[0].update(changed)
            self._link_parameters[1] = (pkt[Ether].src, pkt[IPv6].src)

    def restore_link_parameters(self) -> None:
        """Leave the DUT as found: its Cur Hop Limit, BaseReachableTime,
        RetransTimer and link MTU, which an RA of this check set and which a
        DUT keeps until another RA sets them (RFC 4861 §6.3.4), go back to
        the protocol defaults (64, REACHABLE_TIME 30 s, RETRANS_TIMER 1 s,
        RFC 4861 §10) and the target's link MTU.  Only on a DUT the run does
        not reset (the lab gives every check a fresh DUT)."""
        changed, router = self._link_parameters
        if not changed or router is None:
            return
        mac, ll = router
        ra = (Ether(src=mac, dst=P.multicast_mac(P.ALL_NODES)) / IPv6(src=ll, dst=P.ALL_NODES, hlim=255)
              / ICMPv6ND_RA(routerlifetime=0, chlim=64 if "chlim" in changed else 0,
                            reachabletime=RESTORE_REACHABLE_MS if "reachabletime" in changed else 0,
                            retranstimer=RESTORE_RETRANS_MS if "retranstimer" in changed else 0)
              / ICMPv6NDOptSrcLLAddr(lladdr=mac))
        if "mtu" in changed:
            ra = ra / ICMPv6NDOptMTU(mtu=self.target.link_mtu)
        self.port.send(ra)
        self.note(f"restored the DUT's {', '.join(sorted(changed))} (RA from {ll})")
        self._link_parameters = [set(), None]

    @property
    def room(self) -> AddressRoom:
        """Room in a bounded DUT address table for the prefixes this check advertises (core/room.py)."""
        return AddressRoom(self)

    def make_room_first(self) -> None:
        """Before the check's first probe, on a DUT with a bounded address
        table: room for one prefix (see ``AddressRoom.first``)."""
        self.room.first()

    def lease_for_probes(self, probes: int, *, waits: float | None = None, quick: int = 0,
                         rebuilt: int = ADDRESS_LEASE_S) -> int:
        """The valid (and preferred) lifetime of a fresh prefix whose address
        this part needs only for the DUT's DAD probe and ``probes`` probes right
        after it; with ``waits`` (seconds), for the part's span from its RA to
        its last probe, its fixed waits included (core/ledger.span_lease); with
        ``quick``, that many more probes of a reply timeout each.  On
        a DUT the run does not rebuild, the addresses the run's prefixes leave
        crowd a small table until they expire (an RA cannot take them back,
        RFC 4862 §5.5.3 e): a lease from the DUT's timing
        (core/ledger.short_lease).  On a DUT rebuilt before each check,
        ``rebuilt``, as before."""
        if not self.target.external:
            return rebuilt
        if waits is not None:
            return span_lease(self.reply_timeout, self.retrans_timer, probes=probes, waits=waits)
        return short_lease(self.reply_timeout, self.retrans_timer, probes=probes, quick=quick)

    def needs_addresses(self, n: int) -> None:
        """This part makes the DUT hold addresses from ``n`` of its prefixes
        at once: on a DUT whose table cannot (declared, ``dut.max_addresses``:
        SKIP; discovered: NOT_JUDGED), say so now, before anything is sent."""
        self.room.needs(n)

    def cleanup(self) -> None:
        if self._link_parameters[0] and self.session is not None and not getattr(self.session, "lab", None):
            try:
                self.restore_link_parameters()
            except Exception as exc:  # leaving the DUT tidy must never change the check's verdict
                self.cleanup_errors.append(f"restore_link_parameters: {type(exc).__name__}: {exc}")
        if self._advertised and "keep_state" not in self.setup:
            try:
                self.withdraw()
            except Exception as exc:  # leaving the DUT tidy must never change the check's verdict
                self.note(f"withdrawing the check's routers and prefixes failed: {type(exc).__name__}: {exc}")
                self.cleanup_errors.append(f"withdraw: {type(exc).__name__}: {exc}")
        for n in self.nodes.values():
            self.port.remove_responder(n.responder)
        while self._deferred:
            fn = self._deferred.pop()
            try:
                fn()
            except Exception as exc:  # a helper's cleanup must not turn the verdict into a harness error, but
                # it is logged into the result: a cleanup that failed may leave state behind on the DUT
                self.cleanup_errors.append(f"{getattr(fn, '__qualname__', repr(fn))}: {type(exc).__name__}: {exc}")

    # -- timeline ---------------------------------------------------------------
    def now(self) -> float:
        """The tester port's clock (the time base of every frame and ``since=``)."""
        return self.port.now()

    def note(self, msg: str) -> None:
        self.timeline.append((self.port.now() - self.t0, msg))

    def measure(self, name: str, value) -> None:
        self.measurements[name] = value

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)

    def restart_dut(self) -> float:
        """Reset (reboot) the DUT now, inside the check, so its start-up
        behaviour is on the wire.  Raises NotSupported (SKIP) when the
        control adapter cannot reset it.  Returns the port time from which
        the DUT's frames are its new boot's: on the lab, the moment its old
        switch ports were gone (a busy machine can delay the old interface's
        last MLD reports past the moment the check asked for the restart);
        elsewhere, the moment before the reset was asked for."""
        before = self.port.now() if self.port is not None else time.monotonic()
        self.note("restarting the DUT")
        self.session.restart_dut()
        lab = getattr(self.session, "lab", None)
        reborn = getattr(lab, "dut_reborn_at", None) if lab is not None and not lab.external_dut else None
        return max(before, reborn) if reborn is not None else before

    # -- sending and receiving ------------------------------------------------------
    def to_dut(self, node: EmulatedNode, dst: str, src: str | None = None, **ipv6_fields) -> Packet:
        """Ether/IPv6 from an emulated node to ``dst`` on the DUT.  With the
        common setup ``nce`` (see core/setup.py) the DUT is first given a
        neighbour entry for the packet's source."""
        pkt = node.ipv6(dst, self.dut.mac, src=src, **ipv6_fields)
        if "nce" in self.setup:
            self.ensure_neighbour(node, pkt[IPv6].src)
        return pkt

    def ensure_neighbour(self, node: EmulatedNode, addr: str | None = None) -> None:
        """Common test setup: the DUT holds a neighbour entry for ``node`` at
        ``addr`` (default: its link-local address), or the check is NOT_JUDGED."""
        ensure_neighbour(self, node, addr or node.link_local)

    def send(self, pkt: Packet | bytes, label: str | None = None) -> float:
        room = self.room
        forms = room.before_send(pkt)
        held = room.held_now() if forms else set()
        t = self.port.send(pkt)
        self._remember_advertisement(pkt)
        room.record(forms, t, held)
        self.note(f"sent {label or _summary(pkt)}")
        return t

    def from_dut(self, m: M.Matcher) -> M.Matcher:
        return M.all_of(M.from_mac(self.dut.mac), m)

    def expect_reply(self, probe: Packet | bytes | list, match: M.Matcher, *, within: float | None = None,
                     what: str = "reply", any_source: bool = False) -> Frame | None:
        """Send probe(s), wait for the first frame from the DUT accepted by ``match``."""
        probes = probe if isinstance(probe, list) else [probe]
        since = self.port.now()
        for pr in probes:
            self.send(pr)
        m = match if any_source else self.from_dut(match)
        frame = self.port.expect(m, within if within is not None else self.reply_timeout, since=since)
        if frame is None:
            self.note(f"no {what} within {within if within is not None else self.reply_timeout:g} s")
            self.record_dut_sent(since, what=what, invoking=[bytes(p[IPv6]) for p in probes
                                                            if isinstance(p, Packet) and IPv6 in p])
        else:
            self.note(f"received {what}: {frame.summary()} (+{frame.time - since:.3f} s)")
        return frame

    def names(self) -> decode.Names:
        """Addresses named after the check's emulated nodes (and the DUT's own)."""
        return decode.Names(self.nodes, {"DUT": self.dut.link_local})

    def record_dut_sent(self, since: float, *, what: str = "answer", invoking=None, until: float | None = None,
                        exclude: M.Matcher | None = None) -> list[str]:
        """Keep (and return) what the DUT sent from ``since`` on, decoded,
        when the expected ``what`` did not come; the result lists it."""
        frames = [f for f in self.port.frames_since(since, M.from_mac(self.dut.mac))
                  if (until is None or f.time <= until) and not (exclude and exclude(f.pkt))]
        sent = decode.window(frames, since, self.names(), invoking or None)
        self.note(f"awaiting {what}, the DUT sent: {', '.join(sent) if sent else 'nothing'}")
        for line in sent:
            if line not in self.dut_sent:
                self.dut_sent.append(line)
        return sent

    def collect(self, match: M.Matcher, within: float, since: float | None = None, any_source=False) -> list[Frame]:
        m = match if any_source else self.from_dut(match)
        return self.port.collect(m, within, since=since)

    def expect_silence(self, probe: Packet | bytes | list, match: M.Matcher, *, what: str,
                       within: float | None = None, liveness: str | None = None) -> Outcome:
        """Send probe(s); PASS if nothing accepted by ``match`` arrives within the
        silence window *and* the DUT still answers afterwards (a dead DUT is
        silent too, and that is not a pass)."""
        window = within if within is not None else self.silence
        probes = probe if isinstance(probe, list) else [probe]
        since = self.port.now()
        for pr in probes:
            self.send(pr)
        frame = self.port.expect(self.from_dut(match), window, since=since)
        if frame is not None:
            self.note(f"received {what}: {frame.summary()} (+{frame.time - since:.3f} s)")
            return self.failed(f"{what}: {frame.summary()} after {frame.time - since:.3f} s")
        self.note(f"no {what} within {window:g} s")
        if not self.alive(method=liveness or self.check.liveness or "ns"):
            return self.failed(f"no {what} within {window:g} s, but the DUT stopped answering "
                               f"{liveness or self.check.liveness or 'ns'} probes afterwards")
        return self.passed(f"no {what} within {window:g} s, and the DUT still answered afterwards")

    # -- liveness -----------------------------------------------------------------
    def alive(self, method: str = "ns", tries: int = 3) -> bool:
        """Does the DUT still answer?  method 'ns': address resolution of its
        link-local address; 'echo': an Echo Request to it.  Uses a node that
        is not otherwise part of the check."""
        prober = EmulatedNode.fresh("LIVENESS", self.target.link_prefix)
        self.port.add_responder(prober.responder)
        try:
            for i in range(tries):
                if method == "echo":
                    probe = (prober.ipv6(self.dut.link_local, self.dut.mac)
                             / ICMPv6EchoRequest(id=0x7E57, seq=i + 1, data=P.nonce(8)))
                    m = M.echo_reply_to(probe)
                else:
                    probe = (prober.ipv6(P.solicited_node(self.dut.link_local), "", hlim=255)
                             / ICMPv6ND_NS(tgt=self.dut.link_local) / ICMPv6NDOptSrcLLAddr(lladdr=prober.mac))
                    m = M.na_for(self.dut.link_local)
                since = self.port.send(probe)
                if self.port.expect(self.from_dut(m), max(self.reply_timeout / tries, 0.5), since=since):
                    return True
            return False
        finally:
            self.port.remove_responder(prober.responder)

    def require_reachable(self) -> None:
        """Before the probe: the bench must reach the DUT, or the result means nothing."""
        method = self.check.liveness or "ns"
        if not self.alive(method=method):
            what = "Neighbor Solicitation for" if method == "ns" else "Echo Request to"
            other = "echo" if method == "ns" else "ns"
            if self.alive(method=other):
                # the DUT is on the link (it answers the other probe): not answering this one is its behaviour,
                # judged by the check of that behaviour, not a broken bench
                judge = JUDGED_BY["nce"] if method == "ns" else "icmpv6.echo_request_is_answered#A"
                raise self.not_judged(f"liveness:{method}", judge,
                                      f"the DUT does not answer a {what} its link-local address {self.dut.link_local}"
                                      f" before the check, though it answers {'an Echo Request' if other == 'echo' else 'a Neighbor Solicitation'}")
            raise BenchError(f"the DUT does not answer a {what} its link-local address {self.dut.link_local} "
                             f"({self.dut.mac}) before the check: is it on the link and up? "
                             "(check tester.interface and dut.mac/link_local in the target file)")

    # -- verdicts -----------------------------------------------------------------
    def passed(self, seen: str, **measurements) -> Outcome:
        self.measurements.update(measurements)
        return Outcome(Verdict.PASS, seen)

    def failed(self, seen: str, problems: list[str] | None = None, **measurements) -> Outcome:
        self.measurements.update(measurements)
        # a FAIL with no itemised problems: what was seen is the problem ("no Echo Reply within 2 s")
        return Outcome(Verdict.FAIL, seen, problems=_unique(problems or [seen]), dut_sent=list(self.dut_sent))

    def conclude(self, seen: str | list[str], problems: list[str], *, passed: str | None = None,
                 **measurements) -> Outcome:
        """The verdict tail of a check: FAIL with ``problems`` (kept as a
        list; the reason leads with them), else PASS with ``passed`` (default
        ``seen``; a list of observations is joined with "; ")."""
        seen = "; ".join(seen) if isinstance(seen, list) else seen
        problems = _unique(problems)
        if problems:
            return self.failed(seen, problems, **measurements)
        return self.passed(seen if passed is None else passed, **measurements)

    def not_judged(self, name: str, judged_by: str, detail: str) -> NotJudged:
        """The DUT did not reach precondition ``name`` (e.g. ``nce:TN1``):
        raise the returned exception (verdict NOT_JUDGED); ``judged_by`` is
        the check (``id#part``) whose verdict judges that behaviour."""
        self.note(f"precondition {name} not reached: {detail}")
        return NotJudged(name, judged_by, detail, dut_sent=list(self.dut_sent))

    def inconclusive(self, seen: str, **measurements) -> Outcome:
        self.measurements.update(measurements)
        return Outcome(Verdict.INCONCLUSIVE, seen)


def _unique(problems) -> list[str]:
    return list(dict.fromkeys(str(p) for p in problems if p))


def _summary(pkt) -> str:
    if isinstance(pkt, bytes | bytearray):
        return f"{len(pkt)}-byte frame"
    try:
        s = pkt.summary()
        if IPv6 in pkt:
            s += f" hlim={pkt[IPv6].hlim}"
        return s
    except Exception:
        return "frame"
