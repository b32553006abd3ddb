"""Repair rules for SLAAC checks beyond RFC 4862: a Prefix Information
option with the P flag (RFC 9762) as a stack that honours it, or one that
does not see it, reads it."""

from __future__ import annotations

from ..repair import repair
from .nd import _plain_ra, _ra_options, _rebuilt

PIO, A_FLAG, P_FLAG = 3, 0x40, 0x10


def _rewrite_p_flag_pios(packet: bytes, change) -> bytes | None:
    parts = _plain_ra(packet)
    if parts is None:
        return None
    ip, icmp = parts
    changed = False
    for off, otype, olen in _ra_options(icmp):
        if otype == PIO and olen == 32 and icmp[off + 3] & P_FLAG:
            icmp[off + 3] = change(icmp[off + 3])
            changed = True
    return _rebuilt(ip, icmp) if changed else None


@repair("pio_p_flag_clears_a")
def pio_p_flag_clears_a(packet: bytes, dut: dict, **_):
    """A stack implementing RFC 9762 §5.1: 'a host that supports the P flag
    ... SHOULD ignore the A flag' of a Prefix Information option with P set,
    i.e. it forms no SLAAC address from it (the kernel gets A=0)."""
    return _rewrite_p_flag_pios(packet, lambda flags: flags & ~A_FLAG)


@repair("pio_p_flag_unseen")
def pio_p_flag_unseen(packet: bytes, dut: dict, **_):
    """A stack that does not know the P flag (reserved bits ignored, RFC 4861
    §4.6.2): the kernel gets the option with P cleared and A as sent."""
    return _rewrite_p_flag_pios(packet, lambda flags: flags & ~P_FLAG)
