"""ESP end node: a protected Echo Request is answered on the right SA, and a
cleartext packet that matches a protect policy is not delivered."""

from __future__ import annotations

from ...core.check import check
from ...core.context import CheckContext
from ...ipsec.association import establish
from ...scenario.probes import echo_request
from ._common import COMMON, answered_on_the_sa, describe, echo, echo_matcher, per_algorithm, reaction

ANSWERED = "ipsec.esp_echo_is_answered_on_the_sa"


@check(
    area="ipsec", title="An ESP-protected Echo Request is answered ESP-protected on the SA",
    rfc="RFC 4303 §3.3, §3.4, §2.4, §2.6; RFC 4301 §5.1, §5.2; RFC 8221 §5",
    expect="each of 3 Echo Requests in ESP (transport mode) is answered by an Echo Reply in ESP on the "
           "DUT's outbound SA: its SPI, sequence numbers 1, 2, 3 on a new SA (increasing on one the DUT already "
           "used), the default padding 1, 2, 3, ..., Next Header 58; nothing in the clear",
    parts=per_algorithm({"A": "ipsec_dut_answers_in_the_clear", "B": "ipsec_dut_answers_on_another_spi",
                         "C": "ipsec_dut_sequence_does_not_start_at_one"}),
    **COMMON,
)
def esp_echo_is_answered_on_the_sa(t: CheckContext):
    """RFC 4303 §3.3: outbound packets are protected by the SA the SPD selects;
    the sender's counter starts at 0 when the SA is established and each
    packet carries the next value, so the first has 1 (§3.3.3); the Padding
    is 1, 2, 3, ... unless the algorithm says otherwise (§2.4) and Next Header
    names the payload (§2.6).  RFC 4301 §5.2: an inbound protected packet is
    delivered after ESP processing; §5.1: the reply matches the outbound
    PROTECT entry.  RFC 8221 §5: AES-GCM-16, AES-CBC with HMAC-SHA2-256-128
    and NULL with HMAC-SHA2-256-128 are MUST."""
    return answered_on_the_sa(t, establish(t, t.p.encr))


@check(
    area="ipsec", title="A cleartext packet that matches a protect policy is not delivered",
    rfc="RFC 4301 §5.2 (step 3a), §4.4.1; RFC 4303 §3.4",
    expect="an Echo Request in the clear from the peer the DUT's policy says to protect traffic with gets no "
           "answer (neither in the clear nor in ESP), while ESP-protected Echo Requests before and after it are "
           "answered on the SA",
    parts=per_algorithm("ipsec_dut_accepts_cleartext"),
    **COMMON,
)
def cleartext_matching_a_protect_policy_is_not_delivered(t: CheckContext):
    """RFC 4301 §5.2 step 3a: an unprotected inbound packet whose selectors
    match an SPD entry that says PROTECT is discarded (an auditable event);
    only traffic the SPD says BYPASS passes in the clear.  The protected
    exchanges before and after show the DUT is there and the SA works, so a
    DUT that answers nothing cannot pass."""
    from scapy.layers.inet6 import IPv6

    sa = establish(t, t.p.encr)
    _, first = echo(t, sa)
    if first is None or not first.protected:
        raise t.not_judged("esp-echo", f"{ANSWERED}#{t.part}", "the DUT did not answer an ESP-protected Echo Request "
                           f"on the SA ({'it answered in the clear' if first else 'no answer'})")
    req = echo_request()
    clear = t.to_dut(sa.peer, sa.dut) / req
    since = t.send(clear, label=f"Echo Request id {req.id:#x} in the clear")
    got = sa.await_answer(echo_matcher(req), since, within=t.silence)
    until = t.now()
    others = [r for r in reaction(sa, since, until) if got is None]
    _, after = echo(t, sa)
    seen = [sa.describe(), f"protected Echo Request before: {describe(first)}"]
    problems = []
    if got is not None:
        problems.append(f"the DUT answered the cleartext Echo Request: {describe(got)} (RFC 4301 §5.2: a packet its "
                        "PROTECT policy covers must arrive protected)")
    elif others:
        problems.append(f"the DUT reacted to the cleartext Echo Request: {'; '.join(others[:3])}")
    else:
        seen.append(f"no answer to the cleartext Echo Request ({clear[IPv6].src} > {clear[IPv6].dst}) within "
                    f"{t.silence:g} s")
    if after is None or not after.protected:
        problems.append("the DUT no longer answered a protected Echo Request after the cleartext one"
                        + ("" if after is None else " (it answered in the clear)"))
    else:
        seen.append(f"protected Echo Request after: {describe(after)}")
    return t.conclude(seen, problems)

