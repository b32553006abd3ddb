"""What the IKEv2 checks share: the tester's IKE node on the link, its IKE
peer state toward the DUT, the DUT's initiation, ESP traffic on a CHILD_SA,
and the evidence (Wireshark decryption tables next to the pcap).

The tester's IKE node has the address the DUT's configuration knows it by
(``extensions.ikev2.tester_address``) and a MAC derived from it, so a DUT
that keeps neighbour entries across checks keeps a right one.  Every IKE SA
a check leaves up is deleted when the check ends (INFORMATIONAL DELETE),
so a DUT the run does not reset is left as it was found.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, IPv6
from scapy.layers.l2 import Ether

from ...core.context import CheckContext, NotApplicable
from ...core.control import NotSupported
from ...net import packets as P
from ...net.ikev2 import exchange as X
from ...net.ikev2 import keylog
from ...net.ikev2.codec import IkeParseError, Message
from ...net.ikev2.crypto import CryptoError
from ...net.ikev2.peer import Config, Identity, IkePeer, ProtocolError, Result
from ...net.ikev2.traffic import EspPair, TrafficError
from ...net.nodes import EmulatedNode
from .settings import IkeSettings, settings

#: the check that judges an IKE SA coming up with the DUT as responder (the precondition of the others)
JUDGED_BY_RESPONDER = "ikev2.ike_sa_with_each_rfc8247_must_suite#A"
JUDGED_BY_INITIATOR = "ikev2.dut_initiates_with_the_rfc8247_must_transforms"
#: RFC 8247 §3.1: the MUST transforms (ENCR_AES_CBC 128, PRF_HMAC_SHA2_256, AUTH_HMAC_SHA2_256_128, group 14)
MUST_SUITE = "aes128-sha256-modp2048"


def cfg(t) -> IkeSettings:
    if not hasattr(t, "_ikev2_settings"):
        t._ikev2_settings = settings(t.target)
    return t._ikev2_settings


def require_role(t, role: str) -> None:
    s = cfg(t)
    if role not in s.roles:
        raise NotApplicable(f"the DUT does not play the IKEv2 {role} (extensions.ikev2.roles: {', '.join(s.roles)})")


def dut_address(t) -> str:
    return cfg(t).address or t.dut.global_address()


def _mac_for(addr: str) -> str:
    h = hashlib.sha256(addr.encode()).digest()
    return "02:7e:" + ":".join(f"{b:02x}" for b in h[:4])


def tester_node(t) -> EmulatedNode:
    """The tester's IKE end on the link (answers ND for its address; removed when the check ends)."""
    if "IKE" not in t.nodes:
        s = cfg(t)
        addr = s.tester_address
        if addr is None:
            node = t.node("IKE")
        else:
            mac = _mac_for(addr)
            node = EmulatedNode("IKE", mac, P.address_in("fe80::/64", P.eui64_iid(mac)), addr)
            node.answers_echo = False
            t.nodes["IKE"] = node
            t.port.add_responder(node.responder)
            t.note(f"IKE is {node.mac} {node.link_local} {node.global_addr}")
    return t.nodes["IKE"]


@dataclass
class Ike:
    """The tester's IKE end toward the DUT in one check."""
    t: CheckContext
    node: EmulatedNode
    ch: X.Channel
    peer: IkePeer
    auto: X.AutoAnswer
    pairs: dict = field(default_factory=dict)

    @property
    def local(self) -> str:
        return self.ch.local_addr

    @property
    def remote(self) -> str:
        return self.ch.peer_addr


def config(t, *, ike: list[str] | None = None, esp: list[str] | None = None, psk: bytes | None = None,
           **kw) -> Config:
    from ...net.ikev2 import proposals as PR
    from ...net.ikev2.const import Proto

    s = cfg(t)
    node = tester_node(t)
    ike_p = [PR.parse(p, Proto.IKE, num=i + 1) for i, p in enumerate(ike)] if ike else s.ike_proposals()
    esp_p = [PR.parse(p, Proto.ESP, num=i + 1) for i, p in enumerate(esp)] if esp else s.esp_proposals()
    return Config(node.global_addr, dut_address(t), ike_p, esp_p,
                  psk=psk if psk is not None else s.psk().value,
                  local_id=Identity.of(s.tester_identity or node.global_addr),
                  remote_id=Identity.of(s.identity) if s.identity else None,
                  transport_mode=s.mode == "transport", **kw)


