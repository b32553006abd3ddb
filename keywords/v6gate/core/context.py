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
    IPv6ExtHdrFragment,
)
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from ..errors import BenchError
from ..net import decode
from ..net import match as M
from ..net import packets as P
from ..net.nodes import EmulatedNode
from ..net.port import Frame, Port
from .check import Check, Part
from .control import Control, NotSupported
from .setup import JUDGED_BY, ensure_neighbour, setup_of
from .verdict import NotJudged, Outcome, Verdict

#: valid and preferred lifetime of the link prefix when the tester itself advertises it (no other router on the
#: link): one address on the DUT, re-advertised after half of it, gone this long after the run
LINK_PREFIX_LIFETIME_S = 1800


#: what an RA of the tester sets back when a check changed it on a DUT the run does not reset (RFC 4861 §10)
RESTORE_REACHABLE_MS, RESTORE_RETRANS_MS = 30_000, 1_000


class NotApplicable(Exception):
    """The check does not apply to this target (SKIP with this reason)."""


class DutView:
    """The DUT as the tester knows it: MAC and addresses, learned lazily."""

    def __init__(self, target, control: Control, link_local: str, port: Port | None = None):
        self.target = target
        self.port = port
        self.control = control
        self.mac = target.dut_mac
        self.link_local = link_local
        self.prefix = target.link_prefix
        self._learned: dict[str, str] = {}
        self._link_router: EmulatedNode | None = None
        #: port time of the tester's last link-prefix RA (the tester as the only router, see _advertise_link_prefix)
        self.link_prefix_advertised: float | None = None
        self._link_withdrawn = False  # withdrawn for a check where the tester is the only router (withdraw_link_prefix)

    def global_address(self, prefix: ipaddress.IPv6Network | str | None = None) -> str:
        """The DUT's global address in ``prefix`` (default: the link prefix):
        from the target file, else read through the control adapter, else
        learned from the wire (see ``_probe_global``)."""
        net = ipaddress.IPv6Network(prefix) if prefix else self.prefix
        if net == self.prefix and self._link_prefix_due():
            self._advertise_link_prefix(net, None, refresh=True)
        for a in self.target.dut_global:
            if ipaddress.IPv6Address(a) in net:
                return a
        try:
            for a in self.control.addresses():
                if ipaddress.IPv6Address(a) in net:
                    return a
        except NotSupported:
            pass
        learned = self._learned.get(str(net))
        predicted = self.predicted_address(net)
        if learned is None and predicted and self.port is not None:
            learned = predicted if self._answers_for(self.port, predicted) else None
            if learned is None and self._advertise_link_prefix(net, predicted):
                learned = predicted if self._answers_for(self.port, predicted) else None
            if learned is None:
                raise NotJudged("global-address", JUDGED_BY["global-address"],
                                f"the DUT does not answer for {predicted}, the address its target file (dut.iid: "
                                f"eui64) predicts in {net}: it did not form (or does not defend) it")
        if learned is None and self.port is not None:
            learned = self._probe_global(self.port, net)
            if learned is None and self._advertise_link_prefix(net, None):
                learned = self._probe_global(self.port, net)
        if learned:
            self._learned[str(net)] = learned
            return learned
        if self.port is None:
            raise BenchError(f"the DUT has no known global address in {net}: list it under dut.global in the "
                             "target file, or give the tester a control adapter that can read it")
        raise NotJudged("global-address", JUDGED_BY["global-address"],
                        f"no address of the DUT in {net} answered an all-nodes Echo Request from that prefix (the "
                        "target file lists none under dut.global and the control adapter cannot read them)")

    def _link_prefix_due(self) -> bool:
        """The tester's link-prefix advertisement is past half its lifetime."""
        return (self.link_prefix_advertised is not None and self.port is not None
                and self.port.now() - self.link_prefix_advertised > LINK_PREFIX_LIFETIME_S / 2)

    def _advertise_link_prefix(self, net: ipaddress.IPv6Network, predicted: str | None, *,
                               refresh: bool = False) -> bool:
        """Common Test Setup on a link where the tester is the only router
        (``link.other_routers: false``) and no lab router serves the DUT: the
        tester advertises the link prefix (an RA with Router Lifetime 0, so it
        is no default router; the prefix valid for LINK_PREFIX_LIFETIME_S) and
        waits for the DUT's DAD of its address in it (``refresh``: the DUT
        holds it already, the RA only renews it).  False: not this case."""
        if (net != self.prefix or self.port is None or self.target.is_lab or self.target.other_routers
                or net.prefixlen != 64 or self._link_withdrawn):
            return False  # (withdrawn: a check where the tester is the only router owns the link prefix now)
        from ..net.nd import prefix_option, router_advertisement

        if self._link_router is None:
            self._link_router = EmulatedNode.fresh("LINKRTR", net, router=True)
        ra = router_advertisement(self._link_router, prefixes=[prefix_option(
            net, valid=LINK_PREFIX_LIFETIME_S, preferred=LINK_PREFIX_LIFETIME_S)], router_lifetime=0)
        port = self.port
        port.add_responder(self._link_router.responder)
        try:
            since = port.send(ra)
            self.link_prefix_advertised, self._link_withdrawn = since, False
            if refresh:
                return True
            dad = port.expect(lambda p: p.src.lower() == self.mac and ICMPv6ND_NS in p and IPv6 in p
                              and p[IPv6].src == "::" and ipaddress.IPv6Address(p[ICMPv6ND_NS].tgt) in net
                              and (predicted is None or P.same_address(p[ICMPv6ND_NS].tgt, predicted)),
                              float(self.target.timing["reply_timeout_s"]) + 1.0, since=since)
            if dad is not None:
                time.sleep(1.2)  # RetransTimer (1 s) after the probe, and the DUT's own scheduling
        finally:
            port.remove_responder(self._link_router.responder)
        return True

    def forget(self) -> None:
        """The DUT was reset: what the run learned of its addresses, and the
        link prefix the tester gave it, are gone with it."""
        self._learned.clear()
        self.link_prefix_advertised, self._link_withdrawn = None, False

    def restore_link_prefix(self) -> None:
        """Before a check where the tester is not the only router: the link
        prefix withdrawn for an earlier check is advertised again (on-link,
        preferred; the DUT's address in it is the same)."""
        if self._link_withdrawn:
            self._link_withdrawn = False
            self._advertise_link_prefix(self.prefix, None, refresh=True)

    def withdraw_link_prefix(self) -> None:
        """Before a check that needs the tester to be the only router, on a
        DUT the run cannot reset: the link prefix the tester gave it leaves
        the DUT's prefix list and its address is deprecated (an RA with Valid
        and Preferred Lifetime 0: the address keeps its remaining valid
        lifetime, RFC 4862 §5.5.3 e), as a freshly reset DUT would have
        neither; ``restore_link_prefix`` gives it back before the next check
        that is not such a check (the check itself may advertise the link
        prefix with the flags it judges)."""
        if self.link_prefix_advertised is None or self._link_withdrawn or self.port is None:
            return
        from ..net.nd import prefix_option, router_advertisement

        self.port.send(router_advertisement(self._link_router, prefixes=[prefix_option(self.prefix, valid=0,
                                                                                     preferred=0)]))
        self._link_withdrawn = True

    def predicted_address(self, net: ipaddress.IPv6Network) -> str | None:
        """The address the target file makes computable in ``net``: with
        ``dut.iid: eui64`` (and a /64), the prefix plus the EUI-64 of its MAC."""
        if self.target.dut_iid == "eui64" and net.prefixlen == 64 and self.mac:
            return P.address_in(net, P.eui64_iid(self.mac))
        return None

    def _answers_for(self, port: Port, addr: str) -> bool:
        """Does the DUT answer a Neighbor Solicitation for ``addr``?"""
        prober = EmulatedNode.fresh("ADDRPROBE", self.prefix)
        port.add_responder(prober.responder)
        try:
            for _ in range(2):
                ns = (prober.ipv6(P.solicited_node(addr), "", src=prober.link_local, hlim=255)
                      / ICMPv6ND_NS(tgt=addr) / ICMPv6NDOptSrcLLAddr(lladdr=prober.mac))
                since = port.send(ns)
                if port.expect(M.all_of(M.from_mac(self.mac), M.na_for(addr)),
                               float(self.target.timing["reply_timeout_s"]) / 2, since=since):
                    return True
            return False
        finally:
            port.remove_responder(prober.responder)

    def _probe_global(self, port: Port, net: ipaddress.IPv6Network) -> str | None:
        """Learn a global address from the wire: an Echo Request to all-nodes
        from an on-link global source.  The reply's source is chosen by RFC
        6724 source selection for that destination (RFC 4443 §2.2 (b)), i.e.
        the DUT's address in the same prefix."""
        prober = EmulatedNode.fresh("ADDRPROBE", net)
        port.add_responder(prober.responder)
        frames = []
        try:
            # Common Test Setup: the DUT learns the prober's link-layer address first (an NS with its SLLA), so
            # that the reply does not wait for address resolution (judged by v6LC.2.1.2, not here); retried once
            ns = (prober.ipv6(P.solicited_node(self.link_local), "", src=prober.global_addr, hlim=255)
                  / ICMPv6ND_NS(tgt=self.link_local) / ICMPv6NDOptSrcLLAddr(lladdr=prober.mac))
            port.send(ns)
            for seq in (1, 2):
                req = prober.ipv6(P.ALL_NODES, "", src=prober.global_addr) / ICMPv6EchoRequest(id=0xAD0B, seq=seq)
                since = port.send(req)
                frames = port.collect(M.all_of(M.from_mac(self.mac), M.echo_reply_to(req)),
                                      float(self.target.timing["reply_timeout_s"]), since=since,
                                      until=lambda fs: bool(fs))
                if frames:
                    break
        finally:
            port.remove_responder(prober.responder)
        for f in frames:
            src = f.pkt[IPv6].src
            if ipaddress.IPv6Address(src) in net:
                return src
        return None

    def addresses(self) -> list[str]:
        return self.control.addresses()


