"""The V6Gate Robot library.  Verdicts map to Robot statuses: PASS -> pass,
waived FAIL -> pass with a warning, SKIP -> skip, FAIL / ERROR /
INCONCLUSIVE -> fail with the verdict in the message, NOT_JUDGED -> fail
with "NOT_JUDGED: precondition ... (judged by <check>)" and the tag
``not_judged`` (a distinct outcome, never a pass).

Imported with ``areas=...`` (comma-separated areas, or ``all``) the library
also generates the suite's tests: one Robot test per check part of those
areas, named by its IPv6 Ready ID, part and title, tagged with its area,
ID, RFC, scope and profile, each running the template keyword of the
suite's first written test (``Check Should Pass``), which shows the form;
the suite's other written tests (an audit, say) run after them.

Selectors in ``areas=``: an area (``nd``), an area that may not exist yet
(``storage?``: selected when present, left out silently before that area
is merged), every part citing an RFC (``rfc:3646``), or a check id
(``pmtu.some_check``).  ``gates=`` adds performance gates (``all`` or ids).
``baseline=`` names a previous run's results.json: its FAILs are known
failures for ``Check Should Not Regress`` and the reports' diff.

Every test's message and tags carry the v6gate verdict (``verdict:FAIL``),
and its log links the same pcap as results.json and the HTML report."""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

from robot.api import SkipExecution, logger
from robot.api.deco import keyword, library
from robot.libraries.BuiltIn import BuiltIn, RobotNotRunningError

from ..core.check import REGISTRY, all_items, find
from ..core.session import RunRecorder, Session, install_signal_handlers
from ..paths import new_run_dir, new_run_id


def pcap_uri(pcap: str) -> str:
    """A pcap path as results.json holds it (repository-relative or absolute) as a file:// link."""
    from ..paths import ROOT

    return (ROOT / pcap).resolve().as_uri()


