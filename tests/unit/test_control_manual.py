"""control.adapter: manual — the run tells the operator what to do and waits
for Enter (pure logic, with a fake terminal)."""

import io
import os
import threading
import time

import pytest

from v6gate.core.control import NotSupported, control_for
from v6gate.core.manual import ManualControl


class Operator:
    """A fake terminal: the operator reads each question (written to it) and
    answers with the next of ``answers`` after ``delay`` s; with no answers
    left, silence.  ``early`` lines are typed before any question."""

    def __init__(self, answers, delay=0.0, early=()):
        self.answers, self.delay = list(answers), delay
        self.pending = list(early)
        self.asked = threading.Semaphore(0)
        self.text = io.StringIO()

    # the output side
    def write(self, s):
        self.text.write(s)
        if "OPERATOR:" in s:
            self.asked.release()

    def flush(self):
        pass

    def getvalue(self):
        return self.text.getvalue()

    # the input side
    def readline(self):
        if self.pending:
            return self.pending.pop(0)
        self.asked.acquire()
        if not self.answers:
            threading.Event().wait()  # never answers
        threading.Event().wait(self.delay)
        return self.answers.pop(0)


def _manual(lines, **kw):
    op = Operator(lines, delay=kw.pop("delay", 0.0), early=kw.pop("early", ()))
    return ManualControl({"timeout_s": kw.pop("timeout_s", 2)}, "eth0", stream_in=op, stream_out=op,
                         interactive=True), op


def test_reset_tells_the_operator_and_waits_for_enter():
    m, out = _manual(["\n"], delay=0.05)
    took = m.reset()
    assert "OPERATOR: reboot the DUT now" in out.getvalue() and "press Enter once it is up again" in out.getvalue()
    assert took >= 0.05
    assert m.log == [("reboot the DUT now (power-cycle or restart it)", "confirmed")]


def test_ping_and_groups_say_what_to_do():
    m, out = _manual(["\n", "\n", "\n"])
    proc = m.ping("2001:db8::1", size=1400)
    assert proc.wait() == 0 and proc.poll() == 0
    m.listen("ff02::1:3")
    m.unlisten("ff02::1:3")
    text = out.getvalue()
    assert "make the DUT ping 2001:db8::1 on its interface eth0 with 1400-octet" in text
    assert "make the DUT join the IPv6 multicast group ff02::1:3" in text
    assert "make the DUT leave the IPv6 multicast group ff02::1:3" in text


def test_source_filters_say_mode_and_sources():
    m, out = _manual(["\n", "\n"])
    m.listen("ff3e::8000:1", mode="include", sources=["2001:db8::1"])
    m.listen("ff3e::8000:1", mode="include")
    text = out.getvalue()
    assert "use the source filter INCLUDE {2001:db8::1}" in text and "receive only from these sources" in text
    assert "stop listening to ff3e::8000:1 (leave it)" in text


def test_addresses_are_typed_by_the_operator():
    m, _ = _manual(["fe80::1%eth0, 2001:db8::2/64 junk\n"])
    assert m.addresses() == ["fe80::1", "2001:db8::2"]
    m, _ = _manual(["none\n"])
    with pytest.raises(NotSupported, match="no IPv6 address"):
        m.addresses()


def test_no_answer_in_time_skips_the_step():
    m, _ = _manual([], timeout_s=0.2)
    with pytest.raises(NotSupported, match=r"did not confirm within 0.2 s: reboot the DUT now"):
        m.reset()
    assert m.log[-1][1].startswith("skipped")


def test_end_of_input_skips():
    m = ManualControl({"timeout_s": 1}, stream_in=io.StringIO(""), stream_out=io.StringIO(), interactive=True)
    with pytest.raises(NotSupported, match="input ended"):
        m.reset()


def test_input_typed_before_the_question_does_not_answer_it():
    m, op = _manual(["\n"], early=["typed too soon\n"], timeout_s=1)
    deadline = time.monotonic() + 2
    while m._lines.empty() and time.monotonic() < deadline:  # the early line reached the adapter
        time.sleep(0.01)
    m.listen("ff02::2:1")
    assert [o for _, o in m.log] == ["confirmed"]
    assert op.answers == []


def test_non_interactive_skips_with_the_instruction(monkeypatch):
    m = ManualControl({}, interactive=False)
    with pytest.raises(NotSupported, match=r"non-interactive .*reboot the DUT now"):
        m.reset()
    monkeypatch.setenv("V6GATE_NON_INTERACTIVE", "1")
    with pytest.raises(NotSupported, match="make the DUT ping"):
        ManualControl({}).ping("fe80::1")


def test_no_terminal_skips(monkeypatch):
    monkeypatch.delenv("V6GATE_NON_INTERACTIVE", raising=False)
    real_open = open

    def no_tty(path, *a, **kw):
        if path == "/dev/tty":
            raise OSError("no controlling terminal")
        return real_open(path, *a, **kw)

    monkeypatch.setattr("builtins.open", no_tty)
    with pytest.raises(NotSupported, match="no terminal"):
        ManualControl({}).reset()


def test_what_cannot_be_done_by_hand_skips():
    m, _ = _manual([])
    for call in (lambda: m.resolve("x"), lambda: m.connect("h", 80), lambda: m.command("true")):
        with pytest.raises(NotSupported, match=r"control\.adapter: ssh"):
            call()


def test_target_file_selects_it(tmp_path):
    from v6gate.core.target import load_target

    p = tmp_path / "t.yaml"
    p.write_text("name: x\nkind: host\ncapabilities: [Core]\ntester: {interface: eth9}\n"
                 "dut: {mac: '52:54:00:00:00:01', link_local: eui64}\nlink: {prefix: '2001:db8:1::/64'}\n"
                 "control: {adapter: manual, manual: {timeout_s: 30}}\n")
    os.environ["V6GATE_NON_INTERACTIVE"] = "1"
    try:
        c = control_for(load_target(p))
    finally:
        del os.environ["V6GATE_NON_INTERACTIVE"]
    assert isinstance(c, ManualControl) and c.timeout_s == 30