def ike(t, **config_kw) -> Ike:
    """A fresh tester IKE end (its own SPIs, nonces) toward the DUT, answering the DUT's requests; its IKE SAs
    are deleted and its tables written when the check ends."""
    node = tester_node(t)
    peer = IkePeer(config(t, **config_kw))
    ch = X.Channel(t.port, node, t.dut.mac, peer.cfg.remote_addr, note=t.note)
    auto = X.AutoAnswer(ch, peer)
    t.port.add_responder(auto)
    end = Ike(t, node, ch, peer, auto)
    t.defer(lambda: t.port.remove_responder(auto))
    t.defer(lambda: _leave(end))
    t.defer(lambda: write_tables(end))
    return end


def _leave(end: Ike) -> None:
    """Delete the IKE SA the check left up (best effort: a DUT that does not answer is the check's to judge)."""
    peer = end.peer
    if peer.ike is None or peer.deleted:
        return
    end.auto.enabled = True
    with end.ch.lock:
        req = peer.delete_ike()
    end.ch.request(req, within=end.t.reply_timeout, retransmits=1)
    peer.deleted = True


def write_tables(end: Ike) -> None:
    """Wireshark's IKEv2 and ESP tables for every SA of the check, next to its pcap."""
    pcap = getattr(end.t, "pcap", None)
    if pcap is None:
        return
    peer = end.peer
    sas = [s for s in [*peer.old_ikes, peer.ike] if s is not None]
    children = {c.spi_in: c for c in [*peer.children, *(p.child for p in end.pairs.values())]}
    esp = [r for c in children.values() for r in keylog.esp_records(c, end.local, end.remote)]
    written = keylog.write(pcap, [keylog.ike_record(s) for s in sas], esp)
    if written:
        end.t.measure("decryption_tables", [p.name for p in written])


# -- exchanges, with the check's words for what went wrong ---------------------------------------------------------
def establish(t, end: Ike, *, judged_by: str = JUDGED_BY_RESPONDER, **auth) -> Result:
    """IKE_SA_INIT and IKE_AUTH with the DUT as responder, for a check that presupposes them: the result of
    IKE_AUTH (with its CHILD_SA), or NOT_JUDGED naming the check that judges the initial exchanges."""
    try:
        res, _ = X.initiate(end.ch, end.peer, t.reply_timeout)
        if not res.ok:
            raise t.not_judged("ike-sa", judged_by, f"IKE_SA_INIT: the DUT answered {res.detail}")
        res = X.authenticate(end.ch, end.peer, t.reply_timeout, **auth)
    except X.NoAnswer as exc:
        raise t.not_judged("ike-sa", judged_by, f"the DUT did not answer: {exc}") from None
    except (ProtocolError, IkeParseError, CryptoError) as exc:
        raise t.not_judged("ike-sa", judged_by, f"the DUT's answer is not acceptable: {exc}") from None
    if not res.ok or res.child is None:
        raise t.not_judged("ike-sa", judged_by, f"IKE_AUTH: {res.detail}")
    t.note(f"IKE SA 0x{end.peer.ike.spi_i.hex()}/0x{end.peer.ike.spi_r.hex()} up; {res.child.label()}")
    return res


def make_dut_initiate(t) -> float:
    """Make the DUT start IKE toward the tester (extensions.ikev2.initiate through the control adapter; else
    an Echo Request to the tester, which a trap policy turns into an initiation).  Returns the port time from
    which its IKE_SA_INIT is awaited."""
    require_role(t, "initiator")
    s = cfg(t)
    since = t.port.now()
    if s.initiate:
        try:
            t.control.command(s.initiate, timeout_s=max(10.0, 5 * t.reply_timeout))
        except NotSupported:
            raise
        t.note(f"asked the DUT to initiate ({s.initiate})")
        return since
    try:
        t.control.ping(s.tester_address, count=1, wait_s=1.0)
    except NotSupported as exc:
        raise NotApplicable(f"the DUT cannot be made to initiate IKE: no extensions.ikev2.initiate command, and "
                            f"{exc}") from None
    t.note(f"made the DUT send an Echo Request to {s.tester_address} (its trap policy initiates IKE)")
    return since


def initiation_wait(t) -> float:
    """How long the DUT's first IKE_SA_INIT may take after it was asked to initiate."""
    return max(10.0, 5 * t.reply_timeout)


