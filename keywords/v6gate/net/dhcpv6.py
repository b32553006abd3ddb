"""DHCPv6 (RFC 8415) as the tester plays it: the protocol's constants, a
strict parser of what a client sends (every option length checked, so a
malformed message is reported rather than repaired), and a scriptable
server that answers with valid messages by default and with exactly the
variant a check asks for (status codes, missing or foreign identifiers, a
wrong transaction ID, T1 > T2, preferred > valid, preference, the DNS
configuration options of RFC 3646, SOL_MAX_RT / INF_MAX_RT of RFC 8415
§21.24-25).

Messages are encoded byte by byte (not through Scapy's DHCPv6 layers), so
an invalid variant goes on the wire exactly as built; the pcap shows them
decoded by Wireshark.
"""

from __future__ import annotations

import ipaddress
import itertools
import secrets
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from . import packets as P
from .nodes import EmulatedNode
from .port import Frame, Port

CLIENT_PORT = 546  # RFC 8415 §7.2
SERVER_PORT = 547
ALL_DHCP_RELAY_AGENTS_AND_SERVERS = "ff02::1:2"  # RFC 8415 §7.1
ALL_DHCP_SERVERS = "ff05::1:3"

# message types (RFC 8415 §7.3)
SOLICIT, ADVERTISE, REQUEST, CONFIRM, RENEW, REBIND, REPLY, RELEASE, DECLINE, RECONFIGURE, \
    INFORMATION_REQUEST, RELAY_FORW, RELAY_REPL = range(1, 14)
MESSAGE_NAMES = {SOLICIT: "Solicit", ADVERTISE: "Advertise", REQUEST: "Request", CONFIRM: "Confirm",
                 RENEW: "Renew", REBIND: "Rebind", REPLY: "Reply", RELEASE: "Release", DECLINE: "Decline",
                 RECONFIGURE: "Reconfigure", INFORMATION_REQUEST: "Information-request",
                 RELAY_FORW: "Relay-forward", RELAY_REPL: "Relay-reply"}
CLIENT_MESSAGES = (SOLICIT, REQUEST, CONFIRM, RENEW, REBIND, RELEASE, DECLINE, INFORMATION_REQUEST)

# option codes (RFC 8415 §21, RFC 3646)
OPT_CLIENTID, OPT_SERVERID, OPT_IA_NA, OPT_IA_TA, OPT_IAADDR, OPT_ORO, OPT_PREFERENCE, OPT_ELAPSED_TIME, \
    OPT_RELAY_MSG = range(1, 10)
OPT_AUTH = 11
OPT_UNICAST = 12
OPT_STATUS_CODE = 13
OPT_RAPID_COMMIT = 14
OPT_VENDOR_CLASS = 16
OPT_RECONF_MSG = 19
OPT_RECONF_ACCEPT = 20
OPT_DNS_SERVERS = 23
OPT_DOMAIN_LIST = 24
OPT_IA_PD = 25
OPT_INFORMATION_REFRESH_TIME = 32
OPT_SOL_MAX_RT = 82
OPT_INF_MAX_RT = 83
OPTION_NAMES = {OPT_CLIENTID: "Client Identifier", OPT_SERVERID: "Server Identifier", OPT_IA_NA: "IA_NA",
                OPT_IA_TA: "IA_TA", OPT_IAADDR: "IA Address", OPT_ORO: "Option Request",
                OPT_PREFERENCE: "Preference", OPT_ELAPSED_TIME: "Elapsed Time", OPT_RELAY_MSG: "Relay Message",
                OPT_AUTH: "Authentication", OPT_UNICAST: "Server Unicast", OPT_STATUS_CODE: "Status Code",
                OPT_RAPID_COMMIT: "Rapid Commit", OPT_RECONF_MSG: "Reconfigure Message",
                OPT_RECONF_ACCEPT: "Reconfigure Accept", OPT_DNS_SERVERS: "DNS Recursive Name Server",
                OPT_DOMAIN_LIST: "Domain Search List", OPT_IA_PD: "IA_PD", OPT_SOL_MAX_RT: "SOL_MAX_RT",
                OPT_INF_MAX_RT: "INF_MAX_RT", OPT_INFORMATION_REFRESH_TIME: "Information Refresh Time"}
