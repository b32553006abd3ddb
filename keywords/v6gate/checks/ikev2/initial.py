"""The initial exchanges (RFC 7296 §1.2, §2.6, §2.7, §2.15; algorithms RFC
8247): the DUT as responder accepting the RFC 8247 MUST (and SHOULD)
suites, as initiator offering the MUST transforms, retrying with the group
an INVALID_KE_PAYLOAD asks for, echoing a COOKIE, and IKE_AUTH with a
pre-shared key proving both ends."""

from __future__ import annotations

import struct

from ...core.check import Part, check
from ...core.context import NotApplicable
from ...core.verdict import Deviation, NotJudged
from ...net import packets as P
from ...net.ikev2 import exchange as X
from ...net.ikev2 import proposals as PR
from ...net.ikev2.codec import KE, SA, Identification, IkeParseError, Message, Nonce, Notification
from ...net.ikev2.const import PT, TT, Encr, Exchange, Flag, Group, Integ, Notify, Prf
from ...net.ikev2.const import name as enum_name
from ...net.ikev2.crypto import CryptoError, ke_size
from ...net.ikev2.peer import Identity, ProtocolError
from . import _common as C

RFC_INIT = "RFC 7296 §1.2 (IKE_SA_INIT, IKE_AUTH), §2.7 (one proposal chosen), §2.15 (AUTH); RFC 8247 §3.1"
MUST = {TT.ENCR: (Encr.AES_CBC, 128), TT.PRF: (Prf.HMAC_SHA2_256, None), TT.INTEG: (Integ.HMAC_SHA2_256_128, None),
        TT.DH: (Group.MODP_2048, None)}


def _header_problems(msg: Message, *, response: bool, initiator_flag: bool, msg_id: int, what: str) -> list[str]:
    """RFC 7296 §3.1: version 2.0, the R and I flags, the Message ID."""
    problems = []
    if msg.version != 0x20:
        problems.append(f"{what} has version 0x{msg.version:02x}, not 2.0 (0x20)")
    if msg.is_response != response:
        problems.append(f"{what} has the Response flag {'clear' if response else 'set'}")
    if msg.from_initiator != initiator_flag:
        problems.append(f"{what} has the Initiator flag {'set' if msg.from_initiator else 'clear'}, but it comes from "
                        f"the original {'initiator' if initiator_flag else 'responder'}")
    if msg.msg_id != msg_id:
        problems.append(f"{what} has Message ID {msg.msg_id}, not {msg_id}")
    return problems


