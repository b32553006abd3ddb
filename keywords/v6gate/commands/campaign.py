"""v6gate campaign: many DUTs in one run (docs/campaigns.md).

    v6gate campaign run CAMPAIGN.yaml [--shard K/N|CONTROLLER] [--jobs N] [--out DIR] [--previous DIR]
    v6gate campaign run --lab N [--area A ...]      N lab DUTs, each with its own fault (a demo)
    v6gate campaign resume CAMPAIGN_DIR             continue an interrupted campaign
    v6gate campaign merge SHARD_DIR... --out DIR    the fleet report of a campaign run as shards
    v6gate campaign robot CAMPAIGN.yaml             the same campaign as a Robot suite per DUT (pabot)
    v6gate campaign validate CAMPAIGN.yaml [--shards N]

Exit codes, over all DUTs, as ``v6gate run``'s: 0 every DUT passed (or
failed only where waived or in its baseline); 1 a new FAIL on some DUT;
2 bad input (nothing was run); 3 no new FAIL, but a DUT's run is undecided
or did not finish; 130 interrupted (``campaign resume`` continues).
``merge`` also exits 1 when a shard does not match its manifests."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from ..errors import UsageError
from ..paths import FIXTURES, REPORTS

LAB_CAMPAIGN = FIXTURES / "campaigns" / "lab.yaml"


def register(subparsers) -> None:
    ap = subparsers.add_parser("campaign", help="many DUTs in one run: side by side, in shards, resumable; "
                                                "one fleet report", description=__doc__,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="campaign_cmd", required=True)
    r = sub.add_parser("run", help="run every DUT of a campaign file, one worker per DUT")
    r.add_argument("campaign", nargs="?", help="the campaign file (see fixtures/campaigns/example.yaml)")
    r.add_argument("--lab", type=int, metavar="N",
                   help=f"N lab DUTs, each with its own fault ({LAB_CAMPAIGN.relative_to(FIXTURES.parent)})")
    r.add_argument("--area", action="append", help="with --lab: only this area (repeatable)")
    r.add_argument("--shard", help="only this shard's DUTs: K/N, or a controller's name")
    r.add_argument("--jobs", type=int, help="DUTs at once (default: the campaign's jobs, else all)")
    r.add_argument("--out", help="campaign directory (default reports/campaigns/<time>-<name>)")
    r.add_argument("--previous", help="the previous campaign's directory: the fleet report lists new FAILs per DUT "
                                      "(default: the last finished campaign of the same name in reports/campaigns)")
    r.add_argument("--i-own-this-link", action="store_true", help="as for 'v6gate run' (every DUT of the shard)")
    r.set_defaults(func=cmd_run)
    rs = sub.add_parser("resume", help="continue an interrupted campaign: finished DUTs are not run again, an "
                                       "interrupted DUT continues with the parts it had not finished")
    rs.add_argument("dir", help="the campaign directory")
    rs.add_argument("--jobs", type=int)
    rs.add_argument("--previous")
    rs.set_defaults(func=cmd_resume)
    m = sub.add_parser("merge", help="the fleet report of a campaign run as shards (manifests verified)")
    m.add_argument("shards", nargs="+", help="the shards' campaign directories")
    m.add_argument("--out", required=True, help="the merged campaign directory (new)")
    m.add_argument("--previous", help="the previous campaign's directory")
    m.set_defaults(func=cmd_merge)
    rb = sub.add_parser("robot", help="run the campaign as a Robot Framework suite per DUT (pabot, in parallel)")
    rb.add_argument("campaign")
    rb.add_argument("--shard")
    rb.add_argument("--jobs", type=int, help="pabot processes (default: the campaign's jobs, else all DUTs)")
    rb.add_argument("--out", help="campaign directory")
    rb.add_argument("--previous")
    rb.set_defaults(func=cmd_robot)
    v = sub.add_parser("validate", help="validate a campaign file and show its DUTs and shards")
    v.add_argument("campaign")
    v.add_argument("--shards", type=int, help="show the split into N shards")
    v.set_defaults(func=cmd_validate)


def _check_jobs(n: int | None, option: str = "--jobs") -> None:
    if n is not None and not 1 <= n <= 64:
        raise UsageError(f"{option} {n}: give 1 to 64 DUTs at once")


def _campaign(args):
    from ..campaign import spec

    if args.lab is not None:
        if args.campaign:
            raise UsageError("give a campaign file or --lab N, not both")
        lab = spec.load(LAB_CAMPAIGN)
        if not 1 <= args.lab <= len(lab.duts):
            raise UsageError(f"--lab {args.lab}: the lab campaign ({LAB_CAMPAIGN.name}) has 1 to {len(lab.duts)} DUTs, "
                             "each with its own fault")
        areas = tuple(args.area) if args.area else lab.areas
        return dataclasses.replace(lab, duts=lab.duts[:args.lab], areas=areas, jobs=None)
    if args.area:
        raise UsageError("--area is for --lab; a campaign file names its areas")
    if not args.campaign:
        raise UsageError("give a campaign file (v6gate campaign run CAMPAIGN.yaml) or --lab N")
    return spec.load(args.campaign)


def _out(args, name: str) -> Path:
    from .. import cli_guard as guard
    from ..campaign.runner import STATE, default_out

    guard.check_out_dir(args.out)
    out = Path(args.out).resolve() if args.out else default_out(name)
    if (out / STATE).exists():
        raise UsageError(f"--out {out}: already holds a campaign; 'v6gate campaign resume {out}' continues it, "
                         "or pass a new directory")
    return out  # made by runner.prepare once every DUT validated


def _previous(arg: str | None, name: str, out: Path) -> Path | None:
    from ..campaign.runner import load_state

    if arg:
        p = Path(arg)
        load_state(p)  # one line if it is not a campaign directory
        return p.resolve()
    base = REPORTS / "campaigns"
    if out.parent != base.resolve() or not base.is_dir():
        return None
    done = []
    for d in base.iterdir():
        if d == out or not (d / "fleet.json").is_file() or not (d / "campaign.json").is_file():
            continue
        try:
            st = load_state(d)
        except UsageError:
            continue
        if st["name"] == name and not st.get("shard") and st["attempts"] and not st["attempts"][-1].get("interrupted"):
            done.append((st["attempts"][-1].get("finished") or "", d))
    return max(done)[1] if done else None


def _finish(out: Path, state: dict, interrupted: bool, previous: Path | None) -> int:
    from ..campaign import fleet
    from ..report.results import EXIT_INTERRUPTED

    doc, paths = fleet.write_all(state, out, previous=previous)
    print(fleet.to_text(doc))
    if doc["diff"]:
        print(f"against {doc['diff']['previous']['dir']}: {doc['diff']['new_failures']} new FAIL(s)"
              + "".join(f"\n  {n}: new FAIL {k}" for n, d in doc["diff"]["duts"].items() for k in d["newly_failing"]))
    print(f"v6gate campaign: fleet {paths['html']}\n        junit {paths['junit']}\n        json {paths['json']}")
    if interrupted:
        print(f"v6gate campaign: interrupted; 'v6gate campaign resume {out}' continues with what did not finish",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    return doc["exit_code"]


def cmd_run(args) -> int:
    from ..campaign import runner

    _check_jobs(args.jobs)
    c = _campaign(args)
    mine = c.shard(args.shard)  # one line for a bad --shard before anything is written
    out = _out(args, c.name)
    previous = _previous(args.previous, c.name, out)
    state = runner.prepare(c, out, args.shard, own_link=args.i_own_this_link)
    print(f"v6gate campaign {c.name}: {len(mine)} DUT(s){' of shard ' + args.shard if args.shard else ''}"
          f" ({', '.join(d.name for d in mine)}), {args.jobs or c.jobs or len(mine)} at a time -> {out}", flush=True)
    interrupted = runner.Supervisor(out, state, args.jobs or c.jobs).run()
    return _finish(out, state, interrupted, previous)


def cmd_resume(args) -> int:
    from ..campaign import runner

    _check_jobs(args.jobs)
    out = Path(args.dir).resolve()
    state = runner.load_state(out)
    if state.get("merged"):
        raise UsageError(f"{out}: a merged campaign; resume each shard in its own directory")
    runner.check_resumable(out, state)
    left = [d["name"] for d in state["duts"] if d.get("in_shard") and d["state"] != runner.FINISHED]
    done = [d["name"] for d in state["duts"] if d.get("in_shard") and d["state"] == runner.FINISHED]
    print(f"v6gate campaign {state['name']}: resuming {out}: {len(done)} DUT(s) finished ({', '.join(done) or '-'}), "
          f"{len(left)} to run or continue ({', '.join(left) or '-'})", flush=True)
    previous = _previous(args.previous, state["name"], out)
    interrupted = runner.Supervisor(out, state, args.jobs).run() if left else False
    return _finish(out, state, interrupted, previous)


def cmd_merge(args) -> int:
    from .. import cli_guard as guard
    from ..campaign import fleet
    from ..campaign.merge import Mismatch, merge

    guard.check_out_dir(args.out)
    previous = _previous(args.previous, "", Path(args.out).resolve()) if args.previous else None
    try:
        doc, paths = merge([Path(s) for s in args.shards], Path(args.out).resolve(), previous=previous)
    except Mismatch as exc:
        for p in exc.problems:
            print(f"  {p}", file=sys.stderr)
        print(f"v6gate campaign merge: {len(exc.problems)} file(s) do not match their manifests; nothing merged",
              file=sys.stderr)
        return 1
    print(fleet.to_text(doc))
    print(f"v6gate campaign merge: fleet {paths['html']}\n        junit {paths['junit']}")
    return doc["exit_code"]


def cmd_robot(args) -> int:
    from ..campaign import robot, runner, spec

    _check_jobs(args.jobs)
    c = spec.load(args.campaign)
    c.shard(args.shard)
    out = _out(args, c.name)
    previous = _previous(args.previous, c.name, out)
    state = runner.prepare(c, out, args.shard)
    interrupted = robot.run(out, state, jobs=args.jobs or c.jobs)
    return _finish(out, state, interrupted, previous)


def cmd_validate(args) -> int:
    import tempfile

    from ..campaign import spec
    from ..campaign.runner import load_targets

    c = spec.load(args.campaign)
    with tempfile.TemporaryDirectory() as tmp:
        loaded = load_targets(c, Path(tmp))
    print(f"{args.campaign}: OK (campaign {c.name}: {len(c.duts)} DUT(s), profile {c.profile}, "
          f"areas {', '.join(c.areas) or 'all'}{', checks ' + ', '.join(c.checks) if c.checks else ''})")
    for d, t, _path in loaded:
        print(f"  {d.name:16} {'lab' + (' fault ' + d.lab_fault if d.lab_fault else '') if d.is_lab else str(d.target)}"
              f"  tester {t.tester_interface}{' controller ' + d.controller if d.controller else ''}")
    if args.shards:
        if not 1 <= args.shards <= 256:
            raise UsageError(f"--shards {args.shards}: give 1 to 256")
        for k in range(1, args.shards + 1):
            print(f"  shard {k}/{args.shards}: {', '.join(d.name for d in c.shard(f'{k}/{args.shards}')) or '-'}")
    return 0