#: options only a server (or relay) sends: a client message carrying one is malformed (RFC 8415 Appendix B)
SERVER_ONLY_OPTIONS = (OPT_PREFERENCE, OPT_UNICAST, OPT_STATUS_CODE, OPT_RELAY_MSG, OPT_RECONF_MSG,
                       OPT_SOL_MAX_RT, OPT_INF_MAX_RT, OPT_INFORMATION_REFRESH_TIME)

# status codes (RFC 8415 §21.13)
SUCCESS, UNSPEC_FAIL, NO_ADDRS_AVAIL, NO_BINDING, NOT_ON_LINK, USE_MULTICAST = range(6)
STATUS_NAMES = {SUCCESS: "Success", UNSPEC_FAIL: "UnspecFail", NO_ADDRS_AVAIL: "NoAddrsAvail",
                NO_BINDING: "NoBinding", NOT_ON_LINK: "NotOnLink", USE_MULTICAST: "UseMulticast"}

# DUID types (RFC 8415 §11, RFC 6355)
DUID_LLT, DUID_EN, DUID_LL, DUID_UUID = 1, 2, 3, 4
DUID_NAMES = {DUID_LLT: "DUID-LLT", DUID_EN: "DUID-EN", DUID_LL: "DUID-LL", DUID_UUID: "DUID-UUID"}
DUID_KEYS = {"llt": DUID_LLT, "en": DUID_EN, "ll": DUID_LL, "uuid": DUID_UUID}
DUID_EPOCH = 946684800  # midnight (UTC), January 1, 2000 (RFC 8415 §11.2)

RAND = 0.1  # RFC 8415 §15: RAND is uniform in [-0.1, +0.1]


@dataclass(frozen=True)
class Exchange:
    """Transmission parameters of one client message (RFC 8415 §7.6, §15)."""

    name: str
    irt: float
    mrt: float = 0.0
    mrc: int = 0
    mrd: float = 0.0
    max_delay: float = 0.0  # random delay before the first transmission


#: RFC 8415 §7.6 (SOL_MAX_RT and INF_MAX_RT are 3600 s since RFC 7083; RFC 3315 had 120 s)
EXCHANGES = {
    SOLICIT: Exchange("Solicit", irt=1, mrt=3600, max_delay=1),
    REQUEST: Exchange("Request", irt=1, mrt=30, mrc=10),
    CONFIRM: Exchange("Confirm", irt=1, mrt=4, mrd=10, max_delay=1),
    RENEW: Exchange("Renew", irt=10, mrt=600),
    REBIND: Exchange("Rebind", irt=10, mrt=600),
    INFORMATION_REQUEST: Exchange("Information-request", irt=1, mrt=3600, max_delay=1),
    RELEASE: Exchange("Release", irt=1, mrc=4),
    DECLINE: Exchange("Decline", irt=1, mrc=4),
}
RFC3315_MAX_RT = 120  # the old SOL_MAX_RT / INF_MAX_RT
IRT_DEFAULT, IRT_MINIMUM = 86400, 600  # Information Refresh Time (RFC 8415 §7.6, §21.23)


def name_of(msg_type: int) -> str:
    return MESSAGE_NAMES.get(msg_type, f"type {msg_type}")


# ---------------------------------------------------------------------------------------------------------
# parsing what a client sends
# ---------------------------------------------------------------------------------------------------------
@dataclass
class Option:
    code: int
    data: bytes

    @property
    def name(self) -> str:
        return OPTION_NAMES.get(self.code, f"option {self.code}")


def parse_options(data: bytes, where: str, problems: list[str]) -> list[Option]:
    """TLV options; a length running past the end is reported, not repaired."""
    out, i = [], 0
    while i < len(data):
        if len(data) - i < 4:
            problems.append(f"{where}: {len(data) - i} stray octet(s) after the last option")
            break
        code, length = struct.unpack_from("!HH", data, i)
        if i + 4 + length > len(data):
            problems.append(f"{where}: {OPTION_NAMES.get(code, f'option {code}')} claims {length} octets but "
                            f"only {len(data) - i - 4} remain")
            break
        out.append(Option(code, data[i + 4:i + 4 + length]))
        i += 4 + length
    return out


@dataclass
class IAAddress:
    address: str
    preferred: int
    valid: int
    status: tuple[int, str] | None = None


@dataclass
class IA:
    iaid: int
    t1: int
    t2: int
    addresses: list[IAAddress] = field(default_factory=list)
    status: tuple[int, str] | None = None
    options: list[Option] = field(default_factory=list)


