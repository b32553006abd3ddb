"""v6gate-quicpeer (``net/quicpeer/``, Go, quic-go): both ends of a QUIC bulk
transfer for area plpmtud (RFC 8899 datagram PLPMTUD).  ``tools/setup``
builds it into ``build/quicpeer/`` with a Go toolchain it finds on PATH or
fetches into ``build/`` (go.mod and go.sum pin every module); the build's
``stamp`` names the sources it was built from, so a stale build is refused
here rather than run."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..errors import BenchError
from ..paths import ROOT

SOURCE_DIR = Path(__file__).with_name("quicpeer")
SOURCES = ("go.mod", "go.sum", "main.go")
BUILD_DIR = ROOT / "build" / "quicpeer"
BINARY = BUILD_DIR / "v6gate-quicpeer"


def source_digest(source_dir: Path = SOURCE_DIR) -> str:
    """The hash tools/setup writes into build/quicpeer/stamp (sha256 of the sources, in this order)."""
    h = hashlib.sha256()
    for name in SOURCES:
        h.update((source_dir / name).read_bytes())
    return h.hexdigest()[:16]


def binary(build_dir: Path = BUILD_DIR, source_dir: Path = SOURCE_DIR) -> str:
    """Path of the built v6gate-quicpeer; BenchError (run tools/setup) when it is missing or stale."""
    exe = build_dir / BINARY.name
    try:
        stamp = (build_dir / "stamp").read_text().strip()
    except OSError:
        stamp = ""
    if not exe.is_file():
        raise BenchError(f"v6gate-quicpeer is not built ({exe} is missing): run tools/setup (./v6gate --help runs "
                         "it), which builds it with Go")
    if stamp != source_digest(source_dir):
        raise BenchError(f"{exe} was built from other sources than net/quicpeer/ holds now: run tools/setup to "
                         "rebuild it")
    return str(exe)
