"""Campaigns (issue 35), the pure logic: the campaign file, shards, the
effective targets, the fleet report (matrix, JUnit, exit codes, diff) and
the merge of shards, on run directories made from synthetic results (the
lab runs are tests/lab/test_campaign.py)."""

from __future__ import annotations

import copy
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from v6gate.campaign import fleet, runner, spec
from v6gate.campaign.merge import Mismatch, merge
from v6gate.core.verdict import Result
from v6gate.errors import UsageError
from v6gate.paths import FIXTURES, ROOT
from v6gate.report.results import build_document, now_iso, write_all

TARGET = yaml.safe_load((FIXTURES / "targets" / "example-host.yaml").read_text())
TARGET.pop("waiver_files", None)
TARGET["tester"]["interface"] = "lo"  # exists on every machine


def campaign(tmp: Path, n: int = 3, **extra) -> Path:
    tfile = tmp / "model.yaml"
    tfile.write_text(yaml.safe_dump(TARGET, sort_keys=False))
    # every DUT on a controller of its own, its tester port 'lo' there (a port that exists on every machine)
    duts = [{"name": f"unit-{i}", "target": "model.yaml", "controller": f"ctl-{i}",
             "dut": {"mac": f"52:54:00:00:00:{i:02x}"}, "tester": {"interface": "lo", "netns": None}}
            for i in range(n)]
    doc = {"name": "unit", "areas": ["rdnss", "dns"], "duts": duts, **extra}
    p = tmp / "campaign.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def result(key: str, verdict: str, area: str, caps: list[str], waived=False) -> Result:
    cid, _, part = key.partition("#")
    return Result(id=cid, part=part or None, title=cid, area=area, ipv6ready=None, rfc="RFC 0", verdict=verdict,
                  reason=f"{verdict} reason", expected="x", seen="seen", evidence={}, duration_s=0.5,
                  started=now_iso(), capabilities=caps, waived=waived)


#: each DUT's synthetic verdicts: unit-0 fails RDNSS, unit-1 fails DNS-Client, unit-2 passes
VERDICTS = {
    "unit-0": {"rdnss.search_list_is_used": "FAIL", "dns.resolver_reached_over_ipv6": "PASS"},
    "unit-1": {"rdnss.search_list_is_used": "PASS", "dns.resolver_reached_over_ipv6": "FAIL"},
    "unit-2": {"rdnss.search_list_is_used": "PASS", "dns.resolver_reached_over_ipv6": "PASS"},
}


def fake_run(out: Path, name: str, state: dict, verdicts: dict[str, str]) -> None:
    """A DUT's run directory as 'v6gate run' writes it (results, reports, manifest), from synthetic results."""
    rd = out / "duts" / name
    rd.mkdir(parents=True, exist_ok=True)
    results = [result(k, v, k.split(".")[0], ["RDNSS"] if k.startswith("rdnss") else ["DNS-Client"])
               for k, v in verdicts.items()]
    meta = {"id": name, "started": now_iso(), "finished": now_iso(), "profile": "default",
            "target": {"name": name, "kind": "host", "capabilities": ["RDNSS", "DNS-Client", "Core"]},
            "tool": {}, "host": {}, "campaign": {"name": state["name"], "dut": name,
                                                 "file_sha256": state["file"]["sha256"]}}
    write_all(rd, build_document(results, run_meta=meta))
    d = next(x for x in state["duts"] if x["name"] == name)
    d["state"], d["exit_code"], d["runs"] = runner.FINISHED, 1 if "FAIL" in verdicts.values() else 0, 1


def campaign_dir(tmp: Path, c: spec.Campaign, shard: str | None, name: str) -> tuple[Path, dict]:
    out = tmp / name
    out.mkdir()
    state = runner.prepare(c, out, shard, own_link=True)
    for d in state["duts"]:
        if d["in_shard"]:
            fake_run(out, d["name"], state, VERDICTS[d["name"]])
    runner.write_json(out / runner.STATE, state)
    fleet.write_all(state, out)
    return out, state


# -- the campaign file -----------------------------------------------------------------------------
def test_load_resolves_entries_relative_to_the_campaign_file(tmp_path):
    c = spec.load(campaign(tmp_path))
    assert [d.name for d in c.duts] == ["unit-0", "unit-1", "unit-2"]
    assert c.duts[0].target == (tmp_path / "model.yaml").resolve() and c.areas == ("rdnss", "dns")
    assert c.sha256 and c.profile == "default" and c.gates is False


