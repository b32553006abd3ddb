"""IKE messages on the wire: an emulated tester node's UDP datagrams to and
from its IKE peer over the tester's port (RFC 7296 §2, §2.23, RFC 3948).

* ``Channel`` frames IKE messages (Ether/IPv6/UDP 500, or 4500 after a
  NAT — or a forced UDP encapsulation — was detected, with the non-ESP
  marker), picks the peer's out of the capture, and runs a request to its
  response with retransmissions (``request``), or without any (a check
  that withholds an answer sends once and watches).
* ``AutoAnswer`` answers the peer's own requests on the IKE SA at once
  (liveness, DELETE, rekeys), as an end node must; a check that studies
  the peer's retransmissions turns it off and watches instead.

Every datagram sent and received is in the port's capture (the check's pcap).
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field

from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import Raw

from ..port import Frame, Port
from . import codec
from .const import IKE_PORT, NATT_PORT, Exchange, Flag
from .peer import IkePeer, ProtocolError, Result

#: RFC 7296 §2.1 leaves the timer to the implementation; the tester retransmits this many times
RETRANSMITS = 3


@dataclass
class Datagram:
    """An IKE message from the peer: its arrival time, octets (no non-ESP marker) and UDP ports."""
    time: float
    data: bytes
    sport: int
    dport: int
    frame: Frame

    @property
    def header(self):
        return codec.peek_header(self.data)

    def label(self) -> str:
        try:
            return codec.Message.decode(self.data).label()
        except codec.IkeParseError as exc:
            return f"malformed IKE message ({exc})"


class Channel:
    """The path between an emulated node of the tester and its IKE peer."""

    def __init__(self, port: Port, node, peer_mac: str, peer_addr: str, *, local_addr: str | None = None,
                 note=None):
        self.port = port
        self.node = node
        self.peer_mac = peer_mac
        self.peer_addr = peer_addr
        self.local_addr = local_addr or node.global_addr
        self.local_port = self.peer_port = IKE_PORT
        self.note = note or (lambda msg: None)
        self.lock = threading.RLock()  # one IkePeer, used by the check and the AutoAnswer on the port's thread
        #: the peer's requests this side answered, and the answers (a retransmitted request gets the same answer
        #: again, RFC 7296 §2.1: AutoAnswer does it from the port's thread)
        self.answered: dict[bytes, tuple[bytes, int]] = {}
        self.auto: AutoAnswer | None = None  # the AutoAnswer on this channel, if any

    def use_natt(self) -> None:
        """Move to UDP 4500 (RFC 7296 §2.23: after NAT detection, the initiator's next message)."""
        self.local_port = self.peer_port = NATT_PORT

    # -- sending ----------------------------------------------------------------------------------------------
    def frame(self, data: bytes, *, sport: int | None = None, dport: int | None = None):
        sport, dport = sport or self.local_port, dport or self.peer_port
        payload = b"\0\0\0\0" + data if NATT_PORT in (sport, dport) else data
        return (self.node.ipv6(self.peer_addr, self.peer_mac, src=self.local_addr)
                / UDP(sport=sport, dport=dport) / Raw(payload))

    def send(self, data: bytes, label: str | None = None, *, answers: bytes | None = None, **ports) -> float:
        """Send ``data``; ``answers``: the peer's request it answers (kept for that request's retransmissions)."""
        if answers is not None:
            self.answered[answers] = (data, ports.get("dport") or self.peer_port)
        t = self.port.send(self.frame(data, **ports))
        self.note(f"sent {label or _label(data)} to [{self.peer_addr}]:{ports.get('dport') or self.peer_port}")
        return t

    # -- receiving ---------------------------------------------------------------------------------------------
    def ike_of(self, pkt) -> tuple[bytes, int, int] | None:
        """(IKE message, sport, dport) when ``pkt`` is one from the peer to this node, else None (ESP in UDP
        on port 4500 starts with a non-zero SPI and is not IKE)."""
        if IPv6 not in pkt or UDP not in pkt:
            return None
        ip, udp = pkt[IPv6], pkt[UDP]
        if ip.src != self.peer_addr or ip.dst != self.local_addr or udp.dport not in (IKE_PORT, NATT_PORT):
            return None
        data = bytes(udp.payload)
        if udp.dport == NATT_PORT or udp.sport == NATT_PORT:
            data = codec.strip_non_esp_marker(data)
            if data is None:
                return None
        if codec.peek_header(data) is None:
            return None
        return data, udp.sport, udp.dport

    def matcher(self, *, spi_i: bytes | None = None, msg_id: int | None = None, response: bool | None = None,
                exchange: int | None = None):
        def m(pkt) -> bool:
            got = self.ike_of(pkt)
            if got is None:
                return False
            h = codec.peek_header(got[0])
            return ((spi_i is None or h[0] == spi_i) and (msg_id is None or h[4] == msg_id)
                    and (response is None or bool(h[3] & Flag.RESPONSE) == response)
                    and (exchange is None or h[2] == exchange))
        return m

    def _datagram(self, f: Frame) -> Datagram:
        data, sport, dport = self.ike_of(f.pkt)
        return Datagram(f.time, data, sport, dport, f)

    def wait(self, within: float, since: float | None = None, **match) -> Datagram | None:
        f = self.port.expect(self.matcher(**match), within, since=since)
        return self._datagram(f) if f is not None else None

    def collect(self, within: float, since: float | None = None, **match) -> list[Datagram]:
        return [self._datagram(f) for f in self.port.collect(self.matcher(**match), within, since=since)]

    def seen(self, since: float, **match) -> list[Datagram]:
        return [self._datagram(f) for f in self.port.frames_since(since, self.matcher(**match))]

    def request(self, data: bytes, *, within: float, retransmits: int = RETRANSMITS, label: str | None = None,
                spi_i: bytes | None = None) -> Datagram | None:
        """Send the request ``data`` and wait for its response (same SPIi and Message ID, R flag), sending the
        same octets again after each ``within`` seconds of silence, ``retransmits`` times (§2.1)."""
        h = codec.peek_header(data)
        since = None
        for attempt in range(retransmits + 1):
            t = self.send(data, (label or _label(data)) + (f" (retransmission {attempt})" if attempt else ""))
            since = t if since is None else since
            got = self.wait(within, since=since, spi_i=spi_i or h[0], msg_id=h[4], response=True)
            if got is not None:
                self.note(f"received {got.label()} (+{got.time - t:.3f} s)")
                return got
        return None


def _label(data: bytes) -> str:
    try:
        return codec.Message.decode(data).label()
    except codec.IkeParseError:
        return f"{len(data)}-octet datagram"


@dataclass
class Answered:
    time: float
    result: Result
    sent: bool


@dataclass
class AutoAnswer:
    """Answers the peer's requests on the IKE SA (and the SAs a rekey replaced) from the port's receive
    thread; ``log`` keeps what was answered.  ``enabled = False`` withholds every answer."""
    channel: Channel
    peer: IkePeer
    enabled: bool = True
    log: list[Answered] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.channel.auto = self

    def __call__(self, port: Port, frame: Frame) -> None:
        if not self.enabled:
            return
        got = self.channel.ike_of(frame.pkt)
        if got is None:
            return
        data = got[0]
        cached = self.channel.answered.get(data)
        if cached is not None:  # the peer retransmitted a request this side answered: the same answer (§2.1)
            self.channel.send(cached[0], f"the same answer again to the peer's retransmitted {_label(data)}",
                              dport=got[1])
            self.log.append(Answered(frame.time, Result("ok", None, "retransmitted request answered again"), True))
            return
        if self.peer.ike is None:
            return
        h = codec.peek_header(data)
        if h[3] & Flag.RESPONSE or h[2] not in (Exchange.CREATE_CHILD_SA, Exchange.INFORMATIONAL):
            return  # IKE_SA_INIT and IKE_AUTH are the check's to answer (serve_init, serve_auth)
        with self.channel.lock:
            ike = next((s for s in [self.peer.ike, *self.peer.old_ikes] if s.spi_i == h[0] and s.spi_r == h[1]),
                       None)
            if ike is None:
                return
            try:
                resp, res = self.peer.answer(data, ike=ike)
            except (ProtocolError, codec.IkeParseError, ValueError) as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
                return
            if resp is not None:
                self.channel.send(resp, f"answer to the peer's {res.msg.label() if res.msg else 'request'}",
                                  sport=got[2], dport=got[1])
            self.log.append(Answered(frame.time, res, resp is not None))

    @contextlib.contextmanager
    def withheld(self):
        """No answers inside the block (a check watching the peer retransmit)."""
        was, self.enabled = self.enabled, False
        try:
            yield
        finally:
            self.enabled = was


class NoAnswer(Exception):
    """The peer did not answer a request (after the retransmissions): what was asked, for how long."""


def initiate(ch: Channel, peer: IkePeer, within: float, *, rounds: int = 3, retransmits: int = RETRANSMITS,
             **sa_init) -> tuple[Result, list[Result]]:
    """IKE_SA_INIT as initiator until it ends (a COOKIE or INVALID_KE_PAYLOAD answer asks for another round):
    the last result and every earlier one.  NoAnswer when the peer stays silent."""
    earlier: list[Result] = []
    for _ in range(rounds):
        with ch.lock:
            req = peer.sa_init(**sa_init)
        dg = ch.request(req, within=within, retransmits=retransmits)
        if dg is None:
            raise NoAnswer(f"no IKE_SA_INIT response within {within:g} s and {retransmits} retransmissions")
        with ch.lock:
            res = peer.take_sa_init(dg.data)
        if res.kind not in ("cookie", "invalid_ke"):
            if res.ok and peer.nat_detected:
                ch.use_natt()
            return res, earlier
        earlier.append(res)
        sa_init.pop("group", None)  # INVALID_KE_PAYLOAD named the group to use now
    return res, earlier


def authenticate(ch: Channel, peer: IkePeer, within: float, *, retransmits: int = RETRANSMITS, **auth) -> Result:
    """IKE_AUTH as initiator (after ``initiate``)."""
    with ch.lock:
        req = peer.auth(**auth)
    dg = ch.request(req, within=within, retransmits=retransmits)
    if dg is None:
        raise NoAnswer(f"no IKE_AUTH response within {within:g} s and {retransmits} retransmissions")
    with ch.lock:
        return peer.take_auth(dg.data)


def ask(ch: Channel, peer: IkePeer, build, within: float, *, retransmits: int = RETRANSMITS) -> Result:
    """A request on the established IKE SA (``build(peer)`` returns its octets) and its response."""
    with ch.lock:
        req = build(peer)
    dg = ch.request(req, within=within, retransmits=retransmits)
    if dg is None:
        with ch.lock:
            what = peer.pending.what if peer.pending else "request"
        raise NoAnswer(f"no response to the {what} within {within:g} s and {retransmits} retransmissions")
    with ch.lock:
        return peer.take_response(dg.data)


def serve_init(ch: Channel, peer: IkePeer, within: float, since: float, *, rounds: int = 3,
               **answer) -> tuple[Result, list[Result], list[Datagram]]:
    """IKE_SA_INIT as responder: answer the peer's requests (demanding a COOKIE or a group as ``answer`` says)
    until one is accepted; (the last result, earlier ones, every request seen).  NoAnswer when none comes."""
    earlier: list[Result] = []
    seen: list[Datagram] = []
    while len(earlier) < rounds:
        dg = ch.wait(within, since=since, exchange=Exchange.IKE_SA_INIT, response=False)
        if dg is None:
            raise NoAnswer(f"no IKE_SA_INIT request within {within:g} s"
                           + (f" after the answer to the previous one ({earlier[-1].detail})" if earlier else ""))
        since = dg.time + 1e-6
        if dg.data in ch.answered:  # a retransmission of a request already answered (AutoAnswer answers it again)
            if ch.auto is None or not ch.auto.enabled:
                ch.send(ch.answered[dg.data][0], "the same IKE_SA_INIT response again (the request was "
                                                 "retransmitted)", dport=dg.sport)
            continue
        seen.append(dg)
        with ch.lock:
            out, res = peer.answer_sa_init(dg.data, **answer)
        if out is not None:
            ch.send(out, f"IKE_SA_INIT response ({res.kind}: {res.detail})", dport=dg.sport, answers=dg.data)
        if res.ok:
            if peer.nat_detected:
                ch.use_natt()
            return res, earlier, seen
        earlier.append(res)
        if res.kind not in ("cookie", "invalid_ke"):
            return res, earlier, seen
    return res, earlier, seen


def serve_auth(ch: Channel, peer: IkePeer, within: float, since: float, **answer) -> tuple[Result, Datagram]:
    """IKE_AUTH as responder."""
    dg = ch.wait(within, since=since, exchange=Exchange.IKE_AUTH, response=False)
    if dg is None:
        raise NoAnswer(f"no IKE_AUTH request within {within:g} s after the IKE_SA_INIT response")
    with ch.lock:
        out, res = peer.answer_auth(dg.data, **answer)
    ch.send(out, f"IKE_AUTH response ({res.detail})", dport=dg.sport, answers=dg.data)
    return res, dg