def _status(data: bytes) -> tuple[int, str]:
    code = struct.unpack_from("!H", data)[0] if len(data) >= 2 else -1
    return code, data[2:].decode("utf-8", "replace")


def parse_ia_na(opt: Option, problems: list[str]) -> IA | None:
    if len(opt.data) < 12:
        problems.append(f"IA_NA option is {len(opt.data)} octets long, less than the 12 of IAID, T1 and T2")
        return None
    iaid, t1, t2 = struct.unpack_from("!III", opt.data)
    ia = IA(iaid, t1, t2)
    ia.options = parse_options(opt.data[12:], f"IA_NA {iaid:#x}", problems)
    for sub in ia.options:
        if sub.code == OPT_IAADDR:
            if len(sub.data) < 24:
                problems.append(f"IA Address option in IA_NA {iaid:#x} is {len(sub.data)} octets long, less than 24")
                continue
            addr = str(ipaddress.IPv6Address(sub.data[:16]))
            pref, valid = struct.unpack_from("!II", sub.data, 16)
            ia_addr = IAAddress(addr, pref, valid)
            for o in parse_options(sub.data[24:], f"IA Address {addr}", problems):
                if o.code == OPT_STATUS_CODE:
                    ia_addr.status = _status(o.data)
            ia.addresses.append(ia_addr)
        elif sub.code == OPT_STATUS_CODE:
            ia.status = _status(sub.data)
    return ia


@dataclass
class Duid:
    raw: bytes
    type: int | None
    problems: list[str]
    hw_type: int | None = None
    time: int | None = None
    link_layer: bytes | None = None
    enterprise: int | None = None
    identifier: bytes | None = None

    @property
    def name(self) -> str:
        return DUID_NAMES.get(self.type, f"DUID type {self.type}")

    def describe(self) -> str:
        if self.type == DUID_LLT and not self.problems:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(DUID_EPOCH + self.time))
            return f"DUID-LLT hw type {self.hw_type}, time {self.time} ({when} UTC), link-layer {_mac(self.link_layer)}"
        if self.type == DUID_LL and not self.problems:
            return f"DUID-LL hw type {self.hw_type}, link-layer {_mac(self.link_layer)}"
        if self.type == DUID_EN and not self.problems:
            return f"DUID-EN enterprise {self.enterprise}, identifier {self.identifier.hex(':')}"
        return f"{self.name} {self.raw.hex(':')}"


def _mac(b: bytes | None) -> str:
    return (b or b"").hex(":")


def parse_duid(raw: bytes) -> Duid:
    """A DUID and the RFC 8415 §11 format problems it has, if any."""
    problems: list[str] = []
    if len(raw) < 2:
        return Duid(raw, None, [f"{len(raw)} octets: too short to hold a DUID type code"])
    if len(raw) > 130:
        problems.append(f"{len(raw)} octets: longer than the 130 a DUID may have (§11.1)")
    dtype = struct.unpack_from("!H", raw)[0]
    d = Duid(raw, dtype, problems)
    body = raw[2:]
    if dtype == DUID_LLT:
        if len(body) < 6 + 1:
            problems.append(f"DUID-LLT body is {len(body)} octets: needs hardware type (2), time (4) and a "
                            "link-layer address")
        else:
            d.hw_type, d.time = struct.unpack_from("!HI", body)
            d.link_layer = body[6:]
            _check_link_layer(d, problems)
    elif dtype == DUID_LL:
        if len(body) < 2 + 1:
            problems.append(f"DUID-LL body is {len(body)} octets: needs hardware type (2) and a link-layer address")
        else:
            d.hw_type = struct.unpack_from("!H", body)[0]
            d.link_layer = body[2:]
            _check_link_layer(d, problems)
    elif dtype == DUID_EN:
        if len(body) < 4 + 1:
            problems.append(f"DUID-EN body is {len(body)} octets: needs an enterprise number (4) and an identifier")
        else:
            d.enterprise = struct.unpack_from("!I", body)[0]
            d.identifier = body[4:]
    elif dtype == DUID_UUID:
        if len(body) != 16:
            problems.append(f"DUID-UUID body is {len(body)} octets, not 16 (RFC 6355)")
    else:
        problems.append(f"unknown DUID type {dtype} (1 LLT, 2 EN, 3 LL, 4 UUID)")
    return d


