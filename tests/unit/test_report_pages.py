"""The report's pages from results documents (no lab): triage order and
root-cause groups, autoescaping, the compliance matrix, the run-to-run diff,
the evidence manifest and bundle, and a synthetic run of 1,000 checks and
40 gates (its build time and page size are printed, not asserted: timing is
measured, never a unit test's verdict)."""

from __future__ import annotations

import copy
import json
import random
import time

import pytest

from v6gate.errors import UsageError
from v6gate.report import compliance, diff, manifest, triage
from v6gate.report.html import pages

AREAS = ["ipv6", "nd", "rd", "slaac", "icmpv6", "pmtu", "mld", "dhcpv6", "v6only", "rdnss"]
CAPS = {"nd": ["Core"], "ipv6": ["Core"], "icmpv6": ["Core"], "pmtu": ["Core"], "rd": ["Core"], "slaac": ["SLAAC"],
        "mld": ["MLDv2"], "dhcpv6": ["DHCPv6-Client"], "v6only": [], "rdnss": ["RDNSS"]}


def chk(cid="nd.check_x", part="A", verdict="PASS", **kw) -> dict:
    area = cid.split(".")[0]
    d = {"id": cid, "part": part, "title": f"title of {cid}", "area": area, "ipv6ready": "v6LC.2.1.8",
         "rfc": "RFC 4861 §7.2.3, RFC 4862 §5.4", "verdict": verdict, "reason": f"expected x; seen {verdict}",
         "expected": "an NA", "seen": f"seen {verdict}", "evidence": {"pcap": f"/nonexistent/{cid}-{part}.pcapng"},
         "duration_s": 0.5, "kind": "check", "capabilities": CAPS.get(area, []), "waived": False, "waiver": None,
         "timeline": ["+0.000s sent NS", "+0.100s waited"]}
    d.update(kw)
    return d


def gate(gid="perf.gate_x", verdict="PASS", estimate=0.99, low=0.975, high=1.01, n=20, seed=0) -> dict:
    rnd = random.Random(seed)
    trials = [{"pair": i // 2, "arm": ("v4", "v6")[i % 2], "position": i % 2,
               "values": {"throughput": 1000 + rnd.gauss(0, 30)}, "discarded": i == 3} for i in range(2 * n)]
    metrics = {"throughput": {"rule": "v6/v4 throughput ratio >= 0.970 (margin 3%)", "margin": 0.03, "threshold": 0.97,
                              "interval": {"estimate": estimate, "low": low, "high": high}, "status": verdict,
                              "delta_pct": {"estimate": (estimate - 1) * 100, "low": (low - 1) * 100,
                                            "high": (high - 1) * 100}}}
    return chk(gid, None, verdict, kind="gate", ipv6ready=None, rfc="RFC 8200 §1 (performance)", capabilities=[],
               measurements={"decision": {"arms": ["v4", "v6"], "trials": trials, "metrics": metrics, "kept": 2 * n - 1,
                                          "discarded": 1, "traffic_s": 40, "wall_s": 60, "confidence": 0.95,
                                          "method": "bca", "stop": "budget"}})


def document(checks, caps=("Core", "SLAAC", "MLDv2", "DHCPv6-Client", "PMTUD", "IPv6-Only")) -> dict:
    counts = {v: sum(c["verdict"] == v for c in checks) for v in ("PASS", "FAIL", "SKIP", "ERROR", "INCONCLUSIVE")}
    return {"schema": "v6gate/results/1",
            "run": {"id": "r1", "started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:10:00Z",
                    "target": {"name": "dut-1", "kind": "host", "capabilities": list(caps), "dut_mac": "02:00:00:00:00:02"},
                    "profile": "default", "tool": {"v6gate": "0.1.0"}, "host": {}},
            "summary": {"counts": counts, "waived": [], "new_failures": [], "fixed": [], "errors": [],
                        "inconclusive": [], "missing": [], "exit_code": 1},
            "checks": checks}


