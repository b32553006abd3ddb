"""A DUT that dies, comes back, or is not there at all (core/liveness.py),
with the lab's Linux kernel as an external DUT behind the lab's TAP:

* it dies on a given packet (an RA whose Prefix Information option says
  prefix length 129, as two real stacks did): that part FAILs for it, every
  later part is NOT_JUDGED ``dut-alive`` judged by it, the run exits 1 with
  one line saying so, within 60 s of the death;
* it dies on that packet and comes back by itself: that part FAILs, the
  later parts are judged as usual;
* it is not on the link: one line, exit 3, within 15 s, nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import yaml

from v6gate.lab import registry
from v6gate.paths import ROOT

from conftest import load_results, run_dir_from, v6gate
from tap_relay import Crash, TapGuest

GUEST_MAC = "52:54:00:ab:cd:03"
KILLER = "slaac.prefix_option_processing#E"  # "prefix length > 128 bits": an RA with a /129 PIO
#: the killer's check and the one after it (v6LC.3.2.4, then 3.2.5; the lasting parts J, B and D run last)
CHECKS = ["slaac.prefix_option_processing", "slaac.two_hour_rule"]
#: how long after the death the run must have ended (the issue's must-show)
END_WITHIN_S = 60.0


def _args(ids):
    return [a for c in ids for a in ("--check", c)]


def _run_against(name: str, fault: Crash | None, ids: list[str], *, mac: str = GUEST_MAC, extra: tuple = ()):
    """A TAP lab with a Linux guest behind the relay (``fault`` in it), a run of
    ``ids`` against it; returns (completed process, seconds it took, the time
    it ended, results or None)."""
    up = v6gate("lab", "up", "--name", name, "--tap", "tap0", "--dut-mac", GUEST_MAC, "--json", check=True)
    info = json.loads(up.stdout)
    guest = TapGuest(info["tap"]["netns"], "tap0", f"v6g{name}-guest", GUEST_MAC, fault=fault)
    try:
        guest.start()
        target = yaml.safe_load(open(info["target_file"]))
        target["dut"]["mac"] = mac
        path = info["target_file"].replace(".yaml", "-live.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(target, f)
        t0 = time.monotonic()
        cp = subprocess.run([sys.executable, "-m", "v6gate.cli", "run", "--target", path, "-n", "0", "--no-gates",
                             *extra, *_args(ids)], capture_output=True, text=True, timeout=900, cwd=ROOT)
        ended = time.monotonic()
        try:
            doc = load_results(run_dir_from(cp.stdout))
        except AssertionError:
            doc = None
    finally:
        guest.stop()
        v6gate("lab", "down", name, check=True)
    assert not [n for n in registry.our_namespaces() if n.startswith(f"v6g{name}")]
    return cp, ended - t0, ended, doc


def _by_key(doc):
    return {f"{c['id']}#{c['part']}": c for c in doc["checks"]}


def test_a_dut_that_dies_on_a_packet_is_one_fail_and_the_run_ends():
    crash = Crash()
    cp, took, ended, doc = _run_against("lvd", crash, CHECKS)
    assert crash.died_at is not None, "the killer packet never reached the guest"
    by = _by_key(doc)
    order = [f"{c['id']}#{c['part']}" for c in sorted(doc["checks"], key=lambda c: c["started"])]
    fails = {k: c for k, c in by.items() if c["verdict"] == "FAIL"}
    assert set(fails) == {KILLER}, {k: c["reason"][:300] for k, c in fails.items()}
    reason = fails[KILLER]["reason"]
    assert "the DUT stopped answering after this part's packets (RA with prefix length 129" in reason, reason
    after = order[order.index(KILLER) + 1:]
    assert after, order
    for k in after:
        c = by[k]
        assert c["verdict"] == "NOT_JUDGED", (k, c["verdict"], c["reason"][:300])
        assert c["precondition"]["name"] == "dut-alive" and c["precondition"]["judged_by"] == KILLER, c["precondition"]
    before = order[:order.index(KILLER)]
    assert all(by[k]["verdict"] in ("PASS", "SKIP") for k in before), {k: by[k]["verdict"] for k in before}
    assert cp.returncode == 1, cp.stdout + cp.stderr
    lines = [line for line in cp.stdout.splitlines() if line.startswith("v6gate: the DUT stopped answering")]
    assert len(lines) == 1 and "not judged (dut-alive)" in lines[0], cp.stdout
    since_death = ended - crash.died_at
    print(f"death to the run's end: {since_death:.1f} s (run {took:.1f} s); {len(after)} parts not judged; "
          f"{lines[0]}")
    assert since_death < END_WITHIN_S, f"the run ended {since_death:.1f} s after the DUT died"


def test_a_dut_that_comes_back_fails_that_part_and_the_run_goes_on():
    crash = Crash(back_after=15.0)
    cp, _took, _, doc = _run_against("lvb", crash, CHECKS)
    assert crash.died_at is not None
    by = _by_key(doc)
    fails = {k for k, c in by.items() if c["verdict"] == "FAIL"}
    assert fails == {KILLER}, {k: by[k]["reason"][:300] for k in fails}
    assert "stopped answering after this part's packets" in by[KILLER]["reason"]
    assert not [k for k, c in by.items() if c["verdict"] in ("NOT_JUDGED", "ERROR")], \
        {k: c["reason"][:200] for k, c in by.items() if c["verdict"] in ("NOT_JUDGED", "ERROR")}
    assert any("answers again" in line for line in by[KILLER]["timeline"]), by[KILLER]["timeline"]
    assert cp.returncode == 1, cp.stdout + cp.stderr


def test_an_absent_dut_is_one_line_and_nothing_runs():
    cp, took, _, doc = _run_against("lva", None, CHECKS, mac="52:54:00:ab:cd:99")
    assert cp.returncode == 3, cp.stdout + cp.stderr
    out = [line for line in (cp.stdout + cp.stderr).splitlines() if line.strip()]
    assert len(out) == 1, out
    assert "is not on the link" in out[0] and "tester.interface and dut.mac" in out[0], out
    assert doc is None
    print(f"absent DUT: {took:.1f} s: {out[0]}")
    assert took < 15.0, f"{took:.1f} s"