def _check_link_layer(d: Duid, problems: list[str]) -> None:
    # hardware type 1 (Ethernet, RFC 826) carries a 6-octet MAC (RFC 8415 §11.2, §11.4)
    if d.hw_type == 1 and len(d.link_layer) != 6:
        problems.append(f"hardware type 1 (Ethernet) with a {len(d.link_layer)}-octet link-layer address, not 6")
    if d.hw_type == 0:
        problems.append("hardware type 0 is reserved (IANA hardware types)")


@dataclass
class Message:
    """One DHCPv6 message from the wire (client or server)."""

    type: int
    xid: int
    options: list[Option]
    problems: list[str]
    frame: Frame | None = None
    src: str = ""
    dst: str = ""
    sport: int = 0
    dport: int = 0
    raw: bytes = b""

    @property
    def name(self) -> str:
        return name_of(self.type)

    @property
    def time(self) -> float:
        return self.frame.time if self.frame else 0.0

    def opt(self, code: int) -> Option | None:
        return next((o for o in self.options if o.code == code), None)

    def all(self, code: int) -> list[Option]:
        return [o for o in self.options if o.code == code]

    @property
    def client_duid(self) -> bytes | None:
        o = self.opt(OPT_CLIENTID)
        return o.data if o else None

    @property
    def server_duid(self) -> bytes | None:
        o = self.opt(OPT_SERVERID)
        return o.data if o else None

    @property
    def elapsed(self) -> int | None:
        o = self.opt(OPT_ELAPSED_TIME)
        return struct.unpack("!H", o.data)[0] if o and len(o.data) == 2 else None

    @property
    def oro(self) -> list[int] | None:
        o = self.opt(OPT_ORO)
        if o is None:
            return None
        return [struct.unpack_from("!H", o.data, i)[0] for i in range(0, len(o.data) - 1, 2)]

    @property
    def ia_nas(self) -> list[IA]:
        return [ia for o in self.all(OPT_IA_NA) if (ia := parse_ia_na(o, [])) is not None]

    def addresses(self) -> list[str]:
        return [a.address for ia in self.ia_nas for a in ia.addresses]

    @property
    def status(self) -> tuple[int, str] | None:
        o = self.opt(OPT_STATUS_CODE)
        return _status(o.data) if o else None

    def summary(self) -> str:
        opts = ", ".join(o.name for o in self.options)
        return (f"{self.name} xid {self.xid:#08x} from [{self.src}]:{self.sport} to [{self.dst}]:{self.dport}"
                f" ({opts or 'no options'})")


def parse_payload(data: bytes) -> Message | None:
    if len(data) < 4:
        return None
    mtype = data[0]
    problems: list[str] = []
    if mtype in (RELAY_FORW, RELAY_REPL):
        return Message(mtype, 0, [], problems, raw=data)
    xid = int.from_bytes(data[1:4], "big")
    options = parse_options(data[4:], name_of(mtype), problems)
    for o in options:
        if o.code == OPT_IA_NA:
            parse_ia_na(o, problems)
        if o.code == OPT_ORO and len(o.data) % 2:
            problems.append(f"Option Request option has an odd length ({len(o.data)})")
        if o.code == OPT_ELAPSED_TIME and len(o.data) != 2:
            problems.append(f"Elapsed Time option is {len(o.data)} octets long, not 2")
    return Message(mtype, xid, options, problems, raw=data)


def parse(pkt_or_frame) -> Message | None:
    """The DHCPv6 message in a received frame (UDP to or from port 546/547), else None."""
    frame = pkt_or_frame if isinstance(pkt_or_frame, Frame) else None
    pkt = frame.pkt if frame else pkt_or_frame
    try:
        if IPv6 not in pkt or UDP not in pkt:
            return None
        udp = pkt[UDP]
        if udp.dport not in (CLIENT_PORT, SERVER_PORT) and udp.sport not in (CLIENT_PORT, SERVER_PORT):
            return None
        data = bytes(udp.payload)
    except Exception:
        return None
    msg = parse_payload(data)
    if msg is None:
        return None
    msg.frame, msg.src, msg.dst, msg.sport, msg.dport = frame, pkt[IPv6].src, pkt[IPv6].dst, udp.sport, udp.dport
    return msg


