"""The tester's IKEv2 end node, as initiator and as responder (RFC 7296 §1.2-
§1.4, §2), without input/output: every method builds the octets of a
message or takes the octets that arrived and says what they mean.  The
transport (exchange.py) moves them; a check decides what to send, what to
withhold and what to break.

Initiator: ``sa_init`` / ``take_sa_init`` (COOKIE and INVALID_KE_PAYLOAD
ask for another ``sa_init``), ``auth`` / ``take_auth``.  Responder:
``answer_sa_init`` (with a cookie demanded, a group demanded, or proposals
refused), ``answer_auth``.  Either role, on the established IKE SA:
``create_child`` (new or rekey), ``rekey_ike``, ``informational`` (liveness,
DELETE), each with its ``take_*``, and ``answer`` for the peer's requests.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import struct
from dataclasses import dataclass, field

from . import crypto
from .codec import (
    KE,
    SA,
    TS,
    Auth,
    Cert,
    Delete,
    Identification,
    Message,
    Nonce,
    Notification,
    Payload,
    Proposal,
    Selector,
    Transform,
)
from .const import TT, AuthMethod, Exchange, Flag, IdType, Notify, Proto
from .const import name as enum_name
from .proposals import Chosen, choose, chosen_from
from .sa import ChildSa, IkeSa, child_sa

COOKIE_SECRET_SIZE = 32


class ProtocolError(Exception):
    """The peer's message breaks RFC 7296 (what it did), as opposed to a refusal it is entitled to."""


@dataclass
class Identity:
    id_type: int
    data: bytes

    @classmethod
    def of(cls, text: str) -> Identity:
        """An IPv6/IPv4 address, user@fqdn, or an FQDN (strongSwan's reading of an identity string)."""
        try:
            ip = ipaddress.ip_address(text)
            return cls(IdType.IPV6_ADDR if ip.version == 6 else IdType.IPV4_ADDR, ip.packed)
        except ValueError:
            pass
        return cls(IdType.RFC822_ADDR if "@" in text else IdType.FQDN, text.encode())

    def payload(self, initiator: bool) -> Identification:
        return Identification(initiator, self.id_type, self.data)

    def label(self) -> str:
        if self.id_type in (IdType.IPV6_ADDR, IdType.IPV4_ADDR):
            try:
                return str(ipaddress.ip_address(self.data))
            except ValueError:
                pass
        if self.id_type in (IdType.FQDN, IdType.RFC822_ADDR):
            return self.data.decode(errors="replace")
        return f"{enum_name(IdType, self.id_type)}:{self.data.hex()}"


@dataclass
class Config:
    """One end's IKE configuration (the tester's, or what it expects of the peer)."""
    local_addr: str
    remote_addr: str
    ike_proposals: list[Proposal]
    esp_proposals: list[Proposal]
    psk: bytes | None = None
    local_id: Identity | None = None
    remote_id: Identity | None = None  # None: any identity the peer proves
    group: int | None = None  # the KE group of the first IKE_SA_INIT (default: the first offered)
    ts_local: list[Selector] | None = None  # default: this end's address, any protocol
    ts_remote: list[Selector] | None = None
    transport_mode: bool = True
    nonce_size: int = 32
    local_port: int = 500
    remote_port: int = 500
    #: signature authentication (RFC 7427): this end's private key and certificate (DER); the peer's
    #: certificate is checked against ``trust`` (a list of DER CA certificates)
    private_key: object = None
    cert: bytes | None = None
    trust: list[bytes] = field(default_factory=list)
    #: a responder: fake the NAT_DETECTION payloads (as strongSwan's encap=yes does) so ESP goes in UDP
    fake_nat: bool = False

    def __post_init__(self):
        if self.local_id is None:
            self.local_id = Identity.of(self.local_addr)
        if self.ts_local is None:
            self.ts_local = [Selector.of(self.local_addr)]
        if self.ts_remote is None:
            self.ts_remote = [Selector.of(self.remote_addr)]


def nat_hash(spi_i: bytes, spi_r: bytes, addr: str, port: int) -> bytes:
    """NAT_DETECTION_*_IP data: SHA-1(SPIi | SPIr | IP | Port) (§2.23)."""
    return hashlib.sha1(spi_i + spi_r + ipaddress.ip_address(addr).packed + struct.pack("!H", port)).digest()


@dataclass
class Result:
    """What a message meant: ``kind`` (ok, cookie, invalid_ke, refused, protocol), its message, a detail."""
    kind: str
    msg: Message | None = None
    detail: str = ""
    child: ChildSa | None = None
    notify: Notification | None = None

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


@dataclass
class Pending:
    """A request this side sent and awaits the response to."""
    exchange: int
    msg_id: int
    data: bytes
    what: str
    state: dict = field(default_factory=dict)