@check(
    area="ikev2", ipv6ready=None,
    title="An IKE SA and its CHILD_SA come up with the DUT as responder, for each RFC 8247 suite",
    rfc=RFC_INIT + " (ENCR_AES_CBC, PRF_HMAC_SHA2_256, AUTH_HMAC_SHA2_256_128 and group 14 MUST; AES-GCM-16, "
        "group 19 and group 31 SHOULD)",
    expect="the IKE_SA_INIT response chooses exactly the offered transforms with a KE of the offered group; the "
           "IKE_AUTH response's AUTH verifies with the pre-shared key and names the DUT's identity; a CHILD_SA is "
           "chosen from the offer with IPv6 traffic selectors",
    parts=[
        Part("A", "ENCR_AES_CBC-128, PRF_HMAC_SHA2_256, AUTH_HMAC_SHA2_256_128, MODP-2048 (the MUSTs)",
             ike=C.MUST_SUITE, esp="aes128-sha256"),
        Part("B", "ENCR_AES_GCM_16-128, PRF_HMAC_SHA2_256, ECP-256", ike="aes128gcm16-prfsha256-ecp256",
             esp="aes128gcm16"),
        Part("C", "ENCR_AES_CBC-128, PRF_HMAC_SHA2_256, AUTH_HMAC_SHA2_256_128, Curve25519",
             ike="aes128-sha256-x25519", esp="aes128gcm16"),
    ],
    fault="dut_ike_accepts_only_legacy_transforms",
    capabilities=["IKEv2"], dut_config="ipsec-vm",
)
def ike_sa_with_each_rfc8247_must_suite(t):
    """RFC 8247 §3.1 makes ENCR_AES_CBC, PRF_HMAC_SHA2_256, AUTH_HMAC_SHA2_256_128 and the 2048-bit MODP
    group MUST for IKEv2 (AES-GCM-16, ECP-256 and Curve25519 SHOULD).  RFC 7296 §2.7: the responder MUST
    choose a single proposal and its transforms from the offer; §2.15: each end's AUTH proves the key."""
    C.require_role(t, "responder")
    end = C.ike(t, ike=[t.p.ike], esp=[t.p.esp])
    offered = end.peer.cfg.ike_proposals[0]
    try:
        res, earlier = X.initiate(end.ch, end.peer, t.reply_timeout)
    except X.NoAnswer as exc:
        raise Deviation(f"the DUT did not answer an IKE_SA_INIT offering {t.p.ike}: {exc}") from None
    except (ProtocolError, IkeParseError, CryptoError) as exc:
        raise Deviation(f"the DUT's IKE_SA_INIT response to {t.p.ike} is wrong: {exc}") from None
    if not res.ok:
        raise Deviation(f"the DUT refused {PR.text(offered)} (offered alone) with {res.detail} "
                        f"(RFC 8247 §3.1: these transforms are MUST/SHOULD)")
    problems = _header_problems(res.msg, response=True, initiator_flag=False, msg_id=0,
                                what="the IKE_SA_INIT response")
    seen = [f"IKE_SA_INIT: chose {end.peer.ike.chosen.label()}" + (f" after {len(earlier)} round(s) "
                                                                    f"({', '.join(e.detail for e in earlier)})"
                                                                    if earlier else "")]
    try:
        res = X.authenticate(end.ch, end.peer, t.reply_timeout)
    except X.NoAnswer as exc:
        return t.conclude(seen, [f"the DUT did not answer IKE_AUTH: {exc}"])
    except (ProtocolError, IkeParseError, CryptoError) as exc:
        return t.conclude(seen, [f"the DUT's IKE_AUTH response is wrong: {exc}", *problems])
    if not res.ok:
        raise Deviation(f"IKE_AUTH: the DUT answered {res.detail}")
    problems += _header_problems(res.msg, response=True, initiator_flag=False, msg_id=1,
                                 what="the IKE_AUTH response")
    want_id = C.cfg(t).identity
    idr = res.msg.get(Identification, initiator=False)
    if want_id and idr is not None:
        got = Identity(idr.id_type, idr.data)
        if got.label() != Identity.of(want_id).label():
            problems.append(f"the DUT's IDr is {got.label()}, not {want_id} (extensions.ikev2.identity)")
    child = res.child
    if child is None:
        problems.append(f"no CHILD_SA: {res.detail}")
    else:
        v4 = [s.label() for s in child.ts_local + child.ts_remote if s.ts_type != 8]
        if v4:
            problems.append(f"the CHILD_SA's traffic selectors include IPv4 ranges {v4}")
        seen.append(f"IKE_AUTH: the DUT's AUTH verifies with the PSK; {child.label()}, TSi "
                    f"{[s.label() for s in child.ts_local]} TSr {[s.label() for s in child.ts_remote]}")
    return t.conclude(seen, problems)


