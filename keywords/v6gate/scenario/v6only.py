"""Steps shared by the IPv6-only checks, the storage checks and the Happy
Eyeballs gate: the target's IPv6-only facts and what IPv4 the DUT sent in a
window."""

from __future__ import annotations

import ipaddress

from ..core.context import CheckContext
from ..errors import BenchError
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


def settings(target) -> dict:
    ext = target.extensions.get("v6only") or {}
    if not isinstance(ext, dict):
        raise BenchError(f"{target.source}: extensions.v6only must be a mapping (see docs/v6only.md)")
    return ext


def dut_ipv4(t: CheckContext) -> ipaddress.IPv4Interface | None:
    """The DUT's IPv4 address on a dual-stack link (extensions.v6only.ipv4), if it has one."""
    value = settings(t.target).get("ipv4")
    if not value:
        return None
    try:
        return ipaddress.IPv4Interface(value)
    except ValueError:
        raise BenchError(f"{t.target.source}: extensions.v6only.ipv4 {value!r} is not an IPv4 address/length "
                         "such as 198.18.1.2/24") from None
