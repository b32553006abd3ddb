"""Finishing a run: per-process session facts in, one results document and
its report files out."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from .. import untrusted
from ..errors import UsageError
from . import gates as _gates  # noqa: F401  (the gates register their renderer, report section and results.json part)
from .files import ReportsNotWritten
from .results import build_document, host_info, load_records, now_iso, tool_versions, write_all


def write_session_info(run_dir: Path, session, closing: bool = False) -> None:
    d = Path(run_dir) / "records"
    d.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    path = d / f"session-{worker}-{os.getpid()}.json"
    info = json.loads(path.read_text()) if path.exists() else {}
    info["worker"] = worker
    info["target"] = session.target.summary()
    info["setup_s"] = round(getattr(session, "setup_s", 0.0), 3)
    lab = session.lab
    if lab is not None:
        info["lab"] = lab.describe()
    elif closing and info.get("lab"):
        info["lab"]["closed"] = True
    if closing and getattr(session, "dut_state_after", None) is not None:
        info["dut_state_after"] = session.dut_state_after
    table = getattr(session, "table", None)
    if closing and table is not None and table.summary():
        info["dut_table"] = table.summary()  # the DUT's address table, declared or discovered (core/room.py)
    if getattr(session, "carried", None):
        info["dut_state_before"] = session.carried  # what an earlier run left on the DUT (core/carryover.py)
    pace = getattr(session, "pace", None)
    if closing and pace is not None:
        info["pace"] = pace.summary()  # the reply and silence windows derived from the DUT's answers (core/pace.py)
    room = getattr(session, "neighbour_room", None)
    if closing and room is not None and room.summary():
        info["neighbour_room"] = room.summary()  # parts side by side: the DUT's Neighbor Cache room (core/neighbour_room.py)
    if closing and getattr(session, "last_lab_timings", None):
        info.setdefault("lab", {})["timings_s"] = session.last_lab_timings
    if getattr(session, "bench_lost", None):
        info["bench_lost"] = session.bench_lost
    try:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(info))
        os.replace(tmp, path)
    except OSError:  # a full or read-only run directory: the run says so itself (cli.py, report/storage.py)
        with contextlib.suppress(OSError):
            tmp.unlink()


def read_session_infos(run_dir: Path) -> list[dict]:
    out = []
    for p in sorted((Path(run_dir) / "records").glob("session-*.json")):
        try:
            info = untrusted.load_json(p, untrusted.RUN_OUTPUT.but(kind="session record"))
        except UsageError:
            continue
        if isinstance(info, dict):
            out.append(info)
    return out


def finalize_run(run_dir: Path, *, target_label: str, profile: str, started: str | None = None,
                 command: str = "", baseline: str | None = None, expected_keys: list[str] | None = None,
                 phases: list[dict] | None = None, t0: float | None = None,
                 campaign_dut: str | None = None, stopped: str | None = None) -> tuple[dict, dict]:
    """``campaign_dut``: the DUT entry this run is in the campaign ``V6GATE_CAMPAIGN`` names (when the
    variable, shared by the processes of a Robot campaign, does not name it itself).  ``stopped``: why the run
    could not go on, as its caller saw it (the run directory full or read-only), when no phase said it."""
    from ..core.check import load_all

    load_all()  # areas register their report renderers, sections and document parts on import
    run_dir = Path(run_dir)
    if baseline is None or started is None:  # a rebuild ('v6gate report') keeps the run's start and --baseline
        try:
            before = untrusted.load_json(run_dir / "results.json").get("run") or {}
        except (UsageError, AttributeError):
            before = {}
        if not isinstance(before, dict):
            before = {}
        started = started or before.get("started")
        if baseline is None and before.get("baseline") and Path(before["baseline"]).is_file():
            baseline = before["baseline"]
    results = load_records(run_dir, phases=("checks", "gates"))
    infos = read_session_infos(run_dir)
    target = next((i["target"] for i in infos if i.get("target")), {"name": target_label, "kind": "unknown"})
    labs = [i["lab"] for i in infos if i.get("lab")]
    meta = {
        "id": run_dir.name,
        "started": started or now_iso(),
        "finished": now_iso(),
        "command": command,
        "profile": profile,
        "target": target,
        "tool": tool_versions(),
        "host": host_info(),
        "lab": {"instances": labs} if labs else None,
        "workers": len({i["worker"] for i in infos}) or 1,
        "phases": phases or [],
    }
    campaign = _campaign_of_run(run_dir)
    if campaign and campaign_dut:
        campaign = {**campaign, "dut": campaign_dut}
    if campaign and campaign.get("dut"):
        meta["campaign"] = campaign
    lost = [i["bench_lost"] for i in infos if i.get("bench_lost")]
    if lost or stopped:
        meta["bench_lost"] = lost[0] if lost else stopped  # the tester interface or the run directory failed; later parts not run
    left = [i["dut_state_after"] for i in infos if i.get("dut_state_after")]
    if left:
        meta["dut_state_after"] = left
    for key in ("dut_table", "pace", "dut_state_before", "neighbour_room"):
        found = [i[key] for i in infos if i.get(key)]
        if found:
            meta[key] = found
    if t0 is not None:
        meta["duration_s"] = round(time.monotonic() - t0, 3)
    doc = build_document(results, run_meta=meta, baseline=baseline, expected_keys=expected_keys)
    try:
        paths = write_all(run_dir, doc)
    except ReportsNotWritten as exc:  # a full or read-only run directory: the caller says what is missing
        exc.doc = doc
        raise
    latest = run_dir.parent.parent / "latest"
    if run_dir.parent.name == "runs":
        try:
            if latest.is_symlink() or latest.exists():
                latest.unlink()
            latest.symlink_to(run_dir.relative_to(latest.parent))
        except OSError:
            pass
    return paths, doc


def _campaign_of_run(run_dir: Path) -> dict | None:
    """The campaign this run is a DUT of (``V6GATE_CAMPAIGN``, set by ``v6gate campaign``; a rebuild keeps the
    one its results.json names): {name, dut, file_sha256}, so a merge knows each run directory's place."""
    text = os.environ.get("V6GATE_CAMPAIGN")
    if text:
        try:
            value = untrusted.parse_json(text, "V6GATE_CAMPAIGN", untrusted.CONFIG.but(kind="campaign variable"))
        except UsageError:
            value = None
        if isinstance(value, dict):
            return value
    try:
        before = untrusted.load_json(run_dir / "results.json", untrusted.RUN_OUTPUT.but(kind="results.json"))
    except UsageError:
        return None
    c = (before.get("run") or {}).get("campaign") if isinstance(before, dict) else None
    return c if isinstance(c, dict) else None