def faulty() -> dict:
    pre = {"name": "nce:TN1", "judged_by": "nd.address_resolution#A", "detail": "no NA for TN1's NS within 3 s"}
    return document([
        chk("nd.address_resolution", "A", "FAIL", problems=["no NA within 3 s"], seen="no NA within 3 s"),
        chk("nd.dependant_one", "A", "NOT_JUDGED", precondition=pre),
        chk("nd.dependant_two", "B", "NOT_JUDGED", precondition=pre),
        chk("icmpv6.echo", "A", "FAIL", seen="no Echo Reply within 1 s"),
        chk("icmpv6.echo", "B", "FAIL", seen="no Echo Reply within 1.5 s"),
        chk("icmpv6.hop", "A", "FAIL", seen="hop limit 254, not 255 <script>alert(1)</script>"),
        chk("slaac.dad", "A", "ERROR", seen="tester capture broke"),
        chk("slaac.ok", "A", "PASS"),
        chk("mld.report", "A", "FAIL", waived=True, waiver={"reason": "documented deviation"}),
        chk("pmtu.skip", "A", "SKIP"),
        gate("perf.gate_inc", "INCONCLUSIVE", 0.98, 0.95, 1.01),
        gate("perf.gate_ok", "PASS"),
    ])


def test_triage_groups_dependants_under_their_precondition_and_same_problems_together():
    view = triage.build(faulty())
    areas = [a["area"] for a in view["areas"]]
    assert areas[:2] == ["icmpv6", "nd"] and areas[-1] == "perf", areas  # FAIL areas first, the gate last
    nd = next(a for a in view["areas"] if a["area"] == "nd")
    (g,) = nd["groups"]
    assert triage.key(g["head"]) == "nd.address_resolution#A" and g["verdict"] == "FAIL"
    assert [triage.key(c) for c in g["members"]] == ["nd.dependant_one#A", "nd.dependant_two#B"]
    assert "nce:TN1" in g["cause"] and "no NA for TN1" in g["cause"]
    icmp = next(a for a in view["areas"] if a["area"] == "icmpv6")
    sizes = sorted(len(g["members"]) for g in icmp["groups"])
    assert sizes == [1, 2], "the two 'no Echo Reply within N s' parts are one root cause"
    assert [triage.key(c) for c in view["known"]] == ["mld.report#A"]
    assert {triage.key(c) for c in view["rest"]} == {"slaac.ok#A", "pmtu.skip#A"}
    assert [c["id"] for c in view["gates"]] == ["perf.gate_ok"]
    assert view["attention"] == 8


def test_pages_escape_what_the_dut_sent_and_link_the_pieces(tmp_path):
    out = pages(faulty(), tmp_path, dissect=False)
    html = out["report.html"]
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.index("nd.address_resolution#A") < html.index('id=rest')
    assert html.index("icmpv6.echo#A") < html.index("slaac.ok#A")
    assert "raw samples (40 trials" in html and html.count("<s>") == 2 * 2, "every sample visible (2 gates: legend + 1 discarded)"
    assert "<svg" not in html or "</svg>" in html
    assert set(out) == {"report.html", "compliance.html"}
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "") and "https://" not in html, "no CDN"


def test_compliance_statuses():
    m = compliance.matrix(faulty())
    rows = {r["capability"]: r for r in m["rows"]}
    assert rows["Core"]["status"] == "not supported" and rows["Core"]["counts"]["FAIL"] == 4
    assert rows["Core"]["counts"]["NOT_JUDGED"] == 2 and rows["Core"]["counts"]["SKIP"] == 1
    assert rows["SLAAC"]["status"] == "not demonstrated" and rows["SLAAC"]["counts"]["ERROR"] == 1
    assert rows["MLDv2"]["status"] == "not demonstrated" and rows["MLDv2"]["counts"]["waived"] == 1
    assert rows["DHCPv6-Client"]["status"] == "not demonstrated" and rows["DHCPv6-Client"]["why"].startswith("no test")
    assert rows["Performance"]["status"] == "not claimed"
    csv = compliance.to_csv(m).splitlines()
    assert csv[0].startswith("target,capability,claimed,status,PASS,FAIL,waived,SKIP,NOT_JUDGED,ERROR")
    assert any(line.startswith("dut-1,Core,yes,not supported,") for line in csv)
    good = document([chk("slaac.ok", "A", "PASS"), chk("slaac.dev", "B", "FAIL", waived=True)], caps=["SLAAC"])
    (row,) = compliance.matrix(good)["rows"][:1]
    assert row["status"] == "supported" and "1 waived deviation" in row["why"]


