"""Steps the ESP checks share: parts per algorithm, a protected Echo
exchange, and the "silently discarded, and the DUT still answers" judgement.

Not a check module (the leading underscore keeps it out of the registry).
"""

from __future__ import annotations

from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, ICMPv6ND_NA, ICMPv6ND_NS, IPv6

from ...core.check import Part
from ...core.context import CheckContext
from ...ipsec.association import Answer, Association, counters_moved
from ...net import packets as P
from ...scenario.probes import echo_request

#: the RFC 8221 MUST algorithms, one part each: (letter, part title, encr)
ALGORITHMS = (("A", "AES-GCM-16 (128-bit key)", "aes-gcm-16"),
              ("B", "AES-CBC (128-bit key) with HMAC-SHA2-256-128", "aes-cbc"),
              ("C", "ENCR_NULL with HMAC-SHA2-256-128 (integrity only)", "null"))
#: what every part of this area needs
COMMON = {"capabilities": ["IPsec"], "dut_config": "ipsec-vm", "liveness": "ns"}


def per_algorithm(faults: dict[str, str] | str, **params) -> list[Part]:
    """A part per algorithm; ``faults`` is one fault for all or one per letter."""
    return [Part(letter, title, encr=encr, fault=faults if isinstance(faults, str) else faults[letter], **params)
            for letter, title, encr in ALGORITHMS]


def echo_matcher(req: ICMPv6EchoRequest):
    """The inner Echo Reply to ``req`` (identifier, sequence number and data)."""
    def accepts(inner) -> bool:
        return (ICMPv6EchoReply in inner and inner[ICMPv6EchoReply].id == req.id
                and inner[ICMPv6EchoReply].seq == req.seq and bytes(inner[ICMPv6EchoReply].data) == bytes(req.data))
    return accepts


def echo(t: CheckContext, sa: Association, *, seq: int | None = None, size: int | None = None, **protect) -> tuple:
    """Send a protected Echo Request; (request, the DUT's answer or None)."""
    req = echo_request(seq=1, size=size)
    since = t.send(sa.protect(req, seq=seq, **protect), label=f"Echo Request id {req.id:#x} in ESP "
                                                                f"(SPI {sa.to_dut.spi:#x} seq {seq or sa.last_seq})")
    return req, sa.await_answer(echo_matcher(req), since)


def answered_on_the_sa(t: CheckContext, sa: Association, exchanges: int = 3):
    """Send ``exchanges`` protected Echo Requests; each must be answered in
    ESP on the DUT's outbound SA (``Association.judge_trailer``: SPI, sequence
    numbers, padding, Next Header), in tunnel mode with the inner packet from
    the DUT to the peer.  The verdict."""
    seen, problems = [sa.describe()], []
    for i in range(1, exchanges + 1):
        since = t.now()
        _, ans = echo(t, sa)
        if ans is None:
            near = [f"ESP on SPI {a.spi:#x}" + ("" if a.protected else " (not the SA's, or it does not verify)")
                    for a in sa.esp_from_dut(since)]
            if near:
                problems.append(f"no Echo Reply on the SA's SPI {sa.from_dut.spi:#x} to request {i}: the DUT sent "
                                f"{', '.join(dict.fromkeys(near))}")
            else:
                t.record_dut_sent(since, what=f"Echo Reply to request {i}")
                problems.append(f"no Echo Reply to the ESP-protected Echo Request {i} within {t.reply_timeout:g} s")
            break
        seen.append(f"reply {i}: {describe(ans)}")
        if not ans.protected:
            problems.append(f"the Echo Reply to request {i} came in the clear, not in ESP on SPI "
                            f"{sa.from_dut.spi:#x} (RFC 4301 §5.1: the SPD's PROTECT entry)")
            continue
        problems += [f"reply {i}: {p}" for p in sa.judge_trailer(ans)]
        if sa.mode == "tunnel":
            inner, outer = ans.inner[IPv6], ans.frame[IPv6]
            if not (P.same_address(inner.src, sa.dut) and P.same_address(inner.dst, sa.peer.global_addr)):
                problems.append(f"reply {i}: the tunnel's inner packet is {inner.src} > {inner.dst}, not {sa.dut} > "
                                f"{sa.peer.global_addr}")
            seen[-1] += f" (outer {outer.src} > {outer.dst}, inner {inner.src} > {inner.dst})"
    return t.conclude(seen, problems)


