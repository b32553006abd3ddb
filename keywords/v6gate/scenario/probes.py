"""Probe-and-judge steps shared by the IPv6 header, ICMPv6 and PMTU checks:
an Echo Request as the carrier of a probe, and the three outcomes a probe
can have (an Echo Reply, a specific ICMPv6 error, or silence)."""

from __future__ import annotations

from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, IPv6
from scapy.packet import Packet

from ..core.context import CheckContext, NotApplicable
from ..core.verdict import Outcome
from ..net import icmperr
from ..net import match as M
from ..net import packets as P
from ..net.exthdr import IPV6_HEADER_LEN
from ..net.frag import is_fragment, reassemble, same_datagram

#: why a router-only part that needs forwarding between two links is not run
FORWARDING_PARTS = ("this router-only part needs a second link behind the router under test (the packet is "
                    "forwarded there); v6gate's bench drives a single link, so it does not run it")
ECHO_HEADER = 8  # ICMPv6 Echo: type, code, checksum, identifier, sequence number
#: RFC 8200 §4.5: reassembly is abandoned 60 s after the first-arriving fragment
REASSEMBLY_TIMEOUT = 60.0


def deadline_margin(t: CheckContext) -> float:
    """How far the tester stays from a protocol deadline (the 60 s of
    reassembly, the 5 minutes of RFC 8201): a few reply timeouts, never
    less than the 5 s a shared bench's scheduling noise can take."""
    return max(5.0, 3 * t.reply_timeout)


def skip_forwarding_parts(t: CheckContext) -> None:
    """Router-only parts that forward to a second link SKIP (with the reason)."""
    if t.p.__dict__.get("forwarding"):
        raise NotApplicable(FORWARDING_PARTS)


