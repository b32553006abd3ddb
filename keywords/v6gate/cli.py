"""The ``v6gate`` command.

    v6gate run [--target FILE] [--profile default|full] [-n N] [--area A] [--check ID] [--baseline RESULTS]
    v6gate lab up|down|status ...
    v6gate list [--area A] [--profile full] [--json]
    v6gate validate TARGET_FILE
    v6gate report RUN_DIR
    v6gate controls [-n N] [--area A] [--check ID]
    v6gate selftest

Bad input gets one line on stderr and exit code 2; see README.md for the
exit codes of ``run``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import cli_guard as guard
from . import runlock
from .core.verdict import NOT_RUN
from .errors import UsageError, V6GateError
from .paths import ROOT, SUITES
from .report import files, incomplete
from .report.results import EXIT_BENCH, EXIT_INTERRUPTED, EXIT_USAGE

PHASES = (
    # (label, suite directory, runs in parallel)
    ("checks", SUITES / "conformance", True),
    ("gates", SUITES / "performance", False),
)


def _err(msg: str, code: int = EXIT_USAGE) -> int:
    print(f"v6gate: {msg}", file=sys.stderr)
    return code


def _default_workers() -> int:
    # Functional checks mostly wait on the DUT; labs are cheap (<0.1 s CPU each).
    return max(2, min(4, 2 * (os.cpu_count() or 1)))


# -- run ---------------------------------------------------------------------------
def cmd_run(args) -> int:
    from .core.target import load_target
    from .paths import new_run_id

    target_arg = "lab"
    target = None
    if args.target:
        target = load_target(args.target)  # validate before anything is built (one-line error, exit 2)
        guard.check_waivers(target)
        guard.check_extensions(target)
        guard.check_tester_interface(target)
        from .scope_guard import refusal

        why = refusal(target, own_link=args.i_own_this_link)
        if why:
            raise UsageError(f"{args.target}: {why}")
        target_arg = str(Path(args.target).resolve())
        workers, why_workers = workers_for(target, args.workers)
        args.workers = workers
    guard.check_areas(args.area)
    guard.check_ids(args.check)
    guard.check_workers(args.workers)
    guard.check_out_dir(args.out)
    guard.check_free_space(args.out)
    guard.check_baseline(args.baseline)
    if os.geteuid() != 0 and target_arg == "lab":
        raise UsageError("the embedded lab needs root: run as root (or pass --target for a real device)")
    # run --resume: the parts the interrupted run recorded (bad input is one line before anything is locked)
    args.resume_done = _recorded_parts(args.out) if getattr(args, "resume", False) else set()
    run_id = new_run_id()
    # one run per bench: the second on the same tester interface, lab or DUT ends here (runlock.py, exit 3),
    # before this one sends anything (the presence probe below included)
    held = runlock.acquire(runlock.keys_for(target), run_id=run_id, run_dir=args.out or "reports/runs/",
                           command="run") if target is not None else runlock.Held()
    for note in held.notes:
        print(f"v6gate run: {note}", flush=True)
    try:
        if target is not None:
            if not target.is_lab and os.geteuid() == 0:
                from .core.liveness import check_present

                absent = check_present(target)  # a DUT not on the link: one line, nothing run (core/liveness.py)
                if absent:
                    return _err(f"run: {absent}", EXIT_BENCH)
            if why_workers:
                print(f"v6gate run: {args.target}: {why_workers}", flush=True)
            for w in target.expired_waivers():
                print(f"v6gate run: the waiver of {w.check}{'#' + w.part if w.part else ''} expired on {w.expires} "
                      f"({w.source}): it no longer waives", flush=True)
        return _run_locked(args, target_arg, run_id, held)
    finally:
        held.release()


def _run_locked(args, target_arg: str, run_id: str, held) -> int:
    from .core.check import all_items
    from .lab import registry
    from .paths import new_run_dir
    from .report.writer import finalize_run

    registry.cleanup(stale_only=True)  # leftovers of a crashed earlier run (owner process gone)
    done = args.resume_done
    run_dir = Path(args.out).resolve() if args.out else new_run_dir(run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    incomplete.mark_started(run_dir, run_id)  # until the reports are written (report/incomplete.py)
    env = {**os.environ, "V6GATE_RUN_ID": run_id, "V6GATE_RUN_DIR": str(run_dir)}
    if getattr(args, "non_interactive", False):
        env["V6GATE_NON_INTERACTIVE"] = "1"  # control.adapter manual: SKIP the operator's steps
    selected = [(c, f"{c.id}{'#' + p.letter if p.letter else ''}") for c, p in
                all_items(areas=args.area or None, profile=args.profile, kind=None, ids=args.check or None)
                if (c.kind == "check" or not args.no_gates)]
    expected = [k for _, k in selected]
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    t0 = time.monotonic()
    print(f"v6gate run {run_id}: target {args.target or 'embedded lab'}, profile {args.profile}, "
          f"{len(expected)} checks -> {run_dir}", flush=True)
    if getattr(args, "resume", False):
        print(f"v6gate run: resuming {run_dir}: {len(set(expected) & done)} of {len(expected)} parts finished "
              "before; running the others", flush=True)
    phases, interrupted = [], False
    for label, suite, parallel in PHASES:
        if label == "gates" and args.no_gates:
            continue
        # the suites of the areas with selected parts left to run (resuming: a phase whose parts all finished
        # before is not started again; --check: only the suites of those checks' areas are collected)
        kind = "gate" if label == "gates" else "check"
        left = {c.area for c, k in selected if c.kind == kind and k not in done}
        tests = [t for t in sorted(suite.glob("test_*.py")) if t.stem.removeprefix("test_") in left]
        if not tests:
            continue
        workers = args.workers if parallel else 0
        argv = [sys.executable, "-m", "pytest", *map(str, tests), "-p", "no:cacheprovider", "-q", "-rfE",
                "--no-header", f"--v6gate-target={target_arg}", f"--v6gate-profile={args.profile}",
                f"--v6gate-run-dir={run_dir}", "--v6gate-no-report", f"--v6gate-phase={label}",
                "-o", "console_output_style=count"]
        for cid in args.check or []:
            argv.append(f"--v6gate-check={cid}")
        if done:
            argv.append(f"--v6gate-resume={_write_done(run_dir, run_id, done)}")
        if workers:
            argv += ["-n", str(workers)]
        t1 = time.monotonic()
        with _gates_turn(label):
            rc = _run_child(argv, env, pass_fds=held.fds)  # the locks live as long as the phase does
        phases.append({"phase": label, "workers": workers, "wall_s": round(time.monotonic() - t1, 2),
                       "pytest_exit": rc, **({"resumed_with_parts_done": len(done)} if done else {})})
        if rc == EXIT_INTERRUPTED:
            interrupted = True
            break
        if rc == PYTEST_USAGE_ERROR:  # already printed (e.g. the target file, seen by a worker)
            registry.cleanup(prefix=f"{registry.PREFIX}{run_id}")
            return EXIT_USAGE
    registry.cleanup(prefix=f"{registry.PREFIX}{run_id}")  # nothing of this run survives it
    space = files.space_problem(run_dir)  # full or read-only (before the reserve is given back for the reports)
    incomplete.release_reserve(run_dir)
    unwritten: files.ReportsNotWritten | None = None
    try:
        paths, doc = finalize_run(run_dir, target_label=args.target or "lab", profile=args.profile,
                                  started=started, command=" ".join(["v6gate", *sys.argv[1:]]),
                                  baseline=args.baseline, expected_keys=None if interrupted else expected,
                                  phases=phases, t0=t0, stopped=space)
    except files.ReportsNotWritten as exc:
        unwritten, paths, doc = exc, exc.paths, exc.doc
    stopped = unwritten or space or doc["run"].get("bench_lost")
    marked = True
    if unwritten:
        marked = incomplete.mark_unwritten(run_dir, unwritten.missing, unwritten.why)
    elif interrupted:
        incomplete.mark_interrupted(run_dir)
    elif space or doc["run"].get("bench_lost"):
        incomplete.mark_stopped(run_dir, space or doc["run"]["bench_lost"])
    else:
        incomplete.finished(run_dir)
    s = doc["summary"]
    c = s["counts"]
    print(f"v6gate: PASS {c['PASS']}  FAIL {c['FAIL']} ({len(s['waived'])} waived, {len(s['new_failures'])} new)  "
          f"SKIP {c['SKIP']}  ERROR {c['ERROR']}  INCONCLUSIVE {c['INCONCLUSIVE']}  "
          f"NOT_JUDGED {c.get('NOT_JUDGED', 0)}  in {time.monotonic() - t0:.1f} s")
    for key in s["new_failures"]:
        print(f"  new FAIL: {key}")
    for key in s["fixed"]:
        print(f"  fixed:    {key} (waived or baseline FAIL now PASSes)")
    not_run = {f"{c['id']}{'#' + c['part'] if c.get('part') else ''}" for c in doc["checks"]
               if c["verdict"] == "ERROR" and c["reason"].endswith(NOT_RUN)}
    for key in s["errors"]:
        if key not in not_run:
            print(f"  ERROR:    {key}")
    if not_run:
        print(f"  ERROR:    {len(not_run)} later part(s) not run: {doc['run'].get('bench_lost') or 'the bench broke'}")
    if s.get("missing") and not interrupted:
        print(f"  missing:  {len(s['missing'])} part(s) have no result (their results could not be written, or their "
              "phase ended early)")
    for table in doc["run"].get("dut_table") or []:
        if table.get("discovered") is not None or table.get("parts_needing_discovered_limit"):
            how = ", ".join(f"{v} {k}" for k, v in sorted(table.get("by_how", {}).items()))
            print(f"  the DUT's address table: {table['discovered'] or 'not found'} addresses, discovered "
                  f"({table.get('evidence') or 'no retry confirmed it'}); {table['parts_needing_discovered_limit']} "
                  f"part(s) needed it ({how})")
    for before in doc["run"].get("dut_state_before") or []:
        if before.get("disregarded"):
            print(f"  the earlier run's DUT state was disregarded: {before['disregarded']}")
        elif before.get("carried"):
            print(f"  found on the DUT at the start: {len(before['carried'])} address(es) the earlier run "
                  f"{before['run']} left, still held (they took room like the run's own): "
                  f"{', '.join(c['prefix'] for c in before['carried'])}")
    for state in doc["run"].get("dut_state_after") or []:
        print(f"  left on the DUT: {state['count'] if state.get('count') is not None else '?'} global address(es)"
              f" ({state.get('outside_link_prefix', '?')} outside the link prefix; {state['how']})")
        pred = state.get("predicted")
        if pred and pred["count"]:
            gone = "never" if pred["all_gone_in_s"] is None else f"in {pred['all_gone_in_s']:g} s"
            print(f"  the run's prefixes left {pred['count']} address(es) there by RFC 4862 §5.5.3 (all gone {gone}):"
                  f" {', '.join(pred['prefixes'])}")
    dead = _dut_dead(doc)
    for judged_by, keys in s.get("not_judged_by", {}).items():
        if dead and judged_by == dead["judged_by"]:
            continue
        print(f"  not judged (precondition failed, see {judged_by.rstrip('#')}): {', '.join(keys)}")
    if dead:
        print(f"v6gate: {dead['detail']}: {dead['count']} later part(s) not judged (dut-alive)", flush=True)
    if unwritten:  # only what is there
        shown = [f"{k} {p}" for k, p in paths.items() if Path(p).name not in unwritten.missing and Path(p).is_file()]
        print(f"v6gate: reports written: {', '.join(shown) or 'none'}")
    else:
        print(f"v6gate: report {paths['html']}\n        results {paths['results']}\n        junit {paths['junit']}")
        if paths.get("manifest"):
            print(f"        compliance {paths['compliance_csv']}\n        manifest {paths['manifest']}")
    if stopped and not interrupted:  # one line: why the run could not finish its parts or its reports
        lost = doc["run"].get("bench_lost")
        if unwritten:
            why = f"{unwritten}; " + (f"{incomplete.MARKER} says so" if marked else
                                      f"{incomplete.MARKER} (written at the start) says the run did not finish") + \
                  f", the records of what finished are in {run_dir / 'records'}"
        elif lost:
            why = f"{lost}: the later parts were not run (ERROR); the reports hold what finished"
        else:
            why = f"{space} during the run: the results that could not be written are missing; the reports hold " \
                  f"what finished ({incomplete.MARKER})"
        print(f"v6gate: run stopped: {why}", file=sys.stderr)
        return EXIT_BENCH
    if interrupted:
        print("v6gate: interrupted; the reports hold what finished", file=sys.stderr)
        return EXIT_INTERRUPTED
    return s["exit_code"]


def _dut_dead(doc: dict) -> dict | None:
    """The DUT stopped answering and did not come back (core/liveness.py):
    the part it died after, why, and how many parts were left unjudged."""
    dead = [c for c in doc.get("checks", []) if (c.get("precondition") or {}).get("name") == "dut-alive"]
    if not dead:
        return None
    pre = dead[0]["precondition"]
    return {"judged_by": pre["judged_by"], "detail": pre["detail"], "count": len(dead)}


@contextlib.contextmanager
def _gates_turn(label: str):
    """The gates measure this machine's CPU: runs of one campaign side by side (``V6GATE_GATES_LOCK``, set by
    ``v6gate campaign``) take turns for their gates phase, so no two DUTs' gates share the controller."""
    path = os.environ.get("V6GATE_GATES_LOCK")
    if label != "gates" or not path:
        yield
        return
    import fcntl

    with open(path, "a") as f:
        print("v6gate run: waiting for the other DUTs' gates to finish (one DUT's gates at a time)", flush=True)
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _write_done(run_dir: Path, run_id: str, done: set[str]) -> Path:
    path = run_dir / "records" / f"resume-{run_id}.keys"
    path.write_text("".join(f"{k}\n" for k in sorted(done)))
    return path


