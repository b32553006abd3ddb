"""Two arms of a storage gate in one trial, alternated in ABBA slices.

The storage gates' clients (net/iscsi.py, net/nfs.py) are synchronous: one
operation (a READ(10)/WRITE(10) or an NFSv3 READ/WRITE of one block) at a
time.  ``run_slices`` drives two such streams, one per arm (IPv4 and IPv6
sessions to the same server), for ``seconds``: arm A for ``slice_s``, then
arm B, then B, then A (slice pair k runs A first when k is even), so both
arms see the same seconds of the machine, as ``v6gate-loadgen alternate``
does for the TCP gates.  An operation in flight when its slice ends
completes in that slice (it is counted where it ran).  Per arm: operations,
bytes, seconds spent on it and this thread's CPU time while on it.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable


class ArmFailed(Exception):
    """Arm ``arm``'s session failed (set-up or an operation): the caller can tell which family it was."""

    def __init__(self, arm: int, exc: BaseException):
        super().__init__(f"{exc.__class__.__name__}: {exc}")
        self.arm = arm


def thread_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_THREAD)
    return ru.ru_utime + ru.ru_stime


def run_slices(ops: list[Callable[[], int]], seconds: float, slice_s: float,
               clock: Callable[[], float] = time.monotonic) -> dict:
    """``ops[i]()`` performs one operation of arm i and returns the bytes it moved."""
    if len(ops) != 2 or seconds < 2 * slice_s or slice_s <= 0:
        raise ValueError("two arms, and SECONDS at least twice SLICE")
    arms = [{"ops": 0, "bytes": 0, "seconds": 0.0, "cpu_s": 0.0} for _ in ops]
    end = clock() + seconds
    k = 0
    while clock() + 2 * slice_s <= end + slice_s / 2:
        for i in ((0, 1) if k % 2 == 0 else (1, 0)):
            a, op = arms[i], ops[i]
            c0, t0 = thread_cpu(), clock()
            stop = t0 + slice_s
            while clock() < stop:
                try:
                    a["bytes"] += op()
                except Exception as exc:
                    raise ArmFailed(i, exc) from exc
                a["ops"] += 1
            a["seconds"] += clock() - t0
            a["cpu_s"] += thread_cpu() - c0
        k += 1
    return {"slices": k, "slice_s": slice_s, "arms": arms}
