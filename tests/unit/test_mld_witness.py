"""mld.delaying_listener_resets_timer's deadline with a witness group
(checks/mld/_common.py _report_by_deadline): a Report that comes past the
window is counted only when it comes by the DUT's answer to a Query for the
witness sent after the deadline (plus that answer's turnaround).  The timing
decision alone, on a scripted wire (no lab)."""

from types import SimpleNamespace

from scapy.layers.inet6 import ICMPv6MLReport, IPv6

from v6gate.checks.mld._common import _report_by_deadline

GROUP, WITNESS = "ff02::1:ff00:2", "ff12::1:2"


class Wire:
    """A fake check context: the DUT's Reports at scripted times; each Query
    sent for the witness is answered ``turnaround`` s after it is sent."""

    def __init__(self, reports, turnaround=None):
        self.clock, self.turnaround, self.sent, self.notes = 0.0, turnaround, [], []
        self.frames = [(at, GROUP) for at in reports]
        self.port = SimpleNamespace(expect=self._expect)
        self.dut = SimpleNamespace(link_local="fe80::2")
        self.mld_short_timers = True  # no MLDv2 preamble before the first MLDv1 Query
        self.measurements = {}

    def now(self):
        return self.clock

    def node(self, name, router=False):
        return SimpleNamespace(mac="02:00:00:00:00:aa", link_local="fe80::aa")

    def send(self, pkt, label=""):
        self.sent.append(label)
        if self.turnaround is not None:
            self.frames.append((self.clock + self.turnaround, WITNESS))
        return self.clock

    def from_dut(self, pred):
        return pred

    def _expect(self, match, within, since=0.0):
        until = self.clock + within
        hits = sorted(at for at, group in self.frames
                      if since <= at <= until and match(IPv6(dst=group) / ICMPv6MLReport(mladdr=group)))
        if hits:
            self.clock = max(self.clock, hits[0])
            return SimpleNamespace(time=hits[0])
        self.clock = until
        return None

    def note(self, msg):
        self.notes.append(msg)

    def measure(self, name, value):
        self.measurements[name] = value


def test_a_report_in_the_window_needs_no_witness():
    t = Wire([0.8], turnaround=0.001)
    report, why = _report_by_deadline(t, GROUP, 0.0, 1.25, WITNESS)
    assert report.time == 0.8 and why == "" and t.sent == []


def test_a_late_report_before_the_witness_answer_is_a_slow_dut():
    # the DUT's MLD work ran late: the Report left 1.4 s in, its answer to the witness Query (sent at 1.25 s)
    # 0.3 s after that Query: the timer had run out in time
    t = Wire([1.4], turnaround=0.3)
    report, why = _report_by_deadline(t, GROUP, 0.0, 1.25, WITNESS)
    assert report is not None and report.time == 1.4 and why == ""
    assert "the DUT was slow" in t.notes[-1] and t.measurements["witness_turnaround_s"] == 0.3


def test_a_report_after_the_witness_answer_and_its_turnaround_is_a_timer_not_reset():
    # a fast DUT (witness answered in 1 ms) whose Report only comes 5 s in: its timer had not run out
    t = Wire([5.0], turnaround=0.001)
    report, why = _report_by_deadline(t, GROUP, 0.0, 1.25, WITNESS)
    assert report is None and "the timer had not run out" in why and "1.0 ms later" in why


def test_no_answer_for_the_witness_either_is_said():
    t = Wire([], turnaround=None)
    report, why = _report_by_deadline(t, GROUP, 0.0, 1.25, WITNESS)
    assert report is None and "did not answer a Query (MRD 0) for the witness group" in why


def test_without_a_witness_the_window_alone_decides():
    t = Wire([1.4], turnaround=0.3)
    report, why = _report_by_deadline(t, GROUP, 0.0, 1.25, None)
    assert report is None and why == "" and t.sent == []