@library(scope="GLOBAL", auto_keywords=False)
class V6Gate:
    ROBOT_LISTENER_API_VERSION = 3

    def __init__(self, run_dir: str | None = None, areas: str = "", profile: str = "default", gates: str = "",
                 baseline: str = "", campaign_dut: str = ""):
        self._run_dir_arg = run_dir
        self._campaign_dut = campaign_dut or None  # this suite is that DUT of a campaign (v6gate campaign robot)
        self.session: Session | None = None
        self.results = []
        self._areas = [a.strip() for a in areas.split(",") if a.strip()]
        self._gates = [g.strip() for g in gates.split(",") if g.strip()]
        self._profile = profile
        self._baseline = baseline or None
        self._known: set[str] | None = None
        if self._areas or self._gates:
            self.ROBOT_LIBRARY_LISTENER = self

    def _select(self) -> tuple[list, list[str]]:
        """(check, part) items of the areas= selectors and gates=; and the selectors that match nothing."""
        from ..core.check import load_all

        load_all()
        known_areas = {c.area for c in REGISTRY.values() if c.kind == "check"}
        items, unknown = [], []
        for sel in (self._areas if self._areas != ["all"] else sorted(known_areas)):
            if sel.endswith("?"):
                if sel[:-1] in known_areas:
                    items += all_items(areas=[sel[:-1]], profile=self._profile)
            elif sel.startswith("rfc:"):
                num = sel[4:]
                got = [(c, p) for c, p in all_items(profile=self._profile)
                       if re.search(rf"RFC\s*{re.escape(num)}\b", c.rfc_of(p))]
                items += got
                if not got:
                    unknown.append(sel)
            elif "." in sel:
                got = all_items(profile=self._profile, kind=None, ids=[sel])
                items += got
                if not got:
                    unknown.append(sel)
            elif sel in known_areas:
                items += all_items(areas=[sel], profile=self._profile)
            else:
                unknown.append(sel)
        if self._gates:
            gates = all_items(profile=self._profile, kind="gate", ids=None if self._gates == ["all"] else self._gates)
            items += gates
            if not gates:
                unknown += self._gates
        seen, out = set(), []
        for c, p in items:
            if (c.id, p.letter) not in seen:
                seen.add((c.id, p.letter))
                out.append((c, p))
        return out, unknown

    def _start_suite(self, data, result) -> None:
        """Replace the suite's first (templated) test by a test per selected check part."""
        if not data.tests:
            return
        items, unknown = self._select()
        template = data.tests[0]
        keyword_name = template.template or "Check Should Pass"
        others = list(data.tests[1:])
        data.tests.clear()
        if unknown:  # a listener's exception would only be logged: fail the suite visibly instead
            known = sorted({c.area for c in REGISTRY.values() if c.kind == "check"})
            test = data.tests.create(name="Selected areas exist")
            test.body.create_keyword(name="Fail", args=[f"unknown area(s) {', '.join(unknown)} in areas=: "
                                                        f"use 'all' or some of {', '.join(known)}"])
            return
        for c, p in items:
            label = " ".join(x for x in (c.ipv6ready, p.letter) if x)
            test = data.tests.create(name=f"{label + ' ' if label else ''}{c.title_of(p)} ({c.id})",
                                     doc=f"{c.rfc_of(p)}: {c.expect_of(p)}",
                                     tags=[f"area:{c.area}", f"scope:{c.scope_of(p)}", f"profile:{c.profile_of(p)}",
                                           f"kind:{c.kind}"]
                                     + ([f"ipv6ready:{c.ipv6ready}"] if c.ipv6ready else []))
            test.body.create_keyword(name=keyword_name, args=[c.id, p.letter or "None"])
        for t in others:
            data.tests.append(t)

    @keyword("Open V6Gate Session")
    def open_session(self, target: str = "lab", profile: str = "default") -> str:
        """Build the embedded lab (``target=lab``) or open a target file; returns the run directory."""
        install_signal_handlers()
        os.environ.setdefault("V6GATE_RUN_ID", new_run_id())
        run_dir = Path(self._run_dir_arg or os.environ.get("V6GATE_RUN_DIR") or new_run_dir(os.environ["V6GATE_RUN_ID"]))
        recorder = RunRecorder(run_dir, worker="robot")
        self.session = Session.for_target(target, run_dir, profile=profile, recorder=recorder)
        from ..report.writer import write_session_info

        write_session_info(run_dir, self.session)
        logger.info(f"v6gate run directory: {run_dir}")
        return str(run_dir)

    @keyword("Close V6Gate Session")
    def close_session(self) -> None:
        if self.session:
            from ..report.writer import write_session_info

            run_dir = self.session.run_dir
            self.session.close()
            write_session_info(run_dir, self.session, closing=True)
            self.session = None

    @keyword("Run Check")
    def run_check(self, check_id: str, part: str | None = None) -> str:
        """Run one check part and return its verdict (PASS, FAIL, SKIP, ERROR, INCONCLUSIVE, NOT_JUDGED)."""
        if self.session is None:
            raise RuntimeError("no session: call 'Open V6Gate Session' first")
        c = find(check_id)
        result = self.session.run(c, c.part(part if part not in ("", "None") else None))
        self.results.append(result)
        pcap = result.evidence.get("pcap")
        link = f' <a href="{html.escape(pcap_uri(pcap))}">pcap</a>' if pcap else ""
        logger.info(f"{html.escape(result.verdict)} {html.escape(result.ipv6ready or '')} {html.escape(result.part or '')} "
                    f"[{html.escape(result.rfc)}]: {html.escape(result.reason)}{link}", html=True)
        self._mark_test(result)
        return result.verdict

    def _mark_test(self, r) -> None:
        """The v6gate verdict on the Robot test: a tag and the test message (with the pcap)."""
        try:
            bi = BuiltIn()
            label = "FAIL (waived)" if r.verdict == "FAIL" and r.waived else (
                "FAIL (baseline)" if r.verdict == "FAIL" and r.key in self.known_failures() else r.verdict)
            bi.set_tags(f"verdict:{r.verdict}")
            pcap = r.evidence.get("pcap")
            bi.set_test_message(f"v6gate {label} {r.key}" + (f" (pcap: {pcap})" if pcap else ""))
        except RobotNotRunningError:  # called outside a test (suite setup)
            pass

    def known_failures(self) -> set[str]:
        if self._known is None:
            from ..report.results import _baseline_failures

            self._known = _baseline_failures(self._baseline)
        return self._known

    @keyword("Check Should Pass")
    def check_should_pass(self, check_id: str, part: str | None = None) -> None:
        """Run a check part; fail unless it PASSes (a FAIL the target waives passes with a warning)."""
        verdict = self.run_check(check_id, part)
        r = self.results[-1]
        if verdict == "PASS":
            return
        if verdict == "SKIP":
            raise SkipExecution(r.reason)
        if verdict == "FAIL" and r.waived:
            logger.warn(f"waived FAIL: {r.reason}")
            return
        if verdict == "NOT_JUDGED":
            _tag("not_judged")
        raise AssertionError(f"{verdict}: {r.reason}")

    @keyword("Check Should Not Regress")
    def check_should_not_regress(self, check_id: str, part: str | None = None) -> None:
        """Release gate: fail only on a new FAIL (neither waived nor a FAIL of the baseline run).  A known
        failure passes with a warning; ERROR, NOT_JUDGED and INCONCLUSIVE are undecided: the test is skipped
        with the reason (visible, not a regression)."""
        verdict = self.run_check(check_id, part)
        r = self.results[-1]
        if verdict in ("PASS",):
            return
        if verdict == "SKIP":
            raise SkipExecution(r.reason)
        if verdict == "FAIL":
            if r.waived or r.key in self.known_failures():
                logger.warn(f"known FAIL ({'waived' if r.waived else 'in the baseline'}), not a regression: {r.reason}")
                return
            raise AssertionError(f"new FAIL: {r.reason}")
        raise SkipExecution(f"undecided ({verdict}), not a regression: {r.reason}")

    @keyword("Audit Capture Should Show IPv6-Only Readiness")
    def audit_capture_should_be_ready(self, capture: str, hosts: str = "") -> None:
        """Passive audit (``v6gate audit``) of a capture from the audited network: fail listing each host that
        is not IPv6-only ready; its report goes to <run dir>/audit/."""
        from ..audit.run import audit_capture

        if not capture:
            raise SkipExecution("no capture given: pass --variable CAPTURE:path/to/capture.pcapng")
        run_dir = self.session.run_dir if self.session else Path(os.environ.get("V6GATE_RUN_DIR", "."))
        paths, doc = audit_capture(capture, hosts=[h for h in hosts.split(",") if h], out=Path(run_dir) / "audit",
                                   command="robot audit")
        from ..report.results import all_checks

        bad = []
        for c in all_checks(doc):
            if c["id"] == "audit.ipv6_only_readiness":
                logger.info(f"{html.escape(c['part'])}: {html.escape(c['verdict'])} — {html.escape(c['seen'])} "
                            f'<a href="{html.escape(Path(paths["html"]).resolve().as_uri())}">audit report</a>',
                            html=True)
                if c["verdict"] != "PASS":
                    bad.append(f"{c['part']} {c['verdict']}: {c['seen']}")
        BuiltIn().set_test_message(f"audit of {capture}: {len(bad)} host(s) not ready"
                                   f" (report: {paths['html']})")
        if bad:
            raise AssertionError(f"{len(bad)} host(s) not IPv6-only ready: " + "; ".join(bad))

    @keyword("Check Verdict Should Be")
    def check_verdict_should_be(self, check_id: str, part: str | None, expected: str) -> None:
        verdict = self.run_check(check_id, part)
        if verdict != expected.upper():
            raise AssertionError(f"expected {expected.upper()}, got {verdict}: {self.results[-1].reason}")

    @keyword("Area Should Pass")
    def area_should_pass(self, area: str, profile: str = "default") -> None:
        """Run every check part of an area; fail listing the parts that did not PASS (waived FAILs excepted)."""
        bad = []
        for c, p in all_items(areas=[area], profile=profile):
            v = self.run_check(c.id, p.letter)
            r = self.results[-1]
            if v not in ("PASS", "SKIP") and not (v == "FAIL" and r.waived):
                bad.append(f"{r.key} {v}")
        if bad:
            raise AssertionError(f"{len(bad)} part(s) of {area} did not pass: " + ", ".join(bad))

    @keyword("Write V6Gate Reports")
    def write_reports(self) -> str:
        """Write results.json, junit.xml and report.html for this run; returns the HTML path."""
        from ..report import compliance
        from ..report.writer import finalize_run

        run_dir = self.session.run_dir if self.session else Path(os.environ["V6GATE_RUN_DIR"])
        paths, doc = finalize_run(run_dir, target_label="robot", profile=self._profile, command="robot",
                                  baseline=self._baseline, campaign_dut=self._campaign_dut)
        links = " · ".join(f'<a href="{Path(p).resolve().as_uri()}">{Path(p).name}</a>' for p in
                           [paths["html"], Path(paths["html"]).with_name("compliance.html"), paths["results"],
                            paths.get("manifest")] if p)
        logger.info(f"v6gate reports: {links}", html=True)
        logger.info(compliance.to_text(compliance.matrix(doc)))
        return str(paths["html"])


def _tag(name: str) -> None:
    """Tag the running Robot test (outside a running test, e.g. in a unit test, do nothing)."""
    from robot.libraries.BuiltIn import BuiltIn, RobotNotRunningError

    try:
        BuiltIn().set_tags(name)
    except RobotNotRunningError:
        pass
