"""A DUT that stops answering after a part (core/liveness.py), judged on a
simulated link: that part FAILs for it naming the packet it died after,
the control adapter is asked to bring it back when it can (the operator,
with ``manual``), else the run waits ``timing.dut_return_s``; a DUT that
does not come back makes every later part NOT_JUDGED ``dut-alive``; and a
DUT absent from the start is one line."""

from __future__ import annotations

import io
import threading
import types

from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, ICMPv6ND_NA, ICMPv6ND_NS, IPv6
from scapy.layers.l2 import Ether

from v6gate.core import liveness as L
from v6gate.core.control import NoControl
from v6gate.core.manual import ManualControl
from v6gate.core.verdict import Outcome, Verdict
from v6gate.net.port import Frame

MAC = "52:54:00:00:00:01"
LL = "fe80::5054:ff:fe00:1"


class _Link:
    """A tester port on a simulated link with one DUT that answers NS and
    Echo Requests for its link-local address while ``alive``; the clock
    moves only when the code waits."""

    def __init__(self):
        self.t = 100.0
        self.alive = True
        self.frames: list[Frame] = []
        self.sent: list[Frame] = []
        self.revive_at: float | None = None  # the DUT answers again from this time on

    def now(self):
        return self.t

    def add_responder(self, r):
        pass

    def remove_responder(self, r):
        pass

    def _up(self) -> bool:
        if not self.alive and self.revive_at is not None and self.t >= self.revive_at:
            self.alive = True
        return self.alive

    def send(self, pkt):
        self.sent.append(Frame(self.t, bytes(pkt), 4, pkt))
        if not self._up():
            return self.t
        if ICMPv6ND_NS in pkt and pkt[ICMPv6ND_NS].tgt == LL:
            ans = Ether(src=MAC, dst=pkt[Ether].src) / IPv6(src=LL, dst=pkt[IPv6].src) / ICMPv6ND_NA(tgt=LL, S=1)
        elif ICMPv6EchoRequest in pkt:
            req = pkt[ICMPv6EchoRequest]
            ans = (Ether(src=MAC, dst=pkt[Ether].src) / IPv6(src=LL, dst=pkt[IPv6].src)
                   / ICMPv6EchoReply(id=req.id, seq=req.seq, data=req.data))
        else:
            return self.t
        self.frames.append(Frame(self.t + 0.001, bytes(ans), 0))
        return self.t

    def expect(self, match, within, since=None):
        for f in self.frames:
            if f.time >= (since or 0) and f.time <= self.t + within and match(f.pkt):
                self.t = max(self.t, f.time)
                return f
        self.t += within
        return None

    def frames_since(self, since, match=None):
        return [f for f in self.frames if f.time >= since and (match is None or match(f.pkt))]

    def sent_since(self, since):
        return [f for f in self.sent if f.time >= since]


def _session(link, control=None, return_s=20.0):
    target = types.SimpleNamespace(timing={"reply_timeout_s": 1.0, "ready_timeout_s": 5.0, "dut_return_s": return_s},
                                   dut_mac=MAC, tester_interface="eth0", tester_netns=None, source="dut.yaml")
    came_back = []
    session = types.SimpleNamespace(port=link, target=target, control=control or NoControl(),
                                    dut=types.SimpleNamespace(mac=MAC, link_local=LL),
                                    dut_came_back=lambda: came_back.append(link.t))
    return session, came_back


def _ctx(link, liveness="ns"):
    ctx = types.SimpleNamespace(t0=link.t, timeline=[], dut_sent=[], check=types.SimpleNamespace(liveness=liveness))
    ctx.note = lambda msg: ctx.timeline.append((link.t - ctx.t0, msg))
    return ctx


def _part_that_kills(link, ctx):
    """The part answers a probe, then sends an RA after which the DUT is silent."""
    link.send(Ether(dst=MAC) / IPv6(dst=LL) / ICMPv6EchoRequest(id=1, seq=1))
    ctx.note("sent Echo Request")
    link.t += 0.4
    link.sent.append(Frame(link.t, b"\x00" * 60, 4))
    ctx.note("sent RA with prefix length 129")
    link.alive = False
    link.t += 3.0


