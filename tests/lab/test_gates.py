"""Performance gates on the lab, both ways (a gate's statistics are proven by
`v6gate calibrate`; this shows each short gate PASSes on the healthy lab and
FAILs under its fault, and that a throughput gate FAILs under the IPv6-only
throttle).  About a minute and a half on a quiet machine."""

import json
import os
import subprocess
import sys
import time

import pytest
import yaml

from v6gate.core.check import find
from v6gate.core.session import Session
from v6gate.gates.profiles import PROFILES_FILE
from v6gate.paths import ROOT

from conftest import run_dir_from

SHORT = ["perf.ns_to_na_latency_within_target", "perf.ra_to_usable_slaac_address_within_target",
         "perf.ipv6_offloads_match_ipv4_offloads", "perf.link_up_to_dhcpv6_lease_within_target",
         "perf.redirect_switches_first_hop_within_target", "perf.mld_join_is_reported_within_target",
         "perf.neighbour_churn_within_target", "perf.plpmtud_recovers_from_a_black_hole_within_target"]
STR = ("perf.ipv6_streaming_is_not_slower_than_ipv4", "1x1500")


@pytest.fixture(scope="module")
def gate_session(controls_run_dir):
    with Session.for_lab(controls_run_dir / "gates") as s:
        yield s


@pytest.fixture
def undisturbed_target_gates(tmp_path, monkeypatch):
    """The target gates with their disturbance policy off: this test proves
    the verdict both ways, not the policy (unit-tested in the engine), and
    the lab stage runs next to other labs, whose CPU would void the trials
    (INCONCLUSIVE: "more than N trials discarded as disturbed")."""
    from v6gate.gates import profiles as gate_profiles

    doc = yaml.safe_load(PROFILES_FILE.read_text())
    for name in ("ra_to_slaac", "ns_to_na", "dhcpv6_lease", "redirect_switch", "mld_join", "nd_churn",
                 "plpmtud_recovery"):
        doc["gates"][name]["disturbance"] = {"enabled": False}
    path = tmp_path / "undisturbed.yaml"
    path.write_text(yaml.safe_dump(doc))
    monkeypatch.setattr(gate_profiles, "_CACHE", gate_profiles.load_profiles(path))


def both_ways(session, check_id):
    """The gate's first part on the healthy lab, then under its fault: (check, healthy result, faulted result),
    asserted PASS and FAIL."""
    c = find(check_id)
    part = c.parts[0]
    ok = session.run(c, part, setup="gate-healthy")
    bad = session.run(c, part, fault=c.fault_of(part), setup="gate-fault")
    assert ok.verdict == "PASS", ok.reason
    assert bad.verdict == "FAIL", bad.reason
    return c, ok, bad


@pytest.mark.parametrize("check_id", SHORT)
def test_short_gate_passes_healthy_and_fails_under_its_fault(gate_session, check_id, undisturbed_target_gates):
    c, ok, _ = both_ways(gate_session, check_id)
    if c.kind == "gate" and "decision" in ok.measurements:
        assert ok.measurements["decision"]["trials"], "every sample is kept"


@pytest.mark.parametrize("check_id,variant,arms,metric", [
    (*STR, {"v4", "v6"}, "throughput"),
    ("perf.ipv6_tcp_stream_16k_is_within_2_5_percent_of_ipv4", None, {"v4", "v6"}, "throughput"),
    ("perf.destination_options_header_costs_within_margin", None, {"without", "with"}, "throughput"),
    ("perf.hop_by_hop_options_header_costs_within_margin", None, {"without", "with"}, "throughput"),
    ("perf.ipv6_fragment_reassembly_is_not_slower_than_ipv4", None, {"v4", "v6"}, "transactions")])
def test_throughput_gate_fails_under_its_handicap_and_keeps_its_samples(gate_session, check_id, variant, arms, metric):
    """Each paired gate FAILs under the fault that costs only its feature (a throttle of the IPv6 path, of
    the packets with its extension header, of IPv6 fragments), on a quiet or a loaded machine alike: the
    noise probe's look at the real arms sees a gross difference however noisy the machine is."""
    c = find(check_id)
    part = c.part(variant)
    bad = gate_session.run(c, part, fault=c.fault_of(part), setup="gate-fault")
    assert bad.verdict == "FAIL", bad.reason
    dec = bad.measurements["decision"]
    assert dec["metrics"][metric]["interval"]["high"] < 0.97
    assert {t["arm"] for t in dec["trials"]} == arms
    assert dec["probe"]["readings"], "the noise probe ran first"
    facts = bad.measurements["facts"]
    for end in ("client", "dut"):
        assert facts[end]["mtu"] == 1500 and facts[end]["kernel"] and facts[end]["ethtool_k"]
    assert f"{metric} ratio" in bad.reason


def test_throughput_gate_does_not_fail_on_the_healthy_lab(gate_session):
    """A/A in one run: PASS, or INCONCLUSIVE when the shared machine is too
    noisy to decide within the budget, never FAIL (calibration measures the
    rates)."""
    c = find(STR[0])
    ok = gate_session.run(c, c.part(STR[1]), setup="gate-healthy")
    assert ok.verdict in ("PASS", "INCONCLUSIVE"), ok.reason


