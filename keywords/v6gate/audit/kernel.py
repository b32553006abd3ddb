"""The counting loop of the audit's fast path in C (``scankernel.c``),
built on first use with the system's C compiler into ``build/audit/`` and
loaded with ctypes (no Python headers, no package to install: ``tools/setup``
installs gcc).  One build per source: the file name carries the source's
hash, so a changed kernel is built again and concurrent audits (xdist
workers, a parallel audit's processes) never load a half-written library.

Without a compiler the audit still runs, on its deep path alone (the same
findings, slower); ``load()`` says why once.
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

SOURCE = Path(__file__).with_name("scankernel.c")
BUILD = ROOT / "build" / "audit"
CFLAGS = ("-O2", "-shared", "-fPIC", "-std=gnu11")
GO, DEEP, SYNC, PROMOTE = 0, 1, 2, 3
#: the mailbox's words (scankernel.c MAIL_*)
MAIL_SLOT, MAIL_DIRTY, MAIL_NS, MAIL_ADDR, MAIL_COUNTED, MAIL_LAST_NS, MAIL_FRAMES, MAIL_POS, MAIL_WORDS = (
    0, 1, 2, 3, 5, 6, 7, 8, 9)
#: int64 per host in a drained tally (scankernel.c v6s_drain)
ROW = 10

_lib = None
_why: str | None = None


def _build() -> Path:
    text = SOURCE.read_bytes()
    digest = hashlib.sha256(text + " ".join(CFLAGS).encode()).hexdigest()[:16]
    lib = BUILD / f"scankernel-{digest}.so"
    if lib.exists():
        return lib
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise OSError("no C compiler (cc/gcc) on PATH; tools/setup installs gcc")
    BUILD.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=lib.name + ".", dir=BUILD)
    os.close(fd)
    try:
        done = subprocess.run([cc, *CFLAGS, "-o", tmp, str(SOURCE)], capture_output=True, text=True, timeout=120)
        if done.returncode:
            raise OSError(f"{cc} failed on {SOURCE.name}: {done.stderr.strip().splitlines()[-1:]}")
        os.replace(tmp, lib)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    for old in BUILD.glob("scankernel-*.so"):  # earlier sources' builds
        if old != lib:
            try:
                old.unlink()
            except OSError:
                pass
    return lib


def load():
    """The kernel library, or None (with the reason in ``why()``, said once
    on stderr) when it cannot be built or loaded."""
    global _lib, _why
    if _lib is not None or _why is not None:
        return _lib
    try:
        lib = ctypes.CDLL(str(_build()))
    except (OSError, subprocess.SubprocessError) as exc:
        _why = str(exc)
        print(f"v6gate audit: the counting kernel is unavailable ({_why}); every frame goes through the "
              "dissector (the same findings, slower)", file=sys.stderr)
        return None
    P, I64, I32, U32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_uint32
    P64 = ctypes.POINTER(ctypes.c_int64)
    for name, res, args in (
            ("v6s_new", P, [P64]), ("v6s_free", None, [P]), ("v6s_slot", I64, [P, ctypes.c_char_p]),
            ("v6s_activate", None, [P, U32, I32]),
            ("v6s_learn", I32, [P, U32, ctypes.c_char_p, ctypes.c_char_p, I32, I32, I32, I64, I64]),
            ("v6s_invalidate", None, [P, I64]), ("v6s_addr", I32, [P, U32, I32, ctypes.c_char_p]),
            ("v6s_carry_all", I32, [P]), ("v6s_drain", I64, [P, I64, P64, I64]),
            ("v6s_force_deep", None, [P]),
            ("v6s_pcap", I32, [P, ctypes.c_char_p, I64, I64, I64, I32, I32, U32, I32]),
            ("v6s_pcapng", I32, [P, ctypes.c_char_p, I64, I64, I64, I32, P64, I64, I32]),
            ("v6s_setup", None, [P, ctypes.c_char_p, I64, I64, I32, I32, I32, U32, P64, I64, I32]),
            ("v6s_next", I32, [P, I64])):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    _lib = lib
    return lib


def why() -> str | None:
    return _why
