"""ESP inbound processing: what the DUT must discard silently (RFC 4303
§3.4), each judged with the DUT still answering a valid packet right after
(a DUT that answers nothing cannot pass)."""

from __future__ import annotations

from ...core.check import check
from ...core.context import CheckContext
from ...ipsec.association import _fresh_spi, establish
from ...scenario.probes import echo_request
from ._common import COMMON, discarded, echo, per_algorithm

JUDGED_BY = "ipsec.esp_echo_is_answered_on_the_sa"


@check(
    area="ipsec", title="ESP with a bad ICV is discarded",
    rfc="RFC 4303 §3.4.4.1, §3.4.4.2; RFC 4106 §7 (AES-GCM's ICV)",
    expect="an Echo Request in ESP on the SA whose ICV does not verify (its last byte changed) gets no answer and "
           "no error within the silence window; a valid ESP Echo Request right after is answered on the SA",
    parts=per_algorithm("ipsec_dut_accepts_a_bad_icv"),
    **COMMON,
)
def esp_with_a_bad_icv_is_discarded(t: CheckContext):
    """RFC 4303 §3.4.4.1: if integrity is selected, the receiver computes the
    ICV and, if it does not match, MUST discard the packet as invalid (an
    auditable event); for a combined-mode algorithm (AES-GCM, §3.4.4.2)
    verification is part of decryption and a failure also means discard."""
    sa = establish(t, t.p.encr)

    def bad():
        req = echo_request()
        frame = sa.protect(req)
        raw = bytearray(bytes(frame))
        raw[-1] ^= 0x01  # the last byte of the ICV
        return t.send(bytes(raw), label=f"Echo Request id {req.id:#x} in ESP seq {sa.last_seq} with a bad ICV")

    return discarded(t, sa, bad, "ESP packet with a bad ICV", judged_by=f"{JUDGED_BY}#{t.part}")


@check(
    area="ipsec", title="ESP with an SPI the DUT has no SA for is discarded",
    rfc="RFC 4303 §3.4.2; RFC 4301 §5.2 (step 3a), §6",
    expect="an Echo Request in ESP sealed with the SA's keys under an SPI the DUT has no SA for gets no answer and no "
           "error within the silence window; a valid ESP Echo Request right after is answered on the SA",
    parts=per_algorithm("ipsec_dut_ignores_the_spi"),
    **COMMON,
)
def esp_with_an_unknown_spi_is_discarded(t: CheckContext):
    """RFC 4303 §3.4.2: the receiver uses the SPI (with the destination, and
    the protocol) to find the SA; if no valid SA exists for the session, it
    MUST discard the packet (an auditable event).  The tester seals the packet
    with the SA's own keys: a receiver that picked the SA by addresses and
    ignored the SPI would open it."""
    sa = establish(t, t.p.encr)
    other = _fresh_spi({sa.to_dut.spi, sa.from_dut.spi})

    def bad():
        req = echo_request()
        return t.send(sa.protect(req, spi=other), label=f"Echo Request id {req.id:#x} in ESP under SPI {other:#x} "
                                                         f"(the DUT's SA is {sa.to_dut.spi:#x})")

    return discarded(t, sa, bad, f"ESP packet with SPI {other:#x}", judged_by=f"{JUDGED_BY}#{t.part}")


@check(
    area="ipsec", title="ESP with a sequence number already received is discarded",
    rfc="RFC 4303 §3.4.3",
    expect="after a valid ESP Echo Request with sequence number N is answered, a new Echo Request sealed with the "
           "same sequence number N (a valid ICV) gets no answer within the silence window; a valid ESP Echo "
           "Request right after (N+1) is answered",
    parts=per_algorithm("ipsec_dut_has_no_anti_replay"),
    **COMMON,
)
def replayed_esp_is_discarded(t: CheckContext):
    """RFC 4303 §3.4.3: if the receiver has enabled anti-replay for the SA
    (the default; the sender always counts), duplicates are rejected: a
    packet whose sequence number was already received MUST be discarded
    before (or after) its ICV is verified, an auditable event."""
    sa = establish(t, t.p.encr)

    def bad():
        req = echo_request()
        seq = sa.last_seq  # the valid packet's, just answered
        return t.send(sa.protect(req, seq=seq), label=f"a new Echo Request id {req.id:#x} in ESP with sequence "
                                                       f"number {seq} again")

    return discarded(t, sa, bad, "replayed sequence number", judged_by=f"{JUDGED_BY}#{t.part}")