@pytest.mark.parametrize("change, words", [
    (lambda d: d["duts"][0].update(lab={"fault": "dut_ignores_dnssl_options"}), "both 'target' and 'lab'"),
    (lambda d: d["duts"][0].pop("target"), "neither 'target' nor 'lab'"),
    (lambda d: d["duts"][1].update(name="unit-0"), "also the name of duts[0]"),
    (lambda d: d.update(name="no spaces"), "name"),
    (lambda d: d.update(colour="blue"), "unknown field 'colour'"),
    (lambda d: d.update(checks=["rdnss.nosuch"]), "checks"),
    (lambda d: d["duts"][0].update(baseline=5), "baseline"),
    (lambda d: d.update(duts=[]), "duts"),
    (lambda d: d.update(jobs=0), "jobs"),
])
def test_a_bad_campaign_file_is_one_line(tmp_path, change, words):
    p = campaign(tmp_path)
    doc = yaml.safe_load(p.read_text())
    change(doc)
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(UsageError) as e:
        spec.load(p)
    assert words in str(e.value) and "\n" not in str(e.value) and str(p) in str(e.value)


def test_shards_partition_the_duts(tmp_path):
    c = spec.load(campaign(tmp_path, n=7))
    names = [d.name for d in c.duts]
    for n in range(1, 9):
        shards = [[d.name for d in c.shard(f"{k}/{n}")] for k in range(1, n + 1)]
        assert sorted(n for s in shards for n in s) == sorted(names), n  # every DUT in exactly one shard
    assert [d.name for d in c.shard("ctl-3")] == ["unit-3"]
    for bad in ("0/2", "3/2", "a/b", "ctl-z", "1/0"):
        with pytest.raises(UsageError):
            c.shard(bad)


def test_effective_target_takes_the_entry_overrides_waivers_and_paths(tmp_path):
    p = campaign(tmp_path)
    doc = yaml.safe_load(p.read_text())
    doc["duts"][0]["waivers"] = [{"check": "rdnss.search_list_is_used", "reason": "known defect FW-1"}]
    doc["duts"][0]["waiver_files"] = ["w/*.yaml"]
    p.write_text(yaml.safe_dump(doc))
    c = spec.load(p)
    t = spec.effective_target(c, c.duts[0])
    assert t["name"] == "unit-0" and t["dut"]["mac"] == "52:54:00:00:00:00" and t["tester"]["interface"] == "lo"
    assert t["dut"]["iid"] == TARGET["dut"]["iid"], "the target file's other dut fields stay"
    assert t["waiver_files"] == [str(tmp_path.resolve() / "w" / "*.yaml")]
    assert t["waivers"][-1]["reason"] == "known defect FW-1"
    lab = spec.effective_target(c, spec.DutEntry(index=9, name="lab-x", target=None, lab_fault="dut_ignores_truncation"))
    assert lab["lab"]["fault"] == "dut_ignores_truncation" and Path(lab["lab"]["topology"]).is_absolute()
    assert all(Path(w).is_absolute() for w in lab["waiver_files"])
    psk = Path(lab["extensions"]["ikev2"]["psk"]["file"])  # a key file named relative to the lab's target file
    assert psk.is_absolute() and psk.is_file(), "written into the DUT's directory, the document names the same key"


def test_a_written_target_names_the_same_key_files(tmp_path):
    from v6gate.core.target import absolute_file_refs

    src = tmp_path / "a" / "t.yaml"
    (tmp_path / "a" / "keys").mkdir(parents=True)
    (tmp_path / "a" / "keys" / "k").write_text("secret")
    doc = {"x": [{"psk": {"file": "keys/k"}}, {"file": "/abs"}, {"file": "keys/k", "other": 1}], "y": "keys/k"}
    out = absolute_file_refs(doc, src.parent)
    assert out["x"][0]["psk"] == {"file": str(tmp_path.resolve() / "a" / "keys" / "k")}
    assert out["x"][1] == {"file": "/abs"} and out["x"][2] == {"file": "keys/k", "other": 1} and out["y"] == "keys/k"
    assert doc["x"][0]["psk"] == {"file": "keys/k"}, "the input is not changed"


def test_two_entries_naming_one_dut_on_one_controller_are_refused(tmp_path):
    p = campaign(tmp_path)
    doc = yaml.safe_load(p.read_text())
    doc["duts"][2]["dut"]["mac"] = doc["duts"][0]["dut"]["mac"]
    doc["duts"][2]["controller"] = doc["duts"][0]["controller"]
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(UsageError, match=r"duts\[2\] \(unit-2\) and duts\[0\] \(unit-0\) name the same DUT"):
        runner.load_targets(spec.load(p), tmp_path / "t")
    doc["duts"][2]["controller"] = "ctl-9"  # the same MAC behind another controller is another link
    p.write_text(yaml.safe_dump(doc))
    runner.load_targets(spec.load(p), tmp_path / "t2")
    doc["duts"][2]["controller"] = doc["duts"][0]["controller"]  # ... and behind another namespace's port (run locks)
    doc["duts"][2]["tester"] = {"interface": "eth0", "netns": "v6gcmpb-tester"}
    p.write_text(yaml.safe_dump(doc))
    runner.load_targets(spec.load(p), tmp_path / "t3")


