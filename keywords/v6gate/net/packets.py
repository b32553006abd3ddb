"""Address arithmetic and small packet helpers shared by every area."""

from __future__ import annotations

import ipaddress
import secrets

from scapy.layers.inet6 import IPv6
from scapy.packet import Packet, Raw

ALL_NODES = "ff02::1"
ALL_ROUTERS = "ff02::2"
ALL_MLDV2_ROUTERS = "ff02::16"
ALL_DHCP_AGENTS = "ff02::1:2"
UNSPECIFIED = "::"
TESTER_OUI = (0x02, 0x76)  # locally administered, 'v': tester-emulated nodes


def eui64_iid(mac: str) -> int:
    b = bytes(int(x, 16) for x in mac.split(":"))
    eui = bytes([b[0] ^ 0x02]) + b[1:3] + b"\xff\xfe" + b[3:6]
    return int.from_bytes(eui, "big")


def link_local_from_mac(mac: str) -> str:
    return str(ipaddress.IPv6Address((0xFE80 << 112) | eui64_iid(mac)))


def address_in(prefix: ipaddress.IPv6Network | str, iid: int) -> str:
    net = ipaddress.IPv6Network(prefix)
    return str(net.network_address + (iid & ((1 << (128 - net.prefixlen)) - 1)))


def solicited_node(addr: str) -> str:
    low24 = int(ipaddress.IPv6Address(addr)) & 0xFFFFFF
    return str(ipaddress.IPv6Address(int(ipaddress.IPv6Address("ff02::1:ff00:0")) | low24))


def multicast_mac(addr: str) -> str:
    low32 = int(ipaddress.IPv6Address(addr)) & 0xFFFFFFFF
    return "33:33:" + ":".join(f"{(low32 >> s) & 0xFF:02x}" for s in (24, 16, 8, 0))


def random_mac() -> str:
    tail = secrets.token_bytes(4)
    return ":".join(f"{b:02x}" for b in (*TESTER_OUI, *tail))


def random_iid() -> int:
    # avoid the EUI-64 ff:fe pattern and the all-zero / reserved IIDs (RFC 5453)
    while True:
        iid = int.from_bytes(secrets.token_bytes(8), "big")
        if iid > 0xFFFF and (iid >> 24) & 0xFFFF != 0xFFFE:
            return iid


def is_link_scoped(addr: str) -> bool:
    a = ipaddress.IPv6Address(addr)
    return a.is_link_local or (a.is_multicast and (int(a) >> 112) & 0xF == 2)


def is_multicast(addr: str) -> bool:
    return ipaddress.IPv6Address(addr).is_multicast


def same_address(a: str, b: str) -> bool:
    try:
        return ipaddress.IPv6Address(a) == ipaddress.IPv6Address(b)
    except ValueError:
        return False


def nonce(n: int = 16) -> bytes:
    return secrets.token_bytes(n)


def payload_of_size(total_ipv6_payload: int, header_len: int) -> bytes:
    """Padding so that an IPv6 payload (after the IPv6 header) is exactly total bytes."""
    return b"\xa5" * max(0, total_ipv6_payload - header_len)


def with_bad_checksum(pkt: Packet, layer) -> Packet:
    """Return a copy whose ``layer`` checksum is wrong (computed, then flipped)."""
    built = pkt.__class__(bytes(pkt))
    good = built[layer].cksum
    out = pkt.copy()
    out[layer].cksum = (good ^ 0x5A5A) & 0xFFFF or 0x1234
    return out


def ipv6_payload_len(pkt: Packet) -> int:
    return len(bytes(pkt[IPv6].payload))


def raw_bytes(pkt: Packet) -> bytes:
    return bytes(pkt[Raw].load) if pkt.haslayer(Raw) else b""


def icmpv6_from_bytes(frame: Packet, body: bytes) -> Packet:
    """Replace the ICMPv6 message of ``frame`` (Ether/IPv6/...) by raw ``body``
    with a correct checksum computed over it: for messages Scapy would
    'repair' (truncated, zero-length options)."""
    from scapy.layers.inet6 import in6_chksum

    head = frame.copy()
    head[IPv6].remove_payload()
    head[IPv6].nh = 58
    head[IPv6].plen = None
    zeroed = body[:2] + b"\x00\x00" + body[4:]
    cks = in6_chksum(58, head[IPv6] / Raw(zeroed), zeroed)
    return head / Raw(zeroed[:2] + cks.to_bytes(2, "big") + zeroed[4:])
