"""MLD join to Report (RFC 3810 §6.1, RFC 2710 §4), measured on the
tester's wire: the DUT is told (control adapter ``listen``) to join a fresh
group; ``time`` runs from the join to the DUT's first Report naming the
group.  That Report is what a snooping switch (RFC 4541 §2.1.1) and a
multicast router act on before any of the group's traffic reaches the DUT,
so it is the DUT's share of the time from a join to traffic.

Where the adapter can hold a group before joining it (the lab's listener:
``listen(group, mode="include")`` with no source joins nothing), the
listener is started first and the clock starts at the join itself;
otherwise the clock starts when the harness asks the DUT to join, and the
adapter's own latency (an ssh round trip) is in the figure.  A DUT that
sends no Report within ``give_up_s`` is a very slow sample
(``give_up_s``), not a hang.  The group is left after each trial."""

from __future__ import annotations

import contextlib

from ...core.control import NotSupported
from ...net import mld as MLD
from ..engine import Measure
from ..profiles import GateProfile
from ..registry import Workload, register_workload


def mld_join(t, prof: GateProfile, i: int) -> Measure:
    give_up = float(prof.params.get("give_up_s", 2.0))
    group = MLD.fresh_group()
    raw: dict = {"group": group}
    try:
        t.control.listen(group, mode="include")  # an application holding the group's socket, not joined yet
        raw["clock"] = "at the join"
    except NotSupported:
        raw["clock"] = "when the harness asked the DUT to join (the adapter's latency included)"
    try:
        start = t.now()
        t.control.listen(group)
        report = t.port.expect(t.from_dut(lambda p: MLD.reports_group(p, group)), give_up, since=start)
    finally:
        with contextlib.suppress(NotSupported):
            t.control.unlisten(group)
    if report is None:
        return Measure({"time": give_up * 1000}, 0.0, 0.0, {**raw, "reported": False})
    version = 1 if MLD.is_v1_report(report.pkt, group) else 2
    return Measure({"time": round((report.time - start) * 1000, 3)}, 0.0, 0.0,
                   {**raw, "reported": True, "mld_version": version})


register_workload(Workload("mld_join", compare=frozenset({"target"}), metrics={"time": ("ms", False)},
                           params=frozenset({"give_up_s"}), sample=mld_join))
