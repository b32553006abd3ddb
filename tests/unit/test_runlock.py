"""One run per bench (runlock.py): real processes holding real flocks in a
private state directory.  The CLI side (a second `v6gate run` refused,
a killed run's lock taken over, two DUTs at once) is tests/lab/test_run_locks.py."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from v6gate import runlock
from v6gate.paths import ROOT

KEYS = [("tester interface t0", "tester:-:t0"), ("the DUT 52:54:00:12:34:56", "dut-mac:-:52:54:00:12:34:56")]

HOLDER = """
import os, sys, time
from v6gate import runlock
keys = [tuple(k.split("=", 1)) for k in sys.argv[1:]]
held = runlock.acquire(keys, run_id="r-child", command="run")
print("held", flush=True)
if os.environ.get("SPAWN_CHILD"):  # like v6gate repeat: a child run proceeds under its parent's locks
    env = {**os.environ, runlock.INHERIT_ENV: str(os.getpid())}
    env.pop("SPAWN_CHILD")
    code = "from v6gate import runlock; import sys; runlock.acquire([tuple(k.split('=', 1)) for k in sys.argv[1:]]); print('child ok')"
    print(__import__("subprocess").run([sys.executable, "-c", code, *sys.argv[1:]], env=env, capture_output=True,
                                       text=True).stdout.strip(), flush=True)
time.sleep(120)
"""


@pytest.fixture
def locks(tmp_path, monkeypatch):
    monkeypatch.setattr(runlock, "LOCKS_DIR", tmp_path / "locks")
    env = {**os.environ, "V6GATE_STATE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT / "keywords")}
    procs = []

    def hold(keys, **extra):
        p = subprocess.Popen([sys.executable, "-c", HOLDER, *(f"{a}={b}" for a, b in keys)],
                             env={**env, **extra}, stdout=subprocess.PIPE, text=True)
        procs.append(p)
        assert p.stdout.readline().strip() == "held"
        return p

    yield hold
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def test_a_second_run_on_the_same_bench_is_refused_naming_the_first(locks):
    first = locks(KEYS)
    t0 = time.monotonic()
    with pytest.raises(runlock.Busy) as e:
        runlock.acquire(KEYS[1:])
    msg = str(e.value)
    assert f"pid {first.pid}" in msg and "r-child" in msg and "the DUT 52:54:00:12:34:56 is in use" in msg
    assert "\n" not in msg and time.monotonic() - t0 < 1.0


def test_a_dead_owners_lock_is_taken_over_and_said(locks):
    first = locks(KEYS)
    first.send_signal(signal.SIGKILL)
    first.wait()
    with runlock.acquire(KEYS) as held:
        assert len(held.notes) == 2 and all(f"pid {first.pid}" in n and "which is gone" in n for n in held.notes)
    with runlock.acquire(KEYS) as again:  # a clean release leaves nothing to take over
        assert again.notes == []


def test_runs_on_different_duts_proceed(locks):
    locks(KEYS)
    other = [("tester interface t2", "tester:-:t2"), ("the DUT 52:54:00:00:00:02", "dut-mac:-:52:54:00:00:00:02")]
    with runlock.acquire(other) as held:
        assert len(held.fds) == 2


def test_nothing_is_half_taken_when_one_lock_is_busy(locks):
    locks(KEYS[1:])
    with pytest.raises(runlock.Busy):
        runlock.acquire(KEYS)
    with runlock.acquire(KEYS[:1]) as held:  # the tester lock the refused call took first was let go
        assert held.keys == ["tester:-:t0"]


def test_a_child_run_of_the_holder_proceeds_others_do_not(locks):
    parent = locks(KEYS, SPAWN_CHILD="1")
    assert parent.stdout.readline().strip() == "child ok"
    with pytest.raises(runlock.Busy):
        runlock.acquire(KEYS)


def _target(**kw):
    base = dict(tester_interface="t0", tester_netns=None, dut_mac="52:54:00:12:34:56", dut_global=["2001:db8:1::10"],
                control={"adapter": "ssh", "ssh": {"host": "dut.example"}})
    return SimpleNamespace(**{**base, **kw})


def test_what_is_locked():
    keys = dict((k, label) for label, k in runlock.keys_for(_target()))
    assert set(keys) == {"tester:-:t0", "dut-mac:-:52:54:00:12:34:56", "dut-addr:-:2001:db8:1::10",
                         "dut-ssh:dut.example:22"}
    lab = dict((k, label) for label, k in runlock.keys_for(_target(tester_netns="v6gvm1-tester", control={})))
    assert "lab:v6gvm1" in lab and "tester:v6gvm1-tester:t0" in lab
    # the same MAC behind two labs' tester namespaces is two DUTs
    assert "dut-mac:v6gvm1-tester:52:54:00:12:34:56" in lab


def test_a_clean_release_removes_the_file_and_a_waiter_on_it_locks_the_new_one(locks, tmp_path):
    held = runlock.acquire(KEYS)
    paths = [runlock._path(k) for _, k in KEYS]
    assert all(p.exists() for p in paths)
    early = os.open(paths[0], os.O_RDWR)  # a second run that opened the file just before the release
    held.release()
    assert not any(p.exists() for p in paths), "nothing left in the state directory per run"
    fcntl.flock(early, fcntl.LOCK_EX | fcntl.LOCK_NB)  # it gets the lock, but on the removed inode
    assert not runlock._names(paths[0], early), "so it must not count it as the lock"
    fd, mine = runlock._open_locked(paths[0])
    try:
        assert mine and runlock._names(paths[0], fd), "it opens the path again and locks what the path names"
    finally:
        os.close(fd)
        os.close(early)
