"""What a run leaves on a DUT it cannot reset, carried into the next run
(core/carryover.py): the state file, bounded and checked; only what the DUT
still defends is carried (pure logic; the packets are proven by
tests/lab/test_external_parity.py's back-to-back runs)."""

import ipaddress
import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from scapy.layers.inet6 import ICMPv6ND_NA, ICMPv6ND_NS, IPv6
from scapy.layers.l2 import Ether

from v6gate.core import carryover
from v6gate.core.ledger import AddressLedger

DUT = "52:54:00:ab:cd:02"
A, B = ipaddress.IPv6Network("2001:db8:a::/64"), ipaddress.IPv6Network("2001:db8:b::/64")


def _target():
    return SimpleNamespace(tester_netns="ns1", tester_interface="tap0", dut_mac=DUT,
                           link_prefix=ipaddress.IPv6Network("2001:db8:1::/64"),
                           timing={"reply_timeout_s": 0.2})


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setattr(carryover, "STATE_DIR", tmp_path / "dut-state")
    return tmp_path


def _session(run_dir: Path, ledger=None, port=None):
    from v6gate.core.observer import DutObserver

    return SimpleNamespace(target=_target(), ledger=ledger or AddressLedger(), run_dir=run_dir, port=port, pace=None,
                           observer=DutObserver(DUT))


def test_a_run_writes_the_addresses_its_prefixes_leave_and_when_they_are_gone(state):
    ledger, now = AddressLedger(), time.monotonic()
    ledger.advertise(A, 60, "slaac.x#A", now)
    ledger.mark_formed(A, ["2001:db8:a::5054:ff:feab:cd02"])
    ledger.advertise(B, 60, "slaac.x#B", now)  # never seen forming: no address to ask about, not written
    path = carryover.save(_session(state / "20261127T120000Z-abc123", ledger))
    doc = json.loads(path.read_text())
    assert path.name == "ns1-tap0-52_54_00_ab_cd_02.json"
    assert doc["run"] == "20261127T120000Z-abc123" and len(doc["leases"]) == 1
    lease = doc["leases"][0]
    assert lease["prefix"] == str(A) and lease["addresses"] == ["2001:db8:a::5054:ff:feab:cd02"]
    assert 55 < lease["gone_at"] - time.time() <= 63  # 60 s + the expiry grace
    # a run that leaves nothing removes the file
    assert carryover.save(_session(state / "r2")) is None and not path.exists()


def test_a_duplicate_the_dut_gave_up_is_not_written(state):
    ledger, now = AddressLedger(), time.monotonic()
    ledger.advertise(A, 60, "slaac.dad#A", now)
    ledger.mark_formed(A, ["2001:db8:a::1"])
    ledger.mark_duplicate(A)
    assert carryover.save(_session(state / "r", ledger)) is None


@pytest.mark.parametrize("content, why", [
    (b"{", "is not JSON"),
    (b"x" * (carryover.MAX_BYTES + 1), "larger than"),
    (json.dumps({"version": 99, "leases": []}).encode(), "is not a v6gate DUT state"),
    (json.dumps({"version": 1, "leases": [{"prefix": "2001:db8:a::/64", "addresses": ["2001:db8:b::1"],
                                           "gone_at": 1e12}]}).encode(), "not a prefix, its addresses and a time"),
    (json.dumps({"version": 1, "leases": [{"prefix": "2001:db8:a::/64", "addresses": ["2001:db8:a::1"],
                                           "gone_at": True}]}).encode(), "not a prefix, its addresses and a time"),
    (b'{"version": 1, "leases": [{"prefix": "2001:db8:a::/64", "addresses": ["2001:db8:a::1"], '
     b'"gone_at": Infinity}]}', "not a prefix, its addresses and a time"),
    (json.dumps({"version": 1, "leases": [{"prefix": "x"}] * (carryover.MAX_LEASES + 1)}).encode(),
     "is not a v6gate DUT state"),
])
def test_a_state_file_that_is_not_right_is_disregarded_with_the_reason(tmp_path, content, why):
    p = tmp_path / "s.json"
    p.write_bytes(content)
    _run, leases, reason = carryover.leases_in(p, time.time())
    assert leases == [] and why in reason


def test_only_leases_not_yet_gone_are_read(tmp_path):
    now = time.time()
    p = tmp_path / "s.json"
    p.write_text(json.dumps({"version": 1, "run": "r1", "leases": [
        {"prefix": str(A), "addresses": ["2001:db8:a::1"], "gone_at": now - 1},
        {"prefix": str(B), "addresses": ["2001:db8:b::1"], "gone_at": now + 40}]}))
    run, leases, why = carryover.leases_in(p, now)
    assert (run, why) == ("r1", "") and [(str(n), a) for n, a, _ in leases] == [(str(B), ["2001:db8:b::1"])]
    assert carryover.leases_in(tmp_path / "none.json", now) == (None, [], "")


class _Port:
    """Answers the DAD probes for the addresses in ``defends`` as the DUT would (RFC 4862 §5.4.3)."""

    def __init__(self, defends):
        self.defends, self.sent, self.frames = set(defends), [], []

    def now(self):
        return time.monotonic()

    def send(self, pkt):
        self.sent.append(pkt)
        tgt = pkt[ICMPv6ND_NS].tgt
        if pkt[IPv6].src == "::" and tgt in self.defends:
            na = Ether(src=DUT) / IPv6(src="fe80::1", dst="ff02::1") / ICMPv6ND_NA(tgt=tgt, S=0, O=1)
            self.frames.append(SimpleNamespace(pkt=na, time=self.now()))
        return self.now()

    def collect(self, match, within, since=None):
        return [f for f in self.frames if match(f.pkt)]


def test_the_next_run_carries_only_what_the_dut_still_defends(state):
    now = time.time()
    path = carryover.state_path(_target())
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 1, "run": "20261127T120000Z-abc123", "leases": [
        {"prefix": str(A), "addresses": ["2001:db8:a::1"], "gone_at": now + 40},
        {"prefix": str(B), "addresses": ["2001:db8:b::1"], "gone_at": now + 50}]}))
    port = _Port(defends={"2001:db8:a::1"})  # B's address is gone (the DUT was restarted, or it expired early)
    session = _session(state / "r2", port=port)
    found = carryover.carry_over(session)
    assert len(port.sent) == 2  # one DAD probe per address
    assert [c["prefix"] for c in found["carried"]] == [str(A)] and found["asked"] == 2
    live = session.ledger.live(time.monotonic())
    assert [(e.prefix, e.owner) for e in live] == [(A, "an earlier run (20261127T120000Z-abc123)")]
    assert 35 < live[0].expires - time.monotonic() <= 40
    # its DAD probe then is this boot's evidence that the DUT performs DAD (a fresh prefix that forms nothing is
    # then a sign of a full table, core/room.py)
    assert session.observer.did_dad().address == "2001:db8:a::1"
    # it takes room like the run's own: a table with one free slot has none now, until it is gone
    wait = session.ledger.wait_for_room(1, slots=1, per_prefix=1, owner="slaac.x#A", now=time.monotonic())
    assert 35 < wait <= 40


def test_a_restarted_dut_gets_nothing_carried(state):
    path = carryover.state_path(_target())
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 1, "run": "r1", "leases": [
        {"prefix": str(A), "addresses": ["2001:db8:a::1"], "gone_at": time.time() + 40}]}))
    session = _session(state / "r2", port=_Port(defends=()))
    assert carryover.carry_over(session)["carried"] == []
    assert session.ledger.live(time.monotonic()) == [] and session.observer.did_dad() is None