@check(
    area="ikev2", ipv6ready="IKEv2.EN.I.1.1.1.1",
    title="The DUT as initiator offers the RFC 8247 MUST transforms in a well-formed IKE_SA_INIT",
    rfc="RFC 8247 §3.1 (ENCR_AES_CBC, PRF_HMAC_SHA2_256, AUTH_HMAC_SHA2_256_128, group 14 MUST); RFC 7296 §3.1 "
        "(header), §3.3 (SA), §3.4 (KE), §2.10 (nonce at least 128 bits and half the PRF key)",
    expect="the DUT's IKE_SA_INIT request (I flag, Message ID 0, zero responder SPI) offers a proposal holding "
           "ENCR_AES_CBC-128, PRF_HMAC_SHA2_256, AUTH_HMAC_SHA2_256_128 and MODP-2048, none of RFC 8247's MUST NOT "
           "transforms, a KE of an offered group with the group's length, a nonce of 16 to 256 octets; the IKE SA "
           "then comes up with it",
    fault="dut_ike_offers_no_must_transform",
    capabilities=["IKEv2"], dut_config="ipsec-vm",
)
def dut_initiates_with_the_rfc8247_must_transforms(t):
    """RFC 8247 §3.1: a conforming IKEv2 implementation MUST implement (and so be able to offer) the MUST
    transforms; an initiator that cannot offer them cannot interoperate with a peer restricted to them."""
    end = C.ike(t)
    since = C.make_dut_initiate(t)
    dg = end.ch.wait(C.initiation_wait(t), since=since, exchange=Exchange.IKE_SA_INIT, response=False)
    if dg is None:
        t.record_dut_sent(since, what="IKE_SA_INIT request")
        raise Deviation(f"the DUT sent no IKE_SA_INIT request within {C.initiation_wait(t):g} s of being asked to "
                        "initiate")
    msg = Message.decode(dg.data)
    problems = _header_problems(msg, response=False, initiator_flag=True, msg_id=0, what="its IKE_SA_INIT request")
    if msg.spi_r != b"\0" * 8:
        problems.append(f"its IKE_SA_INIT request has responder SPI {msg.spi_r.hex()}, not zero (RFC 7296 §3.1)")
    sa, ke, nonce = msg.get(SA), msg.get(KE), msg.get(Nonce)
    if sa is None or ke is None or nonce is None:
        raise Deviation(f"its IKE_SA_INIT request lacks {[n for n, p in (('SA', sa), ('KE', ke), ('Ni', nonce)) if p is None]}"
                        f": {msg.label()}")
    offered = "; ".join(p.label() for p in sa.proposals)
    must = [p for p in sa.proposals if all(any(tr.id == tid and (bits is None or tr.key_length == bits)
                                                  for tr in p.of_type(tt)) for tt, (tid, bits) in MUST.items())]
    if not must:
        missing = sorted({f"{tt.name} {enum_name({TT.ENCR: Encr, TT.PRF: Prf, TT.INTEG: Integ, TT.DH: Group}[tt], tid)}"
                          for tt, (tid, bits) in MUST.items()
                          if not any(any(tr.id == tid and (bits is None or tr.key_length == bits)
                                         for tr in p.of_type(tt)) for p in sa.proposals)})
        problems.append(f"no proposal holds all four RFC 8247 MUST transforms (missing anywhere: "
                        f"{', '.join(missing) or 'none, but never together in one proposal'}); it offered {offered}")
    forbidden = [f"{tr.label()}" for p in sa.proposals for tr in p.transforms
                 if (tr.type, tr.id) in {(TT.ENCR, Encr.DES), (TT.PRF, Prf.HMAC_MD5), (TT.INTEG, Integ.HMAC_MD5_96),
                                         (TT.DH, Group.MODP_768)}]
    if forbidden:
        problems.append(f"it offers RFC 8247 MUST NOT transforms {forbidden}")
    groups = PR.offered_groups(sa.proposals)
    if ke.group not in groups:
        problems.append(f"its KE is of group {ke.group}, which its SA does not offer ({groups})")
    elif len(ke.data) != ke_size(ke.group):
        problems.append(f"its KE data is {len(ke.data)} octets, not {ke_size(ke.group)} for group {ke.group}")
    if not 16 <= len(nonce.data) <= 256:
        problems.append(f"its nonce is {len(nonce.data)} octets (RFC 7296 §2.10: 16 to 256)")
    seen = [f"IKE_SA_INIT request {msg.label()}: offers {offered}; KE group {ke.group}; nonce {len(nonce.data)} "
            f"octets"]
    if problems:
        return t.conclude(seen, problems)
    try:
        res = C.serve_dut(t, end, since=since)
    except NotJudged as exc:  # this check judges the initiation itself
        return t.conclude(seen, [f"the IKE SA did not come up after its request: {exc.detail}"])
    seen.append(f"the IKE SA came up ({end.peer.ike.chosen.label()}); {res.child.label()}")
    return t.conclude(seen, problems)


