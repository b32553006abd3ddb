"""Running a campaign: one worker per DUT, side by side, resumable.

Each DUT is a ``v6gate run`` of its own (a child process, so a DUT that
dies, hangs its bench or is interrupted ends only its own run), with its
effective target file, the campaign's selection and its baseline, writing
its run directory as today under ``<campaign>/duts/<name>/``.  A DUT is
probed by that one process with one worker (``-n 1``; an external DUT
always gets one), and the campaign refuses two entries that name the same
DUT or the same tester port.

State is on disk (``campaign.json``, written atomically as DUTs start and
finish), so an interrupted campaign (SIGTERM, a kill, a controller reboot)
continues with ``v6gate campaign resume DIR``: finished DUTs are not run
again, an interrupted DUT's run continues with the parts it had not
recorded (``v6gate run --resume``), the others start."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from .. import untrusted
from ..errors import UsageError
from ..paths import REPORTS, ROOT
from ..report import incomplete
from ..report.results import EXIT_BENCH, EXIT_INTERRUPTED, EXIT_USAGE
from . import spec as spec_mod
from .spec import Campaign, DutEntry

STATE = "campaign.json"
COPY = "campaign.yaml"
SCHEMA = "v6gate/campaign/1"
DUTS = "duts"
#: a DUT's state in campaign.json
PENDING, RUNNING, FINISHED, INTERRUPTED, BROKEN = "pending", "running", "finished", "interrupted", "broken"
STATE_LIMITS = untrusted.RUN_OUTPUT.but(kind="campaign state (campaign.json)")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def write_json(path: Path, doc: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, path)


def default_out(name: str) -> Path:
    return REPORTS / "campaigns" / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{name}"


def _same_dut(duts: list[tuple[DutEntry, object]]) -> None:
    """Two entries that name one DUT (its MAC) or one tester port would probe a DUT from two workers, or
    two DUTs through one port: refused.  Lab DUTs are each a lab of their own."""
    seen_mac, seen_port = {}, {}
    for d, t in duts:
        if d.is_lab:
            continue
        port = (t.tester_netns or "", t.tester_interface)
        where = f" in namespace {t.tester_netns}" if t.tester_netns else ""
        # as run locks key them (runlock.keys_for): the same MAC behind two namespaces' tester ports is two DUTs
        for key, seen, what in (((port[0], t.dut_mac), seen_mac, f"the same DUT (mac {t.dut_mac}{where})"),
                                (port, seen_port, f"the same tester port ({t.tester_interface}"
                                                  f"{' in ' + t.tester_netns if t.tester_netns else ''})")):
            if key in seen and seen[key].controller == d.controller:
                raise UsageError(f"{d.where} and {seen[key].where} name {what}: a DUT is probed by one worker and a "
                                 "tester port serves one DUT; list it once or give the entry its own port")
            seen[key] = d


def load_targets(c: Campaign, work: Path) -> list[tuple[DutEntry, object, Path]]:
    """Every DUT's effective target, written into ``work`` and loaded (validated) like a target file; two
    entries naming one DUT or one tester port refused."""
    from ..core.target import load_target

    work.mkdir(parents=True, exist_ok=True)
    loaded = []
    for d in c.duts:
        path = work / f"{d.name}.yaml"
        path.write_text(f"# DUT {d.name} of campaign {c.name} ({c.source}): "
                        f"{d.target or 'the embedded lab'} with the campaign entry's overrides\n"
                        + yaml.safe_dump(spec_mod.effective_target(c, d), sort_keys=False))
        try:
            loaded.append((d, load_target(path), path))
        except UsageError as exc:
            raise UsageError(f"{c.source}: {d.where}: {exc}") from None
    _same_dut([(d, t) for d, t, _ in loaded])
    return loaded


def prepare(c: Campaign, out: Path, shard: str | None, *, own_link: bool = False) -> dict:
    """Validate every DUT of the campaign (each effective target through the target schema, waivers, baseline;
    the shard's tester ports and scope guard on this machine), then lay out the campaign directory and its
    state.  Nothing is written in ``out`` before everything validated."""
    import tempfile

    mine = {d.name for d in c.shard(shard)}
    with tempfile.TemporaryDirectory(prefix="v6gate-campaign-") as tmp:
        return _prepare(c, out, shard, mine, load_targets(c, Path(tmp)), own_link)


def _prepare(c: Campaign, out: Path, shard: str | None, mine: set[str], loaded: list, own_link: bool) -> dict:
    from .. import cli_guard as guard
    from ..scope_guard import refusal

    for d, t, _path in loaded:
        if d.name in mine:
            try:
                guard.check_waivers(t)
                guard.check_baseline(str(d.baseline) if d.baseline else None)
                if not d.is_lab:
                    guard.check_tester_interface(t)
                    why = refusal(t, own_link=own_link)
                    if why:
                        raise UsageError(why)
            except UsageError as exc:
                raise UsageError(f"{c.source}: {d.where}: {exc}") from None
    if any(d.is_lab for d in c.duts if d.name in mine) and os.geteuid() != 0:
        raise UsageError("the campaign's lab DUTs need root (network namespaces): run as root")
    (out / DUTS).mkdir(parents=True, exist_ok=True)
    for d, _t, path in loaded:
        if d.name in mine:
            (out / DUTS / d.name).mkdir(exist_ok=True)
            shutil.copyfile(path, out / DUTS / d.name / "target.yaml")
    (out / COPY).write_bytes(c.source.read_bytes())
    state = {
        "schema": SCHEMA, "name": c.name, "description": c.description,
        "file": {"path": str(c.source), "sha256": c.sha256},
        "selection": {"profile": c.profile, "areas": list(c.areas), "checks": list(c.checks), "gates": c.gates},
        "shard": shard, "own_link": own_link, "created": _now(), "attempts": [],
        "duts": [{"name": d.name, "index": d.index, "controller": d.controller, "lab_fault": d.lab_fault,
                  "target_source": str(d.target) if d.target else "embedded lab",
                  "baseline": str(d.baseline) if d.baseline else None, "in_shard": d.name in mine,
                  "run_dir": f"{DUTS}/{d.name}" if d.name in mine else None,
                  "state": PENDING if d.name in mine else None, "exit_code": None, "runs": 0, "wall_s": None}
                 for d in c.duts],
    }
    write_json(out / STATE, state)
    return state


def load_state(out: Path) -> dict:
    path = Path(out) / STATE
    if not path.is_file():
        raise UsageError(f"{out}: no {STATE}; pass a campaign directory ('v6gate campaign run' writes one)")
    doc = untrusted.load_json(path, STATE_LIMITS)
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("duts"), list):
        raise UsageError(f"{path}: not a v6gate campaign state ({SCHEMA}); pass a campaign directory")
    for d in doc["duts"]:
        if not isinstance(d, dict) or not isinstance(d.get("name"), str) or "/" in d["name"] \
                or d["name"].startswith("."):
            raise UsageError(f"{path}: a DUT entry without a usable name; pass a campaign directory v6gate wrote")
    return doc


def finished_run(run_dir: Path) -> bool:
    """A DUT's run that wrote its reports (no INCOMPLETE marker, results.json and a manifest present)."""
    return (run_dir / "results.json").is_file() and (run_dir / "MANIFEST.sha256").is_file() \
        and not incomplete.present(run_dir)


class Supervisor:
    """Runs the shard's DUTs, ``jobs`` at a time, and records each one's progress in campaign.json."""

    def __init__(self, out: Path, state: dict, jobs: int | None):
        self.out = out
        self.state = state
        mine = [d for d in state["duts"] if d.get("in_shard")]
        self.jobs = max(1, jobs or len(mine) or 1)
        self.running: dict[str, tuple[subprocess.Popen, float, object]] = {}
        self.stop_signal: int | None = None

    def _save(self) -> None:
        write_json(self.out / STATE, self.state)

    def _argv(self, d: dict, resume: bool) -> list[str]:
        sel = self.state["selection"]
        run_dir = self.out / d["run_dir"]
        argv = [sys.executable, "-m", "v6gate.cli", "run", "--target", str(run_dir / "target.yaml"),
                "--out", str(run_dir), "-n", "1", "--non-interactive", "--profile", sel["profile"]]
        for a in sel["areas"]:
            argv += ["--area", a]
        for cid in sel["checks"]:
            argv += ["--check", cid]
        if not sel["gates"]:
            argv.append("--no-gates")
        if d.get("baseline"):
            argv += ["--baseline", d["baseline"]]
        if self.state.get("own_link"):
            argv.append("--i-own-this-link")
        if resume:
            argv.append("--resume")
        return argv

    def _start(self, d: dict) -> None:
        run_dir = self.out / d["run_dir"]
        resume = d["state"] in (RUNNING, INTERRUPTED) and (run_dir / "records").is_dir()
        env = {**os.environ, "V6GATE_GATES_LOCK": str(self.out / ".gates.lock"),
               "V6GATE_CAMPAIGN": json.dumps({"name": self.state["name"], "dut": d["name"],
                                              "file_sha256": self.state["file"]["sha256"]})}
        for k in ("V6GATE_RUN_ID", "V6GATE_RUN_DIR", "PYTEST_XDIST_WORKER"):
            env.pop(k, None)
        log = open(run_dir / "run.log", "a")
        log.write(f"== {_now()} campaign {self.state['name']}: DUT {d['name']}{' (resumed)' if resume else ''}\n")
        log.flush()
        proc = subprocess.Popen(self._argv(d, resume), cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)
        self.running[d["name"]] = (proc, time.monotonic(), log)
        d["state"], d["runs"] = RUNNING, d.get("runs", 0) + 1
        self._save()
        print(f"v6gate campaign: {d['name']}: {'resumed' if resume else 'started'} "
              f"(pid {proc.pid}; log {run_dir / 'run.log'})", flush=True)

    def _finish(self, name: str, rc: int) -> None:
        _proc, t0, log = self.running.pop(name)
        log.close()
        d = next(x for x in self.state["duts"] if x["name"] == name)
        run_dir = self.out / d["run_dir"]
        wall = round(time.monotonic() - t0, 1)
        d["wall_s"] = round((d.get("wall_s") or 0) + wall, 1)
        if rc == EXIT_INTERRUPTED or (self.stop_signal and not finished_run(run_dir)):
            d["state"], d["exit_code"] = INTERRUPTED, None
        elif finished_run(run_dir):
            d["state"], d["exit_code"] = FINISHED, rc
        else:  # no reports: bad input the campaign could not foresee, or the run crashed
            d["state"], d["exit_code"] = BROKEN, rc
        self._save()
        print(f"v6gate campaign: {name}: {d['state']}, exit code {rc} in {wall:.0f} s", flush=True)

    def _on_signal(self, signum, _frame) -> None:
        if self.stop_signal is None:
            self.stop_signal = signum
            print(f"v6gate campaign: signal {signum}: stopping the running DUTs (their reports hold what finished); "
                  f"'v6gate campaign resume {self.out}' continues", file=sys.stderr, flush=True)
        for proc, _t0, _log in self.running.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)

    def run(self) -> bool:
        """Run the DUTs not finished yet; True when interrupted by a signal."""
        todo = [d for d in self.state["duts"] if d.get("in_shard") and d["state"] not in (FINISHED,)]
        attempt = {"started": _now(), "pid": os.getpid(), "duts": [d["name"] for d in todo]}
        self.state["attempts"].append(attempt)
        self._save()
        old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
        deadline = None
        try:
            while todo or self.running:
                while todo and len(self.running) < self.jobs and self.stop_signal is None:
                    self._start(todo.pop(0))
                if self.stop_signal is not None:
                    todo = []
                    deadline = deadline or time.monotonic() + 90  # each run tears its lab down and writes reports
                for name, (proc, _t0, _log) in list(self.running.items()):
                    rc = proc.poll()
                    if rc is None and deadline and time.monotonic() > deadline:
                        proc.kill()
                        rc = proc.wait()
                    if rc is not None:
                        self._finish(name, rc)
                time.sleep(0.2)
        finally:
            for s, h in old.items():
                signal.signal(s, h)
        attempt["finished"] = _now()
        attempt["interrupted"] = self.stop_signal is not None
        self._save()
        return self.stop_signal is not None


def check_resumable(out: Path, state: dict) -> None:
    """The campaign file it was started from must be unchanged (the copy in the directory is what resumes)."""
    copy = out / COPY
    if not copy.is_file() or hashlib.sha256(copy.read_bytes()).hexdigest() != state["file"]["sha256"]:
        raise UsageError(f"{out}: its {COPY} is missing or changed since the campaign started; start a new campaign")


def exit_code(fleet_doc: dict, interrupted: bool) -> int:
    if interrupted:
        return EXIT_INTERRUPTED
    return fleet_doc["exit_code"]


__all__ = ["EXIT_BENCH", "EXIT_USAGE", "Supervisor", "check_resumable", "default_out", "exit_code",
           "finished_run", "load_state", "prepare"]