def test_diff_newly_failing_fixed_reason_changed_moved_gates_and_exit_codes():
    old = faulty()
    new = copy.deepcopy(old)
    by = {triage.key(c): c for c in new["checks"]}
    by["slaac.ok#A"].update(verdict="FAIL", seen="address not formed")
    by["icmpv6.hop#A"].update(verdict="PASS")
    by["icmpv6.echo#A"].update(seen="Echo Reply with wrong identifier")
    by["perf.gate_ok"]["measurements"]["decision"]["metrics"]["throughput"]["interval"] = {
        "estimate": 0.90, "low": 0.88, "high": 0.92}
    d = diff.compare(old, new)
    assert [r["key"] for r in d["newly_failing"]] == ["slaac.ok#A"]
    assert [r["key"] for r in d["fixed"]] == ["icmpv6.hop#A"]
    assert [r["key"] for r in d["reason_changed"]] == ["icmpv6.echo#A"]
    assert [(g["key"], g["disjoint"]) for g in d["gates_moved"]] == [("perf.gate_ok", True)]
    assert d["exit_code"] == diff.EXIT_NEW_FAIL
    assert diff.compare(old, copy.deepcopy(old))["exit_code"] == diff.EXIT_SAME
    by["slaac.ok#A"].update(verdict="ERROR")
    assert diff.compare(old, new)["exit_code"] == diff.EXIT_UNDECIDED
    assert "Newly failing" in pages(new, __import__("pathlib").Path("/tmp"), baseline_doc=old, dissect=False)["diff.html"]


@pytest.mark.parametrize("content", ["not json", '{"schema": "other", "checks": []}', "[]"])
def test_diff_rejects_what_is_not_a_results_file(tmp_path, content):
    (tmp_path / "results.json").write_text(content)
    with pytest.raises(UsageError, match=r"results\.json"):
        diff.load(tmp_path)
    with pytest.raises(UsageError, match="not a run directory"):
        diff.load(tmp_path / "nope")


def _run_dir(tmp_path):
    d = tmp_path / "run"
    (d / "pcap").mkdir(parents=True)
    (d / "records").mkdir()
    for name in ("results.json", "junit.xml", "report.html", "compliance.csv"):
        (d / name).write_text(name)
    for i in range(3):
        (d / "pcap" / f"p{i}.pcapng").write_bytes(bytes([i]) * 100)
    (d / "records" / "checks-main.jsonl").write_text("working file, not evidence")
    manifest.write(d)
    return d


def test_manifest_lists_evidence_and_verify_names_each_changed_missing_and_extra_file(tmp_path):
    d = _run_dir(tmp_path)
    text = (d / "MANIFEST.sha256").read_text()
    assert [line.split("  ")[1] for line in text.splitlines()] == [
        "compliance.csv", "junit.xml", "pcap/p0.pcapng", "pcap/p1.pcapng", "pcap/p2.pcapng", "report.html",
        "results.json"]
    assert manifest.verify(d) == {"changed": [], "missing": [], "extra": [], "ok": manifest.covered(d)}
    (d / "pcap" / "p1.pcapng").write_bytes(b"tampered")
    (d / "junit.xml").unlink()
    (d / "pcap" / "new.pcapng").write_bytes(b"x")
    (d / "records" / "more.jsonl").write_text("ignored")
    r = manifest.verify(d)
    assert (r["changed"], r["missing"], r["extra"]) == (["pcap/p1.pcapng"], ["junit.xml"], ["pcap/new.pcapng"])


