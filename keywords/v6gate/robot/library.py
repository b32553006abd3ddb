"""The V6Gate Robot library.  Verdicts map to Robot statuses: PASS -> pass,
waived FAIL -> pass with a warning, SKIP -> skip, FAIL / ERROR /
INCONCLUSIVE -> fail with the verdict in the message, NOT_JUDGED -> fail
with "NOT_JUDGED: precondition ... (judged by <check>)" and the tag
``not_judged`` (a distinct outcome, never a pass).

Imported with ``areas=...`` (comma-separated areas, or ``all``) the library
also generates the suite's tests: one Robot test per check part of those
areas, named by its IPv6 Ready ID, part and title, tagged with its area,
ID, RFC, scope and profile, each running the template keyword of the
suite's only written test (``Check Should Pass``), which shows the form."""

from __future__ import annotations

import os
from pathlib import Path

from robot.api import SkipExecution, logger
from robot.api.deco import keyword, library

from ..core.check import REGISTRY, all_items, find
from ..core.session import RunRecorder, Session, install_signal_handlers
from ..pytest_plugin import new_run_dir, new_run_id
from ..target import load_target


@library(scope="GLOBAL", auto_keywords=False)
class V6Gate:
    ROBOT_LISTENER_API_VERSION = 3

    def __init__(self, run_dir: str | None = None, areas: str = "", profile: str = "default"):
        self._run_dir_arg = run_dir
        self.session: Session | None = None
        self.results = []
        self._areas = [a.strip() for a in areas.split(",") if a.strip()]
        self._profile = profile
        if self._areas:
            self.ROBOT_LIBRARY_LISTENER = self

    def _start_suite(self, data, result) -> None:
        """Replace the suite's one templated test by a test per check part."""
        if not self._areas or not data.tests:
            return
        from ..core.check import load_all

        load_all()
        known = sorted({c.area for c in REGISTRY.values() if c.kind == "check"})
        wanted = None if self._areas == ["all"] else self._areas
        unknown = sorted(set(wanted or ()) - set(known))
        template = data.tests[0]
        keyword_name = template.template or "Check Should Pass"
        data.tests.clear()
        if unknown:  # a listener's exception would only be logged: fail the suite visibly instead
            test = data.tests.create(name="Selected areas exist")
            test.body.create_keyword(name="Fail", args=[f"unknown area(s) {', '.join(unknown)} in areas=: "
                                                        f"use 'all' or some of {', '.join(known)}"])
            return
        for c, p in all_items(areas=wanted, profile=self._profile):
            label = " ".join(x for x in (c.ipv6ready, p.letter) if x)
            test = data.tests.create(name=f"{label + ' ' if label else ''}{c.title_of(p)} ({c.id})",
                                     doc=f"{c.rfc_of(p)}: {c.expect_of(p)}",
                                     tags=[f"area:{c.area}", f"scope:{c.scope_of(p)}", f"profile:{c.profile_of(p)}"]
                                     + ([f"ipv6ready:{c.ipv6ready}"] if c.ipv6ready else []))
            test.body.create_keyword(name=keyword_name, args=[c.id, p.letter or "None"])

    @keyword("Open V6Gate Session")
    def open_session(self, target: str = "lab", profile: str = "default") -> str:
        """Build the embedded lab (``target=lab``) or open a target file; returns the run directory."""
        install_signal_handlers()
        os.environ.setdefault("V6GATE_RUN_ID", new_run_id())
        run_dir = Path(self._run_dir_arg or os.environ.get("V6GATE_RUN_DIR") or new_run_dir(os.environ["V6GATE_RUN_ID"]))
        recorder = RunRecorder(run_dir, worker="robot")
        if target == "lab" or target.endswith("lab.yaml"):
            self.session = Session.for_lab(run_dir, target_file=None if target == "lab" else target,
                                           profile=profile, recorder=recorder)
        else:
            self.session = Session(load_target(target), run_dir, recorder=recorder, profile=profile).open()
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
        link = f' <a href="file://{pcap}">pcap</a>' if pcap else ""
        logger.info(f"{result.verdict} {result.ipv6ready or ''} {result.part or ''} [{result.rfc}]: "
                    f"{result.reason}{link}", html=bool(link))
        return result.verdict

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
        from ..report.writer import finalize_run

        run_dir = self.session.run_dir if self.session else Path(os.environ["V6GATE_RUN_DIR"])
        paths, _ = finalize_run(run_dir, target_label="robot", profile="default", command="robot")
        return str(paths["html"])


def _tag(name: str) -> None:
    """Tag the running Robot test (outside a running test, e.g. in a unit test, do nothing)."""
    from robot.libraries.BuiltIn import BuiltIn, RobotNotRunningError

    try:
        BuiltIn().set_tags(name)
    except RobotNotRunningError:
        pass
