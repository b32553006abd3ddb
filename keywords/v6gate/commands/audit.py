"""IPv6-only readiness per host from a capture of a production link, without
sending a packet: v6gate audit CAPTURE.pcapng [--host MAC|ADDR ...].

Writes results.json (the run schema), junit.xml and report.html with a
readiness verdict per host; exits 0 when no host FAILs, 1 when one does,
2 on bad input (a truncated or non-pcap file), 3 when the bench broke."""

from __future__ import annotations

import sys


def register(subparsers) -> None:
    ap = subparsers.add_parser("audit", help="IPv6-only readiness per host from a capture (passive)",
                               description=__doc__.split("\n\n")[0])
    ap.add_argument("capture", help="a pcap or pcapng file (gzip'ed too)")
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
    from ..audit.run import audit_capture
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
    paths, doc = audit_capture(args.capture, hosts=args.host, out=args.out, jobs=args.jobs, chunk_frames=args.chunk,
                               command=" ".join(["v6gate", *sys.argv[1:]]), engine=args.engine)
    info = doc["run"]["audit"]
    print(f"v6gate audit: {info['packets']} packets, {info['hosts_seen']} hosts in {info['duration_s']} s "
          f"({info['packets_per_s']} packets/s, {info['engine']} engine); peak memory "
          + ", ".join(f"{v} MiB {k}" for k, v in info['peak_rss_mib'].items() if v))
    # one pass over the checks (read back from disk): a scan per host was quadratic in the hosts
    ready, fails = [], {}
    for c in doc["checks"]:
        if c["id"] == "audit.ipv6_only_readiness":
            ready.append((c["part"], c["verdict"], c["measurements"].get("ipv6_share_percent")))
        elif c["verdict"] == "FAIL":
            fails.setdefault(c["part"], []).append(c["title"])
    for part, verdict, share in ready:
        failing = fails.get(part)
        print(f"  {part}  {verdict:4}  IPv6 {share if share is not None else '-'}%"
              + (f"  failing: {', '.join(failing)}" if failing else ""))
    print(f"v6gate: report {paths['html']}\n        results {paths['results']}")
    return doc["summary"]["exit_code"]