@check(
    area="ipsec", title="ESP with a sequence number left of the receive window is discarded",
    rfc="RFC 4303 §3.4.3",
    expect="after valid ESP Echo Requests move the DUT's window to sequence number S (4 windows ahead, answered), "
           "an Echo Request sealed with a sequence number never used that lies left of the window (S - W - 8 for "
           "the DUT's window W) gets no answer within the silence window; a valid one right after is answered",
    parts=per_algorithm("ipsec_dut_has_no_anti_replay"),
    **COMMON,
)
def esp_left_of_the_window_is_discarded(t: CheckContext):
    """RFC 4303 §3.4.3: the right edge of the window is the highest validated
    sequence number; packets that fall to the left of the window MUST be
    discarded (an auditable event), new ones to the right advance it.  The
    window W is the DUT's (extensions.ipsec.replay_window, RFC 4303's default
    64): the stale number is W + 8 behind the right edge and was never sent."""
    sa = establish(t, t.p.encr)
    w = max(sa.window, 32)
    ahead = sa.last_seq + 1 + 4 * w

    def bad():
        req, jump = echo(t, sa, seq=ahead)
        if jump is None or not jump.protected:
            t.note(f"the valid Echo Request with sequence number {ahead} (ahead of the window) was not answered")
            raise t.not_judged("window-advanced", f"ipsec.esp_echo_is_answered_on_the_sa#{t.part}",
                               f"the DUT did not answer a valid ESP Echo Request with sequence number {ahead} "
                               "(right of its window: RFC 4303 §3.4.3 accepts it and moves the window)")
        sa.skip_to(ahead + 1)
        stale = ahead - w - 8
        req = echo_request()
        return t.send(sa.protect(req, seq=stale), label=f"Echo Request id {req.id:#x} in ESP with sequence number "
                                                         f"{stale}, never used, {w + 8} behind {ahead}")

    return discarded(t, sa, bad, "sequence number left of the window", judged_by=f"{JUDGED_BY}#{t.part}")


@check(
    area="ipsec", title="A truncated ESP packet is discarded",
    rfc="RFC 4303 §3.4.4.1, §2; RFC 8200 §4 (Payload Length)",
    expect="an Echo Request in ESP on the SA cut short by 9 octets (the tail of its ICV gone, Payload Length "
           "consistent) gets no answer and no error within the silence window; a valid ESP Echo Request right after "
           "is answered on the SA",
    parts=per_algorithm("ipsec_dut_accepts_a_truncated_packet"),
    **COMMON,
)
def truncated_esp_is_discarded(t: CheckContext):
    """RFC 4303 §3.4.4.1: the ICV is computed over the packet as received and
    compared with the ICV field; a packet cut short (the ICV incomplete) cannot
    verify and MUST be discarded."""
    sa = establish(t, t.p.encr)

    def bad():
        req = echo_request()
        frame = sa.protect(req)
        esp = bytes(frame.payload.payload)
        cut = sa.carry(esp[:-9])
        return t.send(cut, label=f"Echo Request id {req.id:#x} in ESP seq {sa.last_seq} cut by 9 octets "
                                 f"({len(esp) - 9} of {len(esp)})")

    return discarded(t, sa, bad, "truncated ESP packet", judged_by=f"{JUDGED_BY}#{t.part}")

