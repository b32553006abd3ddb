"""Whether the DUT is on the link and still answering: a precondition of
every part, checked when the run starts and after every part on a DUT the
run does not rebuild (a device, a VM on the lab's TAP).

A DUT that crashes on a packet (two stacks exited on an RA whose Prefix
Information option says prefix length 129) or that is not on the link at
all (wrong interface, unplugged) is one finding, not hundreds of per-part
ERRORs after their own timeouts:

* **absent at the start** (``presence``): no answer to a Neighbor
  Solicitation for its link-local address, nor to an all-nodes Echo
  Request, nor any frame from its MAC within a few seconds: the run says
  so in one line and judges nothing (exit 3);
* **silent after a part** (``Liveness.after_part``): the part whose packets
  left it silent FAILs for it ("the DUT stopped answering after this part's
  packets (RA ... at +0.4 s)"); the run asks the control adapter to reset
  the DUT when it can (``manual``: the operator), else waits a bounded time
  (``timing.dut_return_s``) for it to come back; if it does not, every
  later part is NOT_JUDGED (precondition ``dut-alive``, judged by that
  part) at once, and the run ends.

Silence is judged by answers only (Neighbor Advertisements and Echo Replies
on its link-local address), over a window of several reply timeouts, so a
loaded bench or a DUT busy for a moment is not taken for a dead one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scapy.layers.inet6 import ICMPv6EchoRequest, ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr

from ..errors import BenchError
from ..net import match as M
from ..net import packets as P
from ..net.nodes import EmulatedNode
from ..net.port import Port
from .control import NotSupported
from .verdict import NotJudged, Outcome, Verdict

_MAC = re.compile(r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$", re.I)
#: the precondition every part has on a DUT the run does not rebuild
DUT_ALIVE = "dut-alive"
#: how long the run waits for a DUT that stopped answering to come back when nothing can reset it (seconds;
#: ``timing.dut_return_s`` in the target file)
DEFAULT_RETURN_S = 20.0


def round_trip(port: Port, mac: str, link_local: str, method: str, within: float,
               prober: EmulatedNode | None = None) -> float | None:
    """One probe of the DUT's link-local address from a node that is not
    part of any check (``prober``, else a fresh one): a Neighbor
    Solicitation (``ns``) or an Echo Request (``echo``, ``all-nodes``); the
    seconds the DUT took to answer it, or None when it did not within
    ``within`` seconds."""
    prober = prober or EmulatedNode.fresh("LIVENESS")
    port.add_responder(prober.responder)
    try:
        if method == "echo":
            probe = prober.ipv6(link_local, mac) / ICMPv6EchoRequest(id=0x7E58, seq=1, data=P.nonce(8))
            m = M.echo_reply_to(probe)
        elif method == "all-nodes":
            probe = prober.ipv6(P.ALL_NODES, "") / ICMPv6EchoRequest(id=0x7E59, seq=1, data=P.nonce(8))
            m = M.echo_reply_to(probe)
        else:
            probe = (prober.ipv6(P.solicited_node(link_local), "", hlim=255) / ICMPv6ND_NS(tgt=link_local)
                     / ICMPv6NDOptSrcLLAddr(lladdr=prober.mac))
            m = M.na_for(link_local)
        since = port.send(probe)
        answer = port.expect(M.all_of(M.from_mac(mac), m), within, since=since)
        return None if answer is None else max(0.0, answer.time - since)
    finally:
        port.remove_responder(prober.responder)


def answering(port: Port, mac: str, link_local: str, *, within: float, reply_timeout: float,
              passive: bool = True, observe=None) -> float | None:
    """Probe the DUT (Neighbor Solicitation, then an Echo Request, then an
    all-nodes Echo Request, in turn) until it answers or ``within`` seconds
    have passed; any frame it sends meanwhile counts too (``passive``).
    Returns the port time it answered, or None; ``observe(seconds)`` is
    told how long each answered probe took (core/pace.py)."""
    start = port.now()
    deadline = start + within
    each = max(0.3, min(reply_timeout, 1.0))
    methods = ("ns", "echo", "all-nodes") if link_local else ("all-nodes",)
    i = 0
    while True:
        method = methods[i % len(methods)]
        i += 1
        sent = port.now()
        took = round_trip(port, mac, link_local, method, min(each, max(0.05, deadline - sent)))
        if took is not None:
            if observe is not None and method != "all-nodes":
                observe(took)
            return port.now()
        if passive and port.frames_since(start, M.from_mac(mac)):
            return port.now()
        if port.now() >= deadline:
            return None


def presence(port: Port, target, link_local: str | None) -> str | None:
    """None when the DUT is on the link; else the one line that says it is
    not (what was sent, what to check in the target file)."""
    reply = float(target.timing["reply_timeout_s"])
    within = max(3.0, 2 * reply)
    if answering(port, target.dut_mac, link_local or "", within=within, reply_timeout=reply) is not None:
        return None
    probes = (f"a Neighbor Solicitation for its link-local address {link_local}, an Echo Request to it and one to "
              "all-nodes" if link_local else "an Echo Request to all-nodes")
    where = f"{target.tester_interface}" + (f" (namespace {target.tester_netns})" if target.tester_netns else "")
    return (f"the DUT ({target.dut_mac}) is not on the link: no answer to {probes}, and no frame from its MAC, "
            f"within {within:g} s on {where}; nothing was judged: check tester.interface and dut.mac in "
            f"{target.source}, and that the DUT is up and cabled")


def check_present(target) -> str | None:
    """Before a run against a DUT the run does not build: is it on the link?
    None when it is; else the one line that says it is not."""
    if not _MAC.match(target.dut_mac or ""):
        return None  # (dut.mac: discover) nothing to ask for
    ll = target.dut_link_local
    if ll == "eui64":
        ll = P.link_local_from_mac(target.dut_mac)
    elif ll == "discover":
        ll = None
    with Port(target.tester_interface, target.tester_netns) as port:
        return presence(port, target, ll)


@dataclass
class Death:
    """The DUT stopped answering after ``part`` (``id#part``) and did not come back."""

    part: str
    detail: str  # what the part sent last before the silence, and how long the run waited
    at: float  # port time the silence was confirmed

    def not_judged(self) -> NotJudged:
        return NotJudged(DUT_ALIVE, self.part, self.detail)


class Liveness:
    """The DUT's liveness across a run on a DUT the run does not rebuild."""

    def __init__(self, session):
        self.session = session
        self.dead: Death | None = None
        #: every silence the run saw: part, when, whether and how the DUT came back (results.json)
        self.events: list[dict] = []
        self.last_part: str | None = None  # the last part that sent the DUT packets

    @property
    def return_s(self) -> float:
        return float(self.session.target.timing.get("dut_return_s", DEFAULT_RETURN_S))

    def _reply(self) -> float:
        return float(self.session.target.timing["reply_timeout_s"])

    def after_part(self, ctx, key: str, outcome: Outcome) -> Outcome:
        """After a part that sent packets: is the DUT still answering?  If
        not, the part's outcome becomes the FAIL for it (a part whose check
        declares no liveness, e.g. one that disables the DUT's IP on
        purpose, keeps its own), and the run recovers or marks the DUT dead."""
        port, dut = self.session.port, self.session.dut
        sent = port.sent_since(ctx.t0)
        if not sent:
            return outcome
        self.last_part = key
        mac = dut.mac
        last_sent = sent[-1].time
        # the DUT sent something after the part's last packet: it is alive, nothing to probe
        if port.frames_since(last_sent, M.from_mac(mac)):
            return outcome
        reply = self._reply()
        confirm = max(3.0, 3 * reply)
        pace = getattr(self.session, "pace", None)
        if answering(port, mac, dut.link_local, within=confirm, reply_timeout=reply,
                     observe=pace.observe if pace is not None else None) is not None:
            return outcome
        silent_at = port.now()
        culprit = _culprit(ctx, port, mac)
        ctx.note(f"the DUT stopped answering after the part's packets ({culprit}): no answer to Neighbor "
                 f"Solicitations and Echo Requests for {confirm:g} s")
        if ctx.check.liveness is not None:
            outcome = _fail_for_silence(ctx, outcome, culprit)
        back, how = self._recover(ctx)
        self.events.append({"part": key, "culprit": culprit, "came_back": back, "how": how,
                            "silent_for_s": round(port.now() - silent_at + confirm, 1)})
        if back:
            ctx.note(f"the DUT answers again: {how}")
            self.session.dut_came_back()
        else:
            ctx.note(f"the DUT did not come back: {how}; every later part is not judged ({DUT_ALIVE})")
            self.dead = Death(key, f"the DUT stopped answering after {key} ({culprit}) and did not come back ({how})",
                              port.now())
        return outcome

    def silent_before(self, ctx) -> None:
        """The DUT did not answer before a part's first probe, though it did
        after the last part: give it the time to come back (a reset, or
        ``dut_return_s``); if it does not, the run marks it dead and this
        part is NOT_JUDGED (``dut-alive``, judged by the last part that sent
        it packets)."""
        port, dut = self.session.port, self.session.dut
        reply = self._reply()
        if answering(port, dut.mac, dut.link_local, within=max(3.0, 3 * reply), reply_timeout=reply) is not None:
            return
        ctx.note("the DUT stopped answering before this part sent anything")
        back, how = self._recover(ctx)
        after = self.last_part or "the run's start"
        self.events.append({"part": after, "culprit": "between parts", "came_back": back, "how": how})
        if back:
            ctx.note(f"the DUT answers again: {how}")
            self.session.dut_came_back()
            return
        self.dead = Death(after, f"the DUT stopped answering after {after}, before the next part sent anything, and "
                                 f"did not come back ({how})", port.now())
        raise self.dead.not_judged()

    def _recover(self, ctx) -> tuple[bool, str]:
        """Ask the control adapter to reset the DUT when it can (the
        operator, with ``manual``), else wait ``dut_return_s`` for it."""
        session = self.session
        port, dut, target = session.port, session.dut, session.target
        reply = self._reply()
        try:
            session.control.revive()
        except NotSupported:
            wait = self.return_s
            start = port.now()
            t = answering(port, dut.mac, dut.link_local, within=wait, reply_timeout=reply)
            if t is None:
                return False, (f"no answer for {wait:g} s more (timing.dut_return_s), and the control adapter "
                               f"{session.control.name!r} cannot reset it")
            return True, f"it answered again by itself {t - start:.1f} s later"
        except BenchError as exc:
            return False, f"the control adapter's reset failed: {exc}"
        ready = float(target.timing["ready_timeout_s"])
        if answering(port, dut.mac, dut.link_local, within=ready, reply_timeout=reply) is None:
            return False, f"reset through the control adapter {session.control.name!r}, but no answer within " \
                          f"{ready:g} s (timing.ready_timeout_s)"
        return True, f"reset through the control adapter {session.control.name!r}"

    def before_part(self) -> Outcome | None:
        """The outcome of every part once the DUT is dead: NOT_JUDGED at once."""
        return self.dead.not_judged().outcome() if self.dead else None


def _culprit(ctx, port: Port, mac: str) -> str:
    """The part's first packet after the DUT's last frame in it ("RA with
    ... at +0.4 s"): the one the DUT stopped answering after."""
    mine = port.frames_since(ctx.t0, M.from_mac(mac))
    last = mine[-1].time if mine else ctx.t0
    sent_notes = [(t, msg[len("sent "):]) for t, msg in ctx.timeline if msg.startswith("sent ")]
    for t, what in sent_notes:
        if ctx.t0 + t >= last:
            return f"{what} at +{t:.1f} s"
    after = port.sent_since(last)
    if after:
        return f"{after[0].summary()} at +{after[0].time - ctx.t0:.1f} s"
    return "its last packet"


def _fail_for_silence(ctx, outcome: Outcome, culprit: str) -> Outcome:
    problem = f"the DUT stopped answering after this part's packets ({culprit})"
    if outcome.verdict == Verdict.FAIL:
        return Outcome(Verdict.FAIL, outcome.seen, outcome.expected, outcome.measurements,
                       [problem, *[p for p in outcome.problems if p != problem]], outcome.dut_sent)
    was = f" (its own verdict would have been {outcome.verdict}: {outcome.seen})" if outcome.verdict != Verdict.PASS \
        else f"; before that: {outcome.seen}"
    return Outcome(Verdict.FAIL, f"{problem}{was}", outcome.expected, outcome.measurements, [problem],
                   list(ctx.dut_sent))
