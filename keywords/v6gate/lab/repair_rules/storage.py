"""Rewrite rules for the storage area (``direction: out``, ``protocol: tcp``):
a server that frames its SMB3 network-interface list wrongly.  Each rewrite
keeps the TCP payload's length (the byte stream stays consistent), so the
client reads exactly the answer such a server would send."""

from __future__ import annotations

import struct

from ..repair import repair

SMB2_IOCTL = 0x000B
FSCTL_QUERY_NETWORK_INTERFACE_INFO = 0x001401FC


def _ioctl_response(packet: bytes) -> tuple[int, int] | None:
    """(offset of the SMB2 header, offset of the IOCTL response body) in an
    IPv6/TCP packet carrying an SMB2 IOCTL response to
    FSCTL_QUERY_NETWORK_INTERFACE_INFO (one PDU starting the segment)."""
    if len(packet) < 60 or packet[0] >> 4 != 6 or packet[6] != 6:
        return None
    tcp = 40
    data = tcp + (packet[tcp + 12] >> 4) * 4
    smb = data + 4  # after the 4-byte Direct TCP transport header
    if packet[smb:smb + 4] != b"\xfeSMB" or len(packet) < smb + 64 + 56:
        return None
    command = struct.unpack_from("<H", packet, smb + 12)[0]
    flags = struct.unpack_from("<I", packet, smb + 16)[0]
    body = smb + 64
    if command != SMB2_IOCTL or not flags & 1:
        return None
    if struct.unpack_from("<I", packet, body + 4)[0] != FSCTL_QUERY_NETWORK_INTERFACE_INFO:
        return None
    return smb, body


@repair("smb_interface_info_truncated")
def smb_interface_info_truncated(packet: bytes, dut: dict, cut: int = 16, **_):
    """The answer's OutputCount says ``cut`` bytes fewer than the entries
    take: the last NETWORK_INTERFACE_INFO entry is truncated (its
    SOCKADDR_STORAGE cut short), as a server that sizes the buffer from
    sizeof(struct sockaddr_in6) rather than SOCKADDR_STORAGE would send."""
    found = _ioctl_response(packet)
    if not found:
        return None
    _, body = found
    out = bytearray(packet)
    count = struct.unpack_from("<I", out, body + 36)[0]
    if count < cut:
        return None
    struct.pack_into("<I", out, body + 36, count - cut)
    return _with_tcp_checksum(out)


def _with_tcp_checksum(packet: bytearray) -> bytes:
    """The packet with its TCP checksum computed over the new bytes (NFQUEUE
    delivers a mangled packet as fully checksummed, no offload)."""
    seg = bytearray(packet[40:])
    seg[16:18] = b"\0\0"
    data = bytes(packet[8:40]) + struct.pack("!I", len(seg)) + b"\0\0\0\x06" + bytes(seg)
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    packet[56:58] = struct.pack("!H", (~total & 0xFFFF) or 0xFFFF)
    return bytes(packet)