class IkePeer:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.ike: IkeSa | None = None
        self.old_ikes: list[IkeSa] = []
        self.children: list[ChildSa] = []
        self.pending: Pending | None = None
        self.last_response: tuple[int, bytes] | None = None  # (peer request's message ID, our response)
        self.nat_detected = False
        self.deleted = False  # the peer deleted the IKE SA
        self.log: list[str] = []
        # initiator of IKE_SA_INIT
        self.spi_i = os.urandom(8)
        self.ni = os.urandom(cfg.nonce_size)
        self.group = cfg.group or _first_group(cfg.ike_proposals)
        self.dh: crypto.DhKey | None = None
        self.cookie: bytes | None = None
        self.init_request: bytes | None = None
        self.init_response: bytes | None = None
        # responder state
        self._cookie_secret = os.urandom(COOKIE_SECRET_SIZE)
        self.spi_r = b""
        self.nr = b""
        self.peer_init_request: Message | None = None

    # == IKE_SA_INIT, initiator =====================================================================================
    def sa_init(self, *, proposals: list[Proposal] | None = None, group: int | None = None,
                extra: list[Payload] | None = None, nat_d: bool = True) -> bytes:
        """The IKE_SA_INIT request (Message ID 0): [N(COOKIE)] SA KE Ni N(NAT_D) N(NAT_D) [extra]."""
        if group is not None and group != self.group:
            self.group, self.dh = group, None
        if self.dh is None or self.dh.group != self.group:
            self.dh = crypto.DhKey(self.group)
        offered = proposals or self.cfg.ike_proposals
        self._offered = offered
        payloads: list[Payload] = []
        if self.cookie is not None:
            payloads.append(Notification(Notify.COOKIE, self.cookie))
        payloads += [SA(offered), KE(self.group, self.dh.public), Nonce(self.ni)]
        if nat_d:
            zero = b"\0" * 8
            payloads += [Notification(Notify.NAT_DETECTION_SOURCE_IP,
                                      nat_hash(self.spi_i, zero, self.cfg.local_addr, self.cfg.local_port)),
                         Notification(Notify.NAT_DETECTION_DESTINATION_IP,
                                      nat_hash(self.spi_i, zero, self.cfg.remote_addr, self.cfg.remote_port))]
        payloads += extra or []
        self.init_request = Message(self.spi_i, b"\0" * 8, Exchange.IKE_SA_INIT, Flag.INITIATOR, 0,
                                    payloads).encode()
        self.pending = Pending(Exchange.IKE_SA_INIT, 0, self.init_request, "IKE_SA_INIT")
        return self.init_request

    def take_sa_init(self, data: bytes) -> Result:
        """The responder's IKE_SA_INIT answer.  ``cookie``/``invalid_ke``: send ``sa_init()`` again (the cookie
        or group is taken); ``refused``: an error notify; ``ok``: the IKE SA's keys are derived."""
        msg = Message.decode(data)
        cookie = msg.notify(Notify.COOKIE)
        if cookie is not None:
            self.cookie = cookie.data
            return Result("cookie", msg, f"COOKIE of {len(cookie.data)} octets", notify=cookie)
        bad_ke = msg.notify(Notify.INVALID_KE_PAYLOAD)
        if bad_ke is not None:
            if len(bad_ke.data) != 2:
                raise ProtocolError(f"INVALID_KE_PAYLOAD carries {len(bad_ke.data)} octets, not a 2-octet group "
                                    "(RFC 7296 §3.10.1)")
            want = struct.unpack("!H", bad_ke.data)[0]
            self.group, self.dh = want, None
            return Result("invalid_ke", msg, f"INVALID_KE_PAYLOAD asks for group {want}", notify=bad_ke)
        if msg.errors():
            n = msg.errors()[0]
            return Result("refused", msg, f"{n.label()}", notify=n)
        sa, ke, nonce = msg.get(SA), msg.get(KE), msg.get(Nonce)
        if sa is None or ke is None or nonce is None:
            missing = [n for n, p in (("SA", sa), ("KE", ke), ("Nr", nonce)) if p is None]
            raise ProtocolError(f"the IKE_SA_INIT response lacks {', '.join(missing)} and carries no error notify")
        if len(sa.proposals) != 1:
            raise ProtocolError(f"the IKE_SA_INIT response's SA carries {len(sa.proposals)} proposals, not the "
                                "one chosen (RFC 7296 §2.7)")
        chosen = chosen_from(sa.proposals[0])
        problem = _not_offered(chosen, self._offered)
        if problem:
            raise ProtocolError(f"the responder chose {chosen.label()}, {problem}")
        if ke.group != self.group or chosen.group != self.group:
            raise ProtocolError(f"the responder's KE is group {ke.group} (SA says {chosen.group}), but the request's "
                                f"KE was group {self.group}")
        if not 16 <= len(nonce.data) <= 256:
            raise ProtocolError(f"Nr of {len(nonce.data)} octets (RFC 7296 §3.9: 16 to 256)")
        if msg.spi_r == b"\0" * 8:
            raise ProtocolError("the IKE_SA_INIT response has a zero responder SPI")
        gir = self.dh.shared(ke.data)
        self.spi_r, self.nr = msg.spi_r, nonce.data
        self.init_response = data
        self._derive(chosen, gir, initiator=True)
        self.nat_detected = self._nat_in(msg)
        self.pending = None
        return Result("ok", msg, f"chose {chosen.label()}")

    def _nat_in(self, msg: Message) -> bool:
        """Do the responder's NAT_DETECTION hashes say a NAT (or a forced UDP encapsulation) is in the path?"""
        src, dst = msg.notify(Notify.NAT_DETECTION_SOURCE_IP), msg.notify(Notify.NAT_DETECTION_DESTINATION_IP)
        if src is None or dst is None:
            return False
        return (src.data != nat_hash(msg.spi_i, msg.spi_r, self.cfg.remote_addr, self.cfg.remote_port)
                or dst.data != nat_hash(msg.spi_i, msg.spi_r, self.cfg.local_addr, self.cfg.local_port))

    def _derive(self, chosen: Chosen, gir: bytes, *, initiator: bool) -> None:
        p = crypto.prf(chosen.prf)
        e = crypto.encr(chosen.encr, chosen.key_bits)
        a = None if e.aead else crypto.integ(chosen.integ)
        seed = crypto.skeyseed(p, self.ni, self.nr, gir)
        keys = crypto.ike_keys(p, seed, self.ni, self.nr, self.spi_i, self.spi_r, a.key_size if a else 0, e.key_size)
        self.ike = IkeSa(initiator, self.spi_i, self.spi_r, chosen, keys, self.ni, self.nr)
        self.ike.next_request = 1 if initiator else 0
        self.ike.next_peer_request = 0 if initiator else 1

    # == IKE_AUTH, initiator ==========================================================================================
    def _auth_payload(self, initiator: bool, id_payload: Identification, psk: bytes | None = None) -> Auth:
        ike = self.ike
        real = self.init_request if initiator else self.init_response
        nonce = self.nr if initiator else self.ni
        sk_p = ike.keys.sk_pi if initiator else ike.keys.sk_pr
        octets = crypto.signed_octets(real, nonce, ike.prf, sk_p, id_payload.encoded_body())
        if self.cfg.private_key is not None and psk is None:
            method, data = crypto.sign(self.cfg.private_key, octets)
            return Auth(method, data)
        key = psk if psk is not None else self.cfg.psk
        if key is None:
            raise ValueError("no pre-shared key and no private key: the tester cannot authenticate")
        return Auth(AuthMethod.PSK, crypto.psk_auth(ike.prf, key, octets))

    def auth(self, *, esp_proposals: list[Proposal] | None = None, psk: bytes | None = None,
             ts_i: list[Selector] | None = None, ts_r: list[Selector] | None = None,
             initial_contact: bool = True, transport: bool | None = None, with_child: bool = True,
             extra: list[Payload] | None = None) -> bytes:
        """The IKE_AUTH request (Message ID 1): IDi [CERT] [N(INITIAL_CONTACT)] [IDr] AUTH [N(USE_TRANSPORT_MODE)]
        SA TSi TSr, protected."""
        ike = self.ike
        idi = self.cfg.local_id.payload(True)
        payloads: list[Payload] = [idi]
        if self.cfg.cert is not None and psk is None and self.cfg.private_key is not None:
            payloads.append(Cert(4, self.cfg.cert))
        if self.cfg.trust:  # CERTREQ: the peer is to send its certificate (§3.7)
            from .certs import certreq_data
            payloads.append(Cert(4, certreq_data(self.cfg.trust), request=True))
        if initial_contact:
            payloads.append(Notification(Notify.INITIAL_CONTACT))
        if self.cfg.remote_id is not None:
            payloads.append(self.cfg.remote_id.payload(False))
        payloads.append(self._auth_payload(True, idi, psk))
        state: dict = {}
        if with_child:
            spi = os.urandom(4)
            offered = [Proposal(p.num, Proto.ESP, p.transforms, spi) for p in (esp_proposals or self.cfg.esp_proposals)]
            want_transport = self.cfg.transport_mode if transport is None else transport
            if want_transport:
                payloads.append(Notification(Notify.USE_TRANSPORT_MODE))
            tsi, tsr = ts_i or self.cfg.ts_local, ts_r or self.cfg.ts_remote
            payloads += [SA(offered), TS(True, tsi), TS(False, tsr)]
            state = {"spi": spi, "offered": offered, "transport": want_transport, "tsi": tsi, "tsr": tsr}
        payloads += extra or []
        data = ike.protect(Exchange.IKE_AUTH, 1, payloads, response=False)
        ike.next_request = 2
        self.pending = Pending(Exchange.IKE_AUTH, 1, data, "IKE_AUTH", state)
        return data

    def take_auth(self, data: bytes) -> Result:
        """The responder's IKE_AUTH answer: its AUTH verified and the CHILD_SA keyed (``ok``), or what it
        refused (``refused``: AUTHENTICATION_FAILED, NO_PROPOSAL_CHOSEN, TS_UNACCEPTABLE ...)."""
        msg = self.ike.open(data)
        state = self.pending.state if self.pending else {}
        self.pending = None
        if msg.get(Auth) is None:
            n = msg.errors()[0] if msg.errors() else None
            return Result("refused", msg, n.label() if n else "no AUTH and no error notify", notify=n)
        idr = msg.get(Identification, initiator=False)
        if idr is None:
            raise ProtocolError("the IKE_AUTH response has an AUTH but no IDr")
        self._verify_auth(msg, idr, responder=True)
        child_err = next((n for n in msg.errors()), None)
        if not state:
            return Result("ok", msg, "IKE SA authenticated (no CHILD_SA asked for)")
        if msg.get(SA) is None:
            return Result("refused", msg, f"IKE SA up, CHILD_SA refused: {child_err.label() if child_err else '?'}",
                          notify=child_err)
        child = self._child_from_response(msg, state, self.ni, self.nr, gir=b"")
        return Result("ok", msg, f"IKE SA authenticated; {child.label()}", child=child)

    def _verify_auth(self, msg: Message, id_payload: Identification, *, responder: bool) -> None:
        """The peer's AUTH over its signed octets (§2.15); ProtocolError when it does not verify."""
        auth = msg.get(Auth)
        ike = self.ike
        real = self.init_response if responder else self.init_request
        nonce = self.ni if responder else self.nr
        sk_p = ike.keys.sk_pr if responder else ike.keys.sk_pi
        octets = crypto.signed_octets(real, nonce, ike.prf, sk_p, id_payload.raw or id_payload.encoded_body())
        who = "responder" if responder else "initiator"
        if auth.method == AuthMethod.PSK:
            if self.cfg.psk is None:
                raise ProtocolError(f"the {who} authenticated with a shared key; the tester expects a signature")
            if auth.data != crypto.psk_auth(ike.prf, self.cfg.psk, octets):
                raise ProtocolError(f"the {who}'s AUTH (shared key MIC) does not verify with the configured PSK")
            return
        from .certs import peer_public_key

        key = peer_public_key(msg, self.cfg.trust)
        try:
            crypto.verify(key, auth.method, auth.data, octets)
        except crypto.CryptoError as exc:
            raise ProtocolError(f"the {who}'s AUTH ({enum_name(AuthMethod, auth.method)}): {exc}") from None

    def _child_from_response(self, msg: Message, state: dict, ni: bytes, nr: bytes, gir: bytes) -> ChildSa:
        p, chosen = _answered_proposal(msg, state["offered"], 4, "the CHILD_SA")
        tsi, tsr = msg.get(TS, initiator=True), msg.get(TS, initiator=False)
        if tsi is None or tsr is None:
            raise ProtocolError("the CHILD_SA response lacks TSi or TSr")
        transport = msg.notify(Notify.USE_TRANSPORT_MODE) is not None
        if state.get("transport") is False and transport:
            raise ProtocolError("the responder answered USE_TRANSPORT_MODE to a tunnel mode request (§1.3.1)")
        child = child_sa(self.ike, chosen, exchange_initiator=True, ni=ni, nr=nr, spi_in=state["spi"], spi_out=p.spi,
                         ts_local=tsi.selectors, ts_remote=tsr.selectors, transport=transport, gir=gir)
        self.children.append(child)
        return child

    # == IKE_SA_INIT and IKE_AUTH, responder ===========================================================================
    def cookie_for(self, msg: Message, src: str) -> bytes:
        """A stateless cookie (§2.6): <VersionIDofSecret> | Hash(Ni | IPi | SPIi | <secret>)."""
        nonce = msg.get(Nonce)
        ni = nonce.data if nonce else b""
        return b"\x01" + hashlib.sha256(ni + ipaddress.ip_address(src).packed + msg.spi_i
                                        + self._cookie_secret).digest()

    def answer_sa_init(self, data: bytes, *, require_cookie: bool = False, demand_group: int | None = None,
                       acceptable: list[Proposal] | None = None) -> tuple[bytes | None, Result]:
        """The response to an IKE_SA_INIT request, and what the request meant: ``cookie`` (a COOKIE was
        demanded, or the right one echoed is not there), ``invalid_ke``, ``refused`` (NO_PROPOSAL_CHOSEN), ``ok``."""
        msg = Message.decode(data)
        if msg.is_response or msg.exchange != Exchange.IKE_SA_INIT or msg.msg_id != 0:
            raise ProtocolError(f"not an IKE_SA_INIT request: {msg.label()}")

        def reply(payloads):
            return Message(msg.spi_i, b"\0" * 8, Exchange.IKE_SA_INIT, Flag.RESPONSE, 0, payloads).encode()

        if require_cookie:
            want = self.cookie_for(msg, self.cfg.remote_addr)
            got = msg.notify(Notify.COOKIE)
            if got is None or got.data != want:
                first = msg.payloads[0] if msg.payloads else None
                where = ("first" if first is got else "not first") if got is not None else "absent"
                return reply([Notification(Notify.COOKIE, want)]), Result(
                    "cookie", msg, f"COOKIE {where}" + ("" if got is None or got.data == want else ", wrong value"),
                    notify=got)
            if msg.payloads[0] is not got:
                return reply([Notification(Notify.COOKIE, want)]), Result(
                    "cookie", msg, "the COOKIE is not the first payload (RFC 7296 §2.6)", notify=got)
        sa, ke, nonce = msg.get(SA), msg.get(KE), msg.get(Nonce)
        if sa is None or ke is None or nonce is None:
            missing = [n for n, p in (("SA", sa), ("KE", ke), ("Ni", nonce)) if p is None]
            return reply([Notification(Notify.INVALID_SYNTAX)]), Result("protocol", msg, f"lacks {', '.join(missing)}")
        chosen = choose(sa.proposals, acceptable or self.cfg.ike_proposals)
        if chosen is None:
            return reply([Notification(Notify.NO_PROPOSAL_CHOSEN)]), Result(
                "refused", msg, "no acceptable proposal: " + "; ".join(p.label() for p in sa.proposals))
        group = chosen.group
        if demand_group is not None:
            offered = {t.id for p in sa.proposals for t in p.of_type(TT.DH)}
            if demand_group in offered:
                group = demand_group
        if ke.group != group:
            return reply([Notification(Notify.INVALID_KE_PAYLOAD, struct.pack("!H", group))]), Result(
                "invalid_ke", msg, f"KE group {ke.group}, group {group} wanted")
        if group != chosen.group:
            chosen = Chosen(chosen.proto, chosen.encr, chosen.key_bits, chosen.integ, chosen.prf, group, chosen.esn,
                            chosen.num, chosen.spi)
        self.peer_init_request = msg
        self.spi_i, self.ni = msg.spi_i, nonce.data
        self.spi_r = os.urandom(8)
        self.nr = os.urandom(self.cfg.nonce_size)
        self.dh = crypto.DhKey(group)
        self.init_request = data
        payloads: list[Payload] = [SA([chosen.proposal()]), KE(group, self.dh.public), Nonce(self.nr)]
        src_hash = nat_hash(self.spi_i, self.spi_r, self.cfg.local_addr, self.cfg.local_port)
        if self.cfg.fake_nat:
            src_hash = os.urandom(20)
        payloads += [Notification(Notify.NAT_DETECTION_SOURCE_IP, src_hash),
                     Notification(Notify.NAT_DETECTION_DESTINATION_IP,
                                  nat_hash(self.spi_i, self.spi_r, self.cfg.remote_addr, self.cfg.remote_port))]
        if self.cfg.trust:
            from .certs import certreq_data
            payloads.append(Cert(4, certreq_data(self.cfg.trust), request=True))
        gir = self.dh.shared(ke.data)
        out = Message(self.spi_i, self.spi_r, Exchange.IKE_SA_INIT, Flag.RESPONSE, 0, payloads).encode()
        self.init_response = out
        self._derive(chosen, gir, initiator=False)
        self.nat_detected = self.cfg.fake_nat or self._nat_in_request(msg)
        return out, Result("ok", msg, f"chose {chosen.label()}")

    def _nat_in_request(self, msg: Message) -> bool:
        src, dst = msg.notify(Notify.NAT_DETECTION_SOURCE_IP), msg.notify(Notify.NAT_DETECTION_DESTINATION_IP)
        if src is None or dst is None:
            return False
        zero = b"\0" * 8
        return (src.data != nat_hash(msg.spi_i, zero, self.cfg.remote_addr, self.cfg.remote_port)
                or dst.data != nat_hash(msg.spi_i, zero, self.cfg.local_addr, self.cfg.local_port))

    def answer_auth(self, data: bytes, *, psk: bytes | None = None,
                    acceptable: list[Proposal] | None = None) -> tuple[bytes, Result]:
        """The response to the initiator's IKE_AUTH: its AUTH checked (AUTHENTICATION_FAILED when it does not
        verify), a CHILD_SA chosen and keyed (an error notify beside our AUTH when none is acceptable)."""
        ike = self.ike
        msg = ike.open(data)
        if msg.exchange != Exchange.IKE_AUTH or msg.is_response or msg.msg_id != 1:
            raise ProtocolError(f"not the IKE_AUTH request: {msg.label()}")
        ike.next_peer_request = 2
        idi = msg.get(Identification, initiator=True)
        if idi is None or msg.get(Auth) is None:
            out = ike.protect(Exchange.IKE_AUTH, 1, [Notification(Notify.AUTHENTICATION_FAILED)], response=True)
            return self._sent(1, out), Result("refused", msg, "no IDi or AUTH")
        try:
            self._verify_auth(msg, idi, responder=False)
        except ProtocolError as exc:
            out = ike.protect(Exchange.IKE_AUTH, 1, [Notification(Notify.AUTHENTICATION_FAILED)], response=True)
            return self._sent(1, out), Result("refused", msg, str(exc))
        idr = self.cfg.local_id.payload(False)
        payloads: list[Payload] = [idr]
        if self.cfg.cert is not None and self.cfg.private_key is not None and psk is None:
            payloads.append(Cert(4, self.cfg.cert))
        payloads.append(self._auth_payload(False, idr, psk))
        sa = msg.get(SA)
        if sa is None:
            out = ike.protect(Exchange.IKE_AUTH, 1, payloads, response=True)
            return self._sent(1, out), Result("ok", msg, "IKE SA authenticated (no CHILD_SA asked for)")
        extra, child, detail = self._answer_child(msg, sa, acceptable, self.ni, self.nr, gir=b"")
        payloads += extra
        out = ike.protect(Exchange.IKE_AUTH, 1, payloads, response=True)
        return self._sent(1, out), Result("ok", msg, detail, child=child)

    def _answer_child(self, msg: Message, sa: SA, acceptable, ni: bytes, nr: bytes, gir: bytes,
                      rekeyed: ChildSa | None = None) -> tuple[list[Payload], ChildSa | None, str]:
        """The payloads answering a CHILD_SA request (SA, TSi, TSr and USE_TRANSPORT_MODE), the CHILD_SA, a detail."""
        chosen = choose(sa.proposals, acceptable or self.cfg.esp_proposals, want_group=bool(gir))
        if chosen is None:
            return [Notification(Notify.NO_PROPOSAL_CHOSEN)], None, "no acceptable ESP proposal"
        tsi, tsr = msg.get(TS, initiator=True), msg.get(TS, initiator=False)
        if tsi is None or tsr is None:
            return [Notification(Notify.TS_UNACCEPTABLE)], None, "no TSi/TSr"
        ni_sel = _narrow(tsi.selectors, self.cfg.ts_remote)
        nr_sel = _narrow(tsr.selectors, self.cfg.ts_local)
        if not ni_sel or not nr_sel:
            return [Notification(Notify.TS_UNACCEPTABLE)], None, "traffic selectors unacceptable"
        transport = msg.notify(Notify.USE_TRANSPORT_MODE) is not None and self.cfg.transport_mode
        spi = os.urandom(4)
        p = chosen.proposal()
        p.spi = spi
        out: list[Payload] = []
        if transport:
            out.append(Notification(Notify.USE_TRANSPORT_MODE))
        out += [SA([p]), TS(True, ni_sel), TS(False, nr_sel)]
        child = child_sa(self.ike, chosen, exchange_initiator=False, ni=ni, nr=nr, spi_in=spi, spi_out=chosen.spi,
                         ts_local=nr_sel, ts_remote=ni_sel, transport=transport, gir=gir)
        self.children.append(child)
        if rekeyed is not None and rekeyed in self.children:
            rekeyed.rekeyed_by = child
        return out, child, child.label()

    def _sent(self, msg_id: int, out: bytes) -> bytes:
        self.last_response = (msg_id, out)
        return out

    # == on the established IKE SA ======================================================================================
    def request(self, exchange: int, payloads: list[Payload], what: str, state: dict | None = None,
                **protect) -> bytes:
        """A protected request with the next Message ID (kept in ``pending`` for the retransmissions)."""
        ike = self.ike
        mid = ike.next_request
        data = ike.protect(exchange, mid, payloads, response=False, **protect)
        ike.next_request += 1
        self.pending = Pending(exchange, mid, data, what, state or {})
        return data

    def informational(self, payloads: list[Payload] | None = None, what: str = "liveness check") -> bytes:
        return self.request(Exchange.INFORMATIONAL, payloads or [], what)

    def delete_child(self, child: ChildSa) -> bytes:
        return self.request(Exchange.INFORMATIONAL, [Delete(Proto.ESP, [child.spi_in])], "DELETE of a CHILD_SA",
                            {"delete": child})

    def delete_ike(self) -> bytes:
        return self.request(Exchange.INFORMATIONAL, [Delete(Proto.IKE, [])], "DELETE of the IKE SA")

    def take_response(self, data: bytes) -> Result:
        """A response on the established IKE SA to ``pending`` (INFORMATIONAL or CREATE_CHILD_SA)."""
        msg = self.ike.open(data)
        pend = self.pending
        if pend is None or not msg.is_response or msg.msg_id != pend.msg_id:
            raise ProtocolError(f"{msg.label()} answers no request the tester has outstanding")
        self.pending = None
        if pend.exchange == Exchange.INFORMATIONAL:
            if "delete" in pend.state:
                child = pend.state["delete"]
                d = msg.get(Delete)
                if child in self.children:
                    self.children.remove(child)
                if d is None:
                    return Result("ok", msg, "DELETE answered without the paired SA's Delete payload")
                return Result("ok", msg, f"DELETE answered, the peer deleted SPI(s) "
                                         f"{', '.join('0x' + s.hex() for s in d.spis)}")
            return Result("ok", msg, "answered")
        if pend.exchange == Exchange.CREATE_CHILD_SA:
            return self._take_create_child(msg, pend)
        raise ProtocolError(f"unexpected pending exchange {pend.exchange}")

    def create_child(self, *, esp_proposals: list[Proposal] | None = None, pfs_group: int | None = None,
                     rekey: ChildSa | None = None, ts_i: list[Selector] | None = None,
                     ts_r: list[Selector] | None = None, transport: bool | None = None) -> bytes:
        """CREATE_CHILD_SA for a new CHILD_SA, or rekeying ``rekey`` (N(REKEY_SA) with its inbound SPI), with
        a KE of ``pfs_group`` when given (§1.3.1, §1.3.3)."""
        spi = os.urandom(4)
        groups = [pfs_group] if pfs_group else []
        props = []
        for p in esp_proposals or self.cfg.esp_proposals:
            ts = [t for t in p.transforms if t.type != TT.DH]
            # keep ESN last: RFC 7296 does not fix an order, strongSwan writes DH before ESN
            esn = [t for t in ts if t.type == TT.ESN]
            ts = [t for t in ts if t.type != TT.ESN] + [Transform(TT.DH, g) for g in groups] + esn
            props.append(Proposal(p.num, Proto.ESP, ts, spi))
        ni = os.urandom(self.cfg.nonce_size)
        payloads: list[Payload] = []
        if rekey is not None:
            payloads.append(Notification(Notify.REKEY_SA, proto=Proto.ESP, spi=rekey.spi_in))
        want_transport = self.cfg.transport_mode if transport is None else transport
        if want_transport:
            payloads.append(Notification(Notify.USE_TRANSPORT_MODE))
        payloads += [SA(props), Nonce(ni)]
        dh = None
        if pfs_group:
            dh = crypto.DhKey(pfs_group)
            payloads.append(KE(pfs_group, dh.public))
        tsi = ts_i or (rekey.ts_local if rekey else self.cfg.ts_local)
        tsr = ts_r or (rekey.ts_remote if rekey else self.cfg.ts_remote)
        payloads += [TS(True, tsi), TS(False, tsr)]
        return self.request(Exchange.CREATE_CHILD_SA, payloads,
                            "CREATE_CHILD_SA rekeying a CHILD_SA" if rekey else "CREATE_CHILD_SA",
                            {"kind": "child", "spi": spi, "offered": props, "ni": ni, "dh": dh, "rekey": rekey,
                             "transport": want_transport})

    def rekey_ike(self, *, proposals: list[Proposal] | None = None, group: int | None = None) -> bytes:
        """CREATE_CHILD_SA rekeying the IKE SA (§1.3.2): SA (IKE, a new 8-octet SPI), Ni, KEi."""
        spi = os.urandom(8)
        props = [Proposal(p.num, Proto.IKE, p.transforms, spi) for p in (proposals or self.cfg.ike_proposals)]
        g = group or self.ike.chosen.group
        dh = crypto.DhKey(g)
        ni = os.urandom(self.cfg.nonce_size)
        return self.request(Exchange.CREATE_CHILD_SA, [SA(props), Nonce(ni), KE(g, dh.public)],
                            "CREATE_CHILD_SA rekeying the IKE SA",
                            {"kind": "ike", "spi": spi, "offered": props, "ni": ni, "dh": dh})

    def _take_create_child(self, msg: Message, pend: Pending) -> Result:
        st = pend.state
        if msg.get(SA) is None:
            n = msg.errors()[0] if msg.errors() else None
            return Result("refused", msg, n.label() if n else "no SA and no error notify", notify=n)
        nonce, ke = msg.get(Nonce), msg.get(KE)
        if nonce is None:
            raise ProtocolError("the CREATE_CHILD_SA response lacks Nr")
        gir = b""
        if st["dh"] is not None:
            if ke is None:
                raise ProtocolError("the CREATE_CHILD_SA response lacks the KE the request's group needs")
            if ke.group != st["dh"].group:
                raise ProtocolError(f"the response's KE is group {ke.group}, the request's {st['dh'].group}")
            gir = st["dh"].shared(ke.data)
        if st["kind"] == "ike":
            return self._take_rekey_ike(msg, st, nonce.data, gir)
        child = self._child_from_response(msg, {**st, "spi": st["spi"]}, st["ni"], nonce.data, gir)
        if st.get("rekey") is not None:
            st["rekey"].rekeyed_by = child
        return Result("ok", msg, child.label(), child=child)

    def _take_rekey_ike(self, msg: Message, st: dict, nr: bytes, gir: bytes) -> Result:
        p, chosen = _answered_proposal(msg, st["offered"], 8, "the new IKE SA")
        new = self._new_ike(chosen, st["spi"], p.spi, st["ni"], nr, gir, initiator=True)
        return Result("ok", msg, f"new IKE SA 0x{new.spi_i.hex()}/0x{new.spi_r.hex()} ({chosen.label()})")

    def _new_ike(self, chosen: Chosen, spi_i: bytes, spi_r: bytes, ni: bytes, nr: bytes, gir: bytes, *,
                 initiator: bool) -> IkeSa:
        """The IKE SA a rekey made (§2.18): the old one is kept in ``old_ikes`` until deleted."""
        old = self.ike
        p = crypto.prf(chosen.prf)
        e = crypto.encr(chosen.encr, chosen.key_bits)
        a = None if e.aead else crypto.integ(chosen.integ)
        seed = crypto.rekey_skeyseed(old.prf, old.sk_d, gir, ni, nr)
        keys = crypto.ike_keys(p, seed, ni, nr, spi_i, spi_r, a.key_size if a else 0, e.key_size)
        new = IkeSa(initiator, spi_i, spi_r, chosen, keys, ni, nr)
        self.old_ikes.append(old)
        self.ike = new
        return new

    # -- the peer's requests ---------------------------------------------------------------------------------------
    def answer(self, data: bytes, ike: IkeSa | None = None) -> tuple[bytes | None, Result]:
        """Answer a request the peer sent on the IKE SA (or an old one): liveness, DELETE, CREATE_CHILD_SA.
        A retransmitted request gets the same response again (§2.1)."""
        ike = ike or self.ike
        msg = ike.open(data)
        if msg.is_response:
            raise ProtocolError(f"{msg.label()} is a response, not a request")
        if self.last_response and msg.msg_id == self.last_response[0] and ike is self.ike \
                and msg.msg_id < ike.next_peer_request:
            return self.last_response[1], Result("ok", msg, "retransmitted request: the same response again")
        if msg.msg_id != ike.next_peer_request:
            return None, Result("protocol", msg, f"Message ID {msg.msg_id}, expected {ike.next_peer_request}")
        ike.next_peer_request += 1
        if msg.exchange == Exchange.INFORMATIONAL:
            out: list[Payload] = []
            what = "liveness check" if not msg.inner else "INFORMATIONAL"
            for d in [p for p in msg.inner if isinstance(p, Delete)]:
                if d.proto == Proto.IKE:
                    what = "DELETE of the IKE SA"
                    if ike is self.ike:
                        self.deleted = True
                    else:
                        self.old_ikes = [o for o in self.old_ikes if o is not ike]
                    out = []
                    break
                gone = [c for c in self.children if c.spi_out in d.spis]
                for c in gone:
                    self.children.remove(c)
                what = f"DELETE of CHILD_SA(s) {', '.join('0x' + s.hex() for s in d.spis)}"
                if gone:
                    out.append(Delete(Proto.ESP, [c.spi_in for c in gone]))
            resp = ike.protect(Exchange.INFORMATIONAL, msg.msg_id, out, response=True)
            return self._sent(msg.msg_id, resp), Result("ok", msg, what)
        if msg.exchange == Exchange.CREATE_CHILD_SA:
            return self._answer_create_child(msg, ike)
        resp = ike.protect(msg.exchange, msg.msg_id, [Notification(Notify.INVALID_SYNTAX)], response=True)
        return self._sent(msg.msg_id, resp), Result("protocol", msg, f"unexpected {msg.label()}")

    def _answer_create_child(self, msg: Message, ike: IkeSa) -> tuple[bytes, Result]:
        sa, nonce, ke = msg.get(SA), msg.get(Nonce), msg.get(KE)
        if sa is None or nonce is None:
            resp = ike.protect(msg.exchange, msg.msg_id, [Notification(Notify.INVALID_SYNTAX)], response=True)
            return self._sent(msg.msg_id, resp), Result("protocol", msg, "CREATE_CHILD_SA without SA or Ni")
        nr = os.urandom(self.cfg.nonce_size)
        dh, gir = None, b""
        if ke is not None:
            dh = crypto.DhKey(ke.group)
            gir = dh.shared(ke.data)
        if sa.proposals and sa.proposals[0].proto == Proto.IKE:  # the peer rekeys the IKE SA
            chosen = choose(sa.proposals, self.cfg.ike_proposals)
            if chosen is None or ke is None:
                resp = ike.protect(msg.exchange, msg.msg_id, [Notification(Notify.NO_PROPOSAL_CHOSEN)], response=True)
                return self._sent(msg.msg_id, resp), Result("refused", msg, "IKE rekey: no acceptable proposal")
            spi_r = os.urandom(8)
            p = chosen.proposal()
            p.spi = spi_r
            payloads = [SA([p]), Nonce(nr), KE(dh.group, dh.public)]
            resp = ike.protect(msg.exchange, msg.msg_id, payloads, response=True)
            self._sent(msg.msg_id, resp)
            new = self._new_ike(chosen, chosen.spi, spi_r, nonce.data, nr, gir, initiator=False)
            return resp, Result("ok", msg, f"the peer rekeyed the IKE SA: new 0x{new.spi_i.hex()}/0x{new.spi_r.hex()}")
        rekey_n = msg.notify(Notify.REKEY_SA)
        old = None
        if rekey_n is not None:
            old = next((c for c in self.children if c.spi_out == rekey_n.spi), None)
        extra, child, detail = self._answer_child(msg, sa, None, nonce.data, nr, gir, rekeyed=old)
        payloads = extra
        if child is not None:  # SA, Nr, [KEr], TSi, TSr (§1.3.1)
            payloads = [p for p in extra if not isinstance(p, TS)] + [Nonce(nr)]
            if dh is not None:
                payloads.append(KE(dh.group, dh.public))
            payloads += [p for p in extra if isinstance(p, TS)]
        resp = ike.protect(msg.exchange, msg.msg_id, payloads, response=True)
        what = ("the peer rekeyed CHILD_SA 0x" + rekey_n.spi.hex() if rekey_n else "the peer created a CHILD_SA")
        return self._sent(msg.msg_id, resp), Result("ok" if child else "refused", msg, f"{what}: {detail}",
                                                    child=child)


