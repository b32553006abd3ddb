"""Campaigns on the lab (issue 35): two lab DUTs, each with one defect (a
lab fault it carries for the whole run), on a small selection of checks.

* one controller: the fleet matrix shows each DUT's one failing capability,
  a JUnit testsuite per DUT, every manifest verifies;
* the GitLab CI example (docs/ci/gitlab-campaign.yml): its script lines run
  for each controller of its matrix, one after the other, then its merge
  job: the fleet report equals the one-controller campaign's part for part;
  a shard whose files no longer match their manifest is refused;
* killed mid-way (the whole process tree, SIGKILL: a controller that
  loses power) and resumed: the same verdicts, the finished DUT not run
  again, the interrupted DUT's finished parts not run again;
* the campaign as a Robot suite per DUT, run by pabot.

The checks are chosen small (five parts a DUT); the faults are data
(fixtures/faults/)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from v6gate.campaign import fleet
from v6gate.lab import registry
from v6gate.paths import ROOT
from v6gate.report import manifest

CHECKS = ["rdnss.search_list_is_used", "rdnss.advertised_resolver_is_used", "dns.truncated_answer_is_retried_over_tcp",
          "dns.resolver_reached_over_ipv6", "dns.queries_carry_edns0"]
#: DUT -> (its lab fault, the one capability that fault breaks)
DUTS = {"rdnss-defect": ("dut_ignores_dnssl_options", "RDNSS", "ctl-a"),
        "dns-defect": ("dut_ignores_truncation", "DNS-Client", "ctl-b")}
CI_EXAMPLE = ROOT / "docs" / "ci" / "gitlab-campaign.yml"


def campaign_file(tmp: Path, jobs: int | None = None) -> Path:
    doc = {"name": "ci-fleet", "checks": CHECKS,
           "duts": [{"name": n, "lab": {"fault": f}, "controller": ctl} for n, (f, _cap, ctl) in DUTS.items()]}
    if jobs:
        doc["jobs"] = jobs
    p = tmp / "campaign.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def v6gate(*args, timeout=900, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "v6gate.cli", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, **kw)


def fleet_doc(d: Path) -> dict:
    return json.loads((d / "fleet.json").read_text())


def not_supported(doc: dict) -> dict[str, set[str]]:
    return {r["name"]: {cap["capability"] for cap in doc["capabilities"]
                        if (cap["cells"].get(r["name"]) or {}).get("status") == "not supported"} for r in doc["duts"]}


def verdicts(doc: dict) -> dict[str, dict[str, str]]:
    return {r["name"]: r["verdicts"] for r in doc["duts"]}


def junit_cases(d: Path) -> dict[str, dict[str, str]]:
    out = {}
    for suite in ET.parse(d / "junit.xml").getroot().findall("testsuite"):
        out[suite.get("name")] = {f"{c.get('classname')} {c.get('name')}": ",".join(x.tag for x in c
                                                                                  if x.tag != "system-out") or "pass"
                                  for c in suite.findall("testcase")}
    return out


def ci_script(job: str) -> list[str]:
    return yaml.safe_load(CI_EXAMPLE.read_text())[job]["script"]


def test_campaign_on_one_controller_in_shards_and_resumed(tmp_path):
    t0 = time.monotonic()
    # -- one controller ---------------------------------------------------------------------------
    one = tmp_path / "one"
    cp = v6gate("campaign", "run", campaign_file(tmp_path), "--out", one)
    assert cp.returncode == 1, cp.stdout[-3000:] + cp.stderr[-2000:]  # a new FAIL on each DUT
    ref = fleet_doc(one)
    assert not_supported(ref) == {n: {cap} for n, (_f, cap, _c) in DUTS.items()}, fleet.to_text(ref)
    for r in ref["duts"]:
        assert r["status"] == "finished" and r["exit_code"] == 1 and len(r["new_failures"]) == 1, r
        assert len(r["verdicts"]) == len(CHECKS)
        run = json.loads((one / r["run"]["dir"] / "results.json").read_text())["run"]
        assert run["campaign"]["dut"] == r["name"] and run["target"]["lab_fault"] == DUTS[r["name"]][0]
        assert not any(manifest.verify(one / r["run"]["dir"])[k] for k in ("changed", "missing", "extra"))
    assert set(junit_cases(one)) == set(DUTS) and all(len(v) == len(CHECKS) for v in junit_cases(one).values())
    page = (one / "fleet.html").read_text()
    assert 'href="duts/rdnss-defect/report.html?cap=RDNSS&amp;v=fail"' in page
    print(f"\none controller: {time.monotonic() - t0:.0f} s\n{fleet.to_text(ref)}")

    # -- the GitLab CI example: a job per controller of its matrix, one after the other, then the merge job --------
    t1 = time.monotonic()
    ci = tmp_path / "ci"
    ci.mkdir()
    controllers = yaml.safe_load(CI_EXAMPLE.read_text())["campaign"]["parallel"]["matrix"][0]["CONTROLLER"]
    assert sorted(controllers) == sorted({c for _f, _cap, c in DUTS.values()})
    env = {**os.environ, "CAMPAIGN": str(campaign_file(tmp_path))}
    for ctl in controllers:
        for line in ci_script("campaign"):
            cp = subprocess.run(["bash", "-c", line.replace("./v6gate", str(ROOT / "v6gate"))], cwd=ci,
                                env={**env, "CONTROLLER": ctl}, capture_output=True, text=True, timeout=900)
            assert cp.returncode == 1, cp.stdout[-3000:] + cp.stderr[-2000:]
    for line in ci_script("fleet"):
        cp = subprocess.run(["bash", "-c", line.replace("./v6gate", str(ROOT / "v6gate"))], cwd=ci, env=env,
                            capture_output=True, text=True, timeout=300)
        assert cp.returncode == 1, cp.stdout[-3000:] + cp.stderr[-2000:]
    merged = fleet_doc(ci / "fleet")
    assert fleet.comparable(merged) == fleet.comparable(ref), "the merged fleet report differs from one controller's"
    assert junit_cases(ci / "fleet") == junit_cases(one)
    assert [s["shard"] for s in merged["generated"]["merged_from"]] == controllers
    print(f"shards {controllers} one after the other, merged: equal to one controller's, part for part "
          f"({time.monotonic() - t1:.0f} s)")
    pcap = next((ci / "shards" / controllers[0] / "duts").glob("*/pcap/*.pcapng"))
    pcap.write_bytes(pcap.read_bytes() + b"\0")
    cp = v6gate("campaign", "merge", *sorted((ci / "shards").iterdir()), "--out", tmp_path / "tampered")
    assert cp.returncode == 1 and pcap.name in cp.stderr and not (tmp_path / "tampered" / "fleet.json").exists(), \
        cp.stderr

    # -- killed mid-way (every process of it, as a power cut would), then resumed --------------------------
    t2 = time.monotonic()
    cut = tmp_path / "cut"
    first, second = list(DUTS)
    proc = subprocess.Popen([sys.executable, "-m", "v6gate.cli", "campaign", "run", campaign_file(tmp_path, jobs=1),
                             "--out", cut], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        recs = list((cut / "duts" / second / "records").glob("checks-*.jsonl"))
        if recs and sum(len(p.read_text().splitlines()) for p in recs) >= 2:
            break
        time.sleep(0.5)
    assert proc.poll() is None, "the campaign ended before it could be killed mid-way"
    ours = [lab for lab, info in registry.registered().items() if _in_group(info.get("owner_pid"), proc.pid)]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    state = json.loads((cut / "campaign.json").read_text())
    assert [d["state"] for d in state["duts"]] == ["finished", "running"]
    done_first = (cut / "duts" / first / "results.json").read_bytes()
    before = {p.name: p.read_text().splitlines() for p in (cut / "duts" / second / "records").glob("checks-*.jsonl")}
    cp = v6gate("campaign", "resume", cut)
    assert cp.returncode == 1, cp.stdout[-3000:] + cp.stderr[-2000:]
    assert f"1 DUT(s) finished ({first})" in cp.stdout
    resumed = fleet_doc(cut)
    assert verdicts(resumed) == verdicts(ref) and not_supported(resumed) == not_supported(ref)
    assert (cut / "duts" / first / "results.json").read_bytes() == done_first, "the finished DUT was run again"
    log = (cut / "duts" / second / "run.log").read_text()
    assert "(resumed)" in log and "parts finished before" in log
    done_keys = {_key(line) for lines in before.values() for line in lines if line.strip().endswith("}")}
    after = [p for p in (cut / "duts" / second / "records").glob("checks-*.jsonl") if p.name not in before]
    rerun = {_key(line) for p in after for line in p.read_text().splitlines()}
    assert done_keys and not (done_keys & rerun), f"parts finished before the kill were run again: {done_keys & rerun}"
    assert ours and not set(ours) & set(registry.registered()), "the killed campaign's labs were left behind"
    print(f"killed with {len(done_keys)} part(s) of {second} done, resumed: same verdicts, {first} not run again "
          f"({time.monotonic() - t2:.0f} s)")


@pytest.mark.skipif(not (Path(sys.executable).parent / "pabot").exists(), reason="pabot is not installed")
def test_campaign_as_robot_suites_per_dut_with_pabot(tmp_path):
    out = tmp_path / "robot"
    cp = v6gate("campaign", "robot", campaign_file(tmp_path), "--out", out)
    assert cp.returncode == 1, cp.stdout[-3000:] + cp.stderr[-2000:]
    doc = fleet_doc(out)
    assert not_supported(doc) == {n: {cap} for n, (_f, cap, _c) in DUTS.items()}, fleet.to_text(doc)
    assert all(len(r["verdicts"]) == len(CHECKS) for r in doc["duts"])
    tests = ET.parse(out / "robot" / "output.xml").getroot().findall(".//test")
    assert len(tests) == len(CHECKS) * len(DUTS)
    failed = sorted(t.get("name") for t in tests if t.find("status").get("status") == "FAIL")
    assert len(failed) == len(DUTS), failed  # each DUT's one new FAIL
    print(f"\nRobot campaign (pabot): {fleet.to_text(doc)}")


def _key(line: str) -> str:
    r = json.loads(line)
    return r["id"] + ("#" + r["part"] if r["part"] else "")


def _in_group(pid, pgid: int) -> bool:
    try:
        return bool(pid) and os.getpgid(pid) == pgid
    except ProcessLookupError:
        return False
