"""v6gate diff OLD_RUN NEW_RUN: what changed between two runs (two firmware
builds, or two configurations of the same DUT), for a person and for CI.

Exit codes: 0 no regression; 1 at least one part newly FAILs; 2 bad input;
3 no new FAIL, but a part OLD decided is undecided in NEW (ERROR,
NOT_JUDGED, INCONCLUSIVE)."""

from __future__ import annotations

import json
from pathlib import Path


def register(subparsers) -> None:
    ap = subparsers.add_parser("diff", help="compare two runs: newly failing, fixed, changed reasons, moved gates "
                                            "(exit 0 no regression, 1 new FAIL, 2 bad input, 3 newly undecided)",
                               description=__doc__)
    ap.add_argument("old", help="the earlier run: a run directory or its results.json")
    ap.add_argument("new", help="the later run (or the other configuration)")
    ap.add_argument("--json", action="store_true", help="print the diff as JSON")
    ap.add_argument("--html", metavar="FILE", help="also write the diff as an HTML page")
    ap.set_defaults(func=cmd_diff)


def cmd_diff(args) -> int:
    from ..report import diff, html

    old, _ = diff.load(args.old)
    new, _ = diff.load(args.new)
    d = diff.compare(old, new)
    print(json.dumps(d, indent=1) if args.json else diff.to_text(d))
    if args.html:
        out = Path(args.html)
        pages = html.pages(new, out.parent.resolve(), baseline_doc=old, dissect=False)
        out.write_text(pages["diff.html"])
        if not args.json:
            print(f"v6gate diff: {out}")
    return d["exit_code"]
