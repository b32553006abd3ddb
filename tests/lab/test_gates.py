"""Performance gates on the lab, both ways (a gate's statistics are proven by
`v6gate calibrate`; this shows each short gate PASSes on the healthy lab and
FAILs under its fault, and that a throughput gate FAILs under the IPv6-only
throttle).  About a minute and a half on a quiet machine."""

import pytest

from v6gate.core.check import find
from v6gate.core.session import Session

SHORT = ["perf.ns_to_na_latency_within_target", "perf.ra_to_usable_slaac_address_within_target",
         "perf.ipv6_offloads_match_ipv4_offloads"]
STR = ("perf.ipv6_streaming_is_not_slower_than_ipv4", "1x1500")


@pytest.fixture(scope="module")
def gate_session(controls_run_dir):
    with Session.for_lab(controls_run_dir / "gates") as s:
        yield s


@pytest.mark.parametrize("check_id", SHORT)
def test_short_gate_passes_healthy_and_fails_under_its_fault(gate_session, check_id):
    c = find(check_id)
    part = c.parts[0]
    ok = gate_session.run(c, part, setup="gate-healthy")
    bad = gate_session.run(c, part, fault=c.fault_of(part), setup="gate-fault")
    assert ok.verdict == "PASS", ok.reason
    assert bad.verdict == "FAIL", bad.reason
    if c.kind == "gate" and "decision" in ok.measurements:
        assert ok.measurements["decision"]["trials"], "every sample is kept"


def test_throughput_gate_fails_under_the_ipv6_throttle_and_keeps_its_samples(gate_session):
    c = find(STR[0])
    part = c.part(STR[1])
    bad = gate_session.run(c, part, fault=c.fault_of(part), setup="gate-fault")
    assert bad.verdict == "FAIL", bad.reason
    dec = bad.measurements["decision"]
    assert dec["metrics"]["throughput"]["interval"]["high"] < 0.97
    assert {t["arm"] for t in dec["trials"]} == {"v4", "v6"}
    facts = bad.measurements["facts"]
    for end in ("client", "dut"):
        assert facts[end]["mtu"] == 1500 and facts[end]["kernel"] and facts[end]["ethtool_k"]
    assert "v6/v4 throughput ratio" in bad.reason


def test_throughput_gate_does_not_fail_on_the_healthy_lab(gate_session):
    """A/A in one run: PASS, or INCONCLUSIVE when the shared machine is too
    noisy to decide within the budget, never FAIL (calibration measures the
    rates)."""
    c = find(STR[0])
    ok = gate_session.run(c, c.part(STR[1]), setup="gate-healthy")
    assert ok.verdict in ("PASS", "INCONCLUSIVE"), ok.reason