def test_noise_probe_gives_up_within_10_s_on_a_machine_loaded_on_purpose(gate_session, monkeypatch, tmp_path):
    """Issue 34's must-show as a test: with CPU hogs on every CPU beside it (stress-ng, two per CPU), the
    16 KB stream gate's noise probe finds the per-pair spread wider than its 2.5 % margin can take within
    its cap, and the gate ends INCONCLUSIVE with one line, decided in under 10 s, without spending its budget.
    The cap is the gate's smallest budget (6 pairs, 15 s), not its default 30: how much noise stress-ng makes
    varies from run to run (±4.3 % to ±17 % per pair seen here); 30 pairs resolve ±4.3 % and the probe then
    rightly does not give up, 6 pairs resolve only about ±3 % or less, which a loaded 2-vCPU machine never
    showed.  The verdict still follows from the noise the probe measured."""
    from v6gate.gates import profiles as gate_profiles

    doc = yaml.safe_load(PROFILES_FILE.read_text())
    g = doc["gates"]["stream_16k"]
    g["budget"] = {"min_pairs": 6, "max_pairs": 6, "max_seconds": 15}
    g["probe"] = {**g.get("probe", {}), "cap_pairs": 6, "cap_seconds": 15}
    path = tmp_path / "capped.yaml"
    path.write_text(yaml.safe_dump(doc))
    monkeypatch.setattr(gate_profiles, "_CACHE", gate_profiles.load_profiles(path))
    c = find("perf.ipv6_tcp_stream_16k_is_within_2_5_percent_of_ipv4")
    hogs = subprocess.Popen(["stress-ng", "--cpu", str(2 * (os.cpu_count() or 1)), "--timeout", "60s", "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)  # the hogs running
        r = gate_session.run(c, c.parts[0], setup="gate-loaded")
    finally:
        hogs.terminate()
        hogs.wait(timeout=10)
    dec = r.measurements["decision"]
    line = dec["probe"]["line"]
    assert r.verdict == "INCONCLUSIVE", r.reason
    assert dec["probe"]["hopeless"] and dec["kept"] == 0 and not dec["trials"], line
    assert dec["probe"]["probe_seconds"] < 10, dec["probe"]["probe_seconds"]
    assert "\n" not in line and line.startswith("this machine's noise for the 16 KB stream is ±"), line
    assert "over the cap of" in line and line in r.reason


SMOKE = os.environ.get("V6GATE_GATE_SMOKE")


@pytest.mark.skipif(not SMOKE, reason="every gate variant end to end takes about 10 minutes: set V6GATE_GATE_SMOKE=1")
def test_every_gate_variant_runs_end_to_end(tmp_path):
    """All 36 gate parts (the full matrix) with a tiny budget (2 pairs, 1 s
    trials, t interval): no ERROR, every sample recorded, every MTU and
    offload restored.  The verdicts are INCONCLUSIVE or better by design of
    the budget; this proves the workloads, not the statistics."""
    doc = yaml.safe_load(PROFILES_FILE.read_text())
    doc["defaults"].update(trial_s=1.0, warmup_s=0.2, method="t",
                           budget={"min_pairs": 2, "max_pairs": 2, "max_seconds": 60, "max_discarded": 2})
    for g in doc["gates"].values():
        g.pop("budget", None)
        g.pop("trial_s", None)
        g.pop("method", None)
        g.pop("confidence", None)
        for v in (g.get("variants") or {}).values():
            if v:
                v.pop("budget", None)
                v.pop("trial_s", None)
    doc["gates"]["ra_to_slaac"]["budget"] = {"min_pairs": 6, "max_pairs": 6, "max_seconds": 30, "max_discarded": 2}
    doc["gates"]["ns_to_na"]["budget"] = {"min_pairs": 6, "max_pairs": 6, "max_seconds": 30, "max_discarded": 2}
    doc["gates"]["dhcpv6_lease"]["budget"] = {"min_pairs": 6, "max_pairs": 6, "max_seconds": 60, "max_discarded": 2}
    doc["gates"]["sweep"]["params"]["sizes"] = [4, 1024, 32768]
    path = tmp_path / "smoke.yaml"
    path.write_text(yaml.safe_dump(doc))
    cp = subprocess.run([sys.executable, "-m", "v6gate.cli", "run", "--area", "perf", "--profile", "full", "-n", "0"],
                        capture_output=True, text=True, timeout=1800, cwd=ROOT,
                        env={**os.environ, "V6GATE_GATE_PROFILES": str(path)})
    results = json.loads((run_dir_from(cp.stdout) / "results.json").read_text())
    bad = {f"{c['id']}#{c['part']}": c["reason"] for c in results["checks"] if c["verdict"] == "ERROR"}
    assert not bad, bad
    for c in results["checks"]:
        if c["verdict"] in ("PASS", "FAIL", "INCONCLUSIVE") and "decision" in c["measurements"]:
            assert c["measurements"]["decision"]["trials"]


STORAGE_OFFLOAD = [("perf.iscsi_offload_on_is_not_worse_than_off", "256k_read"),
                   ("perf.nfs_offload_on_is_not_worse_than_off", "64k_write")]


@pytest.mark.parametrize("check_id,variant", STORAGE_OFFLOAD, ids=[f"{c}#{v}" for c, v in STORAGE_OFFLOAD])
def test_storage_offload_gate_fails_when_large_segments_are_slow(gate_session, check_id, variant):
    """Storage I/O with offload on vs off (issue 11): under the large-segment handicap in both directions
    (reads: DUT to client; writes: client to DUT) the on arm is the slow one and the gate FAILs on MB/s;
    on the healthy lab it does not FAIL (offload on moves more MB/s at less CPU per MB here)."""
    c = find(check_id)
    part = c.part(variant)
    bad = gate_session.run(c, part, fault=c.fault_of(part), setup="gate-fault")
    assert bad.verdict == "FAIL", bad.reason
    dec = bad.measurements["decision"]
    # the handicap's size is the estimate; the interval's high end at the look that decided FAIL follows the
    # machine's noise (8 pairs at +-19 % per pair beside other labs: [.., 0.58] around an estimate of 0.33)
    tp = dec["metrics"]["throughput"]
    assert tp["interval"]["estimate"] < 0.5 and tp["interval"]["high"] < 0.97, tp
    assert "throughput" in dec["decided_by"]
    assert {t["arm"] for t in dec["trials"]} == {"on", "off"}
    raw = [t["raw"] for t in dec["trials"]]
    assert all(r["iops"] >= 0 and "client_cpu_pct" in r and "server_cpu_pct" in r for r in raw), raw[0]
    ok = gate_session.run(c, part, setup="gate-healthy")
    assert ok.verdict in ("PASS", "INCONCLUSIVE"), ok.reason


ESP = "perf.esp_ipv6_is_not_slower_than_esp_ipv4"


def test_esp_gate_passes_healthy_and_fails_under_the_ipv6_only_cost(gate_session):
    """The ESP gate (issue 29) on the lab's VM counting instructions (DUT configuration ipsec-vm-icount): PASS
    on the healthy VM, FAIL on throughput under its fault (IPv6-only nft rules in the VM), every window of the
    judged trials with the DUT saturated, and ESP's cost against plain IPv6 reported.  One VM boot for both
    (4 to 6 minutes together on this 2-vCPU machine under load 6-12)."""
    _, ok, bad = both_ways(gate_session, ESP)
    print(f"healthy: {ok.reason}\nunder the fault: {bad.reason}")  # the figures (pytest -rP shows them)
    assert "throughput ratio" in bad.reason
    assert bad.measurements["decision"]["metrics"]["throughput"]["interval"]["high"] < 0.97
    for r in (ok, bad):
        trials = r.measurements["decision"]["trials"]
        assert {t["arm"] for t in trials} == {"v4", "v6"}
        assert all(t["raw"]["busy_fraction"] >= 0.97 for t in trials if not t.get("discarded")), trials
        cost = r.measurements["esp_cost_vs_plain_ipv6"]
        assert cost["cpu_per_mb_ratio_esp_to_plain"] > 1, cost


def test_a_dead_ipv6_path_fails_the_family_gate_saying_what_the_dut_did(gate_session):
    """Issue 34: the DUT's IPv6 TCP dead (dut_ipv6_tcp_dead, an nft drop on its input) while IPv4 works: the
    STR gate FAILs on the pairs whose IPv6 arm moved nothing (each the worst ratio, engine.pair_log_ratio;
    the engine used to drop them, and v6gate-loadgen's failed connect was the bench's ERROR), and the reason
    leads with what the DUT did: IPv6 moved 0 bytes in every slice, its connect unanswered, while IPv4 moved
    its megabytes."""
    c = find(STR[0])
    bad = gate_session.run(c, c.part(STR[1]), fault="dut_ipv6_tcp_dead", setup="gate-ipv6-dead")
    assert bad.verdict == "FAIL", bad.reason
    dec = bad.measurements["decision"]
    k = dec["kept"]
    assert dec["nothing"]["throughput"] == {"metric": "throughput", "pairs": k, "of": k,
                                            "line": dec["nothing"]["throughput"]["line"]}
    assert f"; seen IPv6 moved nothing in {k} of {k} pairs: 0 bytes in " in bad.reason, bad.reason
    assert "slices that moved nothing; cannot connect to " in bad.reason and "no answer within 2 s" in bad.reason
    assert ", while IPv4 moved a median " in bad.reason and "MB in the same pairs" in bad.reason
    v4 = [t for t in dec["trials"] if t["arm"] == "v4" and t["pair"] >= 0]
    assert v4 and all(t["raw"]["bytes_rx"] > 0 and not t["raw"].get("error") for t in v4)
