"""Rewrite rules for the ICMPv6 errors the DUT sends (``direction: out``): a
stack that builds its Parameter Problem messages with one field wrong, for
the checks that judge the error's code and Pointer (RFC 4443 §3.4, RFC 8200
§4) rather than its mere presence."""

from __future__ import annotations

import struct

from ..repair import repair
from .nd import _checksum

PARAMETER_PROBLEM = 4


@repair("parameter_problem_wrong")
def parameter_problem_wrong(packet: bytes, dut: dict, field: str = "pointer", **_):
    """Send the DUT's Parameter Problem messages with ``field`` wrong:
    ``pointer`` (one octet past the offset the stack found, as a stack that
    points after the erroneous field) or ``code`` (code 0, erroneous header
    field, for every problem; code 1 where it was 0)."""
    if len(packet) < 48 or packet[0] >> 4 != 6 or packet[6] != 58 or packet[40] != PARAMETER_PROBLEM:
        return None
    ip, icmp = bytearray(packet[:40]), bytearray(packet[40:])
    if field == "pointer":
        icmp[4:8] = struct.pack("!I", (struct.unpack("!I", icmp[4:8])[0] + 1) & 0xFFFFFFFF)
    elif field == "code":
        icmp[1] = 1 if icmp[1] == 0 else 0
    else:
        return None
    icmp[2:4] = b"\0\0"
    icmp[2:4] = struct.pack("!H", _checksum(bytes(ip[8:24]), bytes(ip[24:40]), bytes(icmp)))
    return bytes(ip) + bytes(icmp)
