"""What the DUT must refuse or discard (RFC 8247 §3.1, RFC 7296 §2.7, §2.21,
§3.14): a proposal of only deprecated transforms, a message whose integrity
check fails, a message naming an IKE SA it does not have.  Each part then
shows the DUT still answering a good message (no vacuous PASS)."""

from __future__ import annotations

from ...core.check import Part, check
from ...core.verdict import Deviation
from ...net.ikev2 import exchange as X
from ...net.ikev2 import proposals as PR
from ...net.ikev2.codec import IkeParseError, Message, Notification
from ...net.ikev2.const import Exchange, Flag, Notify
from ...net.ikev2.crypto import CryptoError
from ...net.ikev2.peer import ProtocolError
from . import _common as C


@check(
    area="ikev2", ipv6ready=None,
    title="A proposal of only deprecated transforms is refused with NO_PROPOSAL_CHOSEN",
    rfc="RFC 8247 §3.1.1-§3.1.4 (ENCR_3DES: MAY, to be deprecated; PRF_HMAC_SHA1 and AUTH_HMAC_SHA1_96: MUST-; "
        "MODP-1024: SHOULD NOT); RFC 7296 §2.7 and §3.10.1 (NO_PROPOSAL_CHOSEN)",
    expect="an IKE_SA_INIT offering only the deprecated suite gets N(NO_PROPOSAL_CHOSEN) and no SA or KE; the same "
           "tester offering the RFC 8247 MUST suite right after gets an IKE SA",
    parts=[
        Part("A", "3DES, HMAC-SHA1 and MODP-1024 together", ike="3des-sha1-modp1024"),
        Part("B", "AES-CBC with PRF_HMAC_SHA1 and AUTH_HMAC_SHA1_96", ike="aes128-sha1-modp2048"),
        Part("C", "AES-CBC, HMAC-SHA2-256, MODP-1024", ike="aes128-sha256-modp1024"),
        Part("D", "3DES with HMAC-SHA2-256 and MODP-2048", ike="3des-sha256-modp2048"),
    ],
    fault="dut_accepts_3des_and_sha1",
    capabilities=["IKEv2"], dut_config="ipsec-vm",
)
def deprecated_only_proposals_get_no_proposal_chosen(t):
    """RFC 8247 retires 3DES, HMAC-SHA1 and the 1024-bit MODP group from IKEv2 use; a responder that still
    accepts a proposal made only of them lets an attacker who strips the strong proposals from an initiator's
    offer force the IKE SA down to them.  RFC 7296 §2.7: a responder with no acceptable proposal answers
    NO_PROPOSAL_CHOSEN."""
    C.require_role(t, "responder")
    end = C.ike(t, ike=[t.p.ike])
    offered = PR.text(end.peer.cfg.ike_proposals[0])
    try:
        res, _ = X.initiate(end.ch, end.peer, t.reply_timeout, rounds=2)
    except X.NoAnswer as exc:
        res, problem = None, f"the DUT did not answer an IKE_SA_INIT offering {offered}: {exc}"
    except (ProtocolError, IkeParseError, CryptoError) as exc:
        raise Deviation(f"the DUT answered {offered} with a response the tester cannot accept: {exc}") from None
    problems = []
    if res is None:
        seen = problem
    elif res.ok:
        end.peer.deleted = True  # an IKE_SA_INIT only: no IKE SA to delete
        raise Deviation(f"the DUT accepted {offered} (it chose {end.peer.ike.chosen.label()}), a proposal of only "
                        "deprecated transforms")
    elif res.notify is None or res.notify.type != Notify.NO_PROPOSAL_CHOSEN:
        seen = f"the DUT answered {res.msg.label()}"
        problems.append(f"the DUT refused {offered} with {res.detail}, not NO_PROPOSAL_CHOSEN")
    else:
        seen = f"the DUT refused {offered}: {res.msg.label()}"
        if any(not isinstance(p, Notification) for p in res.msg.payloads):
            problems.append(f"the refusal carries more than the notify: {res.msg.label()}")
    # no vacuous PASS: the DUT answers a good offer right after
    good = C.ike(t, ike=[C.MUST_SUITE])
    try:
        ok, _ = X.initiate(good.ch, good.peer, t.reply_timeout)
    except (X.NoAnswer, ProtocolError, IkeParseError, CryptoError) as exc:
        ok = None
        why = str(exc)
    if ok is None or not ok.ok:
        detail = why if ok is None else ok.detail
        if res is None:
            raise t.not_judged("ike-responder", C.JUDGED_BY_RESPONDER, f"the DUT answers no IKE_SA_INIT at all "
                                                                       f"({detail})")
        problems.append(f"the DUT then refused the RFC 8247 MUST suite too ({detail})")
    elif res is None:
        problems.append(seen)
    good.peer.deleted = True  # only IKE_SA_INIT: no IKE SA to delete
    return t.conclude([seen, f"the MUST suite right after: {ok.detail if ok else '-'}"], problems)


