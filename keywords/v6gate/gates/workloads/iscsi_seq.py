"""Sequential iSCSI I/O: bs-byte READ(10) or WRITE(10) on the lab DUT's tgt
LUN with our RFC 7143 initiator (net/iscsi.py), a trial per arm, or both
families alternated in one client."""

from __future__ import annotations

from ...net.iscsi import INITIATOR
from ..bench import Bench
from ..engine import Measure
from ..profiles import GateProfile
from . import _storage


def iscsi_seq(bench: Bench, prof: GateProfile, family: str, *, baseline: bool = False) -> Measure:
    """One trial: sequential bs-byte READ(10) or WRITE(10) on the lab DUT's tgt LUN for trial_s seconds."""
    tgt = _storage.lab_service(bench, "tgt")
    p = prof.params
    args = ["v6gate.net.iscsi", "seq", bench.address(family), str(tgt.params["port"]), INITIATOR,
            tgt.params["iqn"], "1", str(int(p["bs"])), p["rw"], f"{prof.trial_s:g}"]
    return _storage.trial(bench, prof, family, args, tgt.daemons[0].pid, baseline)


def iscsi_alternate(bench: Bench, prof: GateProfile, order: tuple[str, str]) -> tuple[Measure, Measure]:
    p = prof.params
    hosts = [bench.address(arm) for arm in order]
    svc = _storage.lab_service(bench, "tgt")
    args = ["v6gate.net.iscsi", "alt", *hosts, str(svc.params["port"]), INITIATOR,
            svc.params["iqn"], "1", str(int(p["bs"])), p["rw"], f"{prof.trial_s:g}",
            f"{float(p.get('slice_s', 0.1)):g}"]
    return _storage.alternate(bench, prof, order, svc, args, iscsi_seq)


_storage.register("iscsi_seq", iscsi_seq, iscsi_alternate)