def _first_request(t, end, since: float):
    dg = end.ch.wait(C.initiation_wait(t), since=since, exchange=Exchange.IKE_SA_INIT, response=False)
    if dg is None:
        raise t.not_judged("ike-init", C.JUDGED_BY_INITIATOR,
                           f"the DUT sent no IKE_SA_INIT request within {C.initiation_wait(t):g} s of being asked to "
                           "initiate")
    return dg, Message.decode(dg.data)


def _reply_init(t, end, dg, payloads) -> float:
    """An unprotected IKE_SA_INIT response (zero responder SPI) to the DUT's request."""
    msg = Message.decode(dg.data)
    out = Message(msg.spi_i, b"\0" * 8, Exchange.IKE_SA_INIT, Flag.RESPONSE, 0, payloads).encode()
    return end.ch.send(out, f"IKE_SA_INIT response {[p.label() for p in payloads]}", dport=dg.sport, answers=dg.data)


def _next_request(t, end, since: float, spi_i: bytes, first: bytes):
    """The DUT's next IKE_SA_INIT request after ``since`` (its retransmissions of ``first`` are kept apart)."""
    deadline = t.port.now() + C.initiation_wait(t)
    repeats = 0
    while True:
        left = deadline - t.port.now()
        dg = end.ch.wait(max(left, 0.0), since=since, exchange=Exchange.IKE_SA_INIT, response=False) if left > 0 \
            else None
        if dg is None:
            return None, repeats
        since = dg.time + 1e-6
        if dg.data == first:
            repeats += 1
            continue
        return dg, repeats