def test_manifest_bad_input_is_one_clear_error(tmp_path):
    with pytest.raises(UsageError, match="not a directory"):
        manifest.verify(tmp_path / "nope")
    with pytest.raises(UsageError, match=r"no MANIFEST\.sha256"):
        manifest.verify(tmp_path)
    (tmp_path / "MANIFEST.sha256").write_text("deadbeef  results.json\n")
    with pytest.raises(UsageError, match="line 1"):
        manifest.verify(tmp_path)
    (tmp_path / "MANIFEST.sha256").write_text(f"{'0' * 64}  ../etc/passwd\n")
    with pytest.raises(UsageError, match="leaves the run directory"):
        manifest.verify(tmp_path)


def test_bundle_is_deterministic_and_its_manifest_verifies(tmp_path):
    d = _run_dir(tmp_path)
    a, check = manifest.bundle(d, tmp_path / "a.tar.gz")
    assert not check["changed"]
    time.sleep(1.1)  # a different mtime must not change the bytes
    (d / "results.json").touch()
    b, _ = manifest.bundle(d, tmp_path / "b.tar.gz")
    assert a.read_bytes() == b.read_bytes()
    r = manifest.verify_bundle(a)
    assert len(r["ok"]) == 7 and not (r["changed"] or r["missing"] or r["extra"])
    (d / "report.html").write_text("changed after the run")
    out, check = manifest.bundle(d, tmp_path / "c.tar.gz")
    assert not out.name and check["changed"] == ["report.html"] and not (tmp_path / "c.tar.gz").exists()


def synthetic(n_checks=1000, n_gates=40, seed=1) -> dict:
    """A run of n_checks parts over ten areas (about 8 % FAIL, 2 % ERROR, 3 % NOT_JUDGED, 5 % SKIP) and n_gates gates."""
    rnd = random.Random(seed)
    checks = []
    for i in range(n_checks):
        area = AREAS[i % len(AREAS)]
        x = rnd.random()
        v = "FAIL" if x < 0.08 else "ERROR" if x < 0.10 else "NOT_JUDGED" if x < 0.13 else "SKIP" if x < 0.18 else "PASS"
        extra = {}
        if v == "NOT_JUDGED":
            extra["precondition"] = {"name": "nce:TN1", "judged_by": f"{area}.check_{i % 7}#A", "detail": "no NA"}
        if v == "FAIL":
            extra["seen"] = rnd.choice(["no reply within 1 s", f"hop limit {rnd.randint(1, 254)}, not 255",
                                        "checksum wrong"])
        checks.append(chk(f"{area}.check_{i // 30}", f"P{i}", v, timeline=[f"+{j * 0.1:.3f}s step {j}" for j in range(8)],
                          **extra))
    for g in range(n_gates):
        v = rnd.choice(["PASS", "PASS", "INCONCLUSIVE", "FAIL"])
        checks.append(gate(f"perf.gate_{g}", v, 0.98, 0.96, 1.0, seed=g))
    return document(checks)


def test_a_run_of_1000_checks_and_40_gates_renders(tmp_path):
    doc = synthetic()
    t0 = time.monotonic()
    out = pages(doc, tmp_path, dissect=False)
    build = time.monotonic() - t0
    size = len(out["report.html"].encode())
    print(f"\n1000 checks + 40 gates: report built in {build:.2f} s, report.html {size / 1e6:.2f} MB, "
          f"compliance.html {len(out['compliance.html']) / 1e3:.1f} kB")
    html = out["report.html"]
    assert html.count('<details class="chk ') == 1040
    assert json.dumps(compliance.matrix(doc))  # serializable



