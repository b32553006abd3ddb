"""Repair rules for Neighbor Discovery and MLD messages: what a stack that
skips the validity tests of RFC 4861 §6.1 / §7.1 (and RFC 6980 §5, RFC 3810
§6.2 for queries) would make of an invalid message."""

from __future__ import annotations

import ipaddress
import struct
import time

from ...net.packets import solicited_node
from ..repair import DROP, repair

ND_TYPES = (133, 134, 135, 136, 137)
MLD_QUERY = 130
#: minimum ICMP length and first option offset per message type (RFC 4861 §4, RFC 3810 §5.1)
FIXED_PART = {133: 8, 134: 16, 135: 24, 136: 24, 137: 40, 130: 24}
_pending: dict[tuple, dict] = {}
_ra_prefixes: dict[bytes, None] = {}  # /64 prefixes seen in RAs, oldest first: the DUT may be forming addresses


def _learn(packet: bytes) -> None:
    """Remember the /64 prefixes of Prefix Information options in an RA."""
    if len(packet) < 56 or packet[6] != 58 or packet[40] != 134:
        return
    off = 56
    while off + 2 <= len(packet) and packet[off + 1]:
        if packet[off] == 3 and packet[off + 1] == 4 and off + 32 <= len(packet) and packet[off + 2] == 64:
            key = bytes(packet[off + 16:off + 24])
            _ra_prefixes.pop(key, None)
            _ra_prefixes[key] = None
        off += packet[off + 1] * 8


def _candidates(dut: dict) -> list[bytes]:
    """Addresses the DUT may be probing or has: its interface identifier in
    every /64 an RA announced (the latest first), then its known addresses."""
    known = [ipaddress.IPv6Address(a).packed for a in [dut["link_local"], *dut.get("addresses", [])]]
    iid = ipaddress.IPv6Address(dut["link_local"]).packed[8:]
    return [p + iid for p in reversed(_ra_prefixes)] + known


@repair("nd_validity")
def nd_validity(packet: bytes, dut: dict, types=ND_TYPES, **_):
    """Deliver every ND message (and MLD query) of ``types`` as a valid one:
    reassemble fragments (RFC 6980), then fix the hop limit, code, source
    and destination rules, zero-length options, a short message and the
    checksum."""
    types = tuple(types)
    if len(packet) < 40 or packet[0] >> 4 != 6:
        return None
    _learn(packet)
    nh, off, hbh = packet[6], 40, None
    frag_at = None
    while nh != 58:
        if nh in (0, 43, 60) and off + 8 <= len(packet):
            if nh == 0:
                hbh = packet[off:off + (packet[off + 1] + 1) * 8]
            nh, off = packet[off], off + (packet[off + 1] + 1) * 8
        elif nh == 44 and off + 8 <= len(packet):
            frag_at = off
            nh, off = packet[off], off + 8
        else:
            return None
    if frag_at is not None:
        whole = _defragment(packet, frag_at)
        if whole is None:
            return DROP  # held until the other fragments arrive
        return nd_validity(whole, dut, types=types)
    icmp = bytearray(packet[off:])
    if not icmp or icmp[0] not in types:
        return None
    ip = bytearray(packet[:40])
    mtype = icmp[0]
    ip[7] = 1 if mtype == MLD_QUERY else 255
    icmp[1] = 0
    need = FIXED_PART.get(mtype, 8)
    if len(icmp) < need:
        icmp += _completion(icmp, need, dut) if mtype in (135, 136) else bytes(need - len(icmp))
    src, dst = ipaddress.IPv6Address(bytes(ip[8:24])), ipaddress.IPv6Address(bytes(ip[24:40]))
    if mtype in (130, 134, 137) and not src.is_link_local:
        ip[8:24] = ipaddress.IPv6Address((0xFE80 << 112) | (int(src) & (2**64 - 1))).packed
    if mtype in (135, 136):
        tgt = ipaddress.IPv6Address(bytes(icmp[8:24]))
        if tgt.is_multicast:  # the DUT address whose solicited-node group the target names
            mine = next((a for a in _candidates(dut) if ipaddress.IPv6Address(solicited_node(
                str(ipaddress.IPv6Address(a)))) == tgt), ipaddress.IPv6Address(dut["link_local"]).packed)
            icmp[8:24] = mine
            tgt = ipaddress.IPv6Address(mine)
        if mtype == 135 and src.is_unspecified and not _is_solicited_node(dst):
            ip[24:40] = ipaddress.IPv6Address(solicited_node(str(tgt))).packed
        if mtype == 136 and dst.is_multicast:
            icmp[4] &= ~0x40  # Solicited flag
    icmp = _fix_options(icmp, need, drop_sllao=(mtype == 135 and src.is_unspecified))
    # a Query keeps its Hop-by-Hop header: the kernel reads the Router Alert option before any netfilter
    # hook, so a missing one cannot be repaired here (the MLD checks use an impostor for that part)
    body_head = bytes(hbh) if (mtype == MLD_QUERY and hbh) else b""
    ip[6] = 0 if body_head else 58
    payload = body_head + bytes(icmp)
    ip[4:6] = struct.pack("!H", len(payload))
    icmp[2:4] = b"\0\0"
    cks = _checksum(bytes(ip[8:24]), bytes(ip[24:40]), bytes(icmp))
    icmp[2:4] = struct.pack("!H", cks)
    return bytes(ip) + body_head + bytes(icmp)


