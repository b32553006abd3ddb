"""pytest front-end (thin): one pytest test per check part, each calling
``Session.run``.  No check logic lives here.

A suite module is two lines:

    from v6gate.pytest_plugin import check_test
    test_icmpv6 = check_test("icmpv6")

Options (``pytest --help``, group v6gate): ``--v6gate-target FILE|lab``,
``--v6gate-profile default|full``, ``--v6gate-run-dir DIR``,
``--v6gate-check ID`` (repeatable), ``--v6gate-no-report``.  Works with
pytest-xdist: every worker builds its own lab with its own namespaces.
Markers: ``area_<area>``, ``cap_<Capability>``, ``profile_full``, ``router_only``.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

import pytest

from .core import order
from .core.check import all_items, load_all
from .core.session import RunRecorder, Session, install_signal_handlers
from .core.target import load_target
from .core.together import Plan, batch_key
from .errors import UsageError
from .paths import ROOT, new_run_dir, new_run_id


class V6GateBenchError(Exception):
    """Raised in a test whose verdict is ERROR: the bench broke, not the DUT."""


class V6GateInconclusive(Exception):
    """Raised in a test whose gate verdict is INCONCLUSIVE."""


class V6GateNotJudged(Exception):
    """Raised in a test whose verdict is NOT_JUDGED: the DUT did not reach the
    part's precondition, which another check judges.  Never a pass; shown as
    its own category ("not judged", letter N)."""


def pytest_addoption(parser):
    g = parser.getgroup("v6gate", "v6gate conformance suite")
    g.addoption("--v6gate-target", default=None, help="target file, or 'lab' (default) for the embedded lab")
    g.addoption("--v6gate-profile", default="default", choices=["default", "full"],
                help="'full' adds checks that wait on long protocol timers")
    g.addoption("--v6gate-run-dir", default=None, help="where records, pcaps and reports go")
    g.addoption("--v6gate-check", action="append", default=[], help="run only this check id (repeatable)")
    g.addoption("--v6gate-no-report", action="store_true", help="only write records (the v6gate CLI reports)")
    g.addoption("--v6gate-phase", default="checks", help="label of this phase's records (checks, gates)")
    g.addoption("--v6gate-resume", default=None, metavar="FILE",
                help="leave out the parts listed in FILE, one key a line (continue an interrupted run: the parts "
                     "it recorded)")


def pytest_configure(config):
    registry = load_all()
    for area in sorted({c.area for c in registry.values()}):
        config.addinivalue_line("markers", f"area_{area}: checks of area {area}")
    for cap in _capability_labels():
        config.addinivalue_line("markers", f"cap_{cap.replace('-', '_')}: checks needing capability {cap}")
    config.addinivalue_line("markers", "profile_full: checks that wait on long protocol timers")
    config.addinivalue_line("markers", "router_only: router-scope parts (SKIP on hosts)")
    if not _active(config):
        return
    install_signal_handlers()
    if not hasattr(config, "workerinput"):  # controller or plain run
        # xdist workers inherit the environment, not late changes to options
        os.environ.setdefault("V6GATE_RUN_ID", new_run_id())
        run_dir = config.option.v6gate_run_dir or os.environ.get("V6GATE_RUN_DIR")
        run_dir = run_dir or str(new_run_dir(os.environ["V6GATE_RUN_ID"]))
        config.option.v6gate_run_dir = os.environ["V6GATE_RUN_DIR"] = str(run_dir)
        config._v6gate_started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    elif not config.option.v6gate_run_dir:
        config.option.v6gate_run_dir = os.environ.get("V6GATE_RUN_DIR")


def _capability_labels() -> list[str]:
    import json

    from .core.target import SCHEMA_PATH

    return json.loads(SCHEMA_PATH.read_text())["$defs"]["capability"]["enum"]


def _active(config) -> bool:
    """The plugin drives tests only in sessions that collect check tests."""
    return any(str(a).startswith(str(ROOT / "suites")) or "suites" in str(a) for a in config.args) or bool(
        config.option.v6gate_target)


def check_test(area: str, kind: str = "check"):
    """A pytest test function running every check part of ``area``."""

    def test(v6check, v6gate_session):
        c, part = v6check
        result = v6gate_session.run(c, part)
        _raise_for(result)

    test.__doc__ = f"Every {kind} of area '{area}', one test per part (see `v6gate list --area {area}`)."
    test.v6gate_area = area
    test.v6gate_kind = kind
    return test


def _raise_for(result) -> None:
    v = result.verdict
    if v == "PASS":
        return
    if v == "SKIP":
        pytest.skip(result.reason)
    if v == "FAIL" and result.waived:
        pytest.xfail(result.reason)
    if v == "FAIL":
        pytest.fail(f"FAIL {result.ipv6ready or ''} {result.part or ''} [{result.rfc}]: {result.reason}", pytrace=False)
    if v == "ERROR":
        raise V6GateBenchError(result.reason)
    if v == "NOT_JUDGED":
        raise V6GateNotJudged(result.reason)
    raise V6GateInconclusive(result.reason)


def pytest_report_teststatus(report, config):
    """NOT_JUDGED parts get their own category in the terminal summary."""
    # judged by the exception's type (the crash line), not by the whole traceback text: that quotes
    # _raise_for's source, which names every exception (an INCONCLUSIVE gate was counted as not judged)
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if report.when == "call" and report.failed and crash is not None \
            and crash.message.split(":", 1)[0].endswith("V6GateNotJudged"):
        return "not judged", "N", ("NOT_JUDGED", {"yellow": True})
    return None


def pytest_generate_tests(metafunc):
    fn = metafunc.function
    if "v6check" not in metafunc.fixturenames or not hasattr(fn, "v6gate_area"):
        return
    opt = metafunc.config.option
    items = all_items(areas=[fn.v6gate_area], profile=opt.v6gate_profile, kind=fn.v6gate_kind,
                      ids=opt.v6gate_check or None)
    params = []
    for c, p in items:
        marks = [getattr(pytest.mark, f"area_{c.area}")]
        marks += [getattr(pytest.mark, f"cap_{cap.replace('-', '_')}") for cap in c.capabilities_of(p)]
        if c.profile_of(p) == "full":
            marks.append(pytest.mark.profile_full)
        if c.scope_of(p) == "router":
            marks.append(pytest.mark.router_only)
        pid = f"{c.ipv6ready_of(p) or c.id}{'-' + p.letter if p.letter else ''}:{c.id.split('.', 1)[1]}"
        params.append(pytest.param((c, p), id=pid, marks=marks))
    metafunc.parametrize("v6check", params)


def pytest_collection_modifyitems(session, config, items):
    """Parts that leave the DUT an address the run cannot take back (a valid
    lifetime of 2 hours or more: an RA cannot shorten it, RFC 4862 §5.5.3 e;
    ``Part(..., lasting=True)``) run last, so that on a DUT with a bounded
    address table (``dut.max_addresses``) they crowd out no later part."""
    def lasting(item) -> bool:
        spec = getattr(item, "callspec", None)
        v6check = spec.params.get("v6check") if spec else None
        return isinstance(v6check, tuple) and bool(v6check[1].params.get("lasting"))

    if _external(config):  # timed states run out while other areas' parts run; side-by-side parts stay together
        items[:] = order.for_external_dut(items, _area, lambda i: _unit(i, True))
    items[:] = sorted(items, key=lasting)  # stable: everything else keeps its order
    resume = getattr(getattr(config, "option", None), "v6gate_resume", None)
    if resume:  # a list fixed before the run (every xdist worker collects the same)
        done = set(Path(resume).read_text().split())
        left = [i for i in items if _item_key(i) not in done]
        if len(left) < len(items):
            config.hook.pytest_deselected(items=[i for i in items if _item_key(i) in done])
            items[:] = left


def pytest_collection_finish(session):
    """The run's parts in the order they run (after every selection), for
    parts of a check that run side by side (core/together.py): only in one
    process against a DUT the run does not rebuild."""
    config = session.config
    if _active(config) and not hasattr(config, "workerinput") and _external(config):
        config._v6gate_plan = [i.callspec.params["v6check"] for i in session.items if _item_key(i) is not None]


def _unit(item, external: bool) -> str | None:
    spec = getattr(item, "callspec", None)
    v6check = spec.params.get("v6check") if spec else None
    return batch_key(v6check[0], external) if isinstance(v6check, tuple) else None


def _area(item) -> str | None:
    spec = getattr(item, "callspec", None)
    v6check = spec.params.get("v6check") if spec else None
    return v6check[0].area if isinstance(v6check, tuple) and v6check[0] is not None else None


def _external(config) -> bool:
    """The run's target is a DUT the run does not rebuild before each check."""
    target = getattr(getattr(config, "option", None), "v6gate_target", None)
    if not target or target == "lab":
        return False
    try:
        return load_target(target).external
    except UsageError:  # a bad target file is said once, where the session opens it
        return False


