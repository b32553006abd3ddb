"""The report as a person sees it: a real small lab run with faults applied
(two parts of v6LC.5.1.2 under one fault, one ND part under another, the
rest healthy), rendered by headless Chromium.  The triage view must show
exactly the failing parts, first, grouped by root cause, with their
decisive packets dissected, and the filters must work; screenshots of the
triage view, one check opened, the compliance matrix and a diff are kept in
reports/selftest/report-browser/ (printed)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from v6gate.paths import REPORTS

# one directory per xdist worker: the module's fixture runs once per worker that gets one of its tests, and a
# shared directory would be removed and rewritten under the other worker's feet
ART = REPORTS / "selftest" / "report-browser" / os.environ.get("PYTEST_XDIST_WORKER", "main")
FAULTED = [  # (check, part, fault or None)
    ("icmpv6.echo_request_is_answered", "A", "dut_drops_echo_request"),
    ("icmpv6.echo_request_is_answered", "B", "dut_drops_echo_request"),
    ("nd.ns_is_answered_without_nce", "B", "dut_sends_na_with_hop_limit_254"),
    ("icmpv6.echo_request_is_answered", "C", None),
    ("nd.ns_is_answered_without_nce", "A", None),
    ("nd.invalid_ns_is_ignored", "A", None),
    ("nd.invalid_ns_is_ignored", "B", None),
    ("slaac.link_local_address_is_probed_before_use", None, None),
]
FAILING = {"icmpv6.echo_request_is_answered#A", "icmpv6.echo_request_is_answered#B", "nd.ns_is_answered_without_nce#B"}


def faulted_run(run_dir: Path, items=FAULTED) -> dict:
    """Run the parts on one lab, each under its fault, and write the run's reports."""
    from v6gate.core.check import find, load_all
    from v6gate.core.session import RunRecorder, Session
    from v6gate.report.results import now_iso
    from v6gate.report.writer import finalize_run, write_session_info

    load_all()
    started = now_iso()
    run_dir.mkdir(parents=True, exist_ok=True)
    session = Session.for_lab(run_dir, recorder=RunRecorder(run_dir, worker="main"))
    try:
        write_session_info(run_dir, session)
        for cid, part, fault in items:
            c = find(cid)
            session.run(c, c.part(part), fault=fault)
    finally:
        session.close()
        write_session_info(run_dir, session, closing=True)
    _, doc = finalize_run(run_dir, target_label="lab", profile="default", started=started,
                          command="faulted run (test)")
    return doc