def _completion(icmp: bytearray, need: int, dut: dict) -> bytes:
    """The octets missing from a short NS/NA: those of a DUT address whose
    first octets the partial Target Address has (what a parser reading past
    the IP length into the frame's padding finds there; the checks send the
    cut-off octets as padding), else zeros."""
    partial = bytes(icmp[8:])
    for packed in _candidates(dut):
        if partial and packed.startswith(partial):
            return packed[len(partial):] + bytes(need - len(icmp) - (16 - len(partial)))
    return bytes(need - len(icmp))


def _fix_options(icmp: bytearray, start: int, *, drop_sllao: bool) -> bytearray:
    """Options with a length of zero get a length of 1 (8 octets); a Source
    Link-Layer Address option is dropped where it must not be (DAD NS)."""
    out, off = bytearray(icmp[:start]), start
    while off + 2 <= len(icmp):
        otype, olen = icmp[off], icmp[off + 1]
        if olen == 0:
            olen = 1
        chunk = bytearray(icmp[off:off + olen * 8])
        chunk[1] = olen
        chunk += bytes(olen * 8 - len(chunk))
        if not (drop_sllao and otype == 1):
            out += chunk
        off += olen * 8
    return out


def _defragment(packet: bytes, at: int) -> bytes | None:
    nh_next = packet[at]
    offword = struct.unpack("!H", packet[at + 2:at + 4])[0]
    offset, more = (offword >> 3) * 8, offword & 1
    ident = struct.unpack("!I", packet[at + 4:at + 8])[0]
    key = (packet[8:40], ident)
    now = time.monotonic()
    for k in [k for k, v in _pending.items() if now - v["t"] > 60]:
        del _pending[k]
    entry = _pending.setdefault(key, {"t": now, "pieces": {}, "last": None, "head": packet[:at]})
    entry["pieces"][offset] = packet[at + 8:]
    if not more:
        entry["last"] = offset + len(packet[at + 8:])
    if offset == 0:
        entry["head"] = packet[:at]
        entry["nh"] = nh_next
    if entry["last"] is None or "nh" not in entry:
        return None
    data, pos = b"", 0
    while pos < entry["last"]:
        piece = entry["pieces"].get(pos)
        if piece is None:
            return None
        data += piece
        pos += len(piece)
    del _pending[key]
    head = bytearray(entry["head"])
    if len(head) == 40:
        head[6] = entry["nh"]
    else:  # extension headers before the Fragment header: patch the last one's next header
        head[_last_next_header_offset(bytes(head))] = entry["nh"]
    head[4:6] = struct.pack("!H", len(head) - 40 + len(data))
    return bytes(head) + data


def _last_next_header_offset(head: bytes) -> int:
    pos, nh_pos = 40, 6
    while pos < len(head):
        nh_pos = pos
        pos += (head[pos + 1] + 1) * 8
    return nh_pos


def _is_solicited_node(addr: ipaddress.IPv6Address) -> bool:
    return int(addr) >> 24 == int(ipaddress.IPv6Address("ff02::1:ff00:0")) >> 24


def _checksum(src: bytes, dst: bytes, icmp: bytes) -> int:
    data = src + dst + struct.pack("!I", len(icmp)) + b"\0\0\0\x3a" + icmp
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return (~total & 0xFFFF) or 0xFFFF


def _plain_ra(packet: bytes) -> tuple[bytearray, bytearray] | None:
    """(IPv6 header, ICMPv6 message) of an RA without extension headers."""
    if len(packet) < 56 or packet[0] >> 4 != 6 or packet[6] != 58 or packet[40] != 134:
        return None
    return bytearray(packet[:40]), bytearray(packet[40:])


def _ra_options(icmp: bytearray):
    off = 16
    while off + 2 <= len(icmp) and icmp[off + 1]:
        yield off, icmp[off], icmp[off + 1] * 8
        off += icmp[off + 1] * 8


def _rebuilt(ip: bytearray, icmp: bytearray) -> bytes:
    icmp[2:4] = b"\0\0"
    icmp[2:4] = struct.pack("!H", _checksum(bytes(ip[8:24]), bytes(ip[24:40]), bytes(icmp)))
    return bytes(ip) + bytes(icmp)


