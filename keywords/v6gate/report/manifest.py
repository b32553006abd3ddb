"""Evidence you can trust later: ``MANIFEST.sha256`` in every run directory
(sha256sum format, so ``sha256sum -c MANIFEST.sha256`` checks it too) over
results.json, junit.xml, the HTML pages, the compliance files and every
pcap; ``v6gate verify RUN_DIR`` checks it and ``v6gate bundle RUN_DIR``
packs the run into one deterministic .tar.gz with the manifest inside.

Exit codes of ``verify`` and ``bundle``: 0 ok, 1 the manifest does not
match (each changed, missing or extra file listed), 2 bad input."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import tarfile
from pathlib import Path

from .. import untrusted
from ..errors import UsageError
from . import files

NAME = "MANIFEST.sha256"
#: what the manifest covers, relative to the run directory (records/ and logs are working files, not evidence)
TOP_FILES = ("results.json", "junit.xml", "compliance.csv", "compliance.json")
TOP_GLOBS = ("*.html",)
PCAP_DIRS = ("pcap",)
PCAP_SUFFIXES = (".pcap", ".pcapng", ".pcap.gz", ".pcapng.gz")
_MANIFEST_LIMITS = untrusted.RUN_OUTPUT.but(kind="MANIFEST.sha256")
_LINE = re.compile(r"^([0-9a-f]{64}) [ *](.+)$")


def sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return _sha256_of(f)


def _sha256_of(f) -> str:
    """A stream's digest, a MiB at a time (a bundle member of any size is never held in memory)."""
    h = hashlib.sha256()
    for block in iter(lambda: f.read(1 << 20), b""):
        h.update(block)
    return h.hexdigest()


def covered(run_dir: Path) -> list[str]:
    """The evidence files of a run directory, relative, sorted (the manifest's and the bundle's order)."""
    run_dir = Path(run_dir)
    out = {n for n in TOP_FILES if (run_dir / n).is_file()}
    for g in TOP_GLOBS:
        out |= {p.name for p in run_dir.glob(g) if p.is_file()}
    for d in PCAP_DIRS:
        base = run_dir / d
        if base.is_dir():
            out |= {str(p.relative_to(run_dir)) for p in base.rglob("*")
                    if p.is_file() and p.name.endswith(PCAP_SUFFIXES)}
    return sorted(out)


def write(run_dir: Path) -> Path:
    run_dir = Path(run_dir)
    lines = [f"{sha256(run_dir / rel)}  {rel}\n" for rel in covered(run_dir)]
    return files.write_text(run_dir / NAME, "".join(lines))


def parse(text: str, source: str = NAME) -> dict[str, str]:
    entries = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _LINE.match(line)
        if not m:
            raise UsageError(f"{source} line {n}: not '<sha256>  <path>' ({line[:60]!r}); regenerate it with "
                             f"'v6gate report RUN_DIR'")
        rel = m.group(2)
        if rel.startswith("/") or ".." in Path(rel).parts:
            raise UsageError(f"{source} line {n}: path {rel!r} leaves the run directory")
        entries[rel] = m.group(1)
    return entries


def _read_manifest(run_dir: Path) -> dict[str, str]:
    if not Path(run_dir).is_dir():
        raise UsageError(f"{run_dir}: not a directory; pass a run directory (reports/runs/<run>)")
    path = Path(run_dir) / NAME
    if not path.is_file():
        raise UsageError(f"{run_dir}: no {NAME}; write one with 'v6gate report {run_dir}'")
    return parse(untrusted.read_text(path, _MANIFEST_LIMITS), str(path))