def _first_group(props: list[Proposal]) -> int:
    for p in props:
        g = p.first(TT.DH)
        if g is not None:
            return g.id
    raise ValueError("the IKE proposals name no Diffie-Hellman group")


def _answered_proposal(msg: Message, offered: list[Proposal], spi_size: int, what: str) -> tuple[Proposal, Chosen]:
    """The one proposal a response's SA carries for ``what``, checked against the offer (§2.7, §3.3.1)."""
    sa = msg.get(SA)
    if len(sa.proposals) != 1:
        raise ProtocolError(f"the SA for {what} carries {len(sa.proposals)} proposals, not the one chosen")
    p = sa.proposals[0]
    chosen = chosen_from(p)
    problem = _not_offered(chosen, offered)
    if problem:
        raise ProtocolError(f"the responder chose {chosen.label()} for {what}, {problem}")
    if len(p.spi) != spi_size:
        raise ProtocolError(f"the responder's SPI for {what} has {len(p.spi)} octets, not {spi_size}")
    return p, chosen


def _not_offered(chosen: Chosen, offered: list[Proposal]) -> str | None:
    """Why ``chosen`` is not one of the transforms of an offered proposal (None: it is)."""
    for p in offered:
        if p.num != chosen.num and len(offered) > 1:
            continue
        problems = []
        for ttype, tid, bits in ((TT.ENCR, chosen.encr, chosen.key_bits), (TT.PRF, chosen.prf, None),
                                 (TT.INTEG, chosen.integ, None), (TT.DH, chosen.group, None),
                                 (TT.ESN, chosen.esn, None)):
            if tid is None:
                continue
            have = p.of_type(ttype)
            if not any(t.id == tid and (ttype != TT.ENCR or t.key_length == bits) for t in have):
                problems.append(f"{ttype.name} {tid}{'/' + str(bits) if bits else ''} was not offered in proposal "
                                f"{p.num}")
        return "; ".join(problems) or None
    return f"proposal number {chosen.num} was not offered"


def _narrow(offered: list[Selector], allowed: list[Selector]) -> list[Selector]:
    """The parts of ``offered`` inside ``allowed`` (each selector the intersection of one of each), §2.9."""
    out = []
    for o in offered:
        for a in allowed:
            if o.ts_type != a.ts_type:
                continue
            lo = max(ipaddress.ip_address(o.start), ipaddress.ip_address(a.start))
            hi = min(ipaddress.ip_address(o.end), ipaddress.ip_address(a.end))
            if lo > hi:
                continue
            if o.proto and a.proto and o.proto != a.proto:
                continue
            sp, ep = max(o.start_port, a.start_port), min(o.end_port, a.end_port)
            if sp > ep:
                continue
            sel = Selector(str(lo), str(hi), o.proto or a.proto, sp, ep)
            if sel not in out:
                out.append(sel)
    return out

