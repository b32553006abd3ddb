"""Many captures, one audit: each capture (a shard) is audited into its
partial result and the partials are merged (``partial.merge``: exact,
associative and commutative, so any grouping and any order gives the same
audit).

The shards run wherever the user already runs work, not on a scheduler of
ours:

- one process: ``v6gate audit A.pcapng B.pcapng ...`` (one capture at a
  time, the engine on one core: it outpaces a disk);
- any batch system: one job per capture, ``v6gate audit A.pcapng --out
  DIR`` (DIR/partial.json), then ``v6gate audit DIR1/partial.json
  DIR2/partial.json ...`` merges them;
- a Dask cluster (the reference, ``dask`` and ``distributed`` from the
  ``fleet`` extra): ``v6gate audit --dask tcp://scheduler:8786 A B ...``
  or ``on_dask(client, paths)``.  The workers need v6gate and the
  captures at the same paths (a shared file system); each returns its
  partial (kilobytes per host), merged in a tree on the cluster.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from .capture import capture_format
from .hosts import Audit
from .partial import from_audit, merge, merge_all


def partial_of(path, name: str | None = None) -> dict:
    """The partial result of one capture (the C engine, or the Python path without a compiler)."""
    from .fast import read_into

    path = Path(path)
    capture_format(path)
    audit = Audit()
    counts = read_into(audit, path)
    if not counts["packets"]:
        raise UsageError(f"{path}: the capture holds no packets")
    return from_audit(audit, path, counts["packets"], name=name)


def on_dask(client, paths: list, *, fan_in: int = 4) -> dict:
    """The merged partial of ``paths``, each audited as one task on ``client``'s cluster
    (a ``distributed.Client``) and merged ``fan_in`` at a time on the cluster."""
    futures = client.map(partial_of, [str(p) for p in paths], key=[f"v6gate-audit-{i}-{Path(p).name}"
                                                                   for i, p in enumerate(paths)], pure=False)
    while len(futures) > 1:
        futures = [client.submit(merge_all, futures[i:i + fan_in], pure=False)
                   for i in range(0, len(futures), fan_in)]
    return futures[0].result()


def dask_client(address: str):
    """A client of the user's Dask scheduler; a one-line error when Dask is missing or unreachable."""
    try:
        from distributed import Client
    except ImportError:
        raise UsageError("--dask needs the dask and distributed packages: pip install 'v6gate[fleet]'") from None
    try:
        return Client(address, timeout="20s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise UsageError(f"--dask {address}: cannot reach the Dask scheduler ({str(exc)[:160]})") from None


__all__ = ["dask_client", "merge", "merge_all", "on_dask", "partial_of"]
