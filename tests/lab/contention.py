"""How much of a timed stretch the machine was CPU-starved, from Linux's
pressure stall information (/proc/pressure/cpu, "some": time in which at
least one runnable task waited for a CPU).  A lab test that holds the lab to
a wall-clock budget judges only the trials the machine did not disturb, and
says how many it discarded: on a loaded machine a slow trial is a fact about
the machine, on a quiet one it is a fact about the lab."""

from __future__ import annotations

import time
from pathlib import Path

PSI = Path("/proc/pressure/cpu")
#: a trial is disturbed when some task waited for a CPU during more than this share of it
DISTURBED_SHARE = 0.5


def _stall_us() -> int | None:
    try:
        for line in PSI.read_text().splitlines():
            if line.startswith("some "):
                return int(line.rsplit("total=", 1)[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


class Trial:
    """``with Trial() as tr: ...`` then ``tr.wall_s``, ``tr.stall_share`` and ``tr.disturbed``."""

    def __enter__(self) -> Trial:
        self._t0, self._s0 = time.monotonic(), _stall_us()
        return self

    def __exit__(self, *exc) -> None:
        self.wall_s = time.monotonic() - self._t0
        s1 = _stall_us()
        self.stall_share = None if self._s0 is None or s1 is None else \
            min(1.0, (s1 - self._s0) / 1e6 / max(self.wall_s, 1e-6))

    @property
    def disturbed(self) -> bool:
        return self.stall_share is not None and self.stall_share > DISTURBED_SHARE
