"""Gate profiles, pairings and parsers: the data validates, bad data gets a
one-line error naming the field, and the tools' outputs parse."""

import math
import random

import pytest
import yaml

from v6gate.core.check import all_items, load_all
from v6gate.core.verdict import Result
from v6gate.errors import UsageError
from v6gate.gates import profiles as P
from v6gate.gates.bench import parse_ethtool_k
from v6gate.gates.calibrate import summarize, what_would_meet
from v6gate.gates.engine import Budget, Measure, Metric, PairedComparison
from v6gate.gates.workloads.ethtool_parity import parity_problems
from v6gate.gates.workloads.qperf import parse_qperf
from v6gate.report.gates import (
    numbers_table,
    pairings_document,
    ratio_plot,
    render_gate,
    sweep_plot,
    trials_plot,
)


def test_shipped_profiles_load_and_every_gate_variant_is_a_check_part():
    profs = P.load_profiles()
    load_all()
    gates = {c.id: c for c, _ in all_items(profile="full", kind="gate")}
    parts = {(c.id, p.letter) for c, p in all_items(profile="full", kind="gate")}
    assert len(gates) >= 10
    labels = {(g, v) for g, vs in profs.items() for v in vs}
    assert len(parts) == len(labels)
    default = [(c.id, p.letter) for c, p in all_items(profile="default", kind="gate")]
    assert 5 <= len(default) <= 10, "the default run keeps a small representative set of gates"


def test_seed_matrix_is_complete():
    profs = P.load_profiles()
    for g in ("str", "rr", "crr"):
        assert {(v.params["pairs"], v.mtu) for v in profs[g].values()} == {
            (n, m) for n in (1, 10, 20, 50) for m in (1500, 9000)}
    assert profs["stream_16k"]["-"].metrics[0].margin == 0.025
    assert profs["stream_16k"]["-"].params == {"mode": "str", "req": 20, "resp": 20000000, "pairs": 1,
                                               "sockbuf": 262144, "chunk": 16384, "interleave": "slices",
                                               "slice_s": 0.01}
    assert profs["sweep"]["tcp_bw"].params["sizes"] == [2 ** k for k in range(2, 16)]
    assert {v.family for v in profs["offload"].values()} == {"v4", "v6"}


def test_pairings_name_existing_gates_and_cover_every_area():
    """Each gate names its areas in its profile; the pairing is derived from them (a gate whose variants all
    pair with an area as its check id, one that pairs only in some variants as id#variant)."""
    pairs = P.pairings()
    assert {"icmpv6", "ipv6", "pmtu", "nd", "redirect", "rd", "slaac", "mld", "addrarch", "rdnss", "dhcpv6",
            "v6only"} <= set(pairs)
    gates = {c.id for c in load_all().values() if c.kind == "gate"}
    for area, spec in pairs.items():
        assert spec["gates"] and spec["why"], area
        assert all(g.split("#")[0] in gates for g in spec["gates"]), area
    assert set(pairs["pmtu"]["gates"]) == {"perf.ipv6_streaming_is_not_slower_than_ipv4#1x9000",
                                           "perf.ipv6_payload_sweep_is_not_slower_than_ipv4#udp_bw"}
    assert "perf.ipv6_streaming_is_not_slower_than_ipv4" in pairs["ipv6"]["gates"]


def test_pairing_status_says_whether_the_area_is_built():
    """``status: present`` for an area whose checks exist in this tree, ``planned`` only for one being built
    (issue 34: eleven built areas were still labelled planned)."""
    built = {c.area for c in load_all().values() if c.kind != "gate"}
    wrong = {a: s["status"] for a, s in P.pairings().items() if (s["status"] == "present") != (a in built)}
    assert not wrong, wrong


def _write(tmp_path, doc):
    p = tmp_path / "profiles.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


BASE = {"workload": "iperf3", "compare": "family", "metrics": ["throughput"], "params": {"parallel": 1}}


