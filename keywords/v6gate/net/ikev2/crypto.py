"""IKEv2's cryptography (RFC 7296 §2.13-§2.17, §3.14; algorithms RFC 8247),
on the ``cryptography`` package.

* Diffie-Hellman: MODP groups (RFC 3526, RFC 2409; the primes are Scapy's
  copies, checked against the RFC formula by the unit tests), ECP
  (RFC 5903: the KE data is x | y, the shared secret x), Curve25519/448
  (RFC 8031).
* PRFs and prf+ (§2.13), the key schedule (§2.14, §2.18, §2.17).
* The SK payload's transforms: AES-CBC and 3DES-CBC with an HMAC ICV
  (§3.14), AES-GCM (RFC 5282) and ChaCha20-Poly1305 (RFC 7634) as AEADs.
* AUTH (§2.15): the pre-shared key MAC and digital signatures (RFC 7427).

Deprecated algorithms are here on purpose: the tester offers them to see
them refused.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, x448, x25519
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

from .const import AuthMethod, Encr, Group, Integ, Prf

try:  # cryptography >= 43 keeps 3DES among the "decrepit" algorithms
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
except ImportError:  # pragma: no cover - older cryptography
    TripleDES = algorithms.TripleDES


class CryptoError(ValueError):
    """An integrity check failed, or a peer's value is unusable (say which)."""


class Unsupported(ValueError):
    """An algorithm this implementation does not have."""


# -- PRF (§2.13) -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PrfAlg:
    id: int
    hash: str

    @property
    def size(self) -> int:
        return hashlib.new(self.hash).digest_size

    def __call__(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash).digest()

    def plus(self, key: bytes, seed: bytes, length: int) -> bytes:
        """prf+ (§2.13): T1 | T2 | ..., Tn = prf(K, Tn-1 | S | n), at most 255 rounds."""
        out, t, n = b"", b"", 1
        while len(out) < length:
            if n > 255:
                raise CryptoError(f"prf+ cannot make {length} octets with a {self.size}-octet PRF")
            t = self(key, t + seed + bytes([n]))
            out += t
            n += 1
        return out[:length]


PRFS = {Prf.HMAC_SHA2_256: PrfAlg(Prf.HMAC_SHA2_256, "sha256"), Prf.HMAC_SHA2_384: PrfAlg(Prf.HMAC_SHA2_384, "sha384"),
        Prf.HMAC_SHA2_512: PrfAlg(Prf.HMAC_SHA2_512, "sha512"), Prf.HMAC_SHA1: PrfAlg(Prf.HMAC_SHA1, "sha1"),
        Prf.HMAC_MD5: PrfAlg(Prf.HMAC_MD5, "md5")}


def prf(prf_id: int) -> PrfAlg:
    try:
        return PRFS[prf_id]
    except KeyError:
        raise Unsupported(f"PRF {prf_id} is not implemented by the tester") from None


# -- integrity (§3.14) ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class IntegAlg:
    id: int
    hash: str
    key_size: int
    icv_size: int

    def __call__(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash).digest()[:self.icv_size]


INTEGS = {Integ.HMAC_SHA2_256_128: IntegAlg(Integ.HMAC_SHA2_256_128, "sha256", 32, 16),
          Integ.HMAC_SHA2_384_192: IntegAlg(Integ.HMAC_SHA2_384_192, "sha384", 48, 24),
          Integ.HMAC_SHA2_512_256: IntegAlg(Integ.HMAC_SHA2_512_256, "sha512", 64, 32),
          Integ.HMAC_SHA1_96: IntegAlg(Integ.HMAC_SHA1_96, "sha1", 20, 12),
          Integ.HMAC_MD5_96: IntegAlg(Integ.HMAC_MD5_96, "md5", 16, 12)}


def integ(integ_id: int) -> IntegAlg:
    try:
        return INTEGS[integ_id]
    except KeyError:
        raise Unsupported(f"integrity algorithm {integ_id} is not implemented by the tester") from None


