"""Repair rules for SLAAC checks beyond RFC 4862: a Prefix Information
option with the P flag (RFC 9762) as a stack that honours it, or one that
does not see it, reads it."""

from __future__ import annotations

from ..repair import repair
from .nd import rewrite_ra_options

PIO, A_FLAG, P_FLAG = 3, 0x40, 0x10


def _p_flag_options(packet: bytes, clear: int) -> bytes | None:
    def rewrite(icmp, off, olen) -> bool:
        if olen != 32 or not icmp[off + 3] & P_FLAG:
            return False
        icmp[off + 3] &= ~clear & 0xFF
        return True

    return rewrite_ra_options(packet, PIO, rewrite)


@repair("pio_p_flag_clears_a")
def pio_p_flag_clears_a(packet: bytes, dut: dict, **_):
    """A stack implementing RFC 9762, which ignores the A flag of a Prefix
    Information option with P set, i.e. forms no SLAAC address from it (the
    kernel gets A=0)."""
    return _p_flag_options(packet, A_FLAG)


@repair("pio_p_flag_unseen")
def pio_p_flag_unseen(packet: bytes, dut: dict, **_):
    """A stack that does not know the P flag (reserved bits ignored, RFC 4861
    §4.6.2): the kernel gets the option with P cleared and A as sent."""
    return _p_flag_options(packet, P_FLAG)