class CheckContext:
    def __init__(self, *, check: Check, part: Part, port: Port, target, control: Control, dut: DutView,
                 session=None):
        self.check = check
        self.part_spec = part
        self.part = part.letter
        self.p = SimpleNamespace(**part.params)
        self.port = port
        self.target = target
        self.control = control
        self.dut = dut
        self.session = session
        self.timing = target.timing
        self.reply_timeout = float(target.timing["reply_timeout_s"])
        self.silence = float(target.timing["silence_s"])
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

    def dut_keeps_state(self, seconds: float, why: str) -> None:
        """This check leaves the DUT in a state that its own timer ends
        ``seconds`` from now (e.g. MLDv1 compatibility mode): the next check,
        unless the DUT is reset first, waits it out (a DUT the run cannot reset
        would otherwise carry it into another check's verdict)."""
        if self.session is None:
            return
        until = time.monotonic() + seconds
        if self.session.settle is None or self.session.settle[0] < until:
            self.session.settle = (until, why)

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
                    continue  # the link's own prefix is the link's router's to withdraw, not the check's
                ra = ra / ICMPv6NDOptPrefixInfo(prefix=prefix, prefixlen=plen, L=onlink, A=auto, validlifetime=0,
                                                preferredlifetime=0)
            try:
                self._ledger_record(self._check_prefixes(_forms_addresses(ra)), self.port.send(ra))
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
    def _owner(self) -> str:
        return f"{self.check.id}#{self.part}"

    def _make_room(self, forms: list[tuple[ipaddress.IPv6Network, int]]) -> None:
        """On a DUT with a bounded address table (``dut.max_addresses``),
        wait until the addresses earlier checks made it form have expired
        and the prefixes this RA brings fit (see core/ledger.py)."""
        session = self.session
        slots = session.address_slots() if session is not None else None
        if slots is None:
            return
        ledger, now = session.ledger, self.port.now()
        new = [net for net, valid in forms if valid and not ledger.holds(net, now)]
        if new:
            self._wait_for_room(len(new), slots, skip=True)

    def make_room_first(self) -> None:
        """Before the check's first probe, on a DUT with a bounded address
        table: room for one prefix, so that a check that forms an address
        does not wait for it in the middle, after it set up neighbour
        entries or timers that the wait would let run out."""
        session = self.session
        slots = session.address_slots() if session is not None else None
        if slots is not None:
            self._wait_for_room(1, slots, skip=False, first=True)

    def _wait_for_room(self, count: int, slots: int, *, skip: bool, first: bool = False) -> None:
        ledger, now = self.session.ledger, self.port.now()
        per_prefix = 2 if self.target.claims("Temp-Addr") else 1
        wait = ledger.wait_for_room(count, slots=slots, per_prefix=per_prefix, owner=self._owner, now=now)
        held = ", ".join(f"{e.prefix} (by {e.owner}, {e.expires - now:.0f} s left)" for e in ledger.live(now))
        limit = float(self.target.timing["address_room_wait_s"])
        if (wait is None or wait > limit) and not skip:
            return  # the check may form no address at all; if it does, its RA says whether it fits
        if wait is None or wait > limit:
            # the DUT behaves: its declared table is full of the run's own addresses (an RA cannot take them back
            # before their valid lifetime runs out, RFC 4862 §5.5.3 e), so the part cannot be judged on this DUT
            # now; a FAIL "formed no address" would be the bench's doing
            size = self.target.dut_max_addresses
            own = [e for e in ledger.live(now) if e.owner == self._owner]
            if wait is None and (len(own) + count) * per_prefix > slots:
                why = self._too_many(len(own) + count, slots)
            else:
                why = (f"the DUT's address table (dut.max_addresses {size}) is full of the run's earlier addresses "
                       f"({held}), which an RA cannot take back (RFC 4862 §5.5.3 e)"
                       + (f" and which outlast {limit:g} s (timing.address_room_wait_s)" if wait is not None else ""))
            raise NotApplicable(f"{why}: reset the DUT between checks (control.adapter) or run this part on its own")
        if wait > 0:
            self.note(f"waiting {wait:.1f} s for room in the DUT's address table (max_addresses "
                      f"{self.target.dut_max_addresses}){' before the first probe' if first else ''}: the run's "
                      f"addresses in {held} run out first")
            self.measurements["address_room_wait_s"] = round(self.measurements.get("address_room_wait_s", 0)
                                                             + wait, 1)
            self.wait(wait)

    def _too_many(self, n: int, slots: int) -> str:
        per_prefix = 2 if self.target.claims("Temp-Addr") else 1
        return (f"this part needs {n * per_prefix} address(es) at once, and the DUT's table (dut.max_addresses "
                f"{self.target.dut_max_addresses}) has room for {slots} beside the addresses it held")

    def needs_addresses(self, n: int) -> None:
        """This part makes the DUT hold addresses from ``n`` of its prefixes
        at once: on a DUT whose declared table (``dut.max_addresses``) cannot,
        SKIP now, before anything is sent."""
        slots = self.session.address_slots() if self.session is not None else None
        per_prefix = 2 if self.target.claims("Temp-Addr") else 1
        if slots is not None and n * per_prefix > slots:
            raise NotApplicable(f"{self._too_many(n, slots)}: run it against a DUT with a larger table")

    def _check_prefixes(self, forms: list[tuple[ipaddress.IPv6Network, int]]):
        """Leave out the link's own prefix: the DUT held its address when the run found it."""
        return [(net, valid) for net, valid in forms if not net.overlaps(self.target.link_prefix)]

    def _ledger_record(self, forms: list[tuple[ipaddress.IPv6Network, int]], when: float) -> None:
        if self.session is None:
            return
        for net, valid in forms:
            self.session.ledger.advertise(net, valid, self._owner, when)

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
        forms = self._check_prefixes(_forms_addresses(pkt))
        if forms:
            self._make_room(forms)
        t = self.port.send(pkt)
        self._remember_advertisement(pkt)
        self._ledger_record(forms, t)
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