@check(
    area="ikev2", ipv6ready="IKEv2.EN.I.1.1.6.11",
    title="INVALID_KE_PAYLOAD makes the DUT retry IKE_SA_INIT with the group the responder asked for",
    rfc="RFC 7296 §1.2 and §2.7 (INVALID_KE_PAYLOAD: the initiator retries with the requested group), §3.10.1",
    expect="after an IKE_SA_INIT response carrying only N(INVALID_KE_PAYLOAD) naming another group the DUT offered, "
           "its next IKE_SA_INIT request carries a KE of that group and the same proposals, and the IKE SA comes up "
           "with that group",
    parts=[Part("A", "INVALID_KE_PAYLOAD to the first request"),
           Part("cookie_first", "a COOKIE first, then INVALID_KE_PAYLOAD (IKEv2.EN.I.1.1.5.2)", cookie=True,
                ipv6ready="IKEv2.EN.I.1.1.5.2")],
    fault="dut_ignores_invalid_ke_payload",
    capabilities=["IKEv2"], dut_config="ipsec-vm",
)
def invalid_ke_payload_makes_the_dut_retry_with_the_requested_group(t):
    """RFC 7296 §1.2: "If the guess turns out wrong, the responder will respond with a Notify payload of type
    INVALID_KE_PAYLOAD indicating the selected group.  In this case, the initiator MUST retry the IKE_SA_INIT
    with the corrected Diffie-Hellman group."""
    end = C.ike(t)
    since = C.make_dut_initiate(t)
    dg, msg = _first_request(t, end, since)
    seen = [f"first request {msg.label()}, KE group {msg.get(KE).group if msg.get(KE) else '?'}"]
    if getattr(t.p, "cookie", False):
        cookie = b"\x01" + P.nonce(32)
        sent = _reply_init(t, end, dg, [Notification(Notify.COOKIE, cookie)])
        dg2, repeats = _next_request(t, end, sent, msg.spi_i, dg.data)
        if dg2 is None:
            raise t.not_judged("cookie-echoed", "ikev2.cookie_is_echoed_first_with_the_request_unchanged#A",
                               f"the DUT did not retry after the COOKIE ({repeats} retransmission(s) of the first "
                               "request)")
        dg, msg = dg2, Message.decode(dg2.data)
        seen.append(f"after the COOKIE: {msg.label()}")
    sa, ke = msg.get(SA), msg.get(KE)
    if sa is None or ke is None:
        raise Deviation(f"the DUT's IKE_SA_INIT request lacks an SA or KE: {msg.label()}")
    groups = PR.offered_groups(sa.proposals)
    other = [g for g in groups if g != ke.group]
    if not other:
        raise NotApplicable(f"the DUT offers one Diffie-Hellman group ({groups}): an INVALID_KE_PAYLOAD can name no "
                            "other")
    want = other[0]
    sent = _reply_init(t, end, dg, [Notification(Notify.INVALID_KE_PAYLOAD, struct.pack("!H", want))])
    t.note(f"asked for group {want} ({enum_name(Group, want)}) instead of {ke.group}")
    retry, repeats = _next_request(t, end, sent, msg.spi_i, dg.data)
    if retry is None:
        t.record_dut_sent(sent, what="IKE_SA_INIT retry")
        return t.conclude(f"the DUT did not retry with group {want} after INVALID_KE_PAYLOAD"
                          + (f"; it retransmitted its request with group {ke.group} {repeats} time(s)" if repeats else ""),
                          [f"no IKE_SA_INIT with a KE of group {want} within {C.initiation_wait(t):g} s"
                           + (f"; {repeats} retransmission(s) with KE group {ke.group}" if repeats else "")])
    rmsg = Message.decode(retry.data)
    rke, rsa = rmsg.get(KE), rmsg.get(SA)
    problems = []
    if rke is None or rke.group != want:
        problems.append(f"the DUT's next IKE_SA_INIT carries KE group {rke.group if rke else 'none'}, not {want} as "
                        "INVALID_KE_PAYLOAD asked")
    if rsa is None or sorted(p.label() for p in rsa.proposals) != sorted(p.label() for p in sa.proposals):
        problems.append(f"the retry offers other proposals ({'; '.join(p.label() for p in rsa.proposals) if rsa else 'none'}"
                        f"), not the first request's ({'; '.join(p.label() for p in sa.proposals)})")
    elif [p.label() for p in rsa.proposals] != [p.label() for p in sa.proposals]:
        seen.append("the retry puts the proposal with the requested group first (same proposals, RFC 7296 leaves the "
                    "order to the initiator)")
    seen.append(f"retry {rmsg.label()} with KE group {rke.group if rke else '?'} (+{retry.time - sent:.3f} s)")
    if problems:
        return t.conclude(seen, problems)
    # the IKE SA comes up with the group the tester asked for
    with end.ch.lock:
        out, res = end.peer.answer_sa_init(retry.data, demand_group=want)
    end.ch.send(out, f"IKE_SA_INIT response ({res.detail})", dport=retry.sport, answers=retry.data)
    if not res.ok:
        return t.conclude(seen, [f"the tester could not accept the DUT's retry: {res.detail}"])
    if end.peer.nat_detected:
        end.ch.use_natt()
    try:
        ares, _ = X.serve_auth(end.ch, end.peer, C.initiation_wait(t), retry.time)
    except (X.NoAnswer, ProtocolError, IkeParseError, CryptoError) as exc:
        return t.conclude(seen, [f"after the retry with group {want}, IKE_AUTH did not complete: {exc}"])
    seen.append(f"IKE SA up with group {end.peer.ike.chosen.group}: {ares.detail}")
    return t.conclude(seen, [] if ares.ok else [f"IKE_AUTH: {ares.detail}"])