def test_a_part_after_which_the_dut_is_silent_fails_for_it_and_the_rest_is_not_judged():
    link = _Link()
    session, came_back = _session(link)
    live = L.Liveness(session)
    ctx = _ctx(link)
    _part_that_kills(link, ctx)
    out = live.after_part(ctx, "slaac.prefix_option_processing#E", Outcome(Verdict.PASS, "no address formed"))
    assert out.verdict == Verdict.FAIL
    assert out.problems == ["the DUT stopped answering after this part's packets (RA with prefix length 129 at "
                            "+0.4 s)"], out.problems
    assert "before that: no address formed" in out.seen
    assert live.dead is not None and not came_back
    later = live.before_part()
    assert later.verdict == Verdict.NOT_JUDGED
    assert later.precondition == {"name": "dut-alive", "judged_by": "slaac.prefix_option_processing#E",
                                  "detail": live.dead.detail}
    assert "no answer for 20 s more (timing.dut_return_s)" in live.dead.detail
    assert live.events[0]["came_back"] is False


def test_a_dut_that_comes_back_by_itself_keeps_the_run_going():
    link = _Link()
    session, came_back = _session(link)
    live = L.Liveness(session)
    ctx = _ctx(link)
    _part_that_kills(link, ctx)
    link.revive_at = link.t + 12.0  # after the confirmation window (3 s), within dut_return_s (20 s)
    out = live.after_part(ctx, "x.y#A", Outcome(Verdict.FAIL, "seen", problems=["its own problem"]))
    assert out.verdict == Verdict.FAIL and out.problems[0].startswith("the DUT stopped answering")
    assert "its own problem" in out.problems
    assert live.dead is None and came_back and live.before_part() is None
    assert any("answers again" in m for _, m in ctx.timeline)


def test_a_dut_that_answers_again_within_the_confirmation_window_is_not_dead():
    link = _Link()
    session, _ = _session(link)
    live = L.Liveness(session)
    ctx = _ctx(link)
    _part_that_kills(link, ctx)
    link.revive_at = link.t + 1.5
    out = live.after_part(ctx, "x.y#A", Outcome(Verdict.PASS, "fine"))
    assert out.verdict == Verdict.PASS and live.dead is None and not live.events


def test_a_part_whose_check_declares_no_liveness_keeps_its_verdict_but_the_run_still_stops():
    link = _Link()
    session, _ = _session(link)
    live = L.Liveness(session)
    ctx = _ctx(link, liveness=None)
    _part_that_kills(link, ctx)
    out = live.after_part(ctx, "slaac.duplicate_hardware_link_local_disables_ip#None", Outcome(Verdict.PASS, "ok"))
    assert out.verdict == Verdict.PASS and live.dead is not None


class _Operator(io.StringIO):
    """The terminal: once asked, the operator restarts the DUT and presses Enter."""

    def __init__(self, link):
        super().__init__()
        self.link, self.asked = link, threading.Event()

    def write(self, text):
        if "OPERATOR" in text:
            self.asked.set()
        return super().write(text)

    def readline(self):
        if not self.asked.wait(5):
            return ""
        self.asked.clear()
        self.link.alive = True
        return "\n"


def test_the_manual_adapter_asks_the_operator_to_restart_the_dut():
    link = _Link()
    operator = _Operator(link)
    manual = ManualControl({"timeout_s": 5}, stream_in=operator, stream_out=operator, interactive=True)
    session, came_back = _session(link, control=manual)
    live = L.Liveness(session)
    ctx = _ctx(link)
    _part_that_kills(link, ctx)
    out = live.after_part(ctx, "x.y#A", Outcome(Verdict.PASS, "ok"))
    assert out.verdict == Verdict.FAIL and live.dead is None and came_back
    assert "the DUT stopped answering: restart it" in operator.getvalue()
    assert "reset through the control adapter 'manual'" in live.events[0]["how"]


def test_a_part_that_sent_nothing_is_not_probed():
    link = _Link()
    session, _ = _session(link)
    live = L.Liveness(session)
    ctx = _ctx(link)
    link.alive = False
    out = live.after_part(ctx, "x.y#A", Outcome(Verdict.SKIP, "not applicable"))
    assert out.verdict == Verdict.SKIP and live.dead is None and not link.sent


def test_an_absent_dut_is_one_line_naming_what_to_check():
    link = _Link()
    link.alive = False
    session, _ = _session(link)
    line = L.presence(link, session.target, LL)
    assert line is not None and "\n" not in line
    assert line.startswith(f"the DUT ({MAC}) is not on the link") and "tester.interface and dut.mac in dut.yaml" in line
    link.alive = True
    assert L.presence(link, session.target, LL) is None
