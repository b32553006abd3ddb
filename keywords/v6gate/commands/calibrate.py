"""``v6gate calibrate``: prove a family gate (STR, RR, 16 KB stream, iSCSI, NFS) on the lab (A/A vs an IPv6-only
handicap of 2x the margin) and write the figures to reports/calibration/."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import UsageError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "calibrate", help="run a family gate repeatedly on the lab, A/A and with an IPv6-only handicap; write "
                          "false-FAIL / detection / INCONCLUSIVE rates and seconds per decision")
    p.add_argument("--runs", type=int, default=20, help="runs of each setup (default 20: the targets are 'in 20')")
    p.add_argument("--factor", type=float, default=2.0, help="handicap as a multiple of the margin (default 2)")
    p.add_argument("--gate", choices=["str", "rr", "stream16k", "iscsi", "nfs", "esp"], default="str",
                   help="the family gate to calibrate (STR, RR, the 16 KB stream, iSCSI or NFSv3 sequential I/O, "
                        "ESP on the lab VM); the handicap is an IPv6-only per-packet CPU cost (nft rules in the DUT) tuned to "
                        "2x the margin")
    p.add_argument("--variant", help="gate variant (fixtures/gates/profiles.yaml; default 1x1500 for str and "
                                     "rr, 64k_read for iscsi and nfs)")
    p.add_argument("--rules", type=int, help="cpu regime: the handicap's number of IPv6-only nft rules, fixed "
                                             "(skips the tuning probes; the runs measure what it does)")
    p.add_argument("--regime", choices=["cpu", "shaped"], default="cpu",
                   help="cpu: the veth as it is, nft handicap; shaped (STR only): both families shaped below "
                        "the CPU-bound rate with HTB, the handicap an IPv6 rate cap")
    p.add_argument("--out", help="directory for the JSON figures (default reports/calibration)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..gates.calibrate import calibrate, main_out
    from ..lab import registry

    if os.geteuid() != 0:
        raise UsageError("calibration builds the embedded lab: run as root")
    if args.runs < 1 or args.runs > 1000:
        raise UsageError(f"--runs {args.runs}: use 1..1000")
    if not 0 < args.factor < 10:
        raise UsageError(f"--factor {args.factor}: use a number between 0 and 10")
    from ..core.session import install_signal_handlers

    install_signal_handlers()  # SIGTERM tears the lab down like Ctrl-C
    registry.cleanup(stale_only=True)
    if args.rules is not None and not 0 <= args.rules <= 100000:
        raise UsageError(f"--rules {args.rules}: use a number of nft rules between 0 and 100000")
    doc, path = calibrate(runs=args.runs, factor=args.factor, variant=args.variant, regime=args.regime,
                          out_dir=Path(args.out) if args.out else None, gate=args.gate, rules=args.rules)
    main_out(doc, path)
    return 0
