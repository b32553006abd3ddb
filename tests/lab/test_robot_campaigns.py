"""The three Robot campaigns (suites/robot/precertification.robot,
ipv6only_audit.robot, release_gate.robot) on the lab, each on a small
selection: Robot's own output shows the same verdicts as results.json and
links the same pcaps; the audit campaign runs the passive audit of a
capture; the release gate fails on a new FAIL and passes when the previous
run (its baseline) already had that FAIL."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml
from test_robot import robot

from v6gate.core.target import absolute_file_refs
from v6gate.paths import FIXTURES, ROOT
from v6gate.report.results import all_checks

from conftest import load_results

#: a FAIL of the lab's Linux (a documented deviation, waived on the lab target)
DEVIATION = "pmtu.packet_too_big_not_matching_sent_traffic_is_ignored"
GATE = "perf.ns_to_na_latency_within_target"
#: the audited asset in the fixture captures (the lab DUT's MAC)
ASSET = "02:00:00:00:00:02"
#: the RDNSS parts that do not run dhcpcd (its DUT configuration needs /var/lib/dhcpcd on the host: issue 15)
RDNSS = "rdnss.advertised_resolver_is_used,rdnss.dns_options_expire"


def robot_verdicts(out_dir: Path) -> dict[str, tuple[str, str, str]]:
    """check key -> (Robot status, v6gate verdict tag, the pcap its log links)."""
    out = {}
    for t in ET.parse(out_dir / "output.xml").findall(".//suite/test"):
        kw = t.find("kw")
        if kw is None or not kw.findall("arg"):
            continue
        args = [a.text for a in kw.findall("arg")]
        key = args[0] + ("#" + args[1] if len(args) > 1 and args[1] not in ("None", "", None) else "")
        tags = [g.text for g in t.findall("tag")]
        verdict = next((g.split(":", 1)[1] for g in tags if g.startswith("verdict:")), "")
        links = [m for msg in t.iter("msg") for m in re.findall(r'href="file://([^"]+)">pcap<', msg.text or "")]
        out[key] = (t.find("status").get("status"), verdict, links[0] if links else "")
    return out


def same_as_results(out_dir: Path, run_dir: Path) -> dict:
    doc = load_results(run_dir)
    rv = robot_verdicts(out_dir)
    for c in doc["checks"]:
        k = f"{c['id']}{'#' + c['part'] if c['part'] else ''}"
        assert k in rv, f"{k} has no Robot test"
        assert rv[k][1] == c["verdict"], (k, rv[k], c["verdict"])
        pcap = c["evidence"].get("pcap")
        assert rv[k][2] == (str((ROOT / pcap).resolve()) if pcap else ""), "Robot links the same pcap"
    return doc


def test_precertification_campaign(tmp_path):
    cp = robot(tmp_path, "precertification.robot", "AREAS:addrarch", log="log.html", timeout=600)
    assert cp.returncode == 0, cp.stdout[-3000:]
    doc = same_as_results(tmp_path / "robot", tmp_path / "run")
    print(f"\nprecertification (addrarch): {doc['summary']['counts']}")
    assert doc["summary"]["counts"]["PASS"] >= 8 and (tmp_path / "run" / "compliance.csv").is_file()


def test_ipv6only_audit_campaign_selects_present_areas_and_audits_a_capture(tmp_path):
    capture = FIXTURES / "captures" / "v6only-host.pcapng"
    cp = robot(tmp_path, "ipv6only_audit.robot", f"AREAS:{RDNSS},storage?", f"CAPTURE:{capture}", f"HOSTS:{ASSET}", log="log.html",
               timeout=600)
    assert cp.returncode == 0, cp.stdout[-3000:]
    doc = same_as_results(tmp_path / "robot", tmp_path / "run")
    audit = load_results(tmp_path / "run" / "audit")
    ready = [c for c in all_checks(audit) if c["id"] == "audit.ipv6_only_readiness"]
    assert [(c["part"], c["verdict"]) for c in ready] == [(ASSET, "PASS")]
    print(f"\nipv6only audit (two rdnss checks, storage when present; {capture.name}): {doc['summary']['counts']}, "
          f"audit {[(c['part'], c['verdict']) for c in ready]}")
    bad = FIXTURES / "captures" / "v6only-host-ignores-option-108.pcapng"
    cp = robot(tmp_path / "bad", "ipv6only_audit.robot", f"AREAS:{RDNSS}", f"CAPTURE:{bad}", f"HOSTS:{ASSET}", timeout=600)
    assert cp.returncode == 1 and "not IPv6-only ready" in cp.stdout, cp.stdout[-2000:]


def test_release_gate_fails_only_on_new_failures(tmp_path):
    target = absolute_file_refs(yaml.safe_load((FIXTURES / "targets" / "lab.yaml").read_text()),
                                FIXTURES / "targets")  # its key files named from wherever the copy is
    target.pop("waiver_files")  # the lab's deviation becomes a FAIL nothing waives
    target["lab"]["topology"] = str((FIXTURES / "lab" / "topology.yaml").resolve())
    tfile = tmp_path / "nowaiver-lab.yaml"
    tfile.write_text(yaml.safe_dump(target))
    args = [f"TARGET:{tfile}", f"AREAS:{DEVIATION},rdnss.advertised_resolver_is_used", f"GATES:{GATE}"]
    first = robot(tmp_path / "first", "release_gate.robot", *args, log="log.html", timeout=900)
    assert first.returncode == 1, first.stdout[-3000:]  # the deviation is a new FAIL without a baseline
    rv = robot_verdicts(tmp_path / "first" / "robot")
    assert rv[DEVIATION][:2] == ("FAIL", "FAIL")
    same_as_results(tmp_path / "first" / "robot", tmp_path / "first" / "run")
    baseline = tmp_path / "first" / "run" / "results.json"
    second = robot(tmp_path / "second", "release_gate.robot", *args, f"BASELINE:{baseline}", log="log.html",
                   timeout=900)
    assert second.returncode == 0, second.stdout[-3000:]
    rv = robot_verdicts(tmp_path / "second" / "robot")
    assert rv[DEVIATION][:2] == ("PASS", "FAIL"), "a known failure passes the gate, the verdict stays FAIL"
    doc = same_as_results(tmp_path / "second" / "robot", tmp_path / "second" / "run")
    assert doc["summary"]["exit_code"] in (0, 3) and not doc["summary"]["new_failures"]
    assert any(c["kind"] == "gate" for c in doc["checks"])
    assert (tmp_path / "second" / "run" / "diff.html").is_file()
    print(f"\nrelease gate: without baseline rc {first.returncode}; with baseline rc {second.returncode}, "
          f"{doc['summary']['counts']}, gate {[c['verdict'] for c in doc['checks'] if c['kind'] == 'gate']}")
