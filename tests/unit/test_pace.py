"""Reply and silence windows derived from the DUT's measured answers
(core/pace.py): 20 times the slowest answer, never below the floor (the
lab's own 1 s) nor above what the target file allows; a slower answer
widens them for the rest of the run; ``timing.adaptive: false`` keeps the
target file's values."""

from __future__ import annotations

from v6gate.core.pace import FLOOR_S, Pace


def test_a_fast_dut_gets_the_floor_and_never_more_than_the_target_allows():
    pace = Pace({"reply_timeout_s": 2.0, "silence_s": 2.0, "adaptive": True})
    assert pace.timing()["reply_timeout_s"] == 2.0  # nothing measured yet: the target's values
    for s in (0.001, 0.004, 0.002):
        pace.observe(s)
    eff = pace.timing()
    assert eff["reply_timeout_s"] == eff["silence_s"] == FLOOR_S == 1.0
    pace.observe(0.07)  # one slow answer widens the windows for the rest of the run
    assert abs(pace.timing()["reply_timeout_s"] - 1.4) < 1e-9
    pace.observe(0.5)
    assert pace.timing()["silence_s"] == 2.0  # capped at the target's
    s = pace.summary()
    assert s["samples"] == 5 and s["slowest_answer_ms"] == 500.0 and s["effective"]["reply_timeout_s"] == 2.0


def test_adaptive_false_keeps_the_target_files_values():
    pace = Pace({"reply_timeout_s": 3.0, "silence_s": 2.5, "adaptive": False})
    pace.observe(0.001)
    assert pace.timing()["reply_timeout_s"] == 3.0 and pace.timing()["silence_s"] == 2.5


def test_a_target_that_asks_for_less_than_the_floor_keeps_it():
    pace = Pace({"reply_timeout_s": 0.5, "silence_s": 0.5})
    pace.observe(0.001)
    assert pace.timing()["reply_timeout_s"] == 0.5


def test_calibration_probes_from_one_node_so_the_dut_keeps_one_entry_for_it(monkeypatch):
    """A fresh node per Echo Request would leave CALIBRATION REACHABLE entries in the DUT's Neighbor Cache
    (core/neighbour_room.py: a small cache may not evict them to make room for the first checks' neighbours)."""
    from v6gate.core import liveness
    from v6gate.core.pace import CALIBRATION, Pace

    probers = []

    def round_trip(port, mac, link_local, method, within, prober=None):
        probers.append((method, prober))
        return 0.002

    monkeypatch.setattr(liveness, "round_trip", round_trip)
    pace = Pace({"reply_timeout_s": 2, "silence_s": 2})
    pace.calibrate(None, "52:54:00:ab:cd:02", "fe80::1")
    assert len(probers) == 2 * CALIBRATION and pace.samples == 2 * CALIBRATION
    assert len({id(p) for _, p in probers}) == 1 and probers[0][1] is not None
