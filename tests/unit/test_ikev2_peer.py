"""The tester's IKEv2 end node against itself, in both roles: every exchange
of RFC 7296 §1 (IKE_SA_INIT with COOKIE and INVALID_KE_PAYLOAD, IKE_AUTH
with a PSK and with certificates, CREATE_CHILD_SA for a CHILD_SA and both
rekeys, INFORMATIONAL liveness and DELETE), and what a broken message does
(bad ICV, wrong SPI, wrong PSK, retransmitted request).  The same code is
proven against strongSwan in tests/lab/test_ikev2_strongswan.py."""

from __future__ import annotations

import pytest

from v6gate.net.ikev2 import certs, crypto, proposals
from v6gate.net.ikev2.codec import Auth, Cert, Delete, Message
from v6gate.net.ikev2.const import AuthMethod, Exchange, Group, Notify, Proto
from v6gate.net.ikev2.peer import Config, Identity, IkePeer, ProtocolError

A, B = "2001:db8:1::a", "2001:db8:1::b"


def pair(ike="aes128-sha256-modp2048", esp="aes128-sha256", **kw):
    ci = Config(A, B, [proposals.parse(ike)], [proposals.parse(esp, Proto.ESP)], psk=b"lab secret",
                **kw.get("i", {}))
    cr = Config(B, A, [proposals.parse(kw.get("r_ike", ike))], [proposals.parse(kw.get("r_esp", esp), Proto.ESP)],
                psk=kw.get("r_psk", b"lab secret"), **kw.get("r", {}))
    return IkePeer(ci), IkePeer(cr)


def establish(i, r, **answer):
    resp, _ = r.answer_sa_init(i.sa_init(), **answer)
    got = i.take_sa_init(resp)
    while got.kind in ("cookie", "invalid_ke"):
        resp, _ = r.answer_sa_init(i.sa_init(), **answer)
        got = i.take_sa_init(resp)
    assert got.ok, got.detail
    out, _res = r.answer_auth(i.auth())
    return i.take_auth(out)


@pytest.mark.parametrize(("ike", "esp"), [("aes128-sha256-modp2048", "aes128-sha256"),
                                          ("aes256gcm16-prfsha256-ecp256", "aes128gcm16"),
                                          ("aes128-sha256-curve25519", "aes256gcm16-esn"),
                                          ("chacha20poly1305-prfsha512-ecp384", "aes256-sha512"),
                                          ("3des-sha1-modp1024", "3des-sha1")])
def test_both_roles_agree_on_every_key(ike, esp):
    i, r = pair(ike, esp)
    res = establish(i, r)
    assert res.ok, res.detail
    assert i.ike.keys == r.ike.keys
    ci, cr = i.children[0], r.children[0]
    assert (ci.spi_out, ci.spi_in) == (cr.spi_in, cr.spi_out)
    assert (ci.encr_out, ci.integ_out, ci.encr_in) == (cr.encr_in, cr.integ_in, cr.encr_out)


def test_cookie_then_invalid_ke_then_the_requested_group():
    i, r = pair("aes128-sha256-modp2048-ecp256")
    resp, res = r.answer_sa_init(i.sa_init(), require_cookie=True, demand_group=Group.ECP_256)
    assert res.kind == "cookie" and i.take_sa_init(resp).kind == "cookie"
    req = i.sa_init()
    assert Message.decode(req).payloads[0].type == Notify.COOKIE  # echoed first (§2.6)
    resp, res = r.answer_sa_init(req, require_cookie=True, demand_group=Group.ECP_256)
    assert res.kind == "invalid_ke"
    assert i.take_sa_init(resp).kind == "invalid_ke" and i.group == Group.ECP_256
    resp, res = r.answer_sa_init(i.sa_init(), require_cookie=True, demand_group=Group.ECP_256)
    assert res.ok and i.take_sa_init(resp).ok and i.ike.chosen.group == Group.ECP_256


def test_a_cookie_not_first_or_changed_is_not_accepted():
    i, r = pair()
    resp, _ = r.answer_sa_init(i.sa_init(), require_cookie=True)
    i.take_sa_init(resp)
    i.cookie = i.cookie[:-1] + bytes([i.cookie[-1] ^ 1])
    _, res = r.answer_sa_init(i.sa_init(), require_cookie=True)
    assert res.kind == "cookie" and "wrong value" in res.detail


def test_only_deprecated_transforms_get_no_proposal_chosen():
    i, r = pair("3des-sha1-modp1024", r_ike="aes128-sha256-modp2048")
    resp, res = r.answer_sa_init(i.sa_init())
    got = i.take_sa_init(resp)
    assert (res.kind, got.kind, got.notify.type) == ("refused", "refused", Notify.NO_PROPOSAL_CHOSEN)


