"""Per-trial disturbance on a shared machine: hypervisor steal and the CPU
that processes other than the workload used while a trial ran.

``/proc/stat`` (first line, USER_HZ ticks summed over CPUs): user nice system
idle iowait irq softirq steal ...  Steal (field 8) is time the hypervisor
gave our vCPUs to someone else; it slows a trial without being charged to
any process.  Busy = user+nice+system+irq+softirq; what the workload itself
used is known from the tools (iperf3's own CPU report, the load generator's
rusage, the server's /proc/PID/stat), so ``foreign = busy - workload``
estimates the other tenants of the machine.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
NCPU = os.cpu_count() or 1


@dataclass(frozen=True)
class CpuSnapshot:
    t: float
    busy_s: float
    idle_s: float
    steal_s: float
    procs_running: int


def parse_proc_stat(text: str, t: float = 0.0) -> CpuSnapshot:
    busy = idle = steal = 0.0
    running = 0
    for line in text.splitlines():
        if line.startswith("cpu "):
            f = [int(x) for x in line.split()[1:]]
            f += [0] * (8 - len(f))
            user, nice, system, idl, iowait, irq, softirq, st = f[:8]
            busy = (user + nice + system + irq + softirq) / HZ
            idle = (idl + iowait) / HZ
            steal = st / HZ
        elif line.startswith("procs_running"):
            running = int(line.split()[1])
    return CpuSnapshot(t, busy, idle, steal, running)


def snapshot() -> CpuSnapshot:
    with open("/proc/stat") as f:
        return parse_proc_stat(f.read(), time.monotonic())


def process_cpu_s(pid: int) -> float | None:
    """utime+stime (+ children reaped) of a process, in seconds; None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    # fields[0] is state (field 3); utime=14, stime=15, cutime=16, cstime=17 (1-based)
    return sum(int(x) for x in fields[11:15]) / HZ


def tree_cpu_s(pids: list[int]) -> float:
    return sum(v for v in (process_cpu_s(p) for p in pids) if v is not None)


@dataclass
class Disturbance:
    wall_s: float
    steal_s: float
    busy_s: float
    workload_cpu_s: float
    procs_running: int

    @property
    def steal_fraction(self) -> float:
        """Steal as a share of the machine's capacity during the trial (over at
        least one second: /proc/stat counts in 10 ms ticks, so one tick in a
        0.1 s trial is not 5 % of anything)."""
        return self.steal_s / (max(self.wall_s, 1.0) * NCPU)

    @property
    def foreign_fraction(self) -> float:
        """CPU used by everything but the workload, as a share of capacity."""
        return max(0.0, self.busy_s - self.workload_cpu_s) / (max(self.wall_s, 1.0) * NCPU)

    def as_dict(self) -> dict:
        return {"wall_s": round(self.wall_s, 4), "steal_s": round(self.steal_s, 3), "busy_s": round(self.busy_s, 3),
                "workload_cpu_s": round(self.workload_cpu_s, 4), "steal_fraction": round(self.steal_fraction, 4),
                "foreign_fraction": round(self.foreign_fraction, 4), "procs_running": self.procs_running}


def between(a: CpuSnapshot, b: CpuSnapshot, workload_cpu_s: float) -> Disturbance:
    return Disturbance(wall_s=b.t - a.t, steal_s=b.steal_s - a.steal_s, busy_s=b.busy_s - a.busy_s,
                       workload_cpu_s=workload_cpu_s, procs_running=max(a.procs_running, b.procs_running))
