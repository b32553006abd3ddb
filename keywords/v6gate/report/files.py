"""Writing a run's report files whole or not at all, and saying which were
not written when the run directory is full or read-only.

Every report file is written beside itself (``.NAME.tmp``) and renamed over
its name when complete (``replacing``): a kill, a full disk or a read-only
remount leaves the previous version or none, never half a file.
``write_reports`` writes a run's reports in order and, whatever happens,
the manifest last over the files that are whole; when one cannot be
written it stops and raises ``ReportsNotWritten`` naming what is missing
and why (the CLI's one line, ``INCOMPLETE`` says it too, exit 3)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import BenchError


class ReportsNotWritten(BenchError):
    """Some report files could not be written (``missing``), for ``why``; ``doc`` is the run's document."""

    def __init__(self, run_dir: Path, missing: list[str], why: str, paths: dict | None = None):
        self.run_dir, self.missing, self.why, self.paths = Path(run_dir), missing, why, paths or {}
        self.doc: dict | None = None
        super().__init__(f"{', '.join(missing)} could not be written to {run_dir} ({why})")


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path``, renamed over it when the block ends, removed when the block fails."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_text(path: Path, text: str) -> Path:
    with replacing(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_reports(run_dir: Path, out: dict, steps: list[tuple[tuple[str, ...], Callable[[], object]]]) -> dict:
    """Run ``steps`` (the files a step writes, its writer) in order, then write MANIFEST.sha256 over the
    whole files; ``out`` (the paths) gains ``manifest``.  On an OSError the steps left are not run, the
    earlier versions of their files are removed (a rebuild must not leave stale reports beside new ones), the
    manifest is still written over what is whole, and ReportsNotWritten names the files missing and why."""
    from . import manifest

    failed: tuple[int, OSError] | None = None
    for i, (_names, write) in enumerate(steps):
        try:
            write()
        except OSError as exc:
            failed = (i, exc)
            break
    missing = [n for names, _ in steps[failed[0]:] for n in names] if failed else []
    for name in missing:
        with contextlib.suppress(OSError):
            (Path(run_dir) / name).unlink()
    try:
        out["manifest"] = manifest.write(run_dir)
    except OSError as exc:
        failed = failed or (len(steps), exc)
        missing.append(manifest.NAME)
    if failed is None:
        return out
    exc = failed[1]
    raise ReportsNotWritten(run_dir, missing, exc.strerror or str(exc), out)


def space_problem(run_dir: Path, need: int = 64 << 10) -> str | None:
    """Why the run directory cannot take more: read-only, or (nearly) full; None when it can."""
    try:
        st = os.statvfs(run_dir)
    except OSError as exc:
        return f"the run directory {run_dir} cannot be read ({exc.strerror or exc})"
    if st.f_flag & os.ST_RDONLY:
        return f"the run directory {run_dir} is on a read-only file system"
    free = st.f_bavail * st.f_frsize
    if free < need:
        return f"the run directory {run_dir} is full ({free // 1024} KiB free)"
    return None