def verify(run_dir: Path) -> dict[str, list[str]]:
    """{changed, missing, extra, ok}: files whose hash differs, listed but absent, evidence not listed; the
    reports the run could not write (its INCOMPLETE says which: a full or read-only directory) are missing,
    and so is the manifest of a run that did not get to write one."""
    from . import incomplete

    run_dir = Path(run_dir)
    if incomplete.present(run_dir) and not (run_dir / NAME).exists() and run_dir.is_dir():
        return {"changed": [], "missing": [NAME], "extra": [], "ok": [],
                "incomplete": _first_line(run_dir / incomplete.MARKER)}
    entries = _read_manifest(run_dir)
    changed, missing, ok = [], [], []
    for rel, digest in sorted(entries.items()):
        p = run_dir / rel
        if not p.is_file():
            missing.append(rel)
        elif sha256(p) != digest:
            changed.append(rel)
        else:
            ok.append(rel)
    extra = [rel for rel in covered(run_dir) if rel not in entries]
    missing += [rel for rel in incomplete.unwritten(run_dir) if rel not in entries and rel not in missing]
    out = {"changed": changed, "missing": missing, "extra": extra, "ok": ok}
    if incomplete.present(run_dir):
        out["incomplete"] = _first_line(run_dir / incomplete.MARKER)
    return out


def _first_line(path: Path) -> str:
    try:
        lines = untrusted.read_text(path, _MANIFEST_LIMITS).strip().splitlines()
    except UsageError:
        return "?"
    return lines[-2] if len(lines) > 1 and lines[-1].startswith("not written: ") else (lines[-1] if lines else "?")


def bundle(run_dir: Path, out: Path | None = None) -> tuple[Path, dict]:
    """Verify the manifest, then write results, reports, pcaps and the manifest into one .tar.gz whose
    bytes depend only on the files (sorted names, fixed owner, mode and mtime, no gzip timestamp)."""
    run_dir = Path(run_dir).resolve()
    check = verify(run_dir)
    if check["changed"] or check["missing"] or check["extra"]:
        return Path(), check
    out = Path(out) if out else run_dir.parent / f"{run_dir.name}.tar.gz"
    if out.resolve().is_relative_to(run_dir) and out.resolve().parent == run_dir:
        raise UsageError(f"-o {out}: write the bundle outside the run directory it packs")
    entries = _read_manifest(run_dir)
    names = [*sorted(entries), NAME]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in names:
            data = (run_dir / rel).read_bytes()
            info = tarfile.TarInfo(f"{run_dir.name}/{rel}")
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    tmp = out.with_name(out.name + ".tmp")
    try:
        with open(tmp, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as gz:
            gz.write(raw.getvalue())
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"-o {out}: cannot write the bundle ({exc.strerror}); choose a writable path") from None
    return out, check


def verify_bundle(path: Path) -> dict[str, list[str]]:
    """Check the manifest inside a bundle against the files inside it (what a recipient runs)."""
    try:
        with tarfile.open(path, "r:gz") as tar:
            members = {m.name.split("/", 1)[1]: m for m in tar.getmembers() if m.isfile() and "/" in m.name}
            if NAME not in members:
                raise UsageError(f"{path}: no {NAME} inside; not a v6gate bundle")
            if members[NAME].size > _MANIFEST_LIMITS.max_bytes:
                raise UsageError(f"{path}: its {NAME} is over the {_MANIFEST_LIMITS.max_bytes >> 20} MiB limit; "
                                 "not a v6gate bundle")
            text = untrusted.decode(tar.extractfile(members[NAME]).read(), f"{path}:{NAME}", _MANIFEST_LIMITS)
            entries = parse(text, f"{path}:{NAME}")
            changed, missing, ok = [], [], []
            for rel, digest in sorted(entries.items()):
                if rel not in members:
                    missing.append(rel)
                    continue
                h = _sha256_of(tar.extractfile(members[rel]))
                (ok if h == digest else changed).append(rel)
            extra = sorted(set(members) - set(entries) - {NAME})
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise UsageError(f"{path}: not a readable .tar.gz ({exc})") from None
    return {"changed": changed, "missing": missing, "extra": extra, "ok": ok}
