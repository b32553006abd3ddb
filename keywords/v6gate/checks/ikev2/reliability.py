"""Retransmissions (RFC 7296 §2.1, §2.4): the DUT as initiator retransmits a
request that gets no response with the same Message ID and exponentially
growing intervals; as responder it answers a retransmitted request with the
same response."""

from __future__ import annotations

import itertools

from ...core.check import Part, check
from ...net.ikev2 import exchange as X
from ...net.ikev2.codec import IkeParseError, Message
from ...net.ikev2.const import Exchange
from ...net.ikev2.crypto import CryptoError
from ...net.ikev2.peer import ProtocolError
from . import _common as C

#: an interval counts as grown when it is at least this much longer than the one before (RFC 7296 §2.1 asks for
#: exponential growth; strongSwan's default base is 1.8, the lab DUT's 2.0; scheduling jitter stays well below)
GROWTH = 1.25
#: retransmissions watched before judging the growth (three intervals)
WANTED = 3


def _judge_series(t, sends, what: str) -> tuple[list[str], list[str]]:
    """(seen, problems) of a series of the DUT's transmissions of one request (Datagrams, first included)."""
    first = sends[0]
    times = [round(d.time - first.time, 3) for d in sends]
    intervals = [round(b - a, 3) for a, b in itertools.pairwise(times)]
    seen = [f"{len(sends)} transmissions of its {what} at +{', +'.join(f'{x:.3f}' for x in times)} s "
            f"(intervals {', '.join(f'{x:.3f}' for x in intervals) or '-'} s)"]
    problems = []
    if len(sends) < 2:
        problems.append(f"the DUT did not retransmit its {what} within {C.cfg(t).retransmit_wait_s:g} s without a "
                        "response")
        return seen, problems
    h0 = Message.decode(first.data)
    for i, d in enumerate(sends[1:], start=1):
        h = Message.decode(d.data)
        if h.msg_id != h0.msg_id or h.spi_i != h0.spi_i or h.spi_r != h0.spi_r:
            problems.append(f"retransmission {i} has SPIs {h.spi_i.hex()}/{h.spi_r.hex()} and Message ID {h.msg_id}, "
                            f"not {h0.spi_i.hex()}/{h0.spi_r.hex()} and {h0.msg_id} (RFC 7296 §2.1: the same request)")
        elif d.data != first.data:
            problems.append(f"retransmission {i} differs from the request ({len(d.data)} octets against "
                            f"{len(first.data)}): a retransmission repeats the message (RFC 7296 §2.1)")
    if len(intervals) < 2:
        problems.append(f"only {len(sends) - 1} retransmission(s) in {C.cfg(t).retransmit_wait_s:g} s: the growth of "
                        "the intervals cannot be judged from one")
        return seen, problems
    flat = [(a, b) for a, b in itertools.pairwise(intervals) if b < a * GROWTH]
    if flat:
        problems.append(f"the retransmission intervals do not grow exponentially: {', '.join(f'{x:.3f}' for x in intervals)}"
                        f" s (each should be at least {GROWTH}x the one before; RFC 7296 §2.1 \"MUST increase "
                        "exponentially\")")
    return seen, problems


def _collect(t, end, since: float, exchange: int, msg_id: int) -> list:
    """The DUT's transmissions of one request (no answer given), until it stops or the wait runs out."""
    wait = C.cfg(t).retransmit_wait_s
    deadline = t.port.now() + wait
    sends = []
    while t.port.now() < deadline and len(sends) < WANTED + 2:
        dg = end.ch.wait(deadline - t.port.now(), since=since, exchange=exchange, response=False, msg_id=msg_id)
        if dg is None:
            break
        if sends and Message.decode(dg.data).spi_i != Message.decode(sends[0].data).spi_i:
            break  # a new IKE SA (it gave up on the first): not a retransmission
        sends.append(dg)
        since = dg.time + 1e-6
    return sends


