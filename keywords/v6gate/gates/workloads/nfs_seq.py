"""Sequential NFSv3 I/O: bs-byte READ or WRITE of a file on the lab DUT's
ganesha export through libnfs (net/nfs.py), a trial per arm, or both
families alternated in one client."""

from __future__ import annotations

from ...net.nfs import prepare_read_files
from ..bench import Bench
from ..engine import Measure
from ..profiles import GateProfile
from . import _storage


def nfs_seq(bench: Bench, prof: GateProfile, family: str, *, baseline: bool = False) -> Measure:
    """One trial: sequential bs-byte NFSv3 READ or WRITE of a file on the lab DUT's ganesha export."""
    nfs = _storage.lab_service(bench, "nfs-ganesha")
    p = prof.params
    if p["rw"] == "read":
        prepare_read_files(nfs.export_path, ["seq"])
    args = ["v6gate.net.nfs", "seq", bench.address(family), nfs.export_path, str(int(p["bs"])), p["rw"],
            f"{prof.trial_s:g}"]
    return _storage.trial(bench, prof, family, args, nfs.daemons[0].pid, baseline)


def nfs_alternate(bench: Bench, prof: GateProfile, order: tuple[str, str]) -> tuple[Measure, Measure]:
    p = prof.params
    hosts = [bench.address(arm) for arm in order]
    svc = _storage.lab_service(bench, "nfs-ganesha")
    if p["rw"] == "read":
        prepare_read_files(svc.export_path, ["arm0", "arm1"])
    args = ["v6gate.net.nfs", "alt", *hosts, svc.export_path, str(int(p["bs"])),
            p["rw"], f"{prof.trial_s:g}", f"{float(p.get('slice_s', 0.1)):g}"]
    return _storage.alternate(bench, prof, order, svc, args, nfs_seq)


_storage.register("nfs_seq", nfs_seq, nfs_alternate)