@pytest.mark.parametrize("change,needle", [
    ({"workload": "netperf"}, "workload: 'netperf' is not a workload"),
    ({"compare": "target"}, "compare: 'target' does not fit workload iperf3"),
    ({"metrics": ["latency"]}, "'latency' is not measured by workload iperf3"),
    ({"margin": 3}, "margin: 3 is out of range"),
    ({"method": "anova"}, "method: 'anova' is not an interval method"),
    ({"params": {"parallel": 1, "zerocopy": True}}, "params: unknown ['zerocopy']"),
    ({"budget": {"min_pairs": 3, "max_pairs": 5}}, "can never reach 0.95"),
    ({"budget": {"min_pairs": 10, "max_pairs": 8}}, "max_pairs 8 < min_pairs 10"),
    ({"colour": "red"}, "unknown fields ['colour']"),
    ({"profile": "nightly"}, "'nightly' is not a run profile"),
    ({"disturbance": {"max_steel": 1}}, "disturbance: unknown ['max_steel']"),
    ({"reference": "mss"}, "reference: 'mss'"),
    ({"compare": "offload", "family": "v6", "reference": "header_overhead"}, "on a family or exthdr comparison only"),
    ({"probe": {"pairs": 2}}, "probe.pairs: 2 A/A pairs give no spread"),
    ({"probe": {"pairs": 5, "cap_pairs": 10}}, "the cap (10 pairs"),
    ({"probe": {"pairs": 5, "colour": 1}}, "probe: unknown ['colour']"),
    ({"probe": {"pairs": "five"}}, "probe.pairs: 'five' is not an integer"),
])
def test_bad_profile_data_gets_a_one_line_error(tmp_path, change, needle):
    path = _write(tmp_path, {"gates": {"g": {**BASE, **change}}})
    with pytest.raises(UsageError) as e:
        P.load_profiles(path)
    msg = str(e.value)
    assert needle in msg and "\n" not in msg and str(path) in msg and "gates.g" in msg


def test_variants_merge_over_the_gate_and_defaults(tmp_path):
    path = _write(tmp_path, {"defaults": {"margin": 0.05, "budget": {"max_seconds": 99}},
                             "gates": {"g": {**BASE, "budget": {"max_pairs": 12},
                                             "variants": {"a": {"params": {"window": 1000}}, "b": {"margin": 0.01}}}}})
    g = P.load_profiles(path)["g"]
    assert g["a"].params == {"parallel": 1, "window": 1000}
    assert g["a"].metrics[0].margin == 0.05 and g["b"].metrics[0].margin == 0.01
    assert g["a"].budget.max_pairs == 12 and g["a"].budget.max_seconds == 99


def test_bad_pairing_says_what_to_write(tmp_path):
    p = tmp_path / "pairings.yaml"
    p.write_text("pairings:\n  nd: {gates: [perf.nope], why: x}\n")
    with pytest.raises(UsageError, match=r"pairings\.nd\.gates: a gate names its areas itself; write areas: \[nd\]"):
        P.load_pairings(p)
    p.write_text("pairings:\n  nd: {status: present}\n")
    with pytest.raises(UsageError, match="why: missing"):
        P.load_pairings(p)
    p.write_text(P.PAIRINGS_FILE.read_text() + "  esp: {why: y}\n")
    with pytest.raises(UsageError, match=r"pairings\.esp: no gate names this area"):
        P.pairings(p)
    p.write_text("pairings:\n  esp: {why: y}\n")
    with pytest.raises(UsageError, match=r"gates\.\w+\.areas: '\w+' is not an area of pairings\.yaml"):
        P.pairings(p)


def test_qperf_output_parses_into_MBps_and_us():
    text = "tcp_bw:\n    bw        =  1.21 GB/sec\nudp_bw:\n    send_bw  =  18.1 MB/sec\n    recv_bw  =  850 KB/sec\n" \
           "tcp_lat:\n    latency  =  11.7 us\n    msg_size  =  1 KiB (1,024)\n"
    v = parse_qperf(text)
    assert v["bw"] == pytest.approx(1210) and v["recv_bw"] == pytest.approx(0.85) and v["latency"] == 11.7
    assert parse_qperf("tcp_lat:\n    latency = 2.5 ms\n")["latency"] == 2500


def test_ethtool_parity():
    feats = parse_ethtool_k("Features for eth0:\nrx-checksumming: on\ntx-checksumming: on\n"
                            "\ttx-checksum-ipv4: off [fixed]\n\ttx-checksum-ip-generic: on\n"
                            "\ttx-checksum-ipv6: off [fixed]\ntcp-segmentation-offload: on\n"
                            "\ttx-tcp-segmentation: on\n\ttx-tcp6-segmentation: off\n")
    assert feats["tx-tcp6-segmentation"] == "off" and feats["tx-checksum-ipv4"] == "off [fixed]"
    pairs = [["tx-checksum-ipv4", "tx-checksum-ipv6"], ["tx-tcp-segmentation", "tx-tcp6-segmentation"]]
    problems, _facts = parity_problems(feats, pairs)
    assert problems == ["tx-tcp-segmentation is on but tx-tcp6-segmentation is off (off)"]
    feats["tx-tcp6-segmentation"] = "on"
    assert parity_problems(feats, pairs)[0] == []


def _decision(ratio=0.9):
    rng = random.Random(2)
    clock = {"t": 0.0}

    def measure(arm):
        clock["t"] += 2
        return Measure({"throughput": 100 * rng.lognormvariate(0, 0.02) * (ratio if arm == "v6" else 1)}, 2.0)

    from v6gate.gates import disturbance as D

    mon = lambda: D.CpuSnapshot(clock["t"], clock["t"], 0, 0, 1)  # noqa: E731
    return PairedComparison(arms=("v4", "v6"), metrics=[Metric("throughput", "MB/s", True, 0.03)], measure=measure,
                            budget=Budget(6, 20, 500, 5), monitor=mon, clock=lambda: clock["t"]).run()