def _item_key(item) -> str | None:
    spec = getattr(item, "callspec", None)
    v6check = spec.params.get("v6check") if spec else None
    if not isinstance(v6check, tuple):
        return None
    c, p = v6check
    return f"{c.id}{'#' + p.letter if p.letter else ''}"


@pytest.fixture(scope="session")
def v6gate_session(request):
    """One session per pytest process (per xdist worker): its own lab, or the target file's DUT."""
    config = request.config
    opt = config.option
    run_dir = Path(opt.v6gate_run_dir or new_run_dir(os.environ.setdefault("V6GATE_RUN_ID", new_run_id())))
    recorder = RunRecorder(run_dir, phase=opt.v6gate_phase)
    target = opt.v6gate_target or "lab"
    t0 = time.monotonic()
    try:
        session = Session.for_target(target, run_dir, profile=opt.v6gate_profile, recorder=recorder)
    except UsageError as exc:
        pytest.exit(f"v6gate: {exc}", returncode=4)
    session.setup_s = time.monotonic() - t0
    plan = getattr(config, "_v6gate_plan", None)
    if plan:
        session.plan = Plan(plan, external=True)
    if session.absent:  # a DUT not on the link: one line, nothing judged (core/liveness.py)
        session.close()
        pytest.exit(f"v6gate: {session.absent}", returncode=3)
    _write_session_info(run_dir, session)
    yield session
    session.close()
    _write_session_info(run_dir, session, closing=True)