def echo_request(ident: int | None = None, seq: int = 1, size: int | None = None,
                 data: bytes | None = None) -> ICMPv6EchoRequest:
    """An Echo Request with a fresh identifier; ``size`` is the whole IPv6
    packet's length (no extension headers)."""
    if data is None:
        n = 32 if size is None else size - IPV6_HEADER_LEN - ECHO_HEADER
        if n < 0:
            raise ValueError(f"an Echo Request cannot be {size} octets long")
        data = (P.nonce(8) * (n // 8 + 1))[:n]
    ident = int.from_bytes(P.nonce(2), "big") if ident is None else ident
    return ICMPv6EchoRequest(id=ident, seq=seq, data=data)


def invoking(pkt: Packet) -> bytes:
    """The IPv6 packet as the DUT receives it (what an error quotes)."""
    return bytes(pkt[IPv6])


def expect_echo_reply(t: CheckContext, probes, request: Packet, *, what: str = "Echo Reply", within: float | None = None,
                      to: str | None = None, size: int | None = None) -> Outcome:
    """PASS when the DUT answers ``request`` (sent as ``probes``) with an
    Echo Reply carrying its identifier, sequence number and data, to the
    requester (``to``) and, when ``size`` is given, of that IPv6 length."""
    frame = t.expect_reply(probes, M.echo_reply_to(request), what=what, within=within)
    if frame is None:
        return t.conclude(f"no {what} within {within or t.reply_timeout:g} s", [f"no {what}"])
    problems, seen = judge_echo_reply(t, frame, request, to=to, size=size)
    return t.conclude(seen, problems)


def judge_echo_reply(t: CheckContext, frame, request: Packet, *, to: str | None = None, size: int | None = None):
    """(problems, seen) for an Echo Reply, reassembling it if the DUT
    fragmented it."""
    pkt = frame.pkt
    req = request[ICMPv6EchoRequest]
    ip = pkt[IPv6]
    problems = []
    if is_fragment(pkt):
        frags = datagram(t, frame)
        body = reassemble(frags)
        length = None if body is None else IPV6_HEADER_LEN + len(body)
        data = body[ECHO_HEADER:] if body else None
        seen = (f"Echo Reply from {ip.src} to {ip.dst} in {len(frags)} fragments of "
                f"{', '.join(str(IPV6_HEADER_LEN + f[IPv6].plen) for f in frags)} octets")
        if body is None:
            problems.append("its fragments do not reassemble")
    else:
        data = bytes(pkt[ICMPv6EchoReply].data)
        length = IPV6_HEADER_LEN + ip.plen
        seen = f"Echo Reply from {ip.src} to {ip.dst}, {length} octets"
    if data is not None and data != bytes(req.data):
        problems.append("its data differs from the request's")
    if to and not P.same_address(ip.dst, to):
        problems.append(f"sent to {ip.dst}, not to the requester {to}")
    if size is not None and length is not None and length != size:
        problems.append(f"{length} octets, expected {size}")
    return problems, seen


def datagram(t: CheckContext, frame) -> list[Packet]:
    """Every fragment of the DUT's datagram ``frame`` starts (waits until it
    is complete, at most the reply timeout)."""
    frames = t.port.collect(t.from_dut(same_datagram(frame.pkt)), t.reply_timeout, since=frame.time - 0.5,
                            until=lambda fs: reassemble([f.pkt for f in fs]) is not None)
    return [f.pkt for f in frames]


def expect_error(t: CheckContext, probes, *, src: str, type_: int, code, invoking_: bytes | list[bytes], field: int | None = None,
                 pointed_octet: int | None = None, request: Packet | None = None, within: float | None = None,
                 dut_dst: str | None = None) -> Outcome:
    """PASS when the DUT answers the probes (sent from ``src``) with the
    ICMPv6 error ``type_``/``code`` (Pointer ``field`` or designating
    ``pointed_octet``) and, when ``request`` is given, no Echo Reply (the
    packet is discarded)."""
    probes = probes if isinstance(probes, list) else [probes]
    since = t.now()
    for p in probes:
        t.send(p)
    window = t.reply_timeout if within is None else within
    name = icmperr.NAMES[type_]
    invoking_list = invoking_ if isinstance(invoking_, list) else [invoking_]
    # an error of the right type that quotes the packet from a later header is judged, not missed
    wanted = M.any_of(icmperr.error_about(src, type_=type_), icmperr.misquoting(type_, invoking_list))
    frame = t.port.expect(t.from_dut(wanted), window, since=since)
    if frame is None:
        reply = t.collect(M.echo_reply_to(request), 0, since=since) if request is not None else []
        sent = t.record_dut_sent(since, what=name, invoking=invoking_list)
        problems = [f"no {name}"]
        if reply:
            problems.append(f"the DUT answered with an Echo Reply instead ({reply[0].summary()})")
        seen = f"no {name} within {window:g} s" + ("" if sent else "; the DUT sent nothing")
        return t.conclude(seen, problems)
    t.note(f"received {frame.summary()} (+{frame.time - since:.3f} s)")
    err = icmperr.parse(frame.pkt)
    problems = icmperr.problems(err, type_=type_, code=code, invoking=invoking_, field=field,
                                pointed_octet=pointed_octet, dut_dst=dut_dst)
    if request is not None:
        t.wait(max(0.0, since + window - t.now()))
        reply = t.collect(M.echo_reply_to(request), 0, since=since)
        if reply:
            problems.append(f"the packet was not discarded: the DUT also sent {reply[0].summary()}")
    return t.conclude(err.describe(), problems)


def expect_no_answer(t: CheckContext, probes, *, src: str, request: Packet | None = None, what: str | None = None,
                     within: float | None = None) -> Outcome:
    """PASS when neither an Echo Reply to ``request`` nor any ICMPv6 error
    quoting a packet from ``src`` comes back, and the DUT is still alive."""
    ms = [icmperr.error_about(src)]
    if request is not None:
        ms.append(M.echo_reply_to(request))
    what = what or ("Echo Reply or ICMPv6 error" if request is not None else "ICMPv6 error")
    return t.expect_silence(probes, M.any_of(*ms), what=what, within=within)
