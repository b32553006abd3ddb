"""What the workload modules share: running a tool with a deadline, and the
figure a candidate arm that moved nothing gets."""

from __future__ import annotations

import subprocess

from ...errors import BenchError

#: a candidate arm that moved nothing gets this instead of 0 (its log ratio is then hugely negative: FAIL)
FLOOR = 1e-9


def run_tool(argv: list[str], timeout: float, what: str) -> subprocess.CompletedProcess:
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{what} did not finish within {timeout:g} s: {' '.join(argv[-12:])}") from None
    return cp