def chromium(url: str, *, screenshot: Path | None = None, height: int = 1600) -> str:
    """Load the page in headless Chromium; returns the DOM after its script ran (and saves a screenshot)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.fail("chromium is missing: tools/setup installs it (tools/apt-packages.txt)")
    base = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--window-size=1400,{height}"]
    if screenshot:
        subprocess.run([*base, f"--screenshot={screenshot}", url], capture_output=True, timeout=120, check=True)
        assert screenshot.stat().st_size > 10_000
    cp = subprocess.run([*base, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True)
    return cp.stdout


@pytest.fixture(scope="module")
def run():
    run_dir = ART / "run"  # kept with the screenshots (reports/selftest/report-browser/, not committed)
    shutil.rmtree(ART, ignore_errors=True)
    doc = faulted_run(run_dir)
    print(f"\nfaulted run: {run_dir}")
    return run_dir, doc


def _visible_checks(dom: str) -> list[str]:
    return re.findall(r'<details class="chk [^"]*" id="c-([^"]+)"(?![^>]*hidden)', dom)


def test_the_faulted_run_has_the_expected_verdicts(run):
    _, doc = run
    got = {f"{c['id']}#{c['part']}" if c["part"] else c["id"]: c["verdict"] for c in doc["checks"]}
    assert {k for k, v in got.items() if v == "FAIL"} == FAILING, got
    assert doc["summary"]["exit_code"] == 1


def test_triage_view_shows_the_failures_first_grouped_by_root_cause(run):
    run_dir, _ = run
    shot = ART / "triage.png"
    dom = chromium((run_dir / "report.html").as_uri(), screenshot=shot)
    print(f"\nscreenshot: {shot}")
    attention, _, _rest = dom.partition('id="rest"')
    shown = _visible_checks(attention)
    assert set(shown) == FAILING, shown  # every failure, nothing else, before the collapsed passes
    assert re.search(r'<details class="bucket" id="rest">', dom), "passes are collapsed"
    assert "8 parts" in dom, "the filter script ran"
    # one root cause, one group: the two Echo parts under one fault read the same problem
    groups = re.findall(r'<p class="cause">(\d+) parts? · FAIL · ([^<]*)</p>', attention)
    assert ("2", groups[0][1]) in groups or any(n == "2" for n, _ in groups), groups
    assert "Decisive packets" in attention and "Neighbor Advertisement" in attention, \
        "the hop-limit failure shows the DUT's NA dissected"
    assert "pcap" in attention


def test_filters_and_search_select_the_parts(run):
    run_dir, _ = run
    dom = chromium((run_dir / "report.html").as_uri() + "?open=all")
    assert 'data-overflow="false"' in dom, "with every part open, nothing runs off the right edge at 1400 px"
    dom = chromium((run_dir / "report.html").as_uri() + "?area=nd&v=pass")
    assert sorted(_visible_checks(dom)) == ["nd.invalid_ns_is_ignored#A", "nd.invalid_ns_is_ignored#B",
                                            "nd.ns_is_answered_without_nce#A"]
    dom = chromium((run_dir / "report.html").as_uri() + "?q=NS_is_answered_without")
    assert sorted(_visible_checks(dom)) == ["nd.ns_is_answered_without_nce#A", "nd.ns_is_answered_without_nce#B"]
    dom = chromium((run_dir / "report.html").as_uri() + "?ready=v6LC.5.1.2&v=fail")
    assert sorted(_visible_checks(dom)) == ["icmpv6.echo_request_is_answered#A", "icmpv6.echo_request_is_answered#B"]


def test_one_check_opened_compliance_and_diff_pages(run):
    run_dir, _ = run
    opened = ART / "check-opened.png"
    dom = chromium((run_dir / "report.html").as_uri() + "#c-nd.ns_is_answered_without_nce%23B", screenshot=opened)
    assert re.search(r'<details class="chk fail" id="c-nd.ns_is_answered_without_nce#B"[^>]*open', dom)
    comp = ART / "compliance.png"
    dom = chromium((run_dir / "compliance.html").as_uri(), screenshot=comp, height=900)
    matrix = json.loads((run_dir / "compliance.json").read_text())
    core = next(r for r in matrix["rows"] if r["capability"] == "Core")
    assert core["status"] == "not supported" and core["counts"]["FAIL"] == 3
    assert "not supported" in dom
    # a diff: the same parts healthy (OLD) against the faulted run (NEW)
    healthy = ART / "healthy"
    faulted_run(healthy, [(c, p, None) for c, p, _ in FAULTED])
    out = ART / "diff.html"
    cp = subprocess.run([sys.executable, "-m", "v6gate.cli", "diff", str(healthy), str(run_dir), "--html", str(out)],
                        capture_output=True, text=True, timeout=120)
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert "newly FAILing: 3" in cp.stdout
    shot = ART / "diff.png"
    dom = chromium(out.as_uri(), screenshot=shot, height=1200)
    assert "Newly failing (3)" in dom
    print(f"\nscreenshots: {opened} {comp} {shot}")


def test_manifest_verify_and_bundle_of_the_run(run, tmp_path):
    run_dir, _ = run
    v = [sys.executable, "-m", "v6gate.cli"]
    assert subprocess.run([*v, "verify", str(run_dir)], capture_output=True).returncode == 0
    out = tmp_path / "bundle.tar.gz"
    cp = subprocess.run([*v, "bundle", str(run_dir), "-o", str(out)], capture_output=True, text=True)
    assert cp.returncode == 0 and "verifies" in cp.stdout, cp.stdout + cp.stderr
    assert subprocess.run([*v, "verify", str(out)], capture_output=True).returncode == 0
