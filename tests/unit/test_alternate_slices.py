"""net/alternate.py: two arms in ABBA slices (pure logic, on a fake clock that
each operation advances by its arm's cost: no dependence on the machine)."""

import pytest

from v6gate.net.alternate import run_slices


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def _op(clock, log, arm, cost):
    def op():
        log.append(arm)
        clock.t += cost
        return 1000
    return op


def _runs(log):
    runs = [log[0]]
    for x in log[1:]:
        if x == runs[-1][-1]:
            runs[-1] += x
        else:
            runs.append(x)
    return runs


def test_slices_run_in_abba_order_and_both_arms_get_equal_time():
    clock, log = Clock(), []
    out = run_slices([_op(clock, log, "a", 0.002), _op(clock, log, "b", 0.002)], 0.4, 0.05, clock=clock)
    runs = _runs(log)
    # A B | B A | A B | B A, merged: a | bb | aa | bb | a (each arm first in half of the slice pairs)
    assert [r[0] for r in runs] == list("ababa") and [len(r) for r in runs] == [25, 50, 50, 50, 25]
    a, b = out["arms"]
    assert out["slices"] == 4
    assert a["seconds"] == pytest.approx(0.2) and b["seconds"] == pytest.approx(0.2)
    assert a["bytes"] == 1000 * a["ops"] == 100_000


def test_a_slower_arm_moves_fewer_bytes_in_the_same_time():
    clock = Clock()
    out = run_slices([_op(clock, [], "a", 0.001), _op(clock, [], "b", 0.004)], 0.4, 0.05, clock=clock)
    a, b = out["arms"]
    assert a["ops"] / a["seconds"] == pytest.approx(4 * b["ops"] / b["seconds"], rel=0.01)


def test_an_operation_in_flight_at_the_end_of_its_slice_counts_in_that_slice():
    clock, log = Clock(), []
    out = run_slices([_op(clock, log, "a", 0.03), _op(clock, log, "b", 0.03)], 0.2, 0.05, clock=clock)
    a, b = out["arms"]
    assert a["ops"] == b["ops"] == 4 and a["seconds"] == pytest.approx(0.12)


def test_a_trial_must_hold_a_slice_pair():
    with pytest.raises(ValueError):
        run_slices([lambda: 1, lambda: 1], seconds=0.05, slice_s=0.05)


def test_a_failing_arm_is_named():
    from v6gate.net.alternate import ArmFailed

    clock = Clock()

    def broken():
        raise OSError("connection reset")

    with pytest.raises(ArmFailed) as info:
        run_slices([_op(clock, [], "a", 0.01), broken], 0.4, 0.05, clock=clock)
    assert info.value.arm == 1 and "connection reset" in str(info.value)
