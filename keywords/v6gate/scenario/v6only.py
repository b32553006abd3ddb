"""Steps shared by the IPv6-only checks and the storage checks: what IPv4
the DUT sent in a window."""

from __future__ import annotations

from ..core.context import CheckContext
from ..net import match as M
from ..net import v6only as V


def ipv4_summary(t: CheckContext, since: float) -> tuple[dict, list, dict]:
    """(IPv4 the DUT depends on: counts, first frames; DHCPv4 RFC 8925 allows: counts)."""
    frames = t.collect(M.anything(), 0, since=since)
    bad, firsts = V.summarize_ipv4(frames, since)
    every, _ = V.summarize_ipv4(frames, since, allowed=True)
    allowed = {k: n for k, n in every.items() if V.allowed_on_ipv6_only_link(k)}
    if bad or allowed:
        t.measure("ipv4_frames", {**every})
    return bad, firsts, allowed