def test_a_lab_fault_must_exist_and_the_lab_cannot_fault_a_tap_dut(tmp_path):
    from v6gate.core.target import load_target

    lab = yaml.safe_load((FIXTURES / "targets" / "lab.yaml").read_text())
    lab["lab"]["topology"] = str(FIXTURES / "lab" / "topology.yaml")
    lab.pop("waiver_files")
    for fault, words in (("no_such_fault", "is not a lab fault"), ("dut_ignores_truncation", None)):
        lab["lab"]["fault"] = fault
        p = tmp_path / "lab.yaml"
        p.write_text(yaml.safe_dump(lab))
        if words:
            with pytest.raises(UsageError, match=words):
                load_target(p)
        else:
            assert load_target(p).summary()["lab_fault"] == fault
    from v6gate import runlock

    assert runlock.keys_for(load_target(p)) == [], "lab DUTs built afresh per run share no lock (a campaign's)"
    lab["lab"].pop("fault")
    lab["lab"]["external_dut"] = "tap"
    lab["control"] = {"adapter": "none"}
    p.write_text(yaml.safe_dump(lab))
    assert runlock.keys_for(load_target(p)), "a TAP DUT is a device of its own: locked"


# -- the fleet report --------------------------------------------------------------------------------
def test_fleet_matrix_junit_and_exit_code(tmp_path):
    c = spec.load(campaign(tmp_path))
    out, _state = campaign_dir(tmp_path, c, None, "one")
    doc = fleet.build(runner.load_state(out), out)[0]
    cells = {cap["capability"]: {n: v["status"] for n, v in cap["cells"].items()} for cap in doc["capabilities"]}
    assert cells["RDNSS"] == {"unit-0": "not supported", "unit-1": "supported", "unit-2": "supported"}
    assert cells["DNS-Client"] == {"unit-0": "supported", "unit-1": "not supported", "unit-2": "supported"}
    assert "Core" in doc["claimed_not_tested"] and "Core" not in cells
    assert doc["exit_code"] == 1 and [r["exit_code"] for r in doc["duts"]] == [1, 1, 0]
    suites = ET.parse(out / "junit.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["unit-0", "unit-1", "unit-2"]
    assert [s.get("failures") for s in suites] == ["1", "1", "0"]
    assert all(tc.get("classname").startswith(s.get("name") + ".") for s in suites for tc in s.findall("testcase"))
    page = (out / "fleet.html").read_text()
    assert 'href="duts/unit-0/report.html?cap=RDNSS&amp;v=fail"' in page
    listed = (out / "MANIFEST.sha256").read_text()
    assert "duts/unit-2/MANIFEST.sha256" in listed and "fleet.json" in listed
    ok = fleet.verify(out)
    assert not (ok["changed"] or ok["missing"] or ok["extra"]) and "duts/unit-0/results.json" in ok["ok"]
    (out / "duts" / "unit-1" / "junit.xml").write_text("<testsuites/>")
    assert fleet.verify(out)["changed"] == ["duts/unit-1/junit.xml"]


def test_exit_code_follows_the_run_rules_over_all_duts(tmp_path):
    c = spec.load(campaign(tmp_path))
    out, state = campaign_dir(tmp_path, c, None, "one")
    for d in state["duts"]:
        fake_run(out, d["name"], state, dict.fromkeys(VERDICTS[d["name"]], "PASS"))
    assert fleet.build(state, out)[0]["exit_code"] == 0
    fake_run(out, "unit-2", state, {"rdnss.search_list_is_used": "PASS", "dns.resolver_reached_over_ipv6": "ERROR"})
    assert fleet.build(state, out)[0]["exit_code"] == 3  # undecided on one DUT
    shutil.rmtree(out / "duts" / "unit-1")
    state["duts"][1]["state"] = runner.BROKEN
    doc = fleet.build(state, out)[0]
    assert doc["exit_code"] == 3 and doc["duts"][1]["status"] == runner.BROKEN
    fleet.write_junit(doc, fleet.build(state, out)[1], tmp_path / "j.xml")
    broken = ET.parse(tmp_path / "j.xml").getroot().find("testsuite[@name='unit-1']")
    assert broken.find("testcase/error") is not None, "a DUT without a run shows in CI as an error"


def test_diff_against_the_previous_campaign_lists_new_fails_per_dut(tmp_path):
    c = spec.load(campaign(tmp_path))
    old, state = campaign_dir(tmp_path, c, None, "old")
    for d in state["duts"]:
        fake_run(old, d["name"], state, dict.fromkeys(VERDICTS[d["name"]], "PASS"))
    new, _ = campaign_dir(tmp_path, c, None, "new")
    doc = fleet.build(runner.load_state(new), new, previous=old)[0]
    assert doc["diff"]["new_failures"] == 2
    assert doc["diff"]["duts"]["unit-0"]["newly_failing"] == ["rdnss.search_list_is_used"]
    assert doc["diff"]["duts"]["unit-2"]["newly_failing"] == []
    assert {"capability": "RDNSS", "old": "supported", "new": "not supported"} in doc["diff"]["duts"]["unit-0"][
        "capabilities"]


# -- shards and their merge ------------------------------------------------------------------------
def test_merged_shards_equal_one_controller_and_tampering_is_refused(tmp_path):
    c = spec.load(campaign(tmp_path))
    one, _ = campaign_dir(tmp_path, c, None, "one")
    s1, _ = campaign_dir(tmp_path, c, "1/2", "s1")
    s2, _ = campaign_dir(tmp_path, c, "2/2", "s2")
    assert fleet.build(runner.load_state(s1), s1)[0]["exit_code"] == 1  # the shard judges its own DUTs
    doc, _paths = merge([s1, s2], tmp_path / "merged")
    ref = fleet.build(runner.load_state(one), one)[0]
    assert fleet.comparable(doc) == fleet.comparable(ref)
    assert [s["shard"] for s in doc["generated"]["merged_from"]] == ["1/2", "2/2"]
    # a shard missing: its DUTs are 'not run' and the fleet is undecided
    half, _ = merge([s1], tmp_path / "half")
    assert half["exit_code"] == 1 and [r["status"] for r in half["duts"]] == ["finished", "not run", "finished"]
    with pytest.raises(UsageError, match="in two shards"):
        merge([s1, s1], tmp_path / "twice")
    with pytest.raises(UsageError, match="already holds a campaign"):
        merge([s1, s2], tmp_path / "merged")
    other = copy.deepcopy(yaml.safe_load((tmp_path / "campaign.yaml").read_text()))
    other["description"] = "another file"
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "model.yaml").write_text((tmp_path / "model.yaml").read_text())
    (tmp_path / "o" / "campaign.yaml").write_text(yaml.safe_dump(other))
    s3, _ = campaign_dir(tmp_path / "o", spec.load(tmp_path / "o" / "campaign.yaml"), "2/2", "s3")
    with pytest.raises(UsageError, match="not of unit"):
        merge([s1, s3], tmp_path / "mixed")
    results = s2 / "duts" / "unit-1" / "results.json"
    results.write_text(results.read_text().replace('"FAIL"', '"PASS"'))
    with pytest.raises(Mismatch) as e:
        merge([s1, s2], tmp_path / "tampered")
    assert any("unit-1" in p and "results.json changed" in p for p in e.value.problems)
    assert not (tmp_path / "tampered" / "fleet.json").exists()


