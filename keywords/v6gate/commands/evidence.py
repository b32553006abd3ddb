"""Evidence commands over a run directory's MANIFEST.sha256 (written at the
end of every run and by 'v6gate report'):

  v6gate verify RUN_DIR|BUNDLE.tar.gz   exit 0 every file matches; 1 a file changed, is missing or is
                                        extra (each listed); 2 bad input.  A campaign directory: its
                                        manifest and every DUT run directory's
  v6gate bundle RUN_DIR [-o FILE]       verify, then write one deterministic .tar.gz (results, reports,
                                        pcaps, the manifest); exit 0 written, 1 the manifest does not
                                        match (nothing written), 2 bad input"""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    v = subparsers.add_parser("verify", help="check a run directory (or a bundle) against its MANIFEST.sha256 "
                                             "(exit 0 ok, 1 mismatch, 2 bad input)", description=__doc__)
    v.add_argument("run_dir", help="a run directory, or a .tar.gz written by 'v6gate bundle'")
    v.set_defaults(func=cmd_verify)
    b = subparsers.add_parser("bundle", help="one .tar.gz of a run's results, reports, pcaps and manifest",
                              description=__doc__)
    b.add_argument("run_dir")
    b.add_argument("-o", "--output", help="the archive (default: RUN_DIR.tar.gz beside the run directory)")
    b.set_defaults(func=cmd_bundle)


def _report(check: dict, what: str) -> int:
    bad = [(k, rel) for k in ("changed", "missing", "extra") for rel in check[k]]
    for kind, rel in bad:
        print(f"  {kind}: {rel}")
    if check.get("incomplete"):
        print(f"  the run did not finish (INCOMPLETE): {check['incomplete']}")
    if bad:
        print(f"v6gate verify: {what}: MISMATCH ({len(check['changed'])} changed, {len(check['missing'])} missing, "
              f"{len(check['extra'])} extra; {len(check['ok'])} ok)")
        return 1
    print(f"v6gate verify: {what}: OK ({len(check['ok'])} files match MANIFEST.sha256)")
    return 0


def cmd_verify(args) -> int:
    from ..errors import UsageError
    from ..report import manifest

    p = Path(args.run_dir)
    if p.is_file() and p.name.endswith((".tar.gz", ".tgz")):
        return _report(manifest.verify_bundle(p), str(p))
    if not p.exists():
        raise UsageError(f"{p}: no such run directory or bundle")
    if (p / "campaign.json").is_file():  # a campaign: its files and every DUT's run directory
        from ..campaign import fleet

        return _report(fleet.verify(p), str(p))
    return _report(manifest.verify(p), str(p))


def cmd_bundle(args) -> int:
    from ..report import manifest

    out, check = manifest.bundle(Path(args.run_dir), Path(args.output) if args.output else None)
    if not out.name:
        _report(check, args.run_dir)
        print("v6gate bundle: nothing written: the run directory does not match its manifest")
        return 1
    inside = manifest.verify_bundle(out)
    if inside["changed"] or inside["missing"] or inside["extra"]:
        return _report(inside, str(out))
    print(f"v6gate bundle: {out} ({out.stat().st_size} bytes, {len(inside['ok'])} files + MANIFEST.sha256; "
          f"the manifest inside verifies)")
    return 0
