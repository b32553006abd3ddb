"""The Happy Eyeballs gate on the lab, both ways (issue 32): each part PASSes
with the lab DUT's Happy Eyeballs client (async_stagger with RFC 8305's
defaults, DUT configuration he-dual-stack) and FAILs, for the fault's
reason, with the same client configured badly: attempts one after the
other (it waits for the TCP timeout: the black-holed and slow IPv6 parts),
both families in one getaddrinfo call (no Resolution Delay: the late-AAAA
part), IPv4 first (the healthy part).  About 50 s."""

import pytest
import yaml

from v6gate.core.check import find
from v6gate.core.session import Session
from v6gate.gates.profiles import PROFILES_FILE
from v6gate.lab.faults import get_fault

GATE = "perf.happy_eyeballs_connects_within_rfc8305_delays"


@pytest.fixture(scope="module")
def he_session(controls_run_dir):
    with Session.for_lab(controls_run_dir / "happy-eyeballs") as s:
        yield s


@pytest.fixture
def undisturbed(tmp_path, monkeypatch):
    """The gate's disturbance policy off: this proves the verdict both ways,
    not the policy (unit-tested in the engine); the lab stage runs beside
    other labs whose CPU would void trials."""
    from v6gate.gates import profiles as gate_profiles

    doc = yaml.safe_load(PROFILES_FILE.read_text())
    doc["gates"]["happy_eyeballs"]["disturbance"] = {"enabled": False}
    path = tmp_path / "undisturbed.yaml"
    path.write_text(yaml.safe_dump(doc))
    monkeypatch.setattr(gate_profiles, "_CACHE", gate_profiles.load_profiles(path))


@pytest.mark.parametrize("part", ["healthy", "ipv6_blackhole", "ipv6_slow", "aaaa_delayed"])
def test_happy_eyeballs_part_passes_and_fails_under_its_fault(he_session, undisturbed, part):
    c = find(GATE)
    p = c.part(part)
    ok = he_session.run(c, p, setup=f"he-{part}")
    assert ok.verdict == "PASS", ok.reason
    fault = get_fault(c.fault_of(p))
    bad = he_session.run(c, p, fault=fault.name, setup=f"he-{part}-fault")
    assert bad.verdict == "FAIL", bad.reason
    assert fault.proves(bad.reason, bad.problems or []) is None, bad.reason
    kept = [tr for tr in ok.measurements["decision"]["trials"] if not tr.get("discarded")]
    won = {tr["raw"]["family"] for tr in kept}
    assert won == ({6} if part == "healthy" else {4}), won  # IPv4 wins only where IPv6 is broken or late
