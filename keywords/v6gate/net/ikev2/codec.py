"""IKEv2 messages as bytes (RFC 7296 §3): the header, the generic payload
chain and the payloads a tester speaks, each decoded with bounds checked.

Decoding never trusts a length: a payload that claims more octets than are
left, a transform shorter than its header or a chain that does not end
raises ``IkeParseError`` with what was wrong and where.  Encoding is plain:
a check that wants a broken message builds a correct one and changes the
octets it means to break (``Message.encode`` takes overrides for the
header fields), so every deliberate error is visible in the check.

An SK payload (§3.14) is kept as its octets (``SK.blob``: IV, ciphertext,
ICV) and the type of its first inner payload; ``sa.py`` protects and opens
it with the IKE SA's keys.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field

from .const import (
    ATTR_KEY_LENGTH,
    HEADER_LEN,
    MAX_MESSAGE,
    PT,
    TT,
    VERSION,
    Exchange,
    Flag,
    Notify,
    Proto,
    TsType,
)
from .const import name as enum_name


class IkeParseError(ValueError):
    """The octets are not a well-formed IKEv2 message (what and where)."""


# -- transforms and proposals (§3.3) -------------------------------------------------------------------------
@dataclass(frozen=True)
class Transform:
    type: int
    id: int
    key_length: int | None = None  # bits (the Key Length attribute), None when absent
    #: further attributes as (type, value) — TV values are ints, TLV values bytes
    extra: tuple = ()

    def encode(self, last: bool) -> bytes:
        attrs = b""
        if self.key_length is not None:
            attrs += struct.pack("!HH", 0x8000 | ATTR_KEY_LENGTH, self.key_length)
        for atype, value in self.extra:
            if isinstance(value, int):
                attrs += struct.pack("!HH", 0x8000 | atype, value)
            else:
                attrs += struct.pack("!HH", atype & 0x7FFF, len(value)) + value
        return struct.pack("!BBHBBH", 0 if last else 3, 0, 8 + len(attrs), self.type, 0, self.id) + attrs

    def label(self) -> str:
        from .const import Encr, Esn, Group, Integ, Prf
        enum = {TT.ENCR: Encr, TT.PRF: Prf, TT.INTEG: Integ, TT.DH: Group, TT.ESN: Esn}.get(self.type)
        what = enum_name(enum, self.id) if enum else f"{self.type}/{self.id}"
        return f"{what}-{self.key_length}" if self.key_length else what


@dataclass
class Proposal:
    num: int
    proto: int
    transforms: list[Transform]
    spi: bytes = b""

    def encode(self, last: bool) -> bytes:
        body = b"".join(t.encode(i == len(self.transforms) - 1) for i, t in enumerate(self.transforms))
        head = struct.pack("!BBHBBBB", 0 if last else 2, 0, 8 + len(self.spi) + len(body), self.num, self.proto,
                           len(self.spi), len(self.transforms))
        return head + self.spi + body

    def of_type(self, ttype: int) -> list[Transform]:
        return [t for t in self.transforms if t.type == ttype]

    def first(self, ttype: int) -> Transform | None:
        got = self.of_type(ttype)
        return got[0] if got else None

    def label(self) -> str:
        return "/".join(t.label() for t in self.transforms) or "(no transforms)"


def _decode_attrs(data: bytes, where: str) -> tuple[int | None, tuple]:
    key_length, extra, i = None, [], 0
    while i < len(data):
        if i + 4 > len(data):
            raise IkeParseError(f"{where}: an attribute header is cut short ({len(data) - i} octets)")
        atype, val = struct.unpack_from("!HH", data, i)
        if atype & 0x8000:  # TV
            if atype & 0x7FFF == ATTR_KEY_LENGTH:
                key_length = val
            else:
                extra.append((atype & 0x7FFF, val))
            i += 4
        else:
            if i + 4 + val > len(data):
                raise IkeParseError(f"{where}: attribute {atype} claims {val} octets, {len(data) - i - 4} left")
            extra.append((atype, data[i + 4:i + 4 + val]))
            i += 4 + val
    return key_length, tuple(extra)


def decode_proposals(body: bytes) -> list[Proposal]:
    out, i, last = [], 0, False
    while not last:
        if i + 8 > len(body):
            raise IkeParseError(f"SA payload: proposal {len(out) + 1} header cut short at octet {i}")
        more, _, plen, num, proto, spi_size, ntrans = struct.unpack_from("!BBHBBBB", body, i)
        if more not in (0, 2):
            raise IkeParseError(f"SA payload: proposal {num} says 'last or more' {more}, not 0 or 2")
        if plen < 8 + spi_size or i + plen > len(body):
            raise IkeParseError(f"SA payload: proposal {num} length {plen} does not fit ({len(body) - i} left)")
        spi = body[i + 8:i + 8 + spi_size]
        j, end, trans = i + 8 + spi_size, i + plen, []
        for k in range(ntrans):
            if j + 8 > end:
                raise IkeParseError(f"SA payload: proposal {num} transform {k + 1} of {ntrans} cut short")
            tmore, _, tlen, ttype, _, tid = struct.unpack_from("!BBHBBH", body, j)
            if tlen < 8 or j + tlen > end:
                raise IkeParseError(f"SA payload: proposal {num} transform {k + 1} length {tlen} does not fit")
            kl, extra = _decode_attrs(body[j + 8:j + tlen], f"proposal {num} transform {k + 1}")
            trans.append(Transform(ttype, tid, kl, extra))
            j += tlen
            if (tmore == 0) != (k == ntrans - 1):
                raise IkeParseError(f"SA payload: proposal {num} transform {k + 1} of {ntrans} says "
                                    f"{'last' if tmore == 0 else 'more'}")
        if j != end:
            raise IkeParseError(f"SA payload: proposal {num} has {end - j} octets after its {ntrans} transforms")
        out.append(Proposal(num, proto, trans, spi))
        i, last = end, more == 0
    if i != len(body):
        raise IkeParseError(f"SA payload: {len(body) - i} octets after the last proposal")
    return out


# -- payloads ------------------------------------------------------------------------------------------------
@dataclass
class Payload:
    """A payload: its type and body octets (subclasses add the fields)."""

    critical: bool = field(default=False, kw_only=True)
    #: the body as received (decoded messages), for what is computed over it (AUTH's RestOfIDPayload)
    raw: bytes | None = field(default=None, kw_only=True, repr=False, compare=False)

    TYPE = 0

    @property
    def ptype(self) -> int:
        return self.TYPE

    def body(self) -> bytes:
        raise NotImplementedError

    def encoded_body(self) -> bytes:
        return self.body()


@dataclass
class Unknown(Payload):
    type: int = 0
    data: bytes = b""

    @property
    def ptype(self) -> int:
        return self.type

    def body(self) -> bytes:
        return self.data


@dataclass
class SA(Payload):
    proposals: list[Proposal] = field(default_factory=list)
    TYPE = PT.SA

    def body(self) -> bytes:
        return b"".join(p.encode(i == len(self.proposals) - 1) for i, p in enumerate(self.proposals))


@dataclass
class KE(Payload):
    group: int = 0
    data: bytes = b""
    TYPE = PT.KE

    def body(self) -> bytes:
        return struct.pack("!HH", self.group, 0) + self.data


@dataclass
class Nonce(Payload):
    data: bytes = b""
    TYPE = PT.NONCE

    def body(self) -> bytes:
        return self.data


@dataclass
class Notification(Payload):
    type: int = 0
    data: bytes = b""
    proto: int = 0
    spi: bytes = b""
    TYPE = PT.NOTIFY

    def body(self) -> bytes:
        return struct.pack("!BBH", self.proto, len(self.spi), self.type) + self.spi + self.data

    @property
    def error(self) -> bool:
        return self.type < 16384

    def label(self) -> str:
        return enum_name(Notify, self.type)


@dataclass
class Delete(Payload):
    proto: int = Proto.IKE
    spis: list[bytes] = field(default_factory=list)
    TYPE = PT.DELETE

    def body(self) -> bytes:
        size = len(self.spis[0]) if self.spis else (0 if self.proto == Proto.IKE else 4)
        return struct.pack("!BBH", self.proto, size, len(self.spis)) + b"".join(self.spis)


@dataclass
class Identification(Payload):
    initiator: bool = True
    id_type: int = 0
    data: bytes = b""

    @property
    def ptype(self) -> int:
        return PT.IDi if self.initiator else PT.IDr

    def body(self) -> bytes:
        return struct.pack("!B3x", self.id_type) + self.data


@dataclass
class Auth(Payload):
    method: int = 0
    data: bytes = b""
    TYPE = PT.AUTH

    def body(self) -> bytes:
        return struct.pack("!B3x", self.method) + self.data


@dataclass
class Cert(Payload):
    encoding: int = 4
    data: bytes = b""
    request: bool = False

    @property
    def ptype(self) -> int:
        return PT.CERTREQ if self.request else PT.CERT

    def body(self) -> bytes:
        return struct.pack("!B", self.encoding) + self.data


@dataclass
class Vendor(Payload):
    data: bytes = b""
    TYPE = PT.VENDOR

    def body(self) -> bytes:
        return self.data


@dataclass(frozen=True)
class Selector:
    """A traffic selector (§3.13.1): an address range, an IP protocol (0 any) and a port range."""
    start: str
    end: str
    proto: int = 0
    start_port: int = 0
    end_port: int = 65535

    @property
    def ts_type(self) -> int:
        return TsType.IPV6_ADDR_RANGE if ":" in self.start else TsType.IPV4_ADDR_RANGE

    @classmethod
    def of(cls, net: str, proto: int = 0, ports: tuple[int, int] = (0, 65535)) -> Selector:
        n = ipaddress.ip_network(net, strict=False)
        return cls(str(n[0]), str(n[-1]), proto, ports[0], ports[1])

    def encode(self) -> bytes:
        a, b = ipaddress.ip_address(self.start).packed, ipaddress.ip_address(self.end).packed
        return struct.pack("!BBHHH", self.ts_type, self.proto, 8 + 2 * len(a), self.start_port,
                           self.end_port) + a + b

    def label(self) -> str:
        addr = self.start if self.start == self.end else f"{self.start}-{self.end}"
        try:
            net = next(ipaddress.summarize_address_range(ipaddress.ip_address(self.start),
                                                         ipaddress.ip_address(self.end)))
            if str(net[0]) == self.start and str(net[-1]) == self.end:
                addr = str(net)
        except (ValueError, TypeError, StopIteration):
            pass
        proto = "" if self.proto == 0 else f" proto {self.proto}"
        ports = "" if (self.start_port, self.end_port) == (0, 65535) else f" ports {self.start_port}-{self.end_port}"
        return addr + proto + ports


@dataclass
class TS(Payload):
    initiator: bool = True
    selectors: list[Selector] = field(default_factory=list)
    #: selectors of a type this codec does not know, as (type, octets)
    other: list = field(default_factory=list)

    @property
    def ptype(self) -> int:
        return PT.TSi if self.initiator else PT.TSr

    def body(self) -> bytes:
        return struct.pack("!B3x", len(self.selectors)) + b"".join(s.encode() for s in self.selectors)


@dataclass
class SK(Payload):
    """The Encrypted payload: ``blob`` is IV | ciphertext | ICV; ``first`` the type of its first inner payload."""
    first: int = 0
    blob: bytes = b""
    TYPE = PT.SK

    def body(self) -> bytes:
        return self.blob


@dataclass
class ConfigPayload(Payload):
    cfg_type: int = 1
    attrs: list = field(default_factory=list)  # (type, value octets)
    TYPE = PT.CP

    def body(self) -> bytes:
        return struct.pack("!B3x", self.cfg_type) + b"".join(struct.pack("!HH", t & 0x7FFF, len(v)) + v
                                                               for t, v in self.attrs)


def _decode_payload(ptype: int, body: bytes, critical: bool) -> Payload:
    where = enum_name(PT, ptype)
    if ptype == PT.SA:
        p: Payload = SA(decode_proposals(body))
    elif ptype == PT.KE:
        if len(body) < 4:
            raise IkeParseError(f"KE payload body of {len(body)} octets, shorter than its 4-octet header")
        p = KE(struct.unpack_from("!H", body)[0], body[4:])
    elif ptype == PT.NONCE:
        p = Nonce(body)
    elif ptype == PT.NOTIFY:
        if len(body) < 4 or len(body) < 4 + body[1]:
            raise IkeParseError(f"Notify payload body of {len(body)} octets is shorter than its header and SPI")
        proto, spi_size, ntype = struct.unpack_from("!BBH", body)
        p = Notification(ntype, body[4 + spi_size:], proto, body[4:4 + spi_size])
    elif ptype == PT.DELETE:
        if len(body) < 4:
            raise IkeParseError("Delete payload shorter than its header")
        proto, size, n = struct.unpack_from("!BBH", body)
        if len(body) != 4 + size * n:
            raise IkeParseError(f"Delete payload: {n} SPIs of {size} octets do not make {len(body) - 4} octets")
        p = Delete(proto, [body[4 + k * size:4 + (k + 1) * size] for k in range(n)])
    elif ptype in (PT.IDi, PT.IDr):
        if len(body) < 4:
            raise IkeParseError(f"{where} payload shorter than its header")
        p = Identification(ptype == PT.IDi, body[0], body[4:])
    elif ptype == PT.AUTH:
        if len(body) < 4:
            raise IkeParseError("AUTH payload shorter than its header")
        p = Auth(body[0], body[4:])
    elif ptype in (PT.CERT, PT.CERTREQ):
        if len(body) < 1:
            raise IkeParseError(f"{where} payload has no encoding octet")
        p = Cert(body[0], body[1:], ptype == PT.CERTREQ)
    elif ptype == PT.VENDOR:
        p = Vendor(body)
    elif ptype in (PT.TSi, PT.TSr):
        p = _decode_ts(ptype, body)
    elif ptype == PT.CP:
        if len(body) < 4:
            raise IkeParseError("CP payload shorter than its header")
        attrs, i = [], 4
        while i < len(body):
            if i + 4 > len(body):
                raise IkeParseError("CP payload: attribute header cut short")
            t, n = struct.unpack_from("!HH", body, i)
            if i + 4 + n > len(body):
                raise IkeParseError(f"CP payload: attribute {t & 0x7FFF} claims {n} octets")
            attrs.append((t & 0x7FFF, body[i + 4:i + 4 + n]))
            i += 4 + n
        p = ConfigPayload(body[0], attrs)
    else:
        p = Unknown(ptype, body)
    p.critical, p.raw = critical, body
    return p


def _decode_ts(ptype: int, body: bytes) -> TS:
    if len(body) < 4:
        raise IkeParseError(f"{enum_name(PT, ptype)} payload shorter than its header")
    n, i, sels, other = body[0], 4, [], []
    for k in range(n):
        if i + 8 > len(body):
            raise IkeParseError(f"{enum_name(PT, ptype)}: selector {k + 1} of {n} cut short")
        ts_type, proto, slen, sp, ep = struct.unpack_from("!BBHHH", body, i)
        if slen < 8 or i + slen > len(body):
            raise IkeParseError(f"{enum_name(PT, ptype)}: selector {k + 1} length {slen} does not fit")
        addrs = body[i + 8:i + slen]
        if ts_type == TsType.IPV6_ADDR_RANGE and len(addrs) == 32:
            sels.append(Selector(str(ipaddress.IPv6Address(addrs[:16])), str(ipaddress.IPv6Address(addrs[16:])),
                                 proto, sp, ep))
        elif ts_type == TsType.IPV4_ADDR_RANGE and len(addrs) == 8:
            sels.append(Selector(str(ipaddress.IPv4Address(addrs[:4])), str(ipaddress.IPv4Address(addrs[4:])),
                                 proto, sp, ep))
        elif ts_type in (TsType.IPV6_ADDR_RANGE, TsType.IPV4_ADDR_RANGE):
            raise IkeParseError(f"{enum_name(PT, ptype)}: selector {k + 1} (type {ts_type}) has {slen} octets")
        else:
            other.append((ts_type, body[i:i + slen]))
        i += slen
    if i != len(body):
        raise IkeParseError(f"{enum_name(PT, ptype)}: {len(body) - i} octets after its {n} selectors")
    return TS(ptype == PT.TSi, sels, other)


def encode_chain(payloads: list[Payload], *, tail: int = PT.NONE) -> tuple[int, bytes]:
    """(type of the first payload, the payloads' octets with each generic header's Next Payload set)."""
    out = bytearray()
    for i, p in enumerate(payloads):
        nxt = payloads[i + 1].ptype if i + 1 < len(payloads) else tail
        if isinstance(p, SK):
            nxt = p.first  # the SK payload's Next Payload names its first inner payload (§3.14)
        body = p.encoded_body()
        out += struct.pack("!BBH", nxt, 0x80 if p.critical else 0, 4 + len(body)) + body
    return (payloads[0].ptype if payloads else PT.NONE), bytes(out)


def decode_chain(first: int, data: bytes, where: str = "message") -> list[Payload]:
    """The payloads of a chain starting with type ``first``; an SK payload ends it (its Next Payload is the
    first inner payload's type, kept in ``SK.first``)."""
    out, i, nxt = [], 0, first
    while nxt != PT.NONE:
        if i + 4 > len(data):
            raise IkeParseError(f"{where}: payload {len(out) + 1} ({enum_name(PT, nxt)}) header cut short "
                                f"({len(data) - i} octets left)")
        following, flags, plen = struct.unpack_from("!BBH", data, i)
        if plen < 4 or i + plen > len(data):
            raise IkeParseError(f"{where}: payload {len(out) + 1} ({enum_name(PT, nxt)}) length {plen} does not fit "
                                f"({len(data) - i} octets left)")
        body = data[i + 4:i + plen]
        if nxt == PT.SK:
            sk = SK(following, body, critical=bool(flags & 0x80), raw=body)
            out.append(sk)
            i += plen
            if i != len(data):
                raise IkeParseError(f"{where}: {len(data) - i} octets after the Encrypted payload, which must be "
                                    "last (RFC 7296 §3.14)")
            return out
        out.append(_decode_payload(nxt, body, bool(flags & 0x80)))
        i += plen
        nxt = following
    if i != len(data):
        raise IkeParseError(f"{where}: {len(data) - i} octets after the last payload")
    return out


# -- the message (§3.1) --------------------------------------------------------------------------------------
@dataclass
class Message:
    spi_i: bytes
    spi_r: bytes
    exchange: int
    flags: int
    msg_id: int
    payloads: list[Payload] = field(default_factory=list)
    version: int = VERSION
    #: the octets as received or last encoded (AUTH signs the IKE_SA_INIT messages as sent)
    raw: bytes | None = field(default=None, repr=False, compare=False)
    #: the payloads inside the SK payload once opened (sa.py), else None
    inner: list[Payload] | None = field(default=None, repr=False)

    @property
    def is_response(self) -> bool:
        return bool(self.flags & Flag.RESPONSE)

    @property
    def from_initiator(self) -> bool:
        return bool(self.flags & Flag.INITIATOR)

    def encode(self, *, length: int | None = None) -> bytes:
        first, body = encode_chain(self.payloads)
        total = HEADER_LEN + len(body)
        head = struct.pack("!8s8sBBBBII", self.spi_i, self.spi_r, first, self.version, self.exchange, self.flags,
                           self.msg_id, total if length is None else length)
        self.raw = head + body
        return self.raw

    @classmethod
    def decode(cls, data: bytes) -> Message:
        if len(data) < HEADER_LEN:
            raise IkeParseError(f"{len(data)} octets, shorter than the 28-octet IKE header")
        if len(data) > MAX_MESSAGE:
            raise IkeParseError(f"{len(data)} octets, longer than a UDP datagram can carry")
        spi_i, spi_r, first, version, exch, flags, msg_id, length = struct.unpack_from("!8s8sBBBBII", data)
        if length != len(data):
            raise IkeParseError(f"header Length {length}, but the datagram holds {len(data)} octets")
        if version >> 4 != 2:
            raise IkeParseError(f"major version {version >> 4}, not 2")
        msg = cls(spi_i, spi_r, exch, flags, msg_id, decode_chain(first, data[HEADER_LEN:]), version, raw=data)
        return msg

    # -- lookups ------------------------------------------------------------------------------------------
    def all_payloads(self) -> list[Payload]:
        return list(self.payloads) + list(self.inner or [])

    def get(self, kind: type, **fields) -> Payload | None:
        for p in self.all_payloads():
            if isinstance(p, kind) and all(getattr(p, k) == v for k, v in fields.items()):
                return p
        return None

    def notifies(self) -> list[Notification]:
        return [p for p in self.all_payloads() if isinstance(p, Notification)]

    def notify(self, ntype: int) -> Notification | None:
        return next((n for n in self.notifies() if n.type == ntype), None)

    def errors(self) -> list[Notification]:
        return [n for n in self.notifies() if n.error]

    @property
    def sk(self) -> SK | None:
        return next((p for p in self.payloads if isinstance(p, SK)), None)

    def label(self) -> str:
        """e.g. "IKE_SA_INIT response #0 [SA KE No N(NATD_S_IP) N(NATD_D_IP)]"."""
        kinds = []
        for p in self.all_payloads():
            if isinstance(p, Notification):
                kinds.append(f"N({p.label()})")
            elif isinstance(p, SK) and self.inner is None:
                kinds.append("SK(unopened)")
            elif not isinstance(p, SK):
                kinds.append(_SHORT.get(p.ptype, enum_name(PT, p.ptype)))
        role = "response" if self.is_response else "request"
        return f"{enum_name(Exchange, self.exchange)} {role} #{self.msg_id} [{' '.join(kinds)}]"


_SHORT = {PT.SA: "SA", PT.KE: "KE", PT.NONCE: "No", PT.IDi: "IDi", PT.IDr: "IDr", PT.AUTH: "AUTH", PT.TSi: "TSi",
          PT.TSr: "TSr", PT.DELETE: "D", PT.VENDOR: "V", PT.CERT: "CERT", PT.CERTREQ: "CERTREQ", PT.CP: "CP"}


def peek_header(data: bytes) -> tuple[bytes, bytes, int, int, int] | None:
    """(SPIi, SPIr, exchange, flags, message ID) of what looks like an IKE message, else None (cheap: matchers)."""
    if len(data) < HEADER_LEN or data[17] >> 4 != 2:
        return None
    spi_i, spi_r, _, _, exch, flags, msg_id = struct.unpack_from("!8s8sBBBBI", data)
    return spi_i, spi_r, exch, flags, msg_id


def strip_non_esp_marker(udp_payload: bytes) -> bytes | None:
    """An IKE message on port 4500 follows four zero octets (RFC 3948 §2.2); None when they are missing."""
    return udp_payload[4:] if udp_payload[:4] == b"\0\0\0\0" else None