@check(
    area="ikev2", ipv6ready=None,
    title="The DUT retransmits an unanswered request with the same Message ID and exponential back-off",
    rfc="RFC 7296 §2.1 (retransmit the same request; \"the retransmission times MUST increase exponentially\"), "
        "§2.4",
    expect="with no response, the DUT sends the same request again (the same octets, SPIs and Message ID) at "
           "least three times, each interval at least 1.25 times the one before",
    parts=[
        Part("A", "IKE_SA_INIT withheld", exchange=Exchange.IKE_SA_INIT, ipv6ready="IKEv2.EN.I.1.1.2.1"),
        Part("ike_auth", "IKE_AUTH withheld (IKEv2.EN.I.1.1.2.3)", exchange=Exchange.IKE_AUTH,
             ipv6ready="IKEv2.EN.I.1.1.2.3"),
    ],
    fault="dut_retransmits_at_a_constant_interval",
    capabilities=["IKEv2"], dut_config="ipsec-vm",
)
def dut_retransmits_with_the_same_message_id_and_backs_off(t):
    """RFC 7296 §2.1: "If the initiator ... does not receive a response ... it MUST retransmit the request ...
    the retransmission times MUST increase exponentially to avoid flooding the network and making an existing
    congestion situation worse."  A fixed interval turns every lost response into a flood."""
    end = C.ike(t)
    since = C.make_dut_initiate(t)
    exchange = t.p.exchange
    if exchange == Exchange.IKE_AUTH:
        try:
            res, _, seen_init = X.serve_init(end.ch, end.peer, C.initiation_wait(t), since)
        except (X.NoAnswer, ProtocolError, IkeParseError, CryptoError) as exc:
            raise t.not_judged("ike-sa-init", C.JUDGED_BY_INITIATOR, f"IKE_SA_INIT did not complete: {exc}") from None
        if not res.ok:
            raise t.not_judged("ike-sa-init", C.JUDGED_BY_INITIATOR, f"IKE_SA_INIT: {res.detail}")
        since = seen_init[-1].time
        end.peer.deleted = True  # its IKE SA never comes up: nothing to delete when the check ends
    sends = _collect(t, end, since, exchange, 0 if exchange == Exchange.IKE_SA_INIT else 1)
    what = "IKE_SA_INIT request" if exchange == Exchange.IKE_SA_INIT else "IKE_AUTH request"
    if not sends:
        raise t.not_judged("ike-request", C.JUDGED_BY_INITIATOR, f"the DUT sent no {what}")
    seen, problems = _judge_series(t, sends, what)
    return t.conclude(seen, problems)


@check(
    area="ikev2", ipv6ready=None,
    title="A retransmitted request gets the same response again",
    rfc="RFC 7296 §2.1 (a responder that receives a retransmitted request MUST retransmit its response), §2.2",
    expect="the same request sent again after its response gets the response again: the same responder SPI and "
           "Message ID (the same octets), and the exchange then goes on (IKE_AUTH, the next request answered)",
    parts=[
        Part("A", "IKE_SA_INIT sent twice", exchange=Exchange.IKE_SA_INIT, ipv6ready="IKEv2.EN.R.1.1.2.1"),
        Part("informational", "an INFORMATIONAL request sent twice", exchange=Exchange.INFORMATIONAL),
    ],
    fault="dut_ignores_repeated_requests",
    capabilities=["IKEv2"], dut_config="ipsec-vm",
)
def retransmitted_request_gets_the_same_response(t):
    """RFC 7296 §2.1: "The responder ... MUST keep a copy of the last response ... and retransmit it if it
    receives a retransmission of the request"; a responder that answers the first copy only strands an
    initiator whose response was lost, and one that answers with a new SA makes two."""
    C.require_role(t, "responder")
    end = C.ike(t)
    if t.p.exchange == Exchange.INFORMATIONAL:
        C.establish(t, end)
        with end.ch.lock:
            req = end.peer.informational()
    else:
        with end.ch.lock:
            req = end.peer.sa_init()
    first = end.ch.request(req, within=t.reply_timeout)
    if first is None:
        what = "liveness check" if t.p.exchange == Exchange.INFORMATIONAL else "IKE_SA_INIT"
        raise t.not_judged("first-response", "ikev2.liveness_check_is_answered#" if what == "liveness check"
                           else C.JUDGED_BY_RESPONDER, f"the DUT did not answer the {what} the first time")
    t.wait(min(0.5, t.reply_timeout / 2))
    again = end.ch.request(req, within=t.reply_timeout, retransmits=0, label="the same request again")
    seen = [f"first response {first.label()}"]
    if again is None:
        return t.conclude(seen, [f"the DUT did not answer the retransmitted request ({first.label().split(' [')[0]})"])
    seen.append(f"second response {again.label()} (+{again.time - first.time:.3f} s after the first)")
    problems = []
    a, b = Message.decode(first.data), Message.decode(again.data)
    if (a.spi_r, a.msg_id) != (b.spi_r, b.msg_id):
        problems.append(f"the second response has responder SPI {b.spi_r.hex()} and Message ID {b.msg_id}, not "
                        f"{a.spi_r.hex()} and {a.msg_id}: the DUT answered the retransmission as a new request")
    elif again.data != first.data:
        problems.append("the second response differs from the first: RFC 7296 §2.1 has the responder retransmit "
                        "its response")
    if problems:
        return t.conclude(seen, problems)
    # the exchange goes on from the (first) response
    with end.ch.lock:
        if t.p.exchange == Exchange.IKE_SA_INIT:
            res = end.peer.take_sa_init(first.data)
            if res.ok and end.peer.nat_detected:
                end.ch.use_natt()
        else:
            res = end.peer.take_response(first.data)
    try:
        nxt = (X.authenticate(end.ch, end.peer, t.reply_timeout) if t.p.exchange == Exchange.IKE_SA_INIT
               else X.ask(end.ch, end.peer, lambda p: p.informational(), t.reply_timeout))
    except (X.NoAnswer, ProtocolError, IkeParseError, CryptoError) as exc:
        return t.conclude(seen, [f"after the retransmission, the exchange did not go on: {exc}"])
    seen.append(f"the exchange goes on: {nxt.detail}")
    return t.conclude(seen, [] if nxt.ok else [f"after the retransmission: {nxt.detail}"])
