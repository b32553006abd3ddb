"""IPv6-only readiness per host, and the fleet's asset classes in OMB
M-21-07 terms, from captures of production links, without sending a
packet: v6gate audit CAPTURE.pcapng [MORE.pcapng | partial.json ...].

One capture: results.json (the run schema), junit.xml and report.html
with a readiness verdict per host and finding, and beside them the
capture's partial result (partial.json) and the fleet report
(fleet.json, fleet-assets.csv, fleet-summary.csv, fleet.html).  Several
captures, or partial results of earlier audits: each capture audited into
its partial (here, or as shards on a Dask cluster with --dask), merged
with the partials given, and the fleet report of the whole.

Exits 0 when no host FAILs, 1 when one does or an exception of the
register has expired, 2 on bad input (a truncated or non-pcap file, a bad
inventory, register or plan: one line), 3 when the bench broke."""

from __future__ import annotations

import sys


def register(subparsers) -> None:
    ap = subparsers.add_parser("audit", help="IPv6-only readiness per host from a capture (passive)",
                               description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", metavar="CAPTURE|PARTIAL",
                    help="pcap or pcapng files (gzip'ed too), or partial results (partial.json) of earlier audits")
    ap.add_argument("--inventory", metavar="FILE",
                    help="assets (CSV, JSON or YAML: asset, macs, addresses, owner, system, location): joins hosts "
                         "to assets; the fleet's percentages are of its assets, hosts it does not list are listed "
                         "as unknown assets")
    ap.add_argument("--exceptions", metavar="FILE",
                    help="the exception register (CSV, JSON or YAML: asset, reason, approved_by, retire_by): an "
                         "exception past its retire-by date is a finding")
    ap.add_argument("--plan", metavar="FILE", help="milestones and the classes that count as IPv6-only (YAML or "
                                                     "JSON; default: fixtures/audit/plan-m-21-07.yaml, OMB M-21-07)")
    ap.add_argument("--as-of", metavar="YYYY-MM-DD", help="the date exceptions and milestones are judged at "
                                                           "(default: today, UTC)")
    ap.add_argument("--dask", metavar="ADDRESS",
                    help="audit the captures as shards on this Dask scheduler (tcp://host:8786; needs the fleet "
                         "extra; the workers see the captures at the same paths)")
    ap.add_argument("--host", action="append", default=[], metavar="MAC|ADDR",
                    help="report only this host (its MAC, or an address it used); repeatable; default: every host")
    ap.add_argument("--out", help="report directory (default reports/audit/<time>-<capture>)")
    ap.add_argument("--engine", choices=("fast", "tshark"), default="fast",
                    help="fast: every frame dissected and judged in C, faster than a disk reads (default); tshark: "
                         "every frame decoded by tshark (slow; the reference the fast engine is tested against)")
    ap.add_argument("--jobs", type=int, default=None,
                    help="tshark processes decoding in parallel (--engine tshark; default: 2); the fast engine "
                         "reads on one core")
    ap.add_argument("--chunk", type=int, default=100_000, help="packets per tshark process (--engine tshark)")
    ap.set_defaults(func=cmd_audit)


def cmd_audit(args) -> int:
    from ..audit.partial import is_partial
    from ..audit.run import FleetInputs, audit_capture, audit_many
    from ..errors import UsageError

    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be 1 or more")
    if args.jobs is not None and args.jobs > 1 and args.engine == "fast":
        print("v6gate audit: --jobs sets tshark's processes (--engine tshark); the fast engine reads on one core "
              "(it outpaces the disk: docs/v6only.md)", file=sys.stderr)
    if args.chunk < 1000:
        raise UsageError("--chunk must be at least 1000 packets")
    from ..cli_guard import check_out_dir

    check_out_dir(args.out)
    fleet_inputs = FleetInputs(inventory=args.inventory, exceptions=args.exceptions, plan=args.plan, as_of=args.as_of)
    if len(args.inputs) > 1 or args.dask or is_partial(args.inputs[0]):
        if args.host or args.engine != "fast":
            raise UsageError("--host and --engine tshark audit one capture; several captures or partial results "
                             "give the fleet report")
        paths = audit_many(args.inputs, out=args.out, fleet_inputs=fleet_inputs, dask=args.dask)
        return _print_fleet(paths)
    paths, doc = audit_capture(args.inputs[0], hosts=args.host, out=args.out, jobs=args.jobs,
                               chunk_frames=args.chunk, command=" ".join(["v6gate", *sys.argv[1:]]),
                               engine=args.engine, fleet_inputs=fleet_inputs)
    info = doc["run"]["audit"]
    print(f"v6gate audit: {info['packets']} packets, {info['hosts_seen']} hosts in {info['duration_s']} s "
          f"({info['packets_per_s']} packets/s, {info['engine']} engine); peak memory "
          + ", ".join(f"{v} MiB {k}" for k, v in info['peak_rss_mib'].items() if v))
    sys.stdout.flush()
    sys.stdout.writelines(doc["audit"].chunks("lines"))  # a line per host: the streams' (on disk)
    print(f"v6gate: report {paths['html']}\n        results {paths['results']}")
    return max(doc["summary"]["exit_code"], _print_fleet(paths))


def _print_fleet(paths: dict) -> int:
    from ..audit.assets import CLASSES, TITLES
    from ..audit.fleet import exit_code

    doc = paths["fleet_doc"]
    t = doc["totals"]
    print(f"v6gate audit: fleet of {t['assets']} assets ({doc['basis']}) from {len(doc['captures'])} captures, as of "
          f"{doc['as_of']}: " + ", ".join(f"{TITLES[c]} {t['classes'][c]['count']}" for c in CLASSES)
          + f"; IPv6-only {t['ipv6_only']['percent']}% ({doc['plan']})")
    for m in doc["milestones"]:
        print(f"  {m['label']} ({m['by']}): {m['percent']}% {'met' if m['met'] else 'not met'}")
    for f in doc["findings"]:
        print(f"  {f['severity']}  {f['finding']}  {f['asset'] or ''}  {f['detail']}")
    print(f"v6gate: fleet {paths['fleet_html']}\n        {paths['fleet_json']}, {paths['fleet_csv']}, "
          f"{paths['fleet_summary_csv']}\n        partial {paths['partial']}")
    return exit_code(doc)