def one_reply(t: CheckContext, sa: Association, ans: Answer | None, since: float, what: str, seen: list[str]):
    """The verdict on one exchange: an Echo Reply to ``what`` in ESP on the SA (its trailer judged)."""
    problems = []
    if ans is None:
        t.record_dut_sent(since, what="Echo Reply")
        problems.append(f"no Echo Reply to {what} within {t.reply_timeout:g} s")
    elif not ans.protected:
        problems.append("the Echo Reply came in the clear")
    else:
        seen.append(describe(ans))
        problems += sa.judge_trailer(ans)
    return t.conclude(seen, problems)


def describe(a: Answer) -> str:
    if a.protected:
        o = a.opened
        return (f"{a.inner[IPv6].payload.summary()} in ESP SPI {o.spi:#x} seq {o.seq}, pad length {o.pad_length}, "
                f"Next Header {o.next_header}")
    return f"{a.inner.summary()} in the clear"


def reaction(sa: Association, since: float, until: float) -> list[str]:
    """What the DUT sent toward the peer or its gateway in a window where it
    should have sent nothing (Neighbor Discovery aside): ESP, cleartext,
    ICMPv6 errors."""
    out = []
    for f in sa.t.port.frames_since(since):
        if f.time > until:
            continue
        p = f.pkt
        if IPv6 not in p or p.src.lower() != sa.t.dut.mac or ICMPv6ND_NS in p or ICMPv6ND_NA in p:
            continue
        dst = p[IPv6].dst
        if not (P.same_address(dst, sa.peer.global_addr) or P.same_address(dst, sa.gateway.global_addr)):
            continue
        a = sa.answer(p)
        out.append(describe(a) if a is not None and a.protected else p[IPv6].summary())
    return out


def discarded(t: CheckContext, sa: Association, bad, what: str, *, judged_by: str, state_before: str | None = None) -> object:
    """The discard judgement (RFC 4303 §3.4): ``bad`` (a frame, or a callable
    that sends and returns the send time) gets no answer and no error
    within the silence window, and a valid packet right after is answered
    (a DUT that answers nothing cannot pass).  The DUT's answer to a valid
    packet first is the precondition (NOT_JUDGED, judged by ``judged_by``)."""
    _, first = echo(t, sa)
    if first is None or not first.protected:
        raise t.not_judged("esp-echo", judged_by, "the DUT did not answer an ESP-protected Echo Request on the SA "
                           f"before the {what} ({'it answered in the clear' if first else 'no answer'})")
    before = state_before if state_before is not None else sa.dut_state()
    since = bad() if callable(bad) else t.send(bad, label=what)
    t.wait(t.silence)
    until = t.now()
    t.port.drained_through(until)
    answered = reaction(sa, since, until)
    _, after = echo(t, sa)
    moved = counters_moved(before, sa.dut_state())
    problems, seen = [], [f"valid Echo Request before: {describe(first)}"]
    if answered:
        problems.append(f"the DUT answered the {what}: {'; '.join(answered[:3])} (RFC 4303 §3.4: discard it)")
    else:
        seen.append(f"nothing from the DUT to the peer within {t.silence:g} s of the {what}")
    if after is None:
        problems.append(f"the DUT stopped answering: no answer to a valid ESP Echo Request after the {what}")
    elif not after.protected:
        problems.append(f"the valid Echo Request after the {what} was answered in the clear")
    else:
        seen.append(f"valid Echo Request after: {describe(after)}")
    if moved:
        seen.append(f"the DUT counted {moved}")
    return t.conclude(seen, problems)
