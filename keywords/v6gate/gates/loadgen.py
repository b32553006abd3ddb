"""Build v6gate-loadgen (loadgen.c) on first use, once per source version."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import BenchError, MissingTool
from ..paths import STATE_DIR

SOURCE = Path(__file__).with_name("loadgen.c")


def binary() -> str:
    """Path of the compiled load generator (built with the system C compiler)."""
    src = SOURCE.read_bytes()
    digest = hashlib.sha256(src).hexdigest()[:12]
    out = STATE_DIR / "bin" / f"v6gate-loadgen-{digest}"
    if out.exists():
        return str(out)
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise MissingTool("cc", "gcc")
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=".loadgen-")
    os.close(fd)
    cp = subprocess.run([cc, "-O2", "-pthread", "-o", tmp, str(SOURCE)], capture_output=True, text=True)
    if cp.returncode != 0:
        os.unlink(tmp)
        raise BenchError(f"could not build v6gate-loadgen: {(cp.stderr.strip().splitlines() or ['?'])[-1]}")
    os.chmod(tmp, 0o755)
    os.replace(tmp, out)
    return str(out)
