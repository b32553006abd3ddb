"""Repair rules for router-discovery checks beyond RFC 4861: Route
Information options (RFC 4191) read the way a stack with one mistake reads
them.  The kernel then installs, keeps or ranks the routes itself."""

from __future__ import annotations

import struct

from ..repair import repair
from .nd import rewrite_ra_options

RIO = 24


@repair("rio_lifetime_floor")
def rio_lifetime_floor(packet: bytes, dut: dict, floor: int = 1800, **_):
    """A stack that never lets a route go before ``floor`` seconds: Route
    Lifetimes below it (zero included) are raised to it (RFC 4191 §3.1
    says a lifetime of zero removes the route)."""

    def raise_lifetime(icmp, off, olen) -> bool:
        if olen < 8 or struct.unpack("!I", icmp[off + 4:off + 8])[0] >= floor:
            return False
        icmp[off + 4:off + 8] = struct.pack("!I", floor)
        return True

    return rewrite_ra_options(packet, RIO, raise_lifetime)


@repair("rio_preference_misread")
def rio_preference_misread(packet: bytes, dut: dict, **_):
    """A stack that reads the 2-bit Prf as unsigned, so 'high' (01) ranks
    below 'low' (11): the repair swaps the two values (RFC 4191 §2.1)."""

    def swap(icmp, off, olen) -> bool:
        prf = (icmp[off + 3] >> 3) & 0x3
        if olen < 8 or prf not in (1, 3):
            return False
        icmp[off + 3] = (icmp[off + 3] & ~0x18) | ((4 - prf) << 3)
        return True

    return rewrite_ra_options(packet, RIO, swap)