def _flip_last(data: bytes) -> bytes:
    """The message with its last octet (of the ICV or AEAD tag) changed (the impostor rule
    ikev2.ike_icv_not_verified undoes exactly this)."""
    return data[:-1] + bytes([data[-1] ^ 0x01])


def _invert_spi_r(data: bytes) -> bytes:
    """The message with its responder SPI inverted: an IKE SA the DUT does not have (the impostor rule
    ikev2.ike_unknown_spi_accepted undoes exactly this)."""
    return data[:8] + bytes(b ^ 0xFF for b in data[8:16]) + data[16:]


@check(
    area="ikev2", ipv6ready=None,
    title="A message with a bad ICV or an unknown SPI is discarded, and the next good one answered",
    rfc="RFC 7296 §3.14 and §2.21.2 (a message whose integrity check fails MUST be discarded, no notify), §2.21.4 "
        "(a message for an IKE SA it does not have: discarded, at most an unprotected INVALID_IKE_SPI)",
    expect="a liveness check whose last ICV octet is changed gets no response within the silence window, nor one "
           "with its responder SPI inverted (an unprotected N(INVALID_IKE_SPI) is allowed); the same request intact "
           "right after is answered",
    parts=[
        Part("A", "the ICV's last octet changed", mutate="icv", fault="dut_does_not_verify_the_whole_icv"),
        Part("B", "the responder SPI inverted", mutate="spi", fault="dut_accepts_an_unknown_spi"),
    ],
    capabilities=["IKEv2"], dut_config="ipsec-vm",
)
def bad_icv_and_unknown_spi_are_discarded(t):
    """RFC 7296 §3.14: "If the integrity check fails, the message MUST be dropped (without notification)" —
    an attacker's forgery must not even be acknowledged; §2.21.4: a message naming an IKE SA the node does not
    have cannot be processed (it MAY send INVALID_IKE_SPI, unprotected).  Both are judged as silence followed
    by the intact request's answer: a DUT that answers nothing passes no part."""
    C.require_role(t, "responder")
    end = C.ike(t)
    C.establish(t, end)
    with end.ch.lock:
        good = end.peer.informational()
    h = Message.decode(good)
    bad = _flip_last(good) if t.p.mutate == "icv" else _invert_spi_r(good)
    what = "the ICV's last octet changed" if t.p.mutate == "icv" else "the responder SPI inverted"
    with end.auto.withheld():
        sent = end.ch.send(bad, f"liveness check #{h.msg_id} with {what}")
        answers = end.ch.collect(t.silence, since=sent, response=True)
    protected = [d for d in answers if (d.header[3] & Flag.RESPONSE) and d.header[2] == Exchange.INFORMATIONAL
                 and d.header[4] == h.msg_id]
    notifies = [d for d in answers if d not in protected]
    seen = [f"{what}: {len(answers)} answer(s) in {t.silence:g} s"
            + (f" ({', '.join(d.label() for d in answers)})" if answers else "")]
    problems = []
    if protected:
        problems.append(f"the DUT answered the liveness check with {what} ({protected[0].label()}, "
                        f"+{protected[0].time - sent:.3f} s): it should have discarded it")
    for d in notifies:
        m = Message.decode(d.data)
        if t.p.mutate == "icv" or m.sk is not None or any(
                not (isinstance(p, Notification) and p.type == Notify.INVALID_IKE_SPI) for p in m.payloads):
            problems.append(f"the DUT sent {m.label()} for the message with {what}")
    got = end.ch.request(good, within=t.reply_timeout, label=f"the same liveness check #{h.msg_id}, intact")
    if got is None:
        if problems:
            return t.conclude(seen, problems)
        raise t.not_judged("liveness", "ikev2.liveness_check_is_answered#",
                           f"the DUT did not answer the intact liveness check after the one with {what}: its silence "
                           "proves nothing")
    with end.ch.lock:
        res = end.peer.take_response(got.data)
    seen.append(f"the intact request answered ({res.detail}, +{got.time - sent:.3f} s)")
    return t.conclude(seen, problems)
