"""Impostor rules for the offload area: a receive path that trusts a
checksum it did not verify (hardware that "verified" it, a driver that
marks every packet CHECKSUM_UNNECESSARY, as veth itself once did), and a
stack that accepts UDP over IPv6 with checksum zero.

The impostor answers, as the DUT, exactly the probes the real kernel
discards: a TCP SYN to a listening port with a wrong checksum gets a SYN-ACK,
a UDP datagram to the echo port with a wrong (or zero) checksum is echoed.
Fragments are reassembled first (a receive path that accepts the datagram
reassembled with a bad checksum).
"""

from __future__ import annotations

import secrets
import struct

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrFragment
from scapy.layers.l2 import Ether

from ...net import frag as F
from ...net import offload as O
from ..impostor import rule


def _datagram(pkt, impostor) -> bytes | None:
    """The IPv6 packet (bytes), reassembled when ``pkt`` is a fragment."""
    if IPv6ExtHdrFragment not in pkt:
        return bytes(pkt[IPv6])
    key = (pkt[IPv6].src, pkt[IPv6].dst, pkt[IPv6ExtHdrFragment].id)
    frags = impostor.state.setdefault("frags", {}).setdefault(key, [])
    frags.append(pkt)
    body = F.reassemble(frags)
    if body is None:
        return None
    del impostor.state["frags"][key]
    ip = bytes(frags[0][IPv6])
    head_len = len(ip) - len(bytes(frags[0][IPv6ExtHdrFragment]))
    head = bytearray(ip[:head_len])
    chain = F.header_chain(ip)
    nh_at = next(at for nh, start, at in chain if start == head_len)
    head[nh_at] = frags[0][IPv6ExtHdrFragment].nh
    whole = bytes(head) + body
    return whole[:4] + struct.pack("!H", len(whole) - 40) + whole[6:]


@rule("accepts_bad_transport_checksums")
def accepts_bad_transport_checksums(pkt, dut, impostor=None, ports=(7,), zero_only=False, **_):
    """Answer TCP SYNs and echo UDP datagrams to ``ports`` whose checksum is
    wrong (``zero_only``: only UDP datagrams whose checksum is zero), as a
    DUT whose receive path does not verify them."""
    if Ether not in pkt or pkt[Ether].dst.lower() != dut["mac"].lower():
        return []
    if IP in pkt and not zero_only:
        return _ipv4(pkt, dut, ports)
    if IPv6 not in pkt:
        return []
    ip = _datagram(pkt, impostor)
    found = O.transport(ip) if ip else None
    if not found:
        return []
    proto, start = found
    carried, right = O.checksum_of(ip, proto, start)
    if zero_only:
        if proto != O.NH_UDP or carried != 0:
            return []
    elif carried == right or (proto == O.NH_UDP and carried == 0):
        return []  # a valid one (the kernel answers it) or a zero one (another fault's business)
    seg = ip[start:]
    sport, dport = struct.unpack("!HH", seg[:4])
    if dport not in ports:
        return []
    src, dst = str(IPv6(ip).src), str(IPv6(ip).dst)
    reply = Ether(src=dut["mac"], dst=pkt[Ether].src) / IPv6(src=dst, dst=src)
    if proto == O.NH_TCP:
        seq, flags = struct.unpack("!I", seg[4:8])[0], seg[13]
        if flags & 0x3F != 0x02:  # SYN only
            return []
        return [reply / TCP(sport=dport, dport=sport, flags="SA", seq=secrets.randbits(32), ack=(seq + 1) % 2**32)]
    length = struct.unpack("!H", seg[4:6])[0]
    return [reply / UDP(sport=dport, dport=sport) / seg[8:length]]


def _ipv4(pkt, dut, ports) -> list:
    """The same over IPv4 (the parity parts): Scapy recomputes the checksum."""
    layer = TCP if TCP in pkt else UDP if UDP in pkt else None
    if layer is None or pkt[layer].dport not in ports or pkt[IP].frag or pkt[IP].flags.MF:
        return []
    fresh = pkt[IP].copy()
    fresh[layer].chksum = None
    right = IP(bytes(fresh))[layer].chksum
    if pkt[layer].chksum == right or (layer is UDP and pkt[UDP].chksum == 0):
        return []
    reply = Ether(src=dut["mac"], dst=pkt[Ether].src) / IP(src=pkt[IP].dst, dst=pkt[IP].src)
    seg = pkt[layer]
    if layer is TCP:
        if int(seg.flags) & 0x3F != 0x02:
            return []
        return [reply / TCP(sport=seg.dport, dport=seg.sport, flags="SA", seq=secrets.randbits(32),
                            ack=(seg.seq + 1) % 2**32)]
    return [reply / UDP(sport=seg.dport, dport=seg.sport) / bytes(seg.payload)]