def _forms_addresses(pkt) -> list[tuple[ipaddress.IPv6Network, int]]:
    """The autonomous /64 prefixes (with their valid lifetimes) of an RA a
    host would accept (RFC 4861 §6.1.2: hop limit 255, link-local source,
    code 0, checksum left to Scapy, not fragmented); SLAAC forms an address
    only from a prefix as long as 128 less the 64-bit IID, with a preferred
    lifetime no longer than its valid one (RFC 4862 §5.5.3 c, d).
    Deliberately invalid RAs, raw bytes and other packets: none."""
    if not isinstance(pkt, Packet) or ICMPv6ND_RA not in pkt or IPv6 not in pkt:
        return []
    ip, ra = pkt[IPv6], pkt[ICMPv6ND_RA]
    if ip.hlim != 255 or ra.code != 0 or ra.cksum is not None or IPv6ExtHdrFragment in pkt:
        return []
    try:
        if not ipaddress.IPv6Address(ip.src).is_link_local:
            return []
    except ValueError:
        return []
    out, i = [], 1
    opt = pkt.getlayer(ICMPv6NDOptPrefixInfo)
    while opt is not None:
        if opt.A and opt.prefixlen == 64 and opt.len in (None, 4) and opt.preferredlifetime <= opt.validlifetime:
            try:
                net = ipaddress.IPv6Network(f"{opt.prefix}/64", strict=False)
            except ValueError:
                net = None
            if net is not None and not net.is_link_local and not net.is_multicast:
                out.append((net, int(opt.validlifetime)))
        i += 1
        opt = pkt.getlayer(ICMPv6NDOptPrefixInfo, i)
    return out