def is_client_message(pkt, types: tuple[int, ...] | None = None) -> bool:
    """A DHCPv6 message of one of ``types`` sent toward servers (UDP destination port 547)."""
    if UDP not in pkt or pkt[UDP].dport != SERVER_PORT:
        return False
    raw = bytes(pkt[UDP].payload)
    return bool(raw) and (types is None or raw[0] in types)


# ---------------------------------------------------------------------------------------------------------
# encoding what the tester's server sends
# ---------------------------------------------------------------------------------------------------------
def opt(code: int, data: bytes = b"") -> bytes:
    return struct.pack("!HH", code, len(data)) + data


def status_option(code: int, text: str = "") -> bytes:
    return opt(OPT_STATUS_CODE, struct.pack("!H", code) + text.encode())


def ia_address_option(address: str, preferred: int, valid: int, status: tuple[int, str] | None = None) -> bytes:
    body = ipaddress.IPv6Address(address).packed + struct.pack("!II", preferred, valid)
    if status:
        body += status_option(*status)
    return opt(OPT_IAADDR, body)


def ia_na_option(iaid: int, t1: int, t2: int, addresses: list[tuple] = (), status: tuple[int, str] | None = None,
                 extra: bytes = b"") -> bytes:
    """addresses: (address, preferred, valid) tuples."""
    body = struct.pack("!III", iaid, t1, t2)
    for a in addresses:
        body += ia_address_option(*a)
    if status:
        body += status_option(*status)
    return opt(OPT_IA_NA, body + extra)


def dns_servers_option(servers: list[str]) -> bytes:
    return opt(OPT_DNS_SERVERS, b"".join(ipaddress.IPv6Address(s).packed for s in servers))


def domain_name(name: str) -> bytes:
    """RFC 1035 §3.1 wire format (as RFC 3646 §4 requires), uncompressed."""
    out = b""
    for label in name.strip(".").split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\x00"


def domain_list_option(domains: list[str]) -> bytes:
    return opt(OPT_DOMAIN_LIST, b"".join(domain_name(d) for d in domains))


def message(msg_type: int, xid: int, options: list[bytes]) -> bytes:
    return bytes([msg_type]) + (xid & 0xFFFFFF).to_bytes(3, "big") + b"".join(options)


def duid_ll(mac: str) -> bytes:
    return struct.pack("!HH", DUID_LL, 1) + bytes(int(x, 16) for x in mac.split(":"))


def duid_llt(mac: str, when: float | None = None) -> bytes:
    secs = int((when or time.time()) - DUID_EPOCH) & 0xFFFFFFFF
    return struct.pack("!HHI", DUID_LLT, 1, secs) + bytes(int(x, 16) for x in mac.split(":"))


def fresh_xid() -> int:
    return secrets.randbelow(0xFFFFFF) + 1


# ---------------------------------------------------------------------------------------------------------
# retransmission arithmetic (RFC 8415 §15)
# ---------------------------------------------------------------------------------------------------------
@dataclass
class IntervalJudgement:
    intervals: list[float]
    problems: list[str]

    def text(self) -> str:
        return ", ".join(f"{x:.2f}" for x in self.intervals) + " s"


#: how far from 2·RTprev a single observed interval may be in a check's judgement: twice RAND·RTprev.
#: One interval is one draw of RAND, too few to tell a client that randomizes ±0.1·2·RTprev (a
#: common reading) from RFC 8415's ±0.1·RTprev; dhcpv6.retransmission_randomization_is_within_rfc_bounds
#: judges that bound over many draws.
GROWTH_SPREAD = 0.2


