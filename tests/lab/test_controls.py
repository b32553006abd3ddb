"""Controls: every check is proven both ways on the lab.

For each check part: one setup where the lab DUT conforms and the check
must PASS, one where it does not and the check must FAIL.

* Normally: the healthy lab (PASS) and the lab under the check's fault (FAIL).
* Where the lab's Linux deviates from the RFC (a waiver of the lab target,
  fixtures/deviations/linux/*.yaml): the healthy lab (FAIL, the deviation)
  and the lab under the waiver's corrective fault (PASS).

A side that gives the wrong verdict is run once more; if the second run is
right the part is proven but listed as flaky (both attempts recorded).

Results go to reports/controls.json (merged across xdist workers).
"""

import json
import os
import time

import pytest

from v6gate.core.check import all_items
from v6gate.core.session import Session

CONTROLS_DIR = None


def _items(config):
    return all_items(areas=config.getoption("--controls-area") or None, profile=config.getoption("--controls-profile"),
                     ids=config.getoption("--controls-check") or None, kind="check")


def pytest_generate_tests(metafunc):
    if "control_item" in metafunc.fixturenames:
        items = _items(metafunc.config)
        metafunc.parametrize("control_item", items, ids=[f"{c.id}#{p.letter}" for c, p in items])


@pytest.fixture(scope="session")
def control_session(controls_run_dir):
    session = Session.for_lab(controls_run_dir)
    yield session
    session.close()


def test_check_is_proven_both_ways(control_item, control_session, controls_sink):
    c, p = control_item
    entry = {"id": c.id, "part": p.letter, "ipv6ready": c.ipv6ready_of(p), "rfc": c.rfc_of(p), "area": c.area,
             "title": c.title_of(p), "profile": c.profile_of(p)}
    why = control_session.applicability(c, p)
    if why:
        controls_sink({**entry, "status": "not_applicable", "reason": why})
        pytest.skip(f"not applicable to the lab DUT: {why}")
    waiver = control_session.target.waiver_for(c.id, p.letter)
    if waiver:
        pass_fault, fail_fault = waiver.corrective_fault, None
        entry["deviation"] = {"rfc": waiver.rfc, "observed": waiver.observed, "reason": waiver.reason}
    else:
        pass_fault, fail_fault = None, c.fault_of(p)
    if not waiver and fail_fault is None:
        reason = c.uncontrollable_of(p) or "no fault declared"
        controls_sink({**entry, "status": "uncontrolled", "reason": reason})
        pytest.skip(f"cannot be made to FAIL in the lab: {reason}")
    setups = {}
    for side, fault in (("pass", pass_fault), ("fail", fail_fault)):
        label = f"fault:{fault}" if fault else "healthy lab"
        want = side.upper()
        r = control_session.run(c, p, fault=fault, setup=f"control-{side}")
        setups[side] = {"setup": label, "fault_reason": _fault_reason(fault), "verdict": r.verdict,
                        "reason": r.reason, "pcap": r.evidence.get("pcap"), "duration_s": r.duration_s}
        if r.verdict != want:
            # One more try, recorded: a side that gives the wrong verdict once and the right one the second
            # time is timing-sensitive on this bench (listed as flaky in controls.json), not unproven; one
            # that is wrong twice is not proven.
            first = {k: setups[side][k] for k in ("verdict", "reason", "pcap")}
            r = control_session.run(c, p, fault=fault, setup=f"control-{side}-retry")
            setups[side].update(verdict=r.verdict, reason=r.reason, pcap=r.evidence.get("pcap"),
                                duration_s=round(setups[side]["duration_s"] + r.duration_s, 3), first_attempt=first)
    proven = setups["pass"]["verdict"] == "PASS" and setups["fail"]["verdict"] == "FAIL"
    flaky = [side for side in setups if "first_attempt" in setups[side]]
    controls_sink({**entry, "status": "proven" if proven else "not_proven", "pass_setup": setups["pass"],
                   "fail_setup": setups["fail"], **({"flaky_sides": flaky} if flaky else {})})
    assert setups["pass"]["verdict"] == "PASS", f"PASS side ({setups['pass']['setup']}): {setups['pass']['reason']}"
    assert setups["fail"]["verdict"] == "FAIL", f"FAIL side ({setups['fail']['setup']}): {setups['fail']['reason']}"


def _fault_reason(name):
    if not name:
        return None
    from v6gate.lab.faults import get_fault

    return get_fault(name).reason


@pytest.fixture(scope="session")
def controls_sink(controls_run_dir):
    path = controls_run_dir / "records" / f"controls-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(entry):
        entry["proven_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    return write
