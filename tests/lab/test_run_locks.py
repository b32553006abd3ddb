"""Two `v6gate run`s at once, through the CLI (runlock.py): the second on
the same tester interface and DUT is refused with one line naming the first
(exit 3, nothing run); a run on another DUT proceeds beside it; after the
first is killed (SIGKILL: no cleanup of its own) the next run takes its lock
over and says so.  The links: veth pairs between two namespaces this test
makes, the DUTs the Linux stack of the second."""

import os
import re

import pytest
from veth_dut import VethBench

from v6gate import runlock

from conftest import kill_group, spawn_v6gate, v6gate, wait_for

NS = f"runlock{os.getpid()}"
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")


@pytest.fixture
def bench():
    """Two links: tester rl0 - DUT 52:54:00:00:10:01, tester rl2 - DUT 52:54:00:00:10:02."""
    with VethBench(NS, links=2, prefix="rl") as b:
        yield b


ONE = ["--no-gates", "-n", "0", "--check", "icmpv6.echo_request_is_answered"]


def test_second_run_refused_other_dut_proceeds_killed_runs_lock_taken_over(bench, tmp_path):
    t1, t2 = bench.target(tmp_path, 0), bench.target(tmp_path, 1)
    first = spawn_v6gate("run", "--target", t1, "--no-gates", "-n", "0", "--area", "nd",
                         "--out", tmp_path / "first")
    try:
        assert wait_for(lambda: runlock.holder(f"tester:{NS}:rl0"), timeout=60), "the first run took no lock"
        # the same tester interface and DUT: refused, one line, the first named, nothing run
        second = v6gate("run", "--target", t1, *ONE, "--out", tmp_path / "second", timeout=120)
        lines = second.stderr.strip().splitlines()
        assert second.returncode == 3 and len(lines) == 1, second.stdout + second.stderr
        assert f"pid {first.pid}" in lines[0] and "is in use by v6gate run" in lines[0], lines[0]
        assert not (tmp_path / "second").exists() and "Traceback" not in second.stderr
        # another DUT on another interface: proceeds beside the first
        other = v6gate("run", "--target", t2, *ONE, "--out", tmp_path / "other", timeout=300)
        assert other.returncode in (0, 1) and (tmp_path / "other" / "results.json").is_file(), other.stdout
        assert "in use" not in other.stderr
    finally:
        kill_group(first)  # SIGKILL: the run leaves its lock file naming it
        first.wait(30)
    third = v6gate("run", "--target", t1, *ONE, "--out", tmp_path / "third", timeout=300)
    said = [ln for ln in third.stdout.splitlines() if "took over the lock" in ln]
    assert said and all(re.search(rf"pid {first.pid}\b.*which is gone", ln) for ln in said), third.stdout
    assert (tmp_path / "third" / "results.json").is_file(), third.stdout + third.stderr
    assert runlock.holder(f"tester:{NS}:rl0") is None  # released when the run ended


def test_lab_down_refuses_a_lab_a_run_uses():
    name = f"lk{os.getpid() % 100000}"
    v6gate("lab", "up", "--name", name, check=True, timeout=300)
    try:
        # what a run against that lab's target file holds (runlock.keys_for: the lab of its tester namespace)
        with runlock.acquire([(f"lab {name}", f"lab:v6g{name}")], run_id="r-test", command="run"):
            down = v6gate("lab", "down", name, timeout=120)
            lines = down.stderr.strip().splitlines()
            assert down.returncode == 3 and len(lines) == 1 and f"lab {name} is in use by v6gate run r-test" in lines[0]
            assert f"pid {os.getpid()}" in lines[0]
    finally:
        v6gate("lab", "down", name, check=True, timeout=300)