def judge_intervals(times: list[float], ex: Exchange, *, mrt: float | None = None, tolerance: float = 0.2,
                    first_strictly_above_irt: bool = False, spread: float = RAND) -> IntervalJudgement:
    """Compare the intervals between transmissions of one message with RFC
    8415 §15: RT1 = IRT + RAND*IRT; RTk = 2*RTk-1 + RAND*RTk-1; once that
    exceeds MRT, RT = MRT + RAND*MRT; RAND in [-0.1, 0.1].  Each interval is
    judged against the previous *observed* one (the client's own RT), so
    the randomization does not accumulate; ``tolerance`` (s) absorbs the
    capture's timing noise; ``spread`` is the allowed |RTk - 2*RTk-1| /
    RTk-1 (RFC 8415: 0.1)."""
    mrt = ex.mrt if mrt is None else mrt
    intervals = [b - a for a, b in itertools.pairwise(times)]
    problems = []
    prev = None
    for i, rt in enumerate(intervals, start=1):
        if prev is None:
            lo, hi = ex.irt * (1 - RAND), ex.irt * (1 + RAND)
            if first_strictly_above_irt:
                lo = ex.irt  # §18.2.1: for Solicit, RAND > 0 for the first RT
            what = f"RT1 = IRT {ex.irt:g} s ± 10%" + (" (RAND > 0 for Solicit)" if first_strictly_above_irt else "")
        else:
            lo, hi = (2 - spread) * prev, (2 + spread) * prev  # 2*RTprev + RAND*RTprev
            what = f"RT{i} = 2 x {prev:.2f} s ± {spread:g} x {prev:.2f} s"
            if mrt and hi > mrt * (1 - RAND):
                # the doubled value may exceed MRT, then RT = MRT ± 10%
                lo, hi = min(lo, mrt * (1 - RAND)), min(hi, mrt * (1 + RAND))
                what += f", or MRT {mrt:g} s ± 10%"
        if not (lo - tolerance <= rt <= hi + tolerance):
            problems.append(f"interval {i} is {rt:.2f} s, outside [{lo:.2f}, {hi:.2f}] s ({what})")
        prev = rt
    return IntervalJudgement(intervals, problems)


# ---------------------------------------------------------------------------------------------------------
# the tester's server
# ---------------------------------------------------------------------------------------------------------
Handler = Callable[["Message"], "list[bytes] | bytes | None"]


@dataclass
class Lease:
    """What the tester's server hands out (defaults: the values a check sets)."""

    addresses: list[str]
    t1: int = 0
    t2: int = 0
    preferred: int = 300
    valid: int = 600
    dns_servers: list[str] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)