@repair("ra_router_lifetime_floor")
def ra_router_lifetime_floor(packet: bytes, dut: dict, floor: int = 1800, **_):
    """A stack that never lets a router go before ``floor`` seconds: Router
    Lifetimes below it (zero included) are raised to it."""
    parts = _plain_ra(packet)
    if parts is None:
        return None
    ip, icmp = parts
    if struct.unpack("!H", icmp[6:8])[0] >= floor:
        return None
    icmp[6:8] = struct.pack("!H", floor)
    return _rebuilt(ip, icmp)


@repair("ra_cur_hop_limit_default")
def ra_cur_hop_limit_default(packet: bytes, dut: dict, default: int = 64, **_):
    """A stack that takes Cur Hop Limit 0 (unspecified) as 'back to the
    default' instead of 'no change'."""
    parts = _plain_ra(packet)
    if parts is None or parts[1][4] != 0:
        return None
    ip, icmp = parts
    icmp[4] = default
    return _rebuilt(ip, icmp)


@repair("ra_l0_means_offlink")
def ra_l0_means_offlink(packet: bytes, dut: dict, **_):
    """A stack that reads a Prefix Information option with L=0 as 'this
    prefix is off-link now': the option becomes L=1 with a valid lifetime of
    zero, which does withdraw the prefix (RFC 4861 §6.3.4)."""
    parts = _plain_ra(packet)
    if parts is None:
        return None
    ip, icmp = parts
    changed = False
    for off, otype, olen in _ra_options(icmp):
        if otype == 3 and olen == 32 and not icmp[off + 3] & 0x80:
            icmp[off + 3] |= 0x80
            icmp[off + 4:off + 12] = bytes(8)  # valid and preferred lifetime 0
            changed = True
    return _rebuilt(ip, icmp) if changed else None


_first_lladdr: dict[bytes, bytes] = {}


@repair("ra_sllao_sticky")
def ra_sllao_sticky(packet: bytes, dut: dict, **_):
    """A stack that keeps the first link-layer address it learnt for a
    neighbour (from an NA, an NS or an RA) and reads a different Source
    Link-Layer Address option in a later RA from it as that first address."""
    if len(packet) < 48 or packet[0] >> 4 != 6 or packet[6] != 58:
        return None
    ip, icmp = bytearray(packet[:40]), bytearray(packet[40:])
    mtype = icmp[0]
    if mtype in (135, 136) and len(icmp) >= 32:
        owner = bytes(ip[8:24]) if mtype == 135 else bytes(icmp[8:24])
        off = 24
        while off + 8 <= len(icmp) and icmp[off + 1]:
            if icmp[off] in (1, 2) and icmp[off + 1] == 1:
                _first_lladdr.setdefault(owner, bytes(icmp[off + 2:off + 8]))
            off += icmp[off + 1] * 8
        return None
    if mtype != 134:
        return None
    src = bytes(ip[8:24])
    for off, otype, olen in _ra_options(icmp):
        if otype == 1 and olen == 8:
            first = _first_lladdr.setdefault(src, bytes(icmp[off + 2:off + 8]))
            if first != bytes(icmp[off + 2:off + 8]):
                icmp[off + 2:off + 8] = first
                return _rebuilt(ip, icmp)
    return None


def _dad_message(packet: bytes):
    """(IPv6 header, ICMPv6) of a DAD NS (source ::) or an NA to a multicast
    group, without extension headers."""
    if len(packet) < 64 or packet[0] >> 4 != 6 or packet[6] != 58 or packet[40] not in (135, 136):
        return None
    ip, icmp = bytearray(packet[:40]), bytearray(packet[40:])
    if icmp[0] == 135 and bytes(ip[8:24]) != bytes(16):
        return None
    if icmp[0] == 136 and ip[24] != 0xFF:
        return None
    return ip, icmp


@repair("dad_target_is_ours")
def dad_target_is_ours(packet: bytes, dut: dict, **_):
    """A stack whose DAD compares only the interface identifier: a DAD NS,
    or an NA to a multicast group, for any address with another identifier
    in a prefix it is configuring counts as one for its own address there."""
    _learn(packet)
    parts = _dad_message(packet)
    if parts is None:
        return None
    ip, icmp = parts
    iid = ipaddress.IPv6Address(dut["link_local"]).packed[8:]
    if bytes(icmp[16:24]) == iid:
        return None
    icmp[16:24] = iid
    if icmp[0] == 135:
        ip[24:40] = ipaddress.IPv6Address(solicited_node(str(ipaddress.IPv6Address(bytes(icmp[8:24]))))).packed
    return _rebuilt(ip, icmp)


