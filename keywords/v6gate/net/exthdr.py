"""IPv6 extension headers and options as the tester sends them (RFC 8200
§4), with the exact values a check needs, and the octet offsets a
Parameter Problem's Pointer must name.

Option types used for "unrecognized option" probes are unassigned in the
IANA "Destination Options and Hop-by-Hop Options" registry, one per value
of the two high-order action bits (RFC 8200 §4.2):

* ``00`` skip over the option,
* ``01`` discard the packet silently,
* ``10`` discard and send Parameter Problem code 2 (even to multicast),
* ``11`` discard and send Parameter Problem code 2 unless the destination
  is multicast.

Next Header values used for "unrecognized Next Header" probes are
unassigned in the IANA "Assigned Internet Protocol Numbers" registry
(148-252; 253/254 are reserved for experiments and avoided).
"""

from __future__ import annotations

from scapy.layers.inet6 import (
    HBHOptUnknown,
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
    Pad1,
    PadN,
)
from scapy.packet import Packet, Raw

NH_HOP_BY_HOP = 0
NH_TCP = 6
NH_UDP = 17
NH_ROUTING = 43
NH_FRAGMENT = 44
NH_ICMPV6 = 58
NH_NONE = 59
NH_DEST_OPTS = 60

#: unassigned option types, by action bits (RFC 8200 §4.2)
UNKNOWN_OPTION = {0b00: 0x1D, 0b01: 0x5D, 0b10: 0x9D, 0b11: 0xDD}
#: unassigned Next Header values (IANA protocol numbers 148-252)
UNASSIGNED_NEXT_HEADERS = (148, 173, 200, 252)
#: a Routing Type no node implements (unassigned in IANA's Routing Types registry)
UNKNOWN_ROUTING_TYPE = 33
#: RFC 5095 deprecated Type 0; nodes treat it as an unrecognized Routing Type
ROUTING_TYPE_0 = 0

IPV6_HEADER_LEN = 40
IPV6_MIN_MTU = 1280  # RFC 8200 §5


def action_of(option_type: int) -> int:
    """The two high-order bits of an option type (RFC 8200 §4.2)."""
    return (option_type >> 6) & 0b11


def unknown_option(action: int, data: bytes = b"\x00" * 4) -> HBHOptUnknown:
    """An unrecognized option whose action bits are ``action`` (0-3)."""
    return HBHOptUnknown(otype=UNKNOWN_OPTION[action], optlen=len(data), optdata=data)


def pad1() -> Pad1:
    return Pad1()


def padn(total_len: int) -> PadN:
    """A PadN option occupying ``total_len`` octets (2-7), zero-filled as
    RFC 8200 §4.2 specifies."""
    if not 2 <= total_len <= 7:
        raise ValueError("PadN pads 2 to 7 octets here (an 8-octet header holds at most 6 option octets)")
    return PadN(optlen=total_len - 2, optdata=b"\x00" * (total_len - 2))


def hop_by_hop(*options, nh: int | None = None) -> IPv6ExtHdrHopByHop:
    hdr = IPv6ExtHdrHopByHop(options=list(options))
    if nh is not None:
        hdr.nh = nh
    return hdr


def destination_options(*options, nh: int | None = None) -> IPv6ExtHdrDestOpt:
    hdr = IPv6ExtHdrDestOpt(options=list(options))
    if nh is not None:
        hdr.nh = nh
    return hdr


def routing(routing_type: int, segments_left: int, addresses: list[str], nh: int | None = None) -> IPv6ExtHdrRouting:
    """A Routing header of ``routing_type`` carrying ``addresses`` (the
    Type 0 layout: 4 reserved octets, then 16-octet addresses)."""
    hdr = IPv6ExtHdrRouting(type=routing_type, segleft=segments_left, addresses=list(addresses))
    if nh is not None:
        hdr.nh = nh
    return hdr


def raw_header(nh: int, body: bytes) -> Raw:
    """A generic extension header (Next Header, Hdr Ext Len, body) built
    byte by byte; ``body`` is padded to a multiple of 8 octets."""
    total = 2 + len(body)
    total += (-total) % 8
    data = bytes([nh, total // 8 - 1]) + body
    return Raw(data + b"\x00" * (total - len(data)))


def fragment_header(nh: int, offset_octets: int, more: bool, ident: int) -> IPv6ExtHdrFragment:
    if offset_octets % 8:
        raise ValueError(f"fragment offset {offset_octets} is not a multiple of 8 octets")
    return IPv6ExtHdrFragment(nh=nh, offset=offset_octets // 8, m=int(more), id=ident)


def offset_of_layer(pkt: Packet, layer) -> int:
    """Octet offset of ``layer`` from the start of the IPv6 header."""
    ip = pkt[IPv6]
    return len(bytes(ip)) - len(bytes(ip[layer]))


def offset_of_option(pkt: Packet, layer, option_type: int) -> int:
    """Octet offset (from the IPv6 header) of the first option of
    ``option_type`` in the options header ``layer``."""
    start = offset_of_layer(pkt, layer)
    data = bytes(pkt[IPv6])[start:]
    end = (data[1] + 1) * 8
    i = 2
    while i < end:
        if data[i] == option_type:
            return start + i
        i += 1 if data[i] == 0 else 2 + data[i + 1]
    raise ValueError(f"option {option_type:#x} not in the header")


def router_alert(value: int = 2) -> Packet:
    """A Router Alert option (RFC 2711; type 0x05, action 00): value 2 is
    'Active Networks', which no host acts on."""
    from scapy.layers.inet6 import RouterAlert

    return RouterAlert(value=value)