def test_cli_exit_codes_of_verify_bundle_and_diff(tmp_path, capsys):
    from v6gate.cli import main

    d = _run_dir(tmp_path)
    assert main(["verify", str(d)]) == 0
    assert main(["bundle", str(d), "-o", str(tmp_path / "b.tar.gz")]) == 0
    assert main(["verify", str(tmp_path / "b.tar.gz")]) == 0
    (d / "results.json").write_text("changed")
    assert main(["verify", str(d)]) == 1
    assert "changed: results.json" in capsys.readouterr().out
    assert main(["bundle", str(d)]) == 1
    for argv in (["verify", str(tmp_path / "nope")], ["diff", str(tmp_path / "nope"), str(d)]):
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and err.count("\n") == 1, err
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    doc = faulty()
    old.write_text(json.dumps(doc))
    doc["checks"][7]["verdict"] = "FAIL"
    new.write_text(json.dumps(doc))
    assert main(["diff", str(old), str(new)]) == 1
    assert main(["diff", str(old), str(old), "--html", str(tmp_path / "d.html")]) == 0
    assert "Newly failing (0)" in (tmp_path / "d.html").read_text()


def test_dissection_picks_what_the_dut_sent_without_background():
    """tshark's view of a real capture: the DUT's frames (its MAC), MLD Reports left out outside the mld area,
    capture metadata and MAC bit fields dropped; with an unknown MAC, the last frames on the link."""
    from v6gate.paths import FIXTURES
    from v6gate.report.dissect import MAX_FRAMES, dissect

    pcap = str(FIXTURES / "captures" / "dad-skipped.pcapng")
    d = dissect(pcap, dut_mac="02:00:00:00:00:02", area="slaac")
    assert d["who"] == "DUT" and d["frames"]
    assert d["frames"][0]["summary"].split()[0] == "3" and "Router Solicitation" in d["frames"][0]["summary"]
    for f in d["frames"]:
        assert "Multicast Listener Report" not in f["summary"]
        assert f["detail"].startswith("Ethernet II, Src: 02:00:00:00:00:02")
        assert "Arrival Time" not in f["detail"] and "LG bit" not in f["detail"]
    mld = dissect(pcap, dut_mac="02:00:00:00:00:02", area="mld")
    assert "Multicast Listener Report" in mld["frames"][0]["summary"]
    none = dissect(pcap, dut_mac="02:00:00:00:00:99", area="slaac")
    assert none["who"] == "tester" and len(none["frames"]) == MAX_FRAMES and "sent nothing" in none["note"]
    assert dissect("/nonexistent.pcapng", dut_mac=None)["note"].endswith("is missing")


def test_a_performance_gate_is_its_own_capability_never_a_conformance_one_s():
    """An undecided (or failing) gate that runs on Core or SLAAC targets leaves those capabilities as their
    checks say; it counts for Performance, and for a capability that names it under checks (issue 34)."""
    inc = gate("perf.gate_inc", "INCONCLUSIVE", 0.98, 0.95, 1.01)
    inc["capabilities"] = ["Core", "SLAAC"]  # the targets it runs on
    bad = gate("perf.gate_bad", "FAIL", 0.90, 0.88, 0.92)
    bad["capabilities"] = ["Core"]
    he = gate("perf.happy_eyeballs_connects_within_rfc8305_delays", "INCONCLUSIVE")
    he["capabilities"] = ["Happy-Eyeballs"]
    doc = document([chk("nd.ok", "A", "PASS"), chk("slaac.ok", "A", "PASS"), inc, bad, he],
                   caps=("Core", "SLAAC", "Performance", "Happy-Eyeballs"))
    rows = {r["capability"]: r for r in compliance.matrix(doc)["rows"]}
    assert rows["Core"]["status"] == "supported" and rows["Core"]["parts"] == 1, rows["Core"]
    assert rows["SLAAC"]["status"] == "supported" and rows["SLAAC"]["parts"] == 1
    perf = rows["Performance"]
    assert perf["status"] == "not supported" and perf["parts"] == 3 and perf["failing"] == ["perf.gate_bad"]
    assert rows["Happy-Eyeballs"]["status"] == "not demonstrated" and rows["Happy-Eyeballs"]["parts"] == 1
    assert compliance.capabilities_of(inc) == ["Performance"]
