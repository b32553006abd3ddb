"""The audit's C code, built on first use with the system's C compiler into
``build/audit/`` (util/native.py: one build per source and flags, never a
half-written library) and loaded with ctypes (no Python headers, no package
to install: ``tools/setup`` installs gcc).

Without a compiler the audit still runs, on its Python path (the same
findings, slower); ``Library.load`` says why once.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

from ..paths import ROOT
from ..util import native

HERE = Path(__file__).parent
BUILD = ROOT / "build" / "audit"
CFLAGS = ("-O2", "-shared", "-fPIC", "-std=gnu11")


class Library:
    """A shared library built from C sources next to this file.
    ``signatures(lib)`` sets the functions' ctypes types; ``defines``
    (name -> value) are given to the compiler (``-D``): the bounds the
    Python side writes once (hosts.BOUNDS)."""

    def __init__(self, name: str, sources, signatures, depends=(), defines=None):
        self.name, self.signatures = name, signatures
        self.sources = [HERE / s for s in sources]
        self.depends = [HERE / s for s in depends]  # headers: in the hash, not on the command line
        self.flags = (*CFLAGS, *(f"-D{k}={v}" for k, v in sorted((defines or {}).items())))
        self.lib = None
        self.why: str | None = None

    def build(self) -> Path:
        return native.build(self.name, self.sources, self.flags, BUILD, suffix=".so", depends=self.depends)

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
