"""C built on first use with the system's compiler (``tools/setup`` installs
gcc): the audit engine (a shared library loaded with ctypes) and the gates'
load generator (a program).  One build per source version: the file name
carries a hash of the sources, headers and flags, so a changed source is
built again; it is compiled to a temporary name and renamed, so concurrent
users (xdist workers) never run or load a half-written file; earlier builds
of the same name are removed."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path


class BuildError(OSError):
    """The C code could not be built (the message says why)."""


class NoCompiler(BuildError):
    """No C compiler on PATH."""


def compiler() -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise NoCompiler("no C compiler (cc/gcc) on PATH; tools/setup installs gcc")
    return cc


def digest(sources: Sequence[Path], flags: Sequence[str], depends: Sequence[Path] = ()) -> str:
    h = hashlib.sha256(" ".join(flags).encode())
    for s in (*sources, *depends):
        h.update(Path(s).read_bytes())
    return h.hexdigest()[:16]


def build(name: str, sources: Sequence[Path], flags: Sequence[str], out_dir: Path, *, suffix: str = "",
          depends: Sequence[Path] = (), timeout: float = 180) -> Path:
    """``out_dir/<name>-<hash><suffix>`` built from ``sources`` with
    ``flags`` (``depends``: headers, in the hash, not on the command line)."""
    out = out_dir / f"{name}-{digest(sources, flags, depends)}{suffix}"
    if out.exists():
        return out
    cc = compiler()
    out_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out_dir)
    os.close(fd)
    try:
        try:
            done = subprocess.run([cc, *flags, "-o", tmp, *map(str, sources)], capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            raise BuildError(f"{cc} did not finish {Path(sources[0]).name} within {timeout:g} s") from None
        if done.returncode:
            raise BuildError(f"{cc} failed on {Path(sources[0]).name}: "
                             f"{(done.stderr.strip().splitlines() or ['?'])[-1]}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    for old in out_dir.glob(f"{name}-*{suffix}"):  # earlier sources' builds
        if old != out:
            try:
                old.unlink()
            except OSError:
                pass
    return out
