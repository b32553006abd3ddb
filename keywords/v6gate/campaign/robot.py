"""A campaign as Robot Framework suites: ``suites/robot/campaign_dut.robot``
once per DUT, each with an argument file of its own (its target, run
directory, baseline and name), run side by side by pabot
(``--argumentfileN``), or one after the other by Robot when pabot is not
installed.  Each suite writes its DUT's run directory as ``v6gate run``
does; the fleet report is then built from them as for ``v6gate campaign
run``, and Robot's own merged output (output.xml, log.html, report.html)
is in ``<campaign>/robot/``."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from ..errors import UsageError
from ..paths import SUITES
from .fleet import load_run
from .runner import BROKEN, FINISHED, INTERRUPTED, RUNNING, finished_run, write_json

SUITE = SUITES / "robot" / "campaign_dut.robot"


def selectors(state: dict) -> str:
    """The campaign's selection as the suite's AREAS (areas, or the check ids when the campaign names checks)."""
    sel = state["selection"]
    if not sel["checks"]:
        return ",".join(sel["areas"]) or "all"
    from ..core.check import all_items

    ids = sorted({c.id for c, _p in all_items(areas=sel["areas"] or None, profile=sel["profile"], kind="check",
                                               ids=sel["checks"])})
    return ",".join(ids)


def argument_files(out: Path, state: dict) -> list[Path]:
    files = []
    adir = out / "robot" / "args"
    adir.mkdir(parents=True, exist_ok=True)
    for d in state["duts"]:
        if not d.get("in_shard"):
            continue
        run_dir = out / d["run_dir"]
        lines = [f"--variable TARGET:{run_dir / 'target.yaml'}", f"--variable RUN_DIR:{run_dir}",
                 f"--variable AREAS:{selectors(state)}", f"--variable PROFILE:{state['selection']['profile']}",
                 f"--variable CAMPAIGN_DUT:{d['name']}", f"--name {d['name']}"]
        if d.get("baseline"):
            lines.append(f"--variable BASELINE:{d['baseline']}")
        path = adir / f"{d['name']}.args"
        path.write_text("\n".join(lines) + "\n")
        files.append(path)
    return files


def run(out: Path, state: dict, *, jobs: int | None = None) -> bool:
    """Run the shard's DUTs as Robot suites; True when interrupted."""
    if state["selection"]["gates"]:
        raise UsageError("a Robot campaign runs the checks; run a campaign with gates: true through "
                         "'v6gate campaign run' (one DUT's gates at a time)")
    files = argument_files(out, state)
    rdir = out / "robot"
    env = {**os.environ, "V6GATE_CAMPAIGN": json.dumps({"name": state["name"],
                                                        "file_sha256": state["file"]["sha256"]})}
    for k in ("V6GATE_RUN_ID", "V6GATE_RUN_DIR"):
        env.pop(k, None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # pabot starts 'robot' by name
    pabot = shutil.which("pabot", path=str(Path(sys.executable).parent)) or shutil.which("pabot")
    mine = [d for d in state["duts"] if d.get("in_shard")]
    if pabot:
        # no PabotLib: its remote server would take TCP port 8270 on this machine, which the suite does not need
        argv = [pabot, "--no-pabotlib", "--processes", str(max(1, jobs or len(mine))), "--outputdir", str(rdir)]
        for i, f in enumerate(files, 1):
            argv += [f"--argumentfile{i}", str(f)]
        argv.append(str(SUITE))
        runs = [argv]
        print(f"v6gate campaign: {len(files)} Robot suite(s), one per DUT, with pabot ({argv[3]} at a time) -> {rdir}",
              flush=True)
    else:
        print("v6gate campaign: pabot is not installed (pip install robotframework-pabot): the DUTs' Robot suites "
              "run one after the other", flush=True)
        runs = [[sys.executable, "-m", "robot", "--argumentfile", str(f), "--outputdir", str(rdir / f.stem),
                 str(SUITE)] for f in files]
    for d in mine:
        d["state"], d["runs"] = RUNNING, d.get("runs", 0) + 1
    write_json(out / "campaign.json", state)
    interrupted = False
    with open(rdir / "robot.log", "a") as log:
        for argv in runs:
            # in its own directory: pabot writes .pabotsuitenames in its working directory
            proc = subprocess.Popen(argv, cwd=rdir, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT)
            try:
                proc.wait()
            except KeyboardInterrupt:
                interrupted = True
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGINT)
                proc.wait()
                break
    for d in mine:
        rd = out / d["run_dir"]
        d["state"] = FINISHED if finished_run(rd) else INTERRUPTED if interrupted else BROKEN
        d["exit_code"] = load_run(rd)["summary"]["exit_code"] if d["state"] == FINISHED else None
        print(f"v6gate campaign: {d['name']}: {d['state']}"
              + (f", exit code {d['exit_code']}" if d["exit_code"] is not None else ""), flush=True)
    write_json(out / "campaign.json", state)
    return interrupted