def test_a_wrong_psk_gets_authentication_failed():
    i, r = pair(r_psk=b"another secret")
    res = establish(i, r)
    assert res.kind == "refused" and res.notify.type == Notify.AUTHENTICATION_FAILED


def test_a_responder_auth_that_does_not_verify_is_a_protocol_error():
    i, r = pair()
    resp, _ = r.answer_sa_init(i.sa_init())
    i.take_sa_init(resp)
    out, _ = r.answer_auth(i.auth(), psk=b"not the secret")
    with pytest.raises(ProtocolError, match="does not verify"):
        i.take_auth(out)


def test_a_flipped_icv_and_a_flipped_ciphertext_do_not_open():
    i, r = pair()
    establish(i, r)
    req = i.informational()
    with pytest.raises(crypto.CryptoError, match="Integrity Checksum"):
        r.ike.open(req[:-1] + bytes([req[-1] ^ 0x80]))
    with pytest.raises(crypto.CryptoError):
        r.ike.open(req[:60] + bytes([req[60] ^ 1]) + req[61:])
    out, res = r.answer(req)  # the intact one still opens and is answered
    assert res.ok and i.take_response(out).ok


def test_aead_ike_sa_rejects_a_changed_header():
    i, r = pair("aes128gcm16-prfsha256-ecp256")
    establish(i, r)
    req = bytearray(i.informational())
    req[19] ^= 0x04  # a flag in the header: authenticated as AAD (RFC 5282 §5.1)
    with pytest.raises(crypto.CryptoError, match="tag"):
        r.ike.open(bytes(req))


def test_a_retransmitted_request_gets_the_same_response():
    i, r = pair()
    establish(i, r)
    req = i.informational()
    first, _ = r.answer(req)
    again, res = r.answer(req)
    assert again == first and "retransmitted" in res.detail


def test_an_unexpected_message_id_is_not_answered():
    i, r = pair()
    establish(i, r)
    i.ike.next_request = 7
    out, res = r.answer(i.informational())
    assert out is None and res.kind == "protocol" and "expected 2" in res.detail


def test_rekeys_and_delete():
    i, r = pair("aes128-sha256-ecp256", "aes128gcm16")
    establish(i, r)
    old = i.children[0]
    out, res = r.answer(i.create_child(rekey=old, pfs_group=Group.ECP_256))
    got = i.take_response(out)
    assert got.ok and old.rekeyed_by is got.child and got.child.encr_out == r.children[-1].encr_in
    out, _ = r.answer(i.delete_child(old))
    got = i.take_response(out)
    assert got.ok and old not in i.children and Delete in {type(p) for p in got.msg.inner}
    old_ike = i.ike
    out, _ = r.answer(i.rekey_ike())
    assert i.take_response(out).ok and i.ike is not old_ike and i.ike.keys == r.ike.keys
    # the old IKE SA is deleted on itself; the new one carries the CHILD_SAs on
    req = old_ike.protect(Exchange.INFORMATIONAL, old_ike.next_request, [Delete(Proto.IKE, [])], response=False)
    out, res = r.answer(req, ike=r.old_ikes[0])
    assert res.detail == "DELETE of the IKE SA" and not r.deleted and not r.old_ikes
    out, res = i.answer(r.informational())
    assert res.detail == "liveness check" and r.take_response(out).ok


def test_certificates_authenticate_both_ends():
    ca_key, ca = certs.make_ca()
    ka, ca_a = certs.make_cert(ca_key, ca, "tester", A)
    kb, ca_b = certs.make_cert(ca_key, ca, "peer", B)
    i, r = pair(i={"private_key": ka, "cert": ca_a, "trust": [ca]},
                r={"private_key": kb, "cert": ca_b, "trust": [ca]})
    i.cfg.psk = r.cfg.psk = None
    res = establish(i, r)
    assert res.ok, res.detail
    assert res.msg.get(Cert) is not None and res.msg.get(Auth).method == AuthMethod.DIGITAL_SIGNATURE
    _, other = certs.make_ca("another CA")
    i2, r2 = pair(i={"private_key": ka, "cert": ca_a, "trust": [other]}, r={"private_key": kb, "cert": ca_b,
                                                                            "trust": [ca]})
    i2.cfg.psk = r2.cfg.psk = None
    with pytest.raises(ProtocolError, match="not issued by a trusted CA"):
        establish(i2, r2)


def test_identity_strings():
    assert Identity.of("2001:db8::1").label() == "2001:db8::1"
    assert Identity.of("dut.example").id_type == 2 and Identity.of("ike@dut.example").id_type == 3
