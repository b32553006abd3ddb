"""How long to wait for this DUT: the target file's ``timing``, shortened to
what the DUT's measured answers need, never below a floor.

Most of an external run's time is waiting: for silence that proves a
packet was ignored, and for answers that do not come (the negative side of
a retry, a setup step's tries).  A target file's ``reply_timeout_s`` and
``silence_s`` (2 s by default) are what the user allows the DUT at most; a
DUT that answers a Neighbor Solicitation or an Echo Request in a few
milliseconds is given a window derived from its own answers instead:
``FACTOR`` times the slowest answer the run has seen from it, never less
than ``FLOOR_S`` (the windows the embedded lab's DUT is judged with) nor
more than the target file says.  The run measures the DUT when it starts
(``CALIBRATION`` Neighbor Solicitations and as many Echo Requests,
all from one node) and keeps
measuring it after each part (the liveness probes): a slower answer widens
the windows for the rest of the run.  ``timing.adaptive: false`` keeps the
target file's values as they are.  The effective values are in
``results.json`` (``run.pace``).
"""

from __future__ import annotations

import threading

from ..net.port import Port

#: never wait less than this for an answer or for silence (seconds): the embedded lab's own windows
FLOOR_S = 1.0
#: a window is this many times the slowest answer the DUT gave
FACTOR = 20.0
#: round trips measured when the run starts, of each kind (Neighbor Solicitation, Echo Request)
CALIBRATION = 8


class Pace:
    def __init__(self, timing: dict):
        self.declared = dict(timing)
        self.adaptive = bool(timing.get("adaptive", True))
        self._lock = threading.Lock()
        self.samples = 0
        self.slowest: float | None = None  # seconds: the slowest answer seen from the DUT

    def observe(self, seconds: float) -> None:
        """An answer from the DUT that took ``seconds`` (a probe of the DUT's
        own address: no protocol timer in it)."""
        with self._lock:
            self.samples += 1
            self.slowest = seconds if self.slowest is None else max(self.slowest, seconds)

    def calibrate(self, port: Port, mac: str, link_local: str) -> None:
        """CALIBRATION probes of each kind, all from one node: one entry in
        the DUT's Neighbor Cache, not one per Echo Request (a fresh node per
        Echo Request would leave that many REACHABLE entries, which a small
        cache may not evict to make room for the first checks' neighbours,
        core/neighbour_room.py)."""
        from ..net.nodes import EmulatedNode
        from .liveness import round_trip

        prober = EmulatedNode.fresh("LIVENESS")
        for method in ("ns", "echo"):
            for _ in range(CALIBRATION):
                took = round_trip(port, mac, link_local, method, float(self.declared["reply_timeout_s"]), prober)
                if took is not None:
                    self.observe(took)

    def _window(self, declared: float) -> float:
        if not self.adaptive or self.slowest is None:
            return declared
        return min(declared, max(FLOOR_S, FACTOR * self.slowest))

    def timing(self) -> dict:
        """The target's timing with the reply and silence windows this DUT's answers need."""
        out = dict(self.declared)
        out["reply_timeout_s"] = self._window(float(self.declared["reply_timeout_s"]))
        out["silence_s"] = self._window(float(self.declared["silence_s"]))
        return out

    def summary(self) -> dict:
        eff = self.timing()
        return {"adaptive": self.adaptive, "samples": self.samples,
                "slowest_answer_ms": None if self.slowest is None else round(self.slowest * 1000, 2),
                "floor_s": FLOOR_S, "factor": FACTOR,
                "declared": {k: self.declared[k] for k in ("reply_timeout_s", "silence_s")},
                "effective": {k: eff[k] for k in ("reply_timeout_s", "silence_s")}}