def serve_dut(t, end: Ike, *, judged_by: str = JUDGED_BY_INITIATOR, since: float | None = None,
              **answer) -> Result:
    """The DUT initiates; the tester answers its IKE_SA_INIT and IKE_AUTH (NOT_JUDGED when it does not come)."""
    since = make_dut_initiate(t) if since is None else since
    try:
        res, _, seen = X.serve_init(end.ch, end.peer, initiation_wait(t), since, **answer)
        if not res.ok:
            raise t.not_judged("ike-sa", judged_by, f"IKE_SA_INIT: {res.detail}")
        res, _ = X.serve_auth(end.ch, end.peer, initiation_wait(t), seen[-1].time)
    except X.NoAnswer as exc:
        raise t.not_judged("ike-sa", judged_by, str(exc)) from None
    except (ProtocolError, IkeParseError, CryptoError) as exc:
        raise t.not_judged("ike-sa", judged_by, f"the DUT's request is not acceptable: {exc}") from None
    if not res.ok or res.child is None:
        raise t.not_judged("ike-sa", judged_by, f"IKE_AUTH: {res.detail}")
    return res


# -- ESP on a CHILD_SA --------------------------------------------------------------------------------------------
@dataclass
class Echo:
    seq: int
    sent: float
    reply: object | None = None  # the inner ICMPv6 Echo Reply
    esp: object | None = None  # the ESP frame it came in
    clear: object | None = None  # an Echo Reply in the clear for it
    error: str | None = None
    on: object | None = None  # the CHILD_SA the reply came on


def esp_pair(end: Ike, child) -> EspPair:
    if child.spi_in not in end.pairs:
        end.pairs[child.spi_in] = EspPair(child, end.local, end.remote, natt=end.peer.nat_detected)
    return end.pairs[child.spi_in]


def esp_echo(t, end: Ike, child, count: int = 2, within: float | None = None, ident: int = 0x1cec,
             replies_on: list | None = None) -> list[Echo]:
    """Echo Requests in ESP on ``child`` (sequence numbers go on across calls); each with its reply, which may
    come on any CHILD_SA of ``replies_on`` (default: ``child``; a rekey lets the DUT answer on the new one)."""
    pair = esp_pair(end, child)
    inbound = [esp_pair(end, c) for c in (replies_on or [child])]
    out = []
    within = t.reply_timeout if within is None else within
    for _ in range(count):
        seq = pair.out.seq_num
        inner = IPv6(src=end.local, dst=end.remote) / ICMPv6EchoRequest(id=ident, seq=seq & 0xFFFF,
                                                                         data=P.nonce(16))
        frame = Ether(src=end.node.mac, dst=t.dut.mac) / pair.protect(inner)
        sent = t.send(frame, f"Echo Request seq {seq} in ESP SPI 0x{child.spi_out.hex()}")
        e = Echo(seq, sent)

        def reply_to(p, seq=seq):
            if any(q.is_ours(p) for q in inbound):
                return True
            return (ICMPv6EchoReply in p and IPv6 in p and p[IPv6].dst == end.local
                    and p[ICMPv6EchoReply].id == ident and p[ICMPv6EchoReply].seq == seq & 0xFFFF)

        f = t.port.expect(t.from_dut(reply_to), within, since=sent)
        if f is not None:
            q = next((q for q in inbound if q.is_ours(f.pkt)), None)
            if q is not None:
                try:
                    inner = q.open(f.pkt)
                    if ICMPv6EchoReply in inner and inner[ICMPv6EchoReply].seq == seq & 0xFFFF:
                        e.reply, e.esp, e.on = inner, f, q.child
                    else:
                        e.error = f"ESP on SPI 0x{q.child.spi_in.hex()} carried {inner.summary()}, not the Echo Reply"
                except TrafficError as exc:
                    e.error = str(exc)
            else:
                e.clear = f
        out.append(e)
    return out


def echo_problems(echoes: list[Echo], child, what: str = "the CHILD_SA") -> list[str]:
    problems = []
    for e in echoes:
        if e.clear is not None:
            problems.append(f"the Echo Reply to seq {e.seq} came in the clear, not in ESP on {what}")
        elif e.error:
            problems.append(e.error)
        elif e.reply is None:
            problems.append(f"no ESP-protected Echo Reply to the Echo Request seq {e.seq} sent on {what} "
                            f"(SPI 0x{child.spi_out.hex()})")
    return problems


def judge_echoes(seen: list[str], problems: list[str], echoes: list[Echo], child, what: str, carried: str) -> None:
    """Adds to a check's evidence what its Echo Requests on a CHILD_SA gave: each one's problem, or, when every
    one was answered in ESP on the SA, the line `carried` saying so."""
    found = echo_problems(echoes, child, what)
    problems += found
    if not found:
        seen.append(carried)


def decode(data: bytes, end: Ike | None = None) -> Message:
    """A datagram's message, opened with the tester's IKE SA when it can be."""
    if end is not None and end.peer.ike is not None:
        try:
            return end.peer.ike.open(data)
        except (CryptoError, IkeParseError):
            pass
    return Message.decode(data)