def test_report_renders_plots_and_numbers_for_a_gate():
    dec = _decision().as_dict()
    assert dec["verdict"] == "FAIL"
    assert trials_plot(dec, "throughput", "MB/s").startswith("<svg") and "circle" in trials_plot(dec, "throughput", "MB/s")
    rp = ratio_plot(dec, "throughput")
    assert "threshold 0.970" in rp
    t = numbers_table(dec)
    assert "FAIL" in t and "%" in t
    html = render_gate({"measurements": {"decision": dec, "gate": {"workload": "iperf3"},
                                         "facts": {"client": {"ethtool_k": {"tso": "on"}}, "dut": {}}}}, None)
    assert html.count("<svg") == 2 and "ethtool -k" in html
    sweep = {"4": dec, "8": dec}
    assert "polyline" in sweep_plot(sweep, "throughput", "MB/s")


def test_calibration_summary_and_what_would_meet():
    runs = [{"setup": "A/A", "verdict": "PASS", "traffic_s": 30, "pair_ratios": [1.0, 1.02, 0.99], "discarded_pairs": 1,
             "steal_fraction_median": 0.02, "steal_fraction_max": 0.05, "foreign_fraction_median": 0.3,
             "v6_median": 2000},
            {"setup": "handicap", "verdict": "FAIL", "traffic_s": 40, "pair_ratios": [0.93, 0.95, 0.94],
             "discarded_pairs": 0, "steal_fraction_median": 0.02, "steal_fraction_max": 0.04,
             "foreign_fraction_median": 0.3, "v6_median": 1880}]
    s = summarize(runs, 0.03)
    assert s["A/A"]["false_fail"]["count"] == 0 and s["handicap"]["detection"]["count"] == 1
    assert s["median_traffic_s_per_decision"] == 35
    assert s["effective_handicap"] == pytest.approx(0.94)
    assert s["targets"]["median_decision_within_60_s_of_traffic"]["met"]
    w = what_would_meet([1.0, 1.03, 0.98, 1.01], [0.93, 0.95, 0.94, 0.92], 0.03)
    assert w["A/A PASS"]["pairs_needed"] >= 6 and w["handicap FAIL"]["pairs_needed"] >= 6
    assert what_would_meet([0.9, 0.91, 0.92], [0.9, 0.91, 0.92], 0.03)["A/A PASS"]["pairs_needed"] is None
    assert not math.isnan(s["pair_ratio"]["A/A"]["sd_log"])


def test_probe_settings_merge_and_stay_off_where_there_is_no_a_a_pair(tmp_path):
    doc = {"defaults": {"probe": {"pairs": 5}},
           "gates": {"g": {**BASE, "probe": {"cap_pairs": 40, "what": "the stream"}},
                     "t": {"workload": "ns_to_na", "compare": "target", "metrics": ["time"], "target": 10}}}
    got = P.load_profiles(_write(tmp_path, doc))
    g = got["g"]["-"]
    assert (g.probe.pairs, g.probe.cap_pairs, g.probe_what) == (5, 40, "the stream")
    assert g.as_dict()["probe"]["cap_pairs"] == 40
    assert not got["t"]["-"].probe.enabled  # a target gate has no A/A pair


def test_pairing_lists_each_gate_verdict_once():
    """A gate of one part shows its verdict once ("PASS", not "-:PASS PASS"); a gate of parts shows each
    part ("1x1500:PASS") under its id, and a pairing that names one part (id#part) gets that part's verdict."""
    def gate(gid, part, verdict):
        return Result(id=gid, part=part, title="t", area="perf", ipv6ready=None, rfc="RFC 8200 §1", verdict=verdict,
                      reason="r", expected="x", seen="y", evidence={}, duration_s=1.0,
                      started="2026-01-01T00:00:00Z", kind="gate")

    doc = pairings_document([gate("perf.ns_to_na_latency_within_target", None, "PASS"),
                             gate("perf.ipv6_streaming_is_not_slower_than_ipv4", "1x1500", "PASS"),
                             gate("perf.ipv6_streaming_is_not_slower_than_ipv4", "1x9000", "INCONCLUSIVE")])
    nd = doc["nd"]["verdicts"]
    assert nd["perf.ns_to_na_latency_within_target"] == ["PASS"]
    assert doc["ipv6"]["verdicts"]["perf.ipv6_streaming_is_not_slower_than_ipv4"] == ["1x1500:PASS",
                                                                                      "1x9000:INCONCLUSIVE"]
    assert doc["pmtu"]["verdicts"]["perf.ipv6_streaming_is_not_slower_than_ipv4#1x9000"] == ["INCONCLUSIVE"]
