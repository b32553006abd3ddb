"""The tester's IKEv2 cryptography on published vectors: NIST CAVP's IKEv2
KDF (SP 800-135) for SKEYSEED, prf+ and the rekey SKEYSEED, RFC 4231 for
HMAC-SHA-256, RFC 3526/2409 for the MODP primes (recomputed from their
formula, not copied), and agreement of both sides of every group."""

from __future__ import annotations

import pytest

from v6gate.net.ikev2 import crypto
from v6gate.net.ikev2.const import AuthMethod, Encr, Group, Integ, Prf

H = bytes.fromhex

# NIST CAVP IKEv2 KDF (SP 800-135), HMAC-SHA1, Ni/Nr of 64 bits, g^ir of 256 bits
CAVP = {
    "ni": H("32b50d5f4a3763f3"), "nr": H("9206a04b26564cb1"),
    "gir": H("4b2c1f971981a8ad8d0abeafabf38cf75fc8349c148142465ed9c8b516b8be52"),
    "gir_new": H("863f3c9d06efd39d2b907b97f8699e5dd5251ef64a2a176f36ee40c87d4f9330"),
    "spii": H("34c9e7c188868785"), "spir": H("3ff77d760d2b2199"),
    "skeyseed": H("a9a7b222b59f8f48645f28a1db5b5f5d7479cba7"),
    "skeyseed_rekey": H("63e81194946ebd05df7df5ebf5d8750056bf1f1d"),
    "dkm": H("a14293677cc80ff8f9cc0eee30d895da9d8f405666e30ef0dfcb63c634a46002a2a63080e514a062768b76606f9fa5e9"
             "92204fc5a670bde3f10d6b027113936a5c55b648a194ae587b0088d52204b702c979fa280870d2ed41efa9c549fd1119"
             "8af1670b143d384bd275c5f594cf266b05ebadca855e4249520a441a81157435a7a56cc4"),
}
# a second CAVP case: the CHILD_SA DKM, prf+(SK_d, Ni | Nr), with SK_d the first 20 octets of its IKE DKM
CAVP_CHILD = {"sk_d": H("6f1b12cad3cbe097b35430356d869d54cddb0198"), "ninr": H("3651fef5c9c35e93c09a8b90a3f04d59"),
              "dkm_child_prefix": H("4727dc0ef94eb326ce131cf282fb652faa638ad0ddae3786a11bcc0309876009f8c485de"
                                    "011ad962c5b1ca8a41ff8145")}


def test_skeyseed_and_prf_plus_match_the_cavp_ikev2_kdf_vector():
    p = crypto.prf(Prf.HMAC_SHA1)
    seed = crypto.skeyseed(p, CAVP["ni"], CAVP["nr"], CAVP["gir"])
    assert seed == CAVP["skeyseed"]
    dkm = p.plus(seed, CAVP["ni"] + CAVP["nr"] + CAVP["spii"] + CAVP["spir"], len(CAVP["dkm"]))
    assert dkm == CAVP["dkm"]
    rekey = crypto.rekey_skeyseed(p, dkm[:20], CAVP["gir_new"], CAVP["ni"], CAVP["nr"])
    assert rekey == CAVP["skeyseed_rekey"]


def test_ike_keys_are_cut_from_the_dkm_in_the_rfc_order():
    p = crypto.prf(Prf.HMAC_SHA1)
    k = crypto.ike_keys(p, CAVP["skeyseed"], CAVP["ni"], CAVP["nr"], CAVP["spii"], CAVP["spir"], 20, 16)
    d = CAVP["dkm"]
    assert (k.sk_d, k.sk_ai, k.sk_ar) == (d[:20], d[20:40], d[40:60])
    assert (k.sk_ei, k.sk_er, k.sk_pi, k.sk_pr) == (d[60:76], d[76:92], d[92:112], d[112:132])


def test_child_keymat_matches_the_cavp_child_sa_vector():
    p = crypto.prf(Prf.HMAC_SHA1)
    n = len(CAVP_CHILD["dkm_child_prefix"])
    assert p.plus(CAVP_CHILD["sk_d"], CAVP_CHILD["ninr"], n) == CAVP_CHILD["dkm_child_prefix"]
    # KEYMAT order (§2.17): initiator->responder encryption, integrity, then responder->initiator
    keys = crypto.child_keys(p, CAVP_CHILD["sk_d"], CAVP_CHILD["ninr"][:8], CAVP_CHILD["ninr"][8:], 16, 4)
    km = CAVP_CHILD["dkm_child_prefix"]
    assert (keys.encr_i, keys.integ_i, keys.encr_r, keys.integ_r) == (km[:16], km[16:20], km[20:36], km[36:40])