def _recorded_parts(out: str | None) -> set[str]:
    """``run --resume``: the parts an interrupted run in ``--out`` recorded (they are not run again)."""
    from .report.results import load_records

    if not out:
        raise UsageError("--resume needs --out RUN_DIR: the directory of the run to continue")
    if not (Path(out) / "records").is_dir():
        raise UsageError(f"--resume: {out} has no records/ directory; pass the directory of an interrupted run")
    # a part the run did not run because its bench was lost (an ERROR "not run") runs now
    return {r.key for r in load_records(Path(out)) if not (r.verdict == "ERROR" and r.reason.endswith(NOT_RUN))}


def cmd_repeat(args) -> int:
    """Run the same selection N times, one after the other, and compare the verdicts part by part."""
    if args.times < 2:
        raise UsageError(f"repeat {args.times}: give at least 2 runs to compare")
    rest, out = [], args.out
    it = iter(a for a in args.rest if a != "--")
    for a in it:  # --out anywhere names the repeat's directory (each run gets <out>/run-NN)
        if a == "--out":
            out = next(it, None)
            if out is None:
                raise UsageError("repeat: --out needs a directory")
        elif a.startswith("--out="):
            out = a.split("=", 1)[1]
        else:
            rest.append(a)
    base = Path(out).resolve() if out else (ROOT / "reports" / "repeat" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    held, env = _repeat_locks(rest), dict(os.environ)
    if held.fds:  # the runs are ours: each sees that its parent holds the bench (runlock.INHERIT_ENV)
        env[runlock.INHERIT_ENV] = str(os.getpid())
    try:
        return _repeat_runs(args, rest, base, env)
    finally:
        held.release()


def _repeat_locks(rest: list[str]):
    """The locks of the target the runs name (held from the first run to the last), after its input checks."""
    from .core.target import load_target

    target = next((rest[i + 1] for i, a in enumerate(rest[:-1]) if a == "--target"), None)
    target = target or next((a.split("=", 1)[1] for a in rest if a.startswith("--target=")), None)
    if not target:
        return runlock.Held()
    t = load_target(target)
    guard.check_tester_interface(t)
    held = runlock.acquire(runlock.keys_for(t), command="repeat")
    for note in held.notes:
        print(f"v6gate repeat: {note}", flush=True)
    return held


def _repeat_runs(args, rest: list[str], base: Path, env: dict) -> int:
    from .report.stability import compare

    base.mkdir(parents=True, exist_ok=True)
    docs = []
    for i in range(1, args.times + 1):
        run_dir = base / f"run-{i:02d}"
        print(f"v6gate repeat: run {i}/{args.times} -> {run_dir}", flush=True)
        rc = subprocess.call([sys.executable, "-m", "v6gate.cli", "run", "--out", str(run_dir), *rest], cwd=ROOT,
                             env=env)
        if rc in (EXIT_USAGE, EXIT_INTERRUPTED):
            return rc
        if not (run_dir / "results.json").is_file():  # its directory full or read-only: the run said so
            print(f"v6gate repeat: run {i} wrote no results.json ({run_dir}); stopping", file=sys.stderr)
            return EXIT_BENCH
        docs.append(_verdicts_only(json.loads((run_dir / "results.json").read_text())))
    summary = compare(docs)
    (base / "repeat.json").write_text(json.dumps(summary, indent=1))
    print(f"v6gate repeat: {summary['identical']}/{summary['parts']} parts gave the same verdict in all "
          f"{summary['runs']} runs {summary['verdicts_when_identical']}; wall s {summary['wall_s']}")
    for key, u in summary["unstable"].items():
        print(f"  unstable: {key} {u['counts']}")
    print(f"v6gate repeat: {base / 'repeat.json'}")
    return 0 if not summary["unstable"] else 1


def _verdicts_only(doc: dict) -> dict:
    """What the comparison of repeated runs needs of a results.json (each part's verdict and reason, the phases'
    wall times): ``repeat`` keeps one per run until the end, not the whole document (its memory grew by each
    run's document: 90 KiB a run of 27 parts)."""
    return {"run": {"phases": [{"wall_s": p.get("wall_s")} for p in (doc.get("run") or {}).get("phases") or []]},
            "checks": [{k: c.get(k) for k in ("id", "part", "verdict", "reason")} for c in doc.get("checks", [])]}


PYTEST_USAGE_ERROR = 4
_child: subprocess.Popen | None = None
_interrupted = False


def _run_child(argv, env, pass_fds=()) -> int:
    """Run a phase; SIGTERM/SIGINT to us are passed on and the child is reaped."""
    global _child, _interrupted
    _child = subprocess.Popen(argv, env=env, cwd=ROOT, pass_fds=tuple(pass_fds))

    def forward(signum, _frame):
        global _interrupted
        _interrupted = True
        if _child and _child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                _child.send_signal(signal.SIGTERM if signum == signal.SIGTERM else signal.SIGINT)

    old = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        while True:
            try:
                rc = _child.wait(timeout=30 if _interrupted else None)
                break
            except subprocess.TimeoutExpired:
                _child.kill()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if _interrupted:
        return EXIT_INTERRUPTED
    return rc


# -- lab --------------------------------------------------------------------------------
def cmd_lab(args) -> int:
    from .lab import Lab, registry

    if os.geteuid() != 0:
        raise UsageError("the lab needs root: run as root")
    if args.lab_cmd == "up":
        name = args.name or time.strftime("%H%M%S")
        if not name.isalnum() or len(name) > 8:
            raise UsageError(f"--name {name!r}: use 1-8 letters or digits")
        lab_id = f"{registry.PREFIX}{name}"
        t0 = time.monotonic()
        if args.no_router and not args.tap:
            raise UsageError("--no-router is for a TAP lab (--tap): the managed lab pauses its router per check")
        with runlock.acquire([(f"lab {name}", f"lab:{lab_id}")], command="lab up"):  # two 'lab up's of one name
            if any(n.startswith(lab_id + "-") for n in registry.our_namespaces()):
                raise UsageError(f"a lab named {name} is already up; 'v6gate lab down {name}' first")
            lab = Lab(args.topology, lab_id=lab_id, external_dut="tap" if args.tap else None,
                      tap_name=args.tap or "tap0", keep=True)
            if args.no_router:
                lab.pause_router()
            lab.up()
        target_path = _write_lab_target(lab, args)
        info = lab.describe()
        info["target_file"] = str(target_path)
        print(json.dumps(info, indent=1) if args.json else _lab_text(info, time.monotonic() - t0))
        return 0
    if args.lab_cmd == "down":
        t0 = time.monotonic()
        if args.all:
            removed = registry.cleanup()
        elif args.stale:
            removed = registry.cleanup(stale_only=True)
        elif args.names:
            lab_ids = [n if n.startswith(registry.PREFIX) else registry.PREFIX + n for n in args.names]
            for lab_id in lab_ids:  # not from under a run that uses it
                owner = runlock.holder(f"lab:{lab_id}")
                if owner:
                    raise runlock.Busy(f"lab {lab_id.removeprefix(registry.PREFIX)} is in use by "
                                       f"{runlock.describe(owner)}; wait for it to end, or stop it first")
            removed = registry.cleanup(lab_ids=lab_ids)
        else:
            raise UsageError("say which lab: 'lab down NAME', 'lab down --stale' or 'lab down --all'")
        print(f"removed {len(removed)} lab(s) in {time.monotonic() - t0:.2f} s: {' '.join(removed) or '-'}")
        return 0
    # status
    reg = registry.registered()
    labs = {n.rsplit("-", 1)[0] for n in registry.our_namespaces()} | set(reg)
    for lab_id in sorted(labs):
        info = reg.get(lab_id, {})
        owner = "standalone" if info and not info.get("owner_pid") else (
            "running" if info and registry.owner_alive(info) else "STALE (owner gone)")
        print(f"{lab_id}\t{owner}\t{' '.join(info.get('namespaces', []))}")
    if not labs:
        print("no labs")
    return 0


def _write_lab_target(lab, args) -> Path:
    import yaml

    from . import yamlfile
    from .core.target import absolute_file_refs
    from .paths import FIXTURES

    base_path = FIXTURES / "targets" / ("example-tap.yaml" if args.tap else "lab.yaml")
    doc = absolute_file_refs(yamlfile.load_data_file(base_path), base_path.resolve().parent)
    over = lab.target_overrides()
    doc.pop("lab", None)
    doc["waiver_files"] = [str((base_path.parent / w).resolve()) for w in doc.get("waiver_files", [])]
    doc["tester"] = {**doc.get("tester", {}), **over["tester"]}
    doc["link"] = {**doc.get("link", {}), **over.get("link", {})}
    doc["extensions"] = {**(doc.get("extensions") or {}), **over.get("extensions", {})}
    if args.tap:
        if args.dut_mac:
            doc["dut"]["mac"] = args.dut_mac
        if args.no_router:  # the tester is the only router: it advertises the link prefix itself (Common Test Setup)
            doc["link"]["other_routers"] = False
        doc["description"] = f"external DUT on TAP {args.tap} of lab {lab.lab_id}"
    else:
        doc["dut"] = {**doc["dut"], **over.get("dut", {})}
        doc["control"] = {"adapter": "netns", "netns": lab.dut_ns, "interface": lab.dut_ifname()}
        doc["description"] = f"Linux DUT of standalone lab {lab.lab_id} (no per-check reset)"
    out = lab.workdir / "target.yaml"
    out.write_text("# written by 'v6gate lab up'; removed by 'v6gate lab down'\n" + yaml.safe_dump(doc, sort_keys=False))
    return out


def _lab_text(info: dict, seconds: float) -> str:
    lines = [f"lab {info['lab_id']} up in {seconds:.2f} s",
             f"  namespaces: {' '.join(info['namespaces'])}",
             f"  tester: {info['tester']['interface']} in {info['tester']['netns']}"]
    if info.get("tap"):
        t = info["tap"]
        lines += [f"  TAP for your DUT: {t['name']} in namespace {t['netns']} (bridged onto the lab link)",
                  f"    e.g. ip netns exec {t['netns']} qemu-system-x86_64 ... "
                  f"-netdev tap,id=n0,ifname={t['name']},script=no,downscript=no -device virtio-net,netdev=n0"]
    else:
        lines.append(f"  DUT: {info['dut']['netns']}")
    lines += [f"  target file: {info['target_file']}",
              f"  run checks:  v6gate run --target {info['target_file']}",
              f"  tear down:   v6gate lab down {info['lab_id'].removeprefix('v6g')}"]
    return "\n".join(lines)


# -- list / validate / report -----------------------------------------------------------
def cmd_list(args) -> int:
    from .core.check import all_items

    guard.check_areas(args.area)
    items = all_items(areas=args.area or None, profile=args.profile, kind=None)
    if args.json:
        print(json.dumps([{"id": c.id, "part": p.letter, "area": c.area, "kind": c.kind, "ipv6ready": c.ipv6ready_of(p),
                           "rfc": c.rfc_of(p), "title": c.title_of(p), "expect": c.expect_of(p),
                           "scope": c.scope_of(p), "profile": c.profile_of(p), "fault": c.fault_of(p),
                           "capabilities": list(c.capabilities_of(p))} for c, p in items], indent=1))
        return 0
    for c, p in items:
        ref = f"{c.ipv6ready_of(p) or '-'}{' ' + p.letter if p.letter else ''}"
        print(f"{ref:20} {c.rfc_of(p):28} {c.id}{'#' + p.letter if p.letter else ''}  "
              f"[{c.scope_of(p)}/{c.profile_of(p)}]  {c.title_of(p)}")
    print(f"{len(items)} check parts")
    return 0


def workers_for(target, requested: int) -> tuple[int, str | None]:
    """Workers for the conformance phase against ``target``, and why when
    fewer than asked: one DUT is probed by one worker at a time (parallel
    workers would land their RAs, prefixes and neighbour games in each
    other's windows); the embedded lab gives each worker its own DUT."""
    if target is None or not target.external or requested <= 1:
        return requested, None
    return 1, f"one external DUT is probed by one worker at a time: 1 worker, not {requested}"


def cmd_validate(args) -> int:
    from .core.target import load_target

    t = load_target(args.target_file)
    guard.check_waivers(t)
    guard.check_extensions(t)
    print(f"{args.target_file}: OK ({t.kind} '{t.name}', {len(t.capabilities)} capabilities, "
          f"control {t.control['adapter']}, {len(t.waivers)} waivers)")
    return 0


def cmd_report(args) -> int:
    from .report.writer import finalize_run

    run_dir = Path(args.run_dir)
    if not (run_dir / "records").is_dir():
        raise UsageError(f"{run_dir}: no records/ directory; pass a run directory under reports/runs/")
    try:
        paths, doc = finalize_run(run_dir, target_label="?", profile=args.profile, command="v6gate report")
    except files.ReportsNotWritten as exc:
        incomplete.mark_unwritten(run_dir, exc.missing, exc.why)
        raise
    if incomplete.present(run_dir):
        incomplete.mark_rebuilt(run_dir)
        print(f"v6gate report: {run_dir} is of a run that did not finish ({incomplete.MARKER}): the report holds "
              "the checks that finished")
    print(f"{paths['html']} (exit code {doc['summary']['exit_code']})")
    return doc["summary"]["exit_code"]


def cmd_controls(args) -> int:
    guard.check_areas(args.area)
    guard.check_ids(args.check)
    guard.check_workers(args.workers)
    argv = [sys.executable, "-m", "pytest", str(ROOT / "tests" / "lab" / "test_controls.py"), "-p",
            "no:cacheprovider", "-q", "-rfE", "-n", str(args.workers)]
    for a in args.area or []:
        argv.append(f"--controls-area={a}")
    for c in args.check or []:
        argv.append(f"--controls-check={c}")
    if args.profile == "full":
        argv.append("--controls-profile=full")
    if getattr(args, "stale", False):
        argv.append("--controls-stale")
    return _run_child(argv, os.environ.copy())


def cmd_selftest(args) -> int:
    script = ROOT / "tools" / "selftest"
    return subprocess.call([str(script), *args.rest], cwd=ROOT)


def build_parser() -> argparse.ArgumentParser:
    ap = guard.OneLineParser(prog="v6gate", description="USGv6 / IPv6 Ready host conformance and IPv6-only readiness")
    sub = ap.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="run the checks against the embedded lab (default) or a target file")
    r.add_argument("--target", help="target file of a real device (default: build the embedded lab)")
    r.add_argument("--profile", choices=["default", "full"], default="default",
                   help="'full' adds checks that wait on long protocol timers")
    r.add_argument("--non-interactive", action="store_true",
                   help="never pause for the operator (control.adapter: manual): those steps SKIP with the reason")
    r.add_argument("-n", "--workers", type=int, default=_default_workers(),
                   help="parallel labs/workers for the conformance phase (0: in-process)")
    r.add_argument("--area", action="append", help="only this area (repeatable)")
    r.add_argument("--check", action="append", help="only this check id (repeatable)")
    r.add_argument("--baseline", help="a previous results.json: its FAILs are not new failures")
    r.add_argument("--out", help="run directory (default reports/runs/<time>-<id>)")
    r.add_argument("--no-gates", action="store_true", help="skip the performance-gate phase")
    r.add_argument("--resume", action="store_true",
                   help="continue the interrupted run in --out RUN_DIR: the parts it recorded are not run again")
    r.add_argument("--i-own-this-link", action="store_true",
                   help="run even though the tester interface looks like a management/production link "
                        "(default route on it, or link.prefix not on it): see scope_guard.py")
    r.set_defaults(func=cmd_run)

    rep = sub.add_parser("repeat", help="run the same checks N times and compare the verdicts part by part "
                                        "(run-to-run stability)")
    rep.add_argument("times", type=int, help="number of runs (at least 2)")
    rep.add_argument("--out", help="directory for the runs and repeat.json (default reports/repeat/<time>)")
    rep.add_argument("rest", nargs=argparse.REMAINDER, help="options for each 'v6gate run' (e.g. --area nd -n 4 --no-gates)")
    rep.set_defaults(func=cmd_repeat)

    lab = sub.add_parser("lab", help="standalone lab: up, down, status")
    lsub = lab.add_subparsers(dest="lab_cmd", required=True)
    up = lsub.add_parser("up", help="build a lab and leave it running")
    up.add_argument("--name", help="1-8 letters/digits (default: the time)")
    up.add_argument("--topology", help="topology file (default fixtures/lab/topology.yaml)")
    up.add_argument("--tap", nargs="?", const="tap0", help="bridge a TAP device for a DUT the lab does not manage")
    up.add_argument("--no-router", action="store_true",
                    help="with --tap: the lab's router sends no Router Advertisements, so the tester is the only "
                         "router on the link (target file: link.other_routers false)")
    up.add_argument("--dut-mac", help="MAC of the external DUT on the TAP")
    up.add_argument("--json", action="store_true")
    down = lsub.add_parser("down", help="remove labs (ours only, by name prefix)")
    down.add_argument("names", nargs="*")
    down.add_argument("--all", action="store_true", help="every v6gate lab on this machine")
    down.add_argument("--stale", action="store_true", help="labs whose owning process is gone")
    lsub.add_parser("status", help="list labs")
    lab.set_defaults(func=cmd_lab)

    ls = sub.add_parser("list", help="list the checks and their references")
    ls.add_argument("--area", action="append")
    ls.add_argument("--profile", choices=["default", "full"], default="full")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_list)

    v = sub.add_parser("validate", help="validate a target file")
    v.add_argument("target_file")
    v.set_defaults(func=cmd_validate)

    rep = sub.add_parser("report", help="rebuild results.json, junit.xml and report.html of a run directory")
    rep.add_argument("run_dir")
    rep.add_argument("--profile", choices=["default", "full"], default="default")
    rep.set_defaults(func=cmd_report)

    ctl = sub.add_parser("controls", help="prove checks both ways on the lab -> reports/controls.json")
    ctl.add_argument("-n", "--workers", type=int, default=_default_workers())
    ctl.add_argument("--area", action="append")
    ctl.add_argument("--check", action="append")
    ctl.add_argument("--profile", choices=["default", "full"], default="default")
    ctl.add_argument("--stale", action="store_true",
                     help="only parts whose controls.json entry is missing, not proven, or stale (check/fault changed)")
    ctl.set_defaults(func=cmd_controls)

    st = sub.add_parser("selftest", help="the project's own tests (lint, unit, lab, controls)")
    st.add_argument("rest", nargs=argparse.REMAINDER)
    st.set_defaults(func=cmd_selftest)

    from .commands import register_all

    register_all(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (printed) or a usage error (one line, printed)
        return guard.flushed(exc.code if isinstance(exc.code, int) else EXIT_USAGE)
    except BrokenPipeError:
        return guard.quiet_closed_stdout()
    try:
        return guard.flushed(args.func(args))
    except UsageError as exc:
        return _err(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        return _err("interrupted", EXIT_INTERRUPTED)
    except V6GateError as exc:
        return _err(str(exc), 3)
    except BrokenPipeError:  # the reader of stdout went away (v6gate list | head)
        return guard.quiet_closed_stdout()


if __name__ == "__main__":
    sys.exit(main())
