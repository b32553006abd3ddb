"""IKE_AUTH with a pre-shared key (RFC 7296 §2.15, §2.21.2): the key proves
both ends, and an AUTH made with another key is refused."""

from __future__ import annotations

from ...core.check import Part, check
from ...core.verdict import Deviation
from ...net.ikev2 import exchange as X
from ...net.ikev2.codec import SA, Auth, IkeParseError
from ...net.ikev2.const import Notify
from ...net.ikev2.crypto import CryptoError
from ...net.ikev2.peer import ProtocolError
from . import _common as C

#: the key part B authenticates with: one the DUT was not given (the fault gives it to the DUT)
WRONG_PSK = b"v6gate-not-the-dut-key"


@check(
    area="ikev2", ipv6ready=None,
    title="IKE_AUTH with a pre-shared key proves both ends, and another key is refused",
    rfc="RFC 7296 §2.15 (AUTH = prf(prf(Shared Secret, \"Key Pad for IKEv2\"), <SignedOctets>)), §2.21.2 "
        "(AUTHENTICATION_FAILED), §1.2",
    expect="with the configured key, the DUT accepts the tester's AUTH and its own AUTH verifies with that key (as "
           "responder and as initiator); an AUTH made with another key gets an IKE_AUTH response with "
           "N(AUTHENTICATION_FAILED) and no AUTH or SA",
    parts=[
        Part("A", "the DUT as responder, the configured key", fault="dut_has_another_psk"),
        Part("B", "the DUT as responder, an AUTH made with another key", wrong_key=True,
             fault="dut_was_given_the_testers_wrong_psk",
             expect="an IKE_AUTH response with N(AUTHENTICATION_FAILED), no AUTH, no SA"),
        Part("C", "the DUT as initiator, the configured key", initiator=True, fault="dut_has_another_psk"),
    ],
    capabilities=["IKEv2"], dut_config="ipsec-vm",
)
def ike_auth_with_psk_proves_both_ends(t):
    """RFC 7296 §2.15: each end computes AUTH over its own signed octets with the shared secret, and MUST
    verify the peer's; §2.21.2: a responder whose check fails answers AUTHENTICATION_FAILED and does not set
    up the IKE SA.  A DUT that accepts any AUTH, or proves itself with a key other than the configured one,
    authenticates nobody."""
    if getattr(t.p, "initiator", False):
        return _dut_initiates(t)
    C.require_role(t, "responder")
    wrong = getattr(t.p, "wrong_key", False)
    end = C.ike(t, psk=WRONG_PSK if wrong else None)
    try:
        res, _ = X.initiate(end.ch, end.peer, t.reply_timeout)
    except (X.NoAnswer, ProtocolError, IkeParseError, CryptoError) as exc:
        raise t.not_judged("ike-sa-init", C.JUDGED_BY_RESPONDER, f"IKE_SA_INIT did not complete: {exc}") from None
    if not res.ok:
        raise t.not_judged("ike-sa-init", C.JUDGED_BY_RESPONDER, f"IKE_SA_INIT: the DUT answered {res.detail}")
    try:
        res = X.authenticate(end.ch, end.peer, t.reply_timeout)
    except X.NoAnswer as exc:
        raise Deviation(f"the DUT did not answer the IKE_AUTH request: {exc}") from None
    except ProtocolError as exc:
        if wrong:
            raise Deviation(f"the DUT answered an AUTH made with another key as if it were valid, and proved itself "
                            f"with that key: {exc}") from None
        raise Deviation(f"the DUT's IKE_AUTH response does not prove the configured key: {exc}") from None
    except (IkeParseError, CryptoError) as exc:
        raise Deviation(f"the DUT's IKE_AUTH response cannot be read with the IKE SA's keys: {exc}") from None
    msg = res.msg
    if wrong:
        refused = msg.notify(Notify.AUTHENTICATION_FAILED)
        problems = []
        if msg.get(Auth) is not None:
            problems.append("the DUT accepted an AUTH made with a key it was not given: its IKE_AUTH response "
                            "carries its own AUTH" + (" and a CHILD_SA" if msg.get(SA) else ""))
        elif refused is None:
            problems.append(f"the DUT refused the AUTH without N(AUTHENTICATION_FAILED): {msg.label()}")
        if msg.get(SA) is not None and msg.get(Auth) is None:
            problems.append("the refusal carries an SA payload")
        return t.conclude(f"IKE_AUTH with another key: the DUT answered {msg.label()}", problems,
                          passed=f"an AUTH made with another key got {msg.label()}: refused with "
                                 "AUTHENTICATION_FAILED")
    if not res.ok:
        raise Deviation(f"the DUT refused the tester's AUTH made with the configured key: {res.detail}")
    return t.conclude(f"the DUT accepted the tester's AUTH and its own AUTH verifies with the configured key; "
                      f"{res.detail}", [])


def _dut_initiates(t):
    end = C.ike(t)
    since = C.make_dut_initiate(t)
    try:
        res, _, seen = X.serve_init(end.ch, end.peer, C.initiation_wait(t), since)
    except (X.NoAnswer, ProtocolError, IkeParseError, CryptoError) as exc:
        raise t.not_judged("ike-sa-init", C.JUDGED_BY_INITIATOR, f"IKE_SA_INIT did not complete: {exc}") from None
    if not res.ok:
        raise t.not_judged("ike-sa-init", C.JUDGED_BY_INITIATOR, f"IKE_SA_INIT: {res.detail}")
    try:
        res, _ = X.serve_auth(end.ch, end.peer, C.initiation_wait(t), seen[-1].time)
    except X.NoAnswer as exc:
        raise Deviation(f"the DUT sent no IKE_AUTH request after the IKE_SA_INIT exchange: {exc}") from None
    except (ProtocolError, IkeParseError, CryptoError) as exc:
        raise Deviation(f"the DUT's IKE_AUTH request cannot be read with the IKE SA's keys: {exc}") from None
    if not res.ok:
        raise Deviation(f"the DUT's AUTH does not prove the configured key: {res.detail}")
    return t.conclude(f"the DUT's AUTH verifies with the configured key; {res.detail}", [])