@repair("ns_is_dad")
def ns_is_dad(packet: bytes, dut: dict, **_):
    """A stack that takes any Neighbor Solicitation for one of its addresses
    (address resolution from a unicast source included) as a DAD probe:
    the NS arrives as one from the unspecified address."""
    _learn(packet)
    if len(packet) < 64 or packet[0] >> 4 != 6 or packet[6] != 58 or packet[40] != 135:
        return None
    ip, icmp = bytearray(packet[:40]), bytearray(packet[40:64])
    if bytes(ip[8:24]) == bytes(16) or bytes(icmp[8:24]) not in _candidates(dut):
        return None
    ip[8:24] = bytes(16)
    ip[24:40] = ipaddress.IPv6Address(solicited_node(str(ipaddress.IPv6Address(bytes(icmp[8:24]))))).packed
    ip[4:6] = struct.pack("!H", len(icmp))
    return _rebuilt(ip, icmp)


_PIO_SEEN: dict[bytes, int] = {}


@repair("pio_rewrite")
def pio_rewrite(packet: bytes, dut: dict, *, autonomous=None, prefix_length=None, clamp_preferred=False,
                valid_if_zero=None, infinite_as=None, min_valid=None, first_only=False, no_extension=False, **_):
    """Prefix Information options as a stack with one mistake reads them:
    ``autonomous`` forces the A flag, ``prefix_length`` replaces the length,
    ``clamp_preferred`` lowers a preferred lifetime above the valid one,
    ``valid_if_zero`` replaces a zero valid lifetime, ``infinite_as``
    replaces 0xffffffff, ``min_valid`` raises short valid lifetimes (the
    address never expires), ``first_only`` drops every PIO but the first,
    ``no_extension`` never lets a later PIO of a prefix lengthen it (its
    valid lifetime becomes 0, which RFC 4862 §5.5.3(e) ignores)."""
    parts = _plain_ra(packet)
    if parts is None:
        return None
    ip, icmp = parts
    out, changed, seen_pio = bytearray(icmp[:16]), False, 0
    for off, otype, olen in _ra_options(icmp):
        opt = bytearray(icmp[off:off + olen])
        if otype == 3 and olen == 32:
            seen_pio += 1
            if first_only and seen_pio > 1:
                changed = True
                continue
            valid, preferred = struct.unpack("!II", opt[4:12])
            key = bytes(opt[16:32]) + bytes([opt[2]])
            if autonomous is not None:
                opt[3] = (opt[3] & ~0x40) | (0x40 if autonomous else 0)
            if prefix_length is not None:
                opt[2] = prefix_length
            if clamp_preferred and preferred > valid:
                preferred = valid
            if valid_if_zero is not None and valid == 0:
                valid = preferred = valid_if_zero
            if infinite_as is not None and valid == 0xFFFFFFFF:
                valid = infinite_as
                preferred = min(preferred, valid)
            if min_valid is not None and valid < min_valid:
                valid = preferred = min_valid
            if no_extension:
                if key in _PIO_SEEN:
                    valid = preferred = 0
                else:
                    _PIO_SEEN[key] = valid
            opt[4:12] = struct.pack("!II", valid, preferred)
            changed = changed or opt != icmp[off:off + olen]
        out += opt
    if not changed:
        return None
    ip[4:6] = struct.pack("!H", len(out))
    return _rebuilt(ip, out)


@repair("ra_dns_options")
def ra_dns_options(packet: bytes, dut: dict, *, strip=(), lifetime=None, **_):
    """RA DNS options (RFC 8106) as a host with one mistake reads them:
    option types in ``strip`` (25 RDNSS, 31 DNSSL) are dropped; with
    ``lifetime``, every RDNSS/DNSSL lifetime becomes that value (0xffffffff:
    they never expire)."""
    parts = _plain_ra(packet)
    if parts is None:
        return None
    ip, icmp = parts
    out, changed = bytearray(icmp[:16]), False
    for off, otype, olen in _ra_options(icmp):
        opt = bytearray(icmp[off:off + olen])
        if otype in tuple(strip):
            changed = True
            continue
        if lifetime is not None and otype in (25, 31) and olen >= 8:
            new = struct.pack("!I", lifetime)
            changed = changed or opt[4:8] != new
            opt[4:8] = new
        out += opt
    if not changed:
        return None
    ip[4:6] = struct.pack("!H", len(out))
    return _rebuilt(ip, out)


def rewrite_ra_options(packet: bytes, option_type: int, change) -> bytes | None:
    """The RA with every option of ``option_type`` passed to
    ``change(icmp, offset, length)``, which edits it in place and returns
    whether it changed anything; None when nothing changed."""
    parts = _plain_ra(packet)
    if parts is None:
        return None
    ip, icmp = parts
    changed = False
    for off, otype, olen in _ra_options(icmp):
        if otype == option_type and change(icmp, off, olen):
            changed = True
    return _rebuilt(ip, icmp) if changed else None