def _write_session_info(run_dir: Path, session, closing: bool = False) -> None:
    """Per-process facts the report needs: the target and the lab's timings."""
    from .report.writer import write_session_info

    write_session_info(run_dir, session, closing=closing)


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if not _active(config) or hasattr(config, "workerinput") or config.option.v6gate_no_report:
        return
    from .report import files, incomplete
    from .report.writer import finalize_run

    run_dir = Path(config.option.v6gate_run_dir)
    if not (run_dir / "records").is_dir():
        return
    tr = config.pluginmanager.get_plugin("terminalreporter")
    try:
        paths, doc = finalize_run(run_dir, target_label=config.option.v6gate_target or "lab",
                                  profile=config.option.v6gate_profile,
                                  started=getattr(config, "_v6gate_started", None),
                                  command="pytest " + " ".join(map(str, config.invocation_params.args)))
    except files.ReportsNotWritten as exc:  # a full or read-only run directory: say it in one line
        incomplete.mark_unwritten(run_dir, exc.missing, exc.why)
        if tr:
            tr.write_line(f"v6gate: {exc}; {incomplete.MARKER} says so")
        return
    if tr:
        s = doc["summary"]
        tr.write_line(f"v6gate: {s['counts']} exit {s['exit_code']}; report {paths['html']}")