@check(
    area="ikev2", ipv6ready="IKEv2.EN.I.1.1.5.1",
    title="A COOKIE is echoed first, with the rest of the IKE_SA_INIT request unchanged",
    rfc="RFC 7296 §2.6 (the initiator MUST retry the IKE_SA_INIT with the COOKIE as the first payload and all "
        "other payloads unchanged), §3.10.1",
    expect="after an IKE_SA_INIT response carrying only N(COOKIE), the DUT's next IKE_SA_INIT request starts with "
           "N(COOKIE) holding the same octets, with the same SPI and the other payloads unchanged, and the IKE SA "
           "then comes up",
    parts=[Part(None, "COOKIE of 33 octets")],
    fault="dut_drops_the_cookie",
    capabilities=["IKEv2"], dut_config="ipsec-vm",
)
def cookie_is_echoed_first_with_the_request_unchanged(t):
    """RFC 7296 §2.6: "the initiator MUST retry the IKE_SA_INIT with a Notify payload of type COOKIE
    containing the responder-supplied cookie data as the first payload and all other payloads unchanged."
    A responder under attack depends on it: without the echo it never keeps state."""
    end = C.ike(t)
    since = C.make_dut_initiate(t)
    dg, msg = _first_request(t, end, since)
    cookie = b"\x01" + P.nonce(32)
    sent = _reply_init(t, end, dg, [Notification(Notify.COOKIE, cookie)])
    retry, repeats = _next_request(t, end, sent, msg.spi_i, dg.data)
    seen = [f"first request {msg.label()}"]
    if retry is None:
        t.record_dut_sent(sent, what="IKE_SA_INIT with the COOKIE")
        return t.conclude(f"the DUT sent its IKE_SA_INIT again without the COOKIE ({repeats} retransmission(s) of the "
                          "first request)" if repeats else "the DUT did not retry IKE_SA_INIT after the COOKIE",
                          [f"no IKE_SA_INIT request echoing the COOKIE within {C.initiation_wait(t):g} s"
                           + (f"; {repeats} unchanged retransmission(s) without it" if repeats else "")])
    rmsg = Message.decode(retry.data)
    seen.append(f"retry {rmsg.label()} (+{retry.time - sent:.3f} s)")
    problems = []
    first = rmsg.payloads[0] if rmsg.payloads else None
    cookies = [p for p in rmsg.payloads if isinstance(p, Notification) and p.type == Notify.COOKIE]
    if not cookies:
        problems.append("the DUT sent its IKE_SA_INIT again without the COOKIE")
    else:
        if cookies[0].data != cookie:
            problems.append(f"the echoed COOKIE holds {cookies[0].data.hex()[:24]}..., not the {len(cookie)} octets "
                            "the tester sent")
        if first is not cookies[0]:
            problems.append(f"the COOKIE is not the first payload ({rmsg.label()})")
    if rmsg.spi_i != msg.spi_i:
        problems.append(f"the retry has a new initiator SPI ({rmsg.spi_i.hex()}, was {msg.spi_i.hex()})")
    rest = [(p.ptype, p.raw) for p in rmsg.payloads if not (isinstance(p, Notification) and p.type == Notify.COOKIE)]
    before = [(p.ptype, p.raw) for p in msg.payloads]
    if rest != before:
        changed = sorted({enum_name(PT, a[0])
                          for a, b in zip(rest, before) if a != b} | ({"the payload list"} if len(rest) != len(before)
                                                                       else set()))
        problems.append(f"the other payloads changed in the retry ({', '.join(changed)}); RFC 7296 §2.6 wants them "
                        "unchanged")
    if problems:
        return t.conclude(seen, problems)
    try:
        res = C.serve_dut(t, end, since=retry.time - 1e-6)
    except NotJudged as exc:
        return t.conclude(seen, [f"after echoing the COOKIE, the IKE SA did not come up: {exc.detail}"])
    seen.append(f"the IKE SA came up: {res.child.label()}")
    return t.conclude(seen, problems)