class _Responder:
    """Something the tester runs on its port for the length of a check."""

    port: Port

    def start(self):
        self.port.add_responder(self._on_frame)
        return self

    def stop(self) -> None:
        self.port.remove_responder(self._on_frame)

    def _on_frame(self, port: Port, frame: Frame) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class TesterServer(_Responder):
    """A DHCPv6 server the tester plays on the DUT's link.

    It records every client message (``seen``) and answers through
    per-message-type handlers: ``server.on(SOLICIT, handler)`` where a
    handler takes the client's ``Message`` and returns the payload(s) to
    send back (built with ``advertise``/``reply``), or None to stay silent.
    The defaults answer like a conforming server (Advertise to Solicit, Reply
    to Request/Renew/Rebind/Confirm/Release/Decline/Information-request)."""

    def __init__(self, port: Port, node: EmulatedNode, dut_mac: str, lease: Lease, *, duid: bytes | None = None,
                 preference: int | None = None):
        self.port = port
        self.node = node
        self.dut_mac = dut_mac.lower()
        self.lease = lease
        self.duid = duid or duid_ll(node.mac)
        self.preference = preference
        self.extra_options: list[bytes] = []  # added to every Advertise and Reply
        self.seen: list[Message] = []
        self.sent: list[tuple[float, str]] = []
        self.handlers: dict[int, Handler] = {
            SOLICIT: lambda m: self.advertise(m),
            REQUEST: lambda m: self.reply(m),
            RENEW: lambda m: self.reply(m),
            REBIND: lambda m: self.reply(m),
            CONFIRM: lambda m: self.reply(m, ia=False, status=(SUCCESS, "all addresses on link")),
            RELEASE: lambda m: self.reply(m, ia=False, status=(SUCCESS, "released"), dns=False),
            DECLINE: lambda m: self.reply(m, ia=False, status=(SUCCESS, "declined"), dns=False),
            INFORMATION_REQUEST: lambda m: self.reply(m, ia=False),
        }
        self._lock = threading.Lock()

    def on(self, msg_type: int, handler: Handler | None) -> None:
        """Answer ``msg_type`` with ``handler`` (None: stay silent)."""
        self.handlers[msg_type] = handler or (lambda m: None)

    def _on_frame(self, port: Port, frame: Frame) -> None:
        pkt = frame.pkt
        if frame.raw[6:12] != bytes.fromhex(self.dut_mac.replace(":", "")) or not is_client_message(pkt):
            return
        msg = parse(frame)
        if msg is None:
            return
        with self._lock:
            self.seen.append(msg)
        handler = self.handlers.get(msg.type)
        out = handler(msg) if handler else None
        for payload in [out] if isinstance(out, bytes) else (out or []):
            self.send(payload, msg)

    # -- what was seen ----------------------------------------------------------------
    def messages(self, msg_type: int | None = None, since: float = 0.0) -> list[Message]:
        with self._lock:
            return [m for m in self.seen if (msg_type is None or m.type == msg_type) and m.time >= since]

    def wait(self, msg_type: int, within: float, since: float = 0.0, where: Callable[[Message], bool] | None = None,
             count: int = 1) -> list[Message]:
        """Wait until ``count`` messages of ``msg_type`` (accepted by ``where``) were seen."""
        deadline = time.monotonic() + within
        while True:
            got = [m for m in self.messages(msg_type, since) if where is None or where(m)]
            if len(got) >= count:
                return got
            if time.monotonic() >= deadline:
                # judge the link, not the harness: first read everything that arrived by the deadline
                self.port.drained_through(deadline)
                got = [m for m in self.messages(msg_type, since) if (where is None or where(m)) and m.time <= deadline]
                return got
            time.sleep(0.01)

    # -- sending ----------------------------------------------------------------------
    def send(self, payload: bytes, to: Message | None = None, *, dst: str | None = None, sport: int = SERVER_PORT,
             dport: int = CLIENT_PORT, src: str | None = None) -> float:
        """Send a payload to the client (by default to the source of ``to``)."""
        dst = dst or (to.src if to else None)
        pkt = (Ether(src=self.node.mac, dst=P.multicast_mac(dst) if P.is_multicast(dst) else self.dut_mac)
               / IPv6(src=src or self.node.link_local, dst=dst) / UDP(sport=sport, dport=dport) / Raw(payload))
        t = self.port.send(pkt)
        self.sent.append((t, f"{name_of(payload[0])} xid {int.from_bytes(payload[1:4], 'big'):#08x} to [{dst}]:{dport}"))
        return t

    def frame(self, payload: bytes, dst: str, *, sport: int = SERVER_PORT, dport: int = CLIENT_PORT) -> Packet:
        return (Ether(src=self.node.mac, dst=P.multicast_mac(dst) if P.is_multicast(dst) else self.dut_mac)
                / IPv6(src=self.node.link_local, dst=dst) / UDP(sport=sport, dport=dport) / Raw(payload))

    # -- building ---------------------------------------------------------------------
    def _ias(self, m: Message, lease: Lease, ia_status, addresses, t1, t2) -> list[bytes]:
        ias = m.ia_nas or ([] if m.type == INFORMATION_REQUEST else [IA(0, 0, 0)])
        out = []
        for ia in ias:
            addrs = addresses if addresses is not None else [(a, lease.preferred, lease.valid) for a in lease.addresses]
            out.append(ia_na_option(ia.iaid, lease.t1 if t1 is None else t1, lease.t2 if t2 is None else t2,
                                    [] if ia_status else addrs, ia_status))
        return out

    def build(self, msg_type: int, m: Message, *, ia: bool = True, status: tuple[int, str] | None = None,
              ia_status: tuple[int, str] | None = None, addresses: list[tuple] | None = None, t1: int | None = None,
              t2: int | None = None, server_id: bool | bytes = True, client_id: bool | bytes = True,
              xid: int | None = None, preference: int | None = None, dns: bool = True,
              dns_servers: list[str] | None = None, domains: list[str] | None = None, extra: list[bytes] = (),
              lease: Lease | None = None) -> bytes:
        """An Advertise or Reply for client message ``m`` (every knob a check varies)."""
        lease = lease or self.lease
        options = []
        if client_id and m.client_duid is not None:
            options.append(opt(OPT_CLIENTID, client_id if isinstance(client_id, bytes) else m.client_duid))
        if server_id:
            options.append(opt(OPT_SERVERID, server_id if isinstance(server_id, bytes) else self.duid))
        if status:
            options.append(status_option(*status))
        if ia:
            options += self._ias(m, lease, ia_status, addresses, t1, t2)
        pref = self.preference if preference is None else preference
        if pref is not None and msg_type == ADVERTISE:
            options.append(opt(OPT_PREFERENCE, bytes([pref])))
        if dns:
            servers = lease.dns_servers if dns_servers is None else dns_servers
            names = lease.domains if domains is None else domains
            if servers:
                options.append(dns_servers_option(servers))
            if names:
                options.append(domain_list_option(names))
        options += [*self.extra_options, *extra]
        return message(msg_type, m.xid if xid is None else xid, options)

    def advertise(self, m: Message, **kw) -> bytes:
        return self.build(ADVERTISE, m, **kw)

    def reply(self, m: Message, **kw) -> bytes:
        return self.build(REPLY, m, **kw)