def test_the_ci_example_runs_every_controller_of_the_example_campaign():
    """docs/ci/gitlab-campaign.yml: its matrix names the example campaign's controllers, and its commands are
    ones the CLI accepts (the lab test runs them)."""
    from v6gate.cli import build_parser

    ci = yaml.safe_load((ROOT / "docs" / "ci" / "gitlab-campaign.yml").read_text())
    controllers = ci["campaign"]["parallel"]["matrix"][0]["CONTROLLER"]
    example = spec.load(FIXTURES / "campaigns" / "example.yaml")
    assert sorted(controllers) == sorted({d.controller for d in example.duts})
    for ctl in controllers:
        assert example.shard(ctl)
    import shlex

    for job in ("campaign", "fleet"):
        for line in ci[job]["script"]:
            words = shlex.split(line.replace("${PREVIOUS_FLEET:+--previous \"$PREVIOUS_FLEET\"}", ""))
            assert words[0] == "./v6gate"
            args = build_parser().parse_args([w.replace("$CAMPAIGN", "c.yaml").replace("$CONTROLLER", "ctl-a")
                                              .replace("shards/*", "shards/ctl-a") for w in words[1:]])
            assert args.campaign_cmd in ("run", "merge")
    assert ci["fleet"]["artifacts"]["reports"]["junit"] == "fleet/junit.xml"
