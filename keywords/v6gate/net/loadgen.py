"""v6gate-loadgen (loadgen.c): the gates' TCP load generator, client and
server, built on first use with the system C compiler (util/native.py)."""

from __future__ import annotations

from pathlib import Path

from ..errors import BenchError, MissingTool
from ..paths import STATE_DIR
from ..util import native

SOURCE = Path(__file__).with_name("loadgen.c")


def binary() -> str:
    """Path of the compiled load generator (built once per source version)."""
    try:
        return str(native.build("v6gate-loadgen", [SOURCE], ["-O2", "-pthread"], STATE_DIR / "bin"))
    except native.NoCompiler:
        raise MissingTool("cc", "gcc") from None
    except native.BuildError as exc:
        raise BenchError(f"could not build v6gate-loadgen: {exc}") from None
