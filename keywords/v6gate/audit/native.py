"""The audit's C code, built on first use with the system's C compiler into
``build/audit/`` and loaded with ctypes (no Python headers, no package to
install: ``tools/setup`` installs gcc).  One build per source: the file
name carries the hash of the sources and flags, so a changed source is
built again and concurrent audits (xdist workers) never load a
half-written library (it is compiled to a temporary name and renamed).

Without a compiler the audit still runs, on its Python path (the same
findings, slower); ``Library.load`` says why once.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..paths import ROOT

HERE = Path(__file__).parent
BUILD = ROOT / "build" / "audit"
CFLAGS = ("-O2", "-shared", "-fPIC", "-std=gnu11")


class Library:
    """A shared library built from C sources next to this file.
    ``signatures(lib)`` sets the functions' ctypes types."""

    def __init__(self, name: str, sources, signatures, depends=()):
        self.name, self.signatures = name, signatures
        self.sources = [HERE / s for s in sources]
        self.depends = [HERE / s for s in depends]  # headers: in the hash, not on the command line
        self.lib = None
        self.why: str | None = None

    def digest(self) -> str:
        h = hashlib.sha256(" ".join(CFLAGS).encode())
        for s in (*self.sources, *self.depends):
            h.update(s.read_bytes())
        return h.hexdigest()[:16]

    def build(self) -> Path:
        out_dir = BUILD
        lib = out_dir / f"{self.name}-{self.digest()}.so"
        if lib.exists():
            return lib
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            raise OSError("no C compiler (cc/gcc) on PATH; tools/setup installs gcc")
        out_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=lib.name + ".", dir=out_dir)
        os.close(fd)
        try:
            done = subprocess.run([cc, *CFLAGS, "-o", tmp, *map(str, self.sources)], capture_output=True,
                                  text=True, timeout=180)
            if done.returncode:
                raise OSError(f"{cc} failed on {self.sources[0].name}: {done.stderr.strip().splitlines()[-1:]}")
            os.replace(tmp, lib)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        for old in out_dir.glob(f"{self.name}-*.so"):  # earlier sources' builds
            if old != lib:
                try:
                    old.unlink()
                except OSError:
                    pass
        return lib

    def load(self):
        """The library, or None (with the reason in ``why``, said once on
        stderr) when it cannot be built or loaded."""
        if self.lib is not None or self.why is not None:
            return self.lib
        try:
            lib = ctypes.CDLL(str(self.build()))
            self.signatures(lib)
        except (OSError, subprocess.SubprocessError, AttributeError) as exc:
            self.why = str(exc)
            print(f"v6gate audit: the C engine is unavailable ({self.why}); every frame goes through the "
                  "Python dissector (the same findings, slower)", file=sys.stderr)
            return None
        self.lib = lib
        return lib