# -- encryption (§3.14, RFC 5282, RFC 7634) ------------------------------------------------------------------------
@dataclass(frozen=True)
class EncrAlg:
    id: int
    key_bits: int
    block: int  # the padding alignment
    iv_size: int
    aead: bool = False
    icv_size: int = 0  # AEAD tag
    salt: int = 0  # AEAD: octets of keying material beyond the key (RFC 5282 §7.1: 4)

    @property
    def key_size(self) -> int:
        """Octets of keying material: the key and, for an AEAD, its salt."""
        return self.key_bits // 8 + self.salt

    def _cipher(self, key: bytes, iv: bytes):
        if self.id == Encr.AES_CBC:
            return Cipher(algorithms.AES(key), modes.CBC(iv))
        if self.id == Encr.TRIPLE_DES:
            return Cipher(TripleDES(key), modes.CBC(iv))
        raise Unsupported(f"cipher {self.id}")

    def encrypt(self, key: bytes, iv: bytes, plain: bytes, aad: bytes = b"") -> bytes:
        """Ciphertext (and for an AEAD its tag) of ``plain``, already padded to ``block``."""
        if self.id == Encr.NULL:
            return plain
        if self.aead:
            k, salt = key[:-self.salt], key[-self.salt:]
            if self.id == Encr.AES_GCM_16:
                return AESGCM(k).encrypt(salt + iv, plain, aad)
            if self.id == Encr.CHACHA20_POLY1305:
                return ChaCha20Poly1305(k).encrypt(salt + iv, plain, aad)
            enc = Cipher(algorithms.AES(k), modes.GCM(salt + iv, min_tag_length=self.icv_size)).encryptor()
            enc.authenticate_additional_data(aad)
            return enc.update(plain) + enc.finalize() + enc.tag[:self.icv_size]
        e = self._cipher(key, iv).encryptor()
        return e.update(plain) + e.finalize()

    def decrypt(self, key: bytes, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        """Plaintext of ``data`` (an AEAD's ciphertext and tag); CryptoError when the tag does not verify."""
        if self.id == Encr.NULL:
            return data
        if self.aead:
            k, salt = key[:-self.salt], key[-self.salt:]
            try:
                if self.id == Encr.AES_GCM_16:
                    return AESGCM(k).decrypt(salt + iv, data, aad)
                if self.id == Encr.CHACHA20_POLY1305:
                    return ChaCha20Poly1305(k).decrypt(salt + iv, data, aad)
                ct, tag = data[:-self.icv_size], data[-self.icv_size:]
                d = Cipher(algorithms.AES(k), modes.GCM(salt + iv, tag, min_tag_length=self.icv_size)).decryptor()
                d.authenticate_additional_data(aad)
                return d.update(ct) + d.finalize()
            except InvalidTag:
                raise CryptoError("the AEAD tag (ICV) does not verify") from None
        if len(data) % self.block:
            raise CryptoError(f"{len(data)} octets of ciphertext are not whole {self.block}-octet blocks")
        d = self._cipher(key, iv).decryptor()
        return d.update(data) + d.finalize()


def encr(encr_id: int, key_bits: int | None = None) -> EncrAlg:
    """The cipher ``encr_id`` with ``key_bits`` (the Key Length attribute; 3DES has none)."""
    if encr_id == Encr.AES_CBC:
        if key_bits not in (128, 192, 256):
            raise Unsupported(f"ENCR_AES_CBC needs a Key Length of 128, 192 or 256 bits, not {key_bits}")
        return EncrAlg(encr_id, key_bits, 16, 16)
    if encr_id == Encr.TRIPLE_DES:
        return EncrAlg(encr_id, 192, 8, 8)
    if encr_id in (Encr.AES_GCM_16, Encr.AES_GCM_12, Encr.AES_GCM_8):
        if key_bits not in (128, 192, 256):
            raise Unsupported(f"AES-GCM needs a Key Length of 128, 192 or 256 bits, not {key_bits}")
        tag = {Encr.AES_GCM_16: 16, Encr.AES_GCM_12: 12, Encr.AES_GCM_8: 8}[encr_id]
        return EncrAlg(encr_id, key_bits, 4, 8, aead=True, icv_size=tag, salt=4)
    if encr_id == Encr.CHACHA20_POLY1305:
        return EncrAlg(encr_id, 256, 4, 8, aead=True, icv_size=16, salt=4)
    if encr_id == Encr.NULL:
        return EncrAlg(encr_id, 0, 4, 0)
    raise Unsupported(f"encryption algorithm {encr_id} is not implemented by the tester")


# -- Diffie-Hellman (§2.14; RFC 3526, 5903, 8031) ------------------------------------------------------------------
def _modp(bits: int) -> tuple[int, int]:
    from scapy.layers.tls.crypto import groups as G

    cls = {768: G.modp768, 1024: G.modp1024, 1536: G.modp1536, 2048: G.modp2048, 3072: G.modp3072,
           4096: G.modp4096}[bits]
    return cls.m, cls.g


MODP_BITS = {Group.MODP_768: 768, Group.MODP_1024: 1024, Group.MODP_1536: 1536, Group.MODP_2048: 2048,
             Group.MODP_3072: 3072, Group.MODP_4096: 4096}
ECP_CURVES = {Group.ECP_256: (ec.SECP256R1, 32), Group.ECP_384: (ec.SECP384R1, 48), Group.ECP_521: (ec.SECP521R1, 66)}


class DhKey:
    """One side's ephemeral key in ``group``: ``public`` is the KE payload's data."""

    def __init__(self, group: int):
        self.group = group
        if group in MODP_BITS:
            p, g = _modp(MODP_BITS[group])
            self.size = MODP_BITS[group] // 8
            self._p = p
            # a private exponent of twice the group's strength (RFC 3526 §8: 2048 bits ~ 110-bit strength) as
            # IKE implementations use; Python's pow, as cryptography deprecates finite-field DH
            self._x = secrets.randbits(512) | (1 << 511)
            self.public = pow(g, self._x, p).to_bytes(self.size, "big")
        elif group in ECP_CURVES:
            curve, self.size = ECP_CURVES[group]
            self._priv = ec.generate_private_key(curve())
            nums = self._priv.public_key().public_numbers()
            self.public = nums.x.to_bytes(self.size, "big") + nums.y.to_bytes(self.size, "big")
        elif group == Group.CURVE25519:
            self._priv, self.size = x25519.X25519PrivateKey.generate(), 32
            self.public = self._priv.public_key().public_bytes_raw()
        elif group == Group.CURVE448:
            self._priv, self.size = x448.X448PrivateKey.generate(), 56
            self.public = self._priv.public_key().public_bytes_raw()
        else:
            raise Unsupported(f"Diffie-Hellman group {group} is not implemented by the tester")

    def shared(self, peer: bytes) -> bytes:
        """g^ir (§2.14: for MODP the modulus length, zero-padded; ECP the x coordinate, RFC 5903 §7);
        CryptoError when the peer's public value is not a valid one of this group."""
        g = self.group
        if g in MODP_BITS:
            if len(peer) != self.size:
                raise CryptoError(f"KE data of {len(peer)} octets, not {self.size} for group {g}")
            y = int.from_bytes(peer, "big")
            if not 1 < y < self._p - 1:
                raise CryptoError(f"the peer's public value is {y if y < 2 else 'p-1 or larger'} (RFC 7296 §2.14)")
            return pow(y, self._x, self._p).to_bytes(self.size, "big")
        if g in ECP_CURVES:
            if len(peer) != 2 * self.size:
                raise CryptoError(f"KE data of {len(peer)} octets, not {2 * self.size} (x | y) for group {g}")
            try:
                pub = ec.EllipticCurvePublicKey.from_encoded_point(ECP_CURVES[g][0](), b"\x04" + peer)
            except ValueError:
                raise CryptoError(f"the peer's public value is not a point on group {g}'s curve") from None
            return self._priv.exchange(ec.ECDH(), pub).rjust(self.size, b"\0")
        if len(peer) != self.size:
            raise CryptoError(f"KE data of {len(peer)} octets, not {self.size} for group {g}")
        cls = x25519.X25519PublicKey if g == Group.CURVE25519 else x448.X448PublicKey
        try:
            out = self._priv.exchange(cls.from_public_bytes(peer))
        except ValueError:  # an all-zero result (RFC 8031 §2.3: MUST be rejected)
            raise CryptoError(f"the peer's public value gives the all-zero shared secret (group {g})") from None
        return out


def ke_size(group: int) -> int:
    if group in MODP_BITS:
        return MODP_BITS[group] // 8
    if group in ECP_CURVES:
        return 2 * ECP_CURVES[group][1]
    return {Group.CURVE25519: 32, Group.CURVE448: 56}.get(group, 0)


# -- the key schedule (§2.14, §2.17, §2.18) ---------------------------------------------------------------------------
@dataclass
class IkeKeys:
    sk_d: bytes
    sk_ai: bytes
    sk_ar: bytes
    sk_ei: bytes
    sk_er: bytes
    sk_pi: bytes
    sk_pr: bytes


def ike_keys(prf_alg: PrfAlg, skeyseed: bytes, ni: bytes, nr: bytes, spi_i: bytes, spi_r: bytes,
             integ_size: int, encr_size: int) -> IkeKeys:
    """{SK_d | SK_ai | SK_ar | SK_ei | SK_er | SK_pi | SK_pr} = prf+(SKEYSEED, Ni | Nr | SPIi | SPIr)."""
    n = prf_alg.size
    sizes = [n, integ_size, integ_size, encr_size, encr_size, n, n]
    stream = prf_alg.plus(skeyseed, ni + nr + spi_i + spi_r, sum(sizes))
    parts, i = [], 0
    for s in sizes:
        parts.append(stream[i:i + s])
        i += s
    return IkeKeys(*parts)


def skeyseed(prf_alg: PrfAlg, ni: bytes, nr: bytes, gir: bytes) -> bytes:
    """SKEYSEED = prf(Ni | Nr, g^ir) (§2.14)."""
    return prf_alg(ni + nr, gir)


def rekey_skeyseed(prf_alg: PrfAlg, old_sk_d: bytes, gir: bytes, ni: bytes, nr: bytes) -> bytes:
    """SKEYSEED = prf(SK_d (old), g^ir (new) | Ni | Nr) (§2.18)."""
    return prf_alg(old_sk_d, gir + ni + nr)


@dataclass
class ChildKeys:
    encr_i: bytes  # initiator -> responder
    integ_i: bytes
    encr_r: bytes  # responder -> initiator
    integ_r: bytes


def child_keys(prf_alg: PrfAlg, sk_d: bytes, ni: bytes, nr: bytes, encr_size: int, integ_size: int,
               gir: bytes = b"") -> ChildKeys:
    """KEYMAT = prf+(SK_d, [g^ir (new) |] Ni | Nr) (§2.17): the initiator-to-responder keys first, encryption
    before integrity."""
    km = prf_alg.plus(sk_d, gir + ni + nr, 2 * (encr_size + integ_size))
    e, a = encr_size, integ_size
    return ChildKeys(km[:e], km[e:e + a], km[e + a:2 * e + a], km[2 * e + a:])


# -- AUTH (§2.15, RFC 7427) ------------------------------------------------------------------------------------------
KEY_PAD = b"Key Pad for IKEv2"


def signed_octets(real_message: bytes, peer_nonce: bytes, prf_alg: PrfAlg, sk_p: bytes, id_body: bytes) -> bytes:
    """<SignedOctets> = RealMessage | NonceData (the peer's) | prf(SK_p, RestOfIDPayload)."""
    return real_message + peer_nonce + prf_alg(sk_p, id_body)


def psk_auth(prf_alg: PrfAlg, psk: bytes, octets: bytes) -> bytes:
    """AUTH = prf( prf(Shared Secret, "Key Pad for IKEv2"), <SignedOctets>)."""
    return prf_alg(prf_alg(psk, KEY_PAD), octets)


#: RFC 7427 §3: the AlgorithmIdentifier DER of each signature scheme the tester signs with
ALGORITHM_IDS = {
    "ecdsa-with-sha256": bytes.fromhex("300a06082a8648ce3d040302"),
    "ecdsa-with-sha384": bytes.fromhex("300a06082a8648ce3d040303"),
    "sha256WithRSAEncryption": bytes.fromhex("300d06092a864886f70d01010b0500"),
}
_HASHES = {"ecdsa-with-sha256": hashes.SHA256, "ecdsa-with-sha384": hashes.SHA384,
           "sha256WithRSAEncryption": hashes.SHA256}


def sign(private_key, octets: bytes) -> tuple[int, bytes]:
    """(AUTH method, AUTH data) for ``octets`` signed with ``private_key`` (RFC 7427 Digital Signature)."""
    if isinstance(private_key, ec.EllipticCurvePrivateKey):
        scheme = "ecdsa-with-sha384" if private_key.curve.key_size > 256 else "ecdsa-with-sha256"
        sig = private_key.sign(octets, ec.ECDSA(_HASHES[scheme]()))
    elif isinstance(private_key, rsa.RSAPrivateKey):
        scheme = "sha256WithRSAEncryption"
        sig = private_key.sign(octets, padding.PKCS1v15(), hashes.SHA256())
    else:
        raise Unsupported(f"signing with a {type(private_key).__name__}")
    aid = ALGORITHM_IDS[scheme]
    return AuthMethod.DIGITAL_SIGNATURE, bytes([len(aid)]) + aid + sig


def verify(public_key, method: int, data: bytes, octets: bytes) -> str:
    """Verify AUTH ``data`` of ``method`` over ``octets``; the scheme's name, or CryptoError with what failed."""
    try:
        if method == AuthMethod.DIGITAL_SIGNATURE:
            if not data or len(data) < 1 + data[0]:
                raise CryptoError("the Digital Signature AUTH data is shorter than its AlgorithmIdentifier")
            aid, sig = data[1:1 + data[0]], data[1 + data[0]:]
            scheme = next((k for k, v in ALGORITHM_IDS.items() if v == aid), None)
            if scheme is None:
                raise CryptoError(f"signature scheme {aid.hex()} is not one the tester verifies")
            if scheme.startswith("ecdsa"):
                public_key.verify(sig, octets, ec.ECDSA(_HASHES[scheme]()))
            else:
                public_key.verify(sig, octets, padding.PKCS1v15(), _HASHES[scheme]())
            return scheme
        if method == AuthMethod.ECDSA_256:  # RFC 4754: r | s, SHA-256
            if len(data) != 64:
                raise CryptoError(f"an ECDSA-256 AUTH of {len(data)} octets, not 64")
            sig = encode_dss_signature(int.from_bytes(data[:32], "big"), int.from_bytes(data[32:], "big"))
            public_key.verify(sig, octets, ec.ECDSA(hashes.SHA256()))
            return "ECDSA-256 (RFC 4754)"
        if method == AuthMethod.RSA_SIG:
            public_key.verify(data, octets, padding.PKCS1v15(), hashes.SHA1())
            return "RSA PKCS#1 v1.5 with SHA-1 (RFC 7296 §3.8)"
    except InvalidSignature:
        raise CryptoError("the signature does not verify with the peer's certificate") from None
    raise CryptoError(f"AUTH method {method} is not one the tester verifies")