# ---------------------------------------------------------------------------------------------------------
# a DNS server on the link, to see which resolver configuration the DUT uses
# ---------------------------------------------------------------------------------------------------------
@dataclass
class DnsQuery:
    time: float
    src: str
    dst: str
    name: str
    qtype: int


class DnsResponder(_Responder):
    """Answers DNS queries sent to ``addresses`` (UDP 53) from the DUT: AAAA
    with ``answer``, anything else with an empty NOERROR; records each query
    (which server the DUT asked, for which name)."""

    def __init__(self, port: Port, node: EmulatedNode, dut_mac: str, answer: str):
        self.port = port
        self.node = node
        self.dut_mac = dut_mac.lower()
        self.answer = answer
        self.queries: list[DnsQuery] = []
        self._lock = threading.Lock()

    def _on_frame(self, port: Port, frame: Frame) -> None:
        from scapy.layers.dns import DNS, DNSRR

        pkt = frame.pkt
        if UDP not in pkt or pkt[UDP].dport != 53 or DNS not in pkt or not self.node.owns(pkt[IPv6].dst):
            return
        if pkt[Ether].src.lower() != self.dut_mac:
            return
        dns = pkt[DNS]
        if not dns.qd:
            return
        q = dns.qd[0] if isinstance(dns.qd, list) else dns.qd
        name = q.qname.decode(errors="replace") if isinstance(q.qname, bytes) else str(q.qname)
        with self._lock:
            self.queries.append(DnsQuery(frame.time, pkt[IPv6].src, pkt[IPv6].dst, name.rstrip("."), int(q.qtype)))
        an = DNSRR(rrname=q.qname, type="AAAA", ttl=60, rdata=self.answer) if int(q.qtype) == 28 else None
        reply = DNS(id=dns.id, qr=1, aa=1, rd=dns.rd, ra=1, rcode=0, qd=q, an=an)
        port.send(Ether(src=self.node.mac, dst=pkt[Ether].src) / IPv6(src=pkt[IPv6].dst, dst=pkt[IPv6].src)
                  / UDP(sport=53, dport=pkt[UDP].sport) / reply)

    def wait(self, within: float, since: float = 0.0) -> list[DnsQuery]:
        deadline = time.monotonic() + within
        while True:
            with self._lock:
                got = [q for q in self.queries if q.time >= since]
            if got or time.monotonic() >= deadline:
                return got
            time.sleep(0.02)


# ---------------------------------------------------------------------------------------------------------
# RFC 9686: registering self-generated addresses (ADDR-REG-INFORM / ADDR-REG-REPLY)
# ---------------------------------------------------------------------------------------------------------
ADDR_REG_INFORM, ADDR_REG_REPLY = 36, 37  # RFC 9686 §4.2, §4.3 (IANA DHCPv6 message types)
OPT_ADDR_REG_ENABLE = 148  # RFC 9686 §4.1: zero-length, the server takes registrations
#: RFC 9686 §4.5: retransmission of ADDR-REG-INFORM (RFC 8415 §15 logic with these)
ADDR_REG_IRT, ADDR_REG_MRC = 1.0, 3
MESSAGE_NAMES.update({ADDR_REG_INFORM: "ADDR-REG-INFORM", ADDR_REG_REPLY: "ADDR-REG-REPLY"})
OPTION_NAMES.update({OPT_ADDR_REG_ENABLE: "Address Registration"})


def ia_addresses(m: Message) -> list[IAAddress]:
    """The IA Address options at the top level of ``m`` (as ADDR-REG-INFORM carries them)."""
    out = []
    for o in m.all(OPT_IAADDR):
        if len(o.data) >= 24:
            pref, valid = struct.unpack("!II", o.data[16:24])
            out.append(IAAddress(str(ipaddress.IPv6Address(o.data[:16])), pref, valid))
    return out
