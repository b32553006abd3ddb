"""Controls: every check is proven both ways on the lab.

For each check part: one setup where the lab DUT conforms and the check
must PASS, one where it does not and the check must FAIL.

* Normally: the healthy lab (PASS) and the lab under the check's fault (FAIL).
* Where the lab's Linux deviates from the RFC (a waiver of the lab target,
  fixtures/deviations/linux/*.yaml): the healthy lab (FAIL, the deviation)
  and the lab under the waiver's corrective fault (PASS).

The FAIL must be the fault's: each fault declares what its FAIL says
(``fails_with``) or which counter it moves (``counter``); a FAIL for another
reason (a setup step that broke, an unrelated symptom) is not proven.

A side that gives the wrong outcome is run once more; if the second run is
right the part is proven but listed as flaky.  Every attempt is kept, with
the side's detection rate; each entry records the commit and a hash of the
check's source and faults it was proven with (stale entries: --controls-stale).

Results go to reports/controls.json (merged across xdist workers).
"""

import json
import os
import time

import pytest

from v6gate.core.check import all_items
from v6gate.core.session import Session
from v6gate.lab.faults import get_fault, stand_in_for
from v6gate.report import controls as proof

from conftest import claiming_target

CONTROLS_DIR = None


def _items(config):
    items = all_items(areas=config.getoption("--controls-area") or None, profile=config.getoption("--controls-profile"),
                      ids=config.getoption("--controls-check") or None, kind="check")
    if config.getoption("--controls-stale"):
        items = [(c, p) for c, p in items if _needs_proof(c, p)]
    return items


def _needs_proof(c, p) -> bool:
    """A part to (re-)prove: no entry, not proven, or stale (check or fault changed since)."""
    e = proof.recorded().get((c.id, p.letter))
    if e is None or e.get("status") == "not_proven":
        return True
    return proof.is_stale(e, {c.id: c}) is not None


def pytest_generate_tests(metafunc):
    if "control_item" in metafunc.fixturenames:
        items = _items(metafunc.config)
        metafunc.parametrize("control_item", items, ids=[f"{c.id}#{p.letter}" for c, p in items])


@pytest.fixture(scope="session")
def control_session(controls_run_dir):
    session = Session.for_lab(controls_run_dir)
    yield session
    session.close()


@pytest.fixture(scope="session")
def claiming_sessions(controls_run_dir):
    """Sessions on copies of the lab target that claim capabilities a simulated peer stands in for (one per set)."""
    made: dict[tuple, Session] = {}

    def get(capabilities) -> Session:
        key = tuple(sorted(capabilities))
        if key not in made:
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
            d = controls_run_dir / f"claiming-{worker}-{'-'.join(key)}"
            made[key] = Session.for_lab(d / "run", target_file=claiming_target(d, key))
        return made[key]

    yield get
    for s in made.values():
        s.close()


def test_check_is_proven_both_ways(control_item, control_session, claiming_sessions, controls_sink):
    c, p = control_item
    entry = {"id": c.id, "part": p.letter, "ipv6ready": c.ipv6ready_of(p), "rfc": c.rfc_of(p), "area": c.area,
             "title": c.title_of(p), "profile": c.profile_of(p)}
    session, stand_in = control_session, None
    why = session.applicability(c, p)
    if why:
        # a capability the lab DUT cannot claim, implemented by the project's own simulated peer: the part runs
        # against a copy of the lab target that claims it, both sides against that peer (labelled)
        unclaimed = [cap for cap in c.capabilities_of(p) if not session.target.claims(cap)]
        stand_in = stand_in_for(unclaimed)
        if stand_in is not None:
            session = claiming_sessions(unclaimed)
            why = session.applicability(c, p)
    if why:
        controls_sink({**entry, "status": "not_applicable", "reason": why})
        pytest.skip(f"not applicable to the lab DUT: {why}")
    waiver = session.target.waiver_for(c.id, p.letter)
    if waiver:
        pass_fault, fail_fault = waiver.corrective_fault, None
        entry["deviation"] = {"rfc": waiver.rfc, "observed": waiver.observed, "reason": waiver.reason}
    else:
        pass_fault, fail_fault = (stand_in.name if stand_in else None), c.fault_of(p)
    if stand_in is not None:
        entry["claimed_for_controls"] = list(stand_in.stands_in_for)
        if pass_fault == stand_in.name:
            entry["pass_side_proven_against"] = f"simulated peer: {stand_in.simulated_peer}"
    if not waiver and fail_fault is None:
        reason = c.uncontrollable_of(p) or "no fault declared"
        controls_sink({**entry, "status": "uncontrolled", "reason": reason})
        pytest.skip(f"cannot be made to FAIL in the lab: {reason}")
    entry.update(faults=[pass_fault, fail_fault], commit=proof.commit(),
                 source_hash=proof.source_hash(c, p, (pass_fault, fail_fault)))
    fault = get_fault(fail_fault) if fail_fault else None
    if fault is not None and fault.simulated_peer:
        entry["fail_side_proven_against"] = f"simulated peer: {fault.simulated_peer}"
    setups = {}
    for side, side_fault in (("pass", pass_fault), ("fail", fail_fault)):
        attempts = []
        # One more try after a wrong outcome (verdict or reason): both attempts are kept, and a side that is
        # right on the second is proven but listed as flaky; wrong twice is not proven.
        for n in (1, 2):
            r = session.run(c, p, fault=side_fault, setup=f"control-{side}" + ("-retry" if n > 1 else ""))
            a = proof.attempt_record(r)
            why_not = proof.judge_attempt(side, a, fault if side == "fail" else None)
            a["right"] = why_not is None
            if why_not:
                a["why_not"] = why_not
            attempts.append(a)
            if why_not is None:
                break
        last = attempts[-1]
        setups[side] = {"setup": f"fault:{side_fault}" if side_fault else "healthy lab",
                        "fault_reason": _fault_reason(side_fault), **{k: last[k] for k in ("verdict", "reason", "pcap")},
                        "duration_s": round(sum(a["duration_s"] or 0 for a in attempts), 3),
                        "right": last["right"], "detection_rate": proof.detection_rate(attempts),
                        "attempts": attempts}
        if not last["right"]:
            setups[side]["why_not"] = last["why_not"]
    proven = setups["pass"]["right"] and setups["fail"]["right"]
    flaky = [side for side in setups if len(setups[side]["attempts"]) > 1 and setups[side]["right"]]
    extra = {}
    if not proven and setups["pass"]["verdict"] == "PASS" and setups["fail"]["verdict"] == "FAIL":
        # the verdict words are right, the FAIL's reason is not: proven under the old rule only
        extra["wrong_reason"] = setups["fail"]["why_not"]
    controls_sink({**entry, "status": "proven" if proven else "not_proven", "pass_setup": setups["pass"],
                   "fail_setup": setups["fail"], **({"flaky_sides": flaky} if flaky else {}), **extra})
    assert setups["pass"]["right"], f"PASS side ({setups['pass']['setup']}): {setups['pass'].get('why_not')}: " \
                                    f"{setups['pass']['reason']}"
    assert setups["fail"]["right"], f"FAIL side ({setups['fail']['setup']}): {setups['fail'].get('why_not')}"


def _fault_reason(name):
    return get_fault(name).reason if name else None


@pytest.fixture(scope="session")
def controls_sink(controls_run_dir):
    path = controls_run_dir / "records" / f"controls-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(entry):
        entry["proven_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    return write