def test_hmac_sha256_prf_matches_rfc4231_case_2():
    p = crypto.prf(Prf.HMAC_SHA2_256)
    assert p(b"Jefe", b"what do ya want for nothing?") == H(
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    assert crypto.integ(Integ.HMAC_SHA2_256_128)(b"Jefe", b"what do ya want for nothing?") == H(
        "5bdcc146bf60754e6a042426089575c7")


def test_prf_plus_refuses_more_than_255_rounds():
    with pytest.raises(crypto.CryptoError):
        crypto.prf(Prf.HMAC_SHA2_256).plus(b"k", b"s", 256 * 32)


def _pi_bits(n: int) -> int:
    """floor(2^n * pi), by Machin's formula in integers (guard bits make the floor exact)."""
    guard = 64
    one = 1 << (n + guard)

    def arctan_inv(x: int) -> int:
        total, term, k, sign = 0, one // x, 1, 1
        while term:
            total += sign * (term // k)
            term //= x * x
            k += 2
            sign = -sign
        return total

    return (4 * (4 * arctan_inv(5) - arctan_inv(239))) >> guard


@pytest.mark.parametrize(("group", "bits", "k"), [(Group.MODP_1024, 1024, 129093), (Group.MODP_2048, 2048, 124476)])
def test_modp_primes_follow_the_rfc_formula(group, bits, k):
    """RFC 2409 §6.2 / RFC 3526 §3: p = 2^n - 2^(n-64) - 1 + 2^64 * (floor(2^(n-130) pi) + k), g = 2."""
    want = 2**bits - 2**(bits - 64) - 1 + 2**64 * (_pi_bits(bits - 130) + k)
    p, g = crypto._modp(bits)
    assert (p, g) == (want, 2)


@pytest.mark.parametrize("group", [Group.MODP_1024, Group.MODP_2048, Group.ECP_256, Group.ECP_384,
                                   Group.CURVE25519, Group.CURVE448])
def test_both_sides_of_a_group_agree(group):
    a, b = crypto.DhKey(group), crypto.DhKey(group)
    assert len(a.public) == crypto.ke_size(group)
    assert a.shared(b.public) == b.shared(a.public)


def test_bad_public_values_are_refused():
    m = crypto.DhKey(Group.MODP_2048)
    with pytest.raises(crypto.CryptoError, match="public value"):
        m.shared((1).to_bytes(256, "big"))
    with pytest.raises(crypto.CryptoError, match="256"):
        m.shared(b"\x05" * 128)
    e = crypto.DhKey(Group.ECP_256)
    with pytest.raises(crypto.CryptoError, match="not a point"):
        e.shared(b"\x01" * 64)
    x = crypto.DhKey(Group.CURVE25519)
    with pytest.raises(crypto.CryptoError, match="all-zero"):
        x.shared(b"\0" * 32)


@pytest.mark.parametrize(("encr_id", "bits"), [(Encr.AES_CBC, 128), (Encr.AES_CBC, 256), (Encr.TRIPLE_DES, None),
                                              (Encr.AES_GCM_16, 128), (Encr.AES_GCM_16, 256),
                                              (Encr.AES_GCM_8, 128), (Encr.CHACHA20_POLY1305, None)])
def test_ciphers_round_trip_and_aeads_reject_a_changed_byte(encr_id, bits):
    e = crypto.encr(encr_id, bits)
    key = bytes(range(e.key_size))
    iv = bytes(e.iv_size)
    plain = bytes(e.block * 3)
    ct = e.encrypt(key, iv, plain, aad=b"header")
    assert e.decrypt(key, iv, ct, aad=b"header") == plain
    if e.aead:
        with pytest.raises(crypto.CryptoError):
            e.decrypt(key, iv, ct[:-1] + bytes([ct[-1] ^ 1]), aad=b"header")
        with pytest.raises(crypto.CryptoError):
            e.decrypt(key, iv, ct, aad=b"other header")


def test_aes_gcm_salt_is_the_last_four_octets_of_the_key(monkeypatch):
    """RFC 5282 §7.1 / RFC 4106 §8.1: the keying material is the key followed by a 4-octet salt; the nonce is
    salt | IV."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    e = crypto.encr(Encr.AES_GCM_16, 128)
    key, iv = bytes(range(20)), b"\x01" * 8
    assert e.encrypt(key, iv, b"abcd", b"aad") == AESGCM(key[:16]).encrypt(key[16:] + iv, b"abcd", b"aad")


def test_psk_auth_is_prf_of_prf_of_the_secret_and_the_key_pad():
    p = crypto.prf(Prf.HMAC_SHA2_256)
    octets = b"message" + b"nonce" + p(b"skp", b"\x05\0\0\0" + bytes(16))
    assert crypto.psk_auth(p, b"secret", octets) == p(p(b"secret", b"Key Pad for IKEv2"), octets)


def test_signatures_verify_and_a_changed_octet_does_not():
    from v6gate.net.ikev2 import certs

    key, _ = certs.make_ca()
    method, data = crypto.sign(key, b"signed octets")
    assert method == AuthMethod.DIGITAL_SIGNATURE
    assert crypto.verify(key.public_key(), method, data, b"signed octets") == "ecdsa-with-sha256"
    with pytest.raises(crypto.CryptoError, match="does not verify"):
        crypto.verify(key.public_key(), method, data, b"signed octets!")


def test_unknown_algorithms_are_unsupported_not_guessed():
    with pytest.raises(crypto.Unsupported):
        crypto.encr(Encr.AES_CBC, 100)
    with pytest.raises(crypto.Unsupported):
        crypto.prf(Prf.AES128_XCBC)
    with pytest.raises(crypto.Unsupported):
        crypto.DhKey(Group.MODP_1024_160)
