"""ESP (RFC 4303) with the RFC 8221 MUST algorithms, for the tester's side of
an IPsec check: the tester holds the SAs, builds ESP packets (also
deliberately broken ones: a bad ICV, a short packet, other padding) and opens
what the DUT sends, reporting every field a check judges (SPI, sequence
number, padding, Pad Length, Next Header) instead of only "valid or not".

Algorithms (``ALGORITHMS``):

* ``aes-gcm-16``: ENCR_AES_GCM_16 with a 128-bit key (RFC 4106): the key
  material is the AES key and a 4-byte salt; nonce = salt || 8-byte IV;
  AAD = SPI || sequence number; the 16-byte ICV is GCM's tag.
* ``aes-cbc``: ENCR_AES_CBC with a 128-bit key (RFC 3602) and
  AUTH_HMAC_SHA2_256_128 (RFC 4868): a random 16-byte IV; the ICV is the
  first 16 bytes of HMAC-SHA-256 over SPI || sequence || IV || ciphertext.
* ``null``: ENCR_NULL (RFC 2410) with AUTH_HMAC_SHA2_256_128: integrity only.

The trailer is padded to a 4-byte boundary (16 for AES-CBC) with the default
padding 1, 2, 3, ... (RFC 4303 §2.4).  64-bit sequence numbers (ESN) are out
of scope (the checks use 32-bit ones).  Scapy's ``SecurityAssociation``
implements the same algorithms; tests/unit/test_esp.py checks the two against
each other, and the lab checks them against Linux's xfrm.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import struct
from dataclasses import dataclass, field

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

ESP_PROTO = 50


@dataclass(frozen=True)
class Algorithm:
    name: str
    title: str  # as a report says it (IKEv2 transform names, RFC 8221)
    key_len: int  # encryption key material, bytes (GCM: key and salt)
    iv_len: int
    icv_len: int
    block: int  # the trailer's alignment
    integ_key_len: int  # 0: combined mode (the AEAD's own ICV)
    #: Wireshark's ESP SA table (esp_sa UAT): the encryption and authentication algorithm values
    wireshark: tuple[str, str]


ALGORITHMS = {
    "aes-gcm-16": Algorithm("aes-gcm-16", "ENCR_AES_GCM_16 (128-bit key)", 20, 8, 16, 4, 0,
                            ("AES-GCM with 16 octet ICV [RFC4106]", "NULL")),
    "aes-cbc": Algorithm("aes-cbc", "ENCR_AES_CBC (128-bit key) with AUTH_HMAC_SHA2_256_128", 16, 16, 16, 16, 32,
                         ("AES-CBC [RFC3602]", "HMAC-SHA-256-128 [RFC4868]")),
    "null": Algorithm("null", "ENCR_NULL with AUTH_HMAC_SHA2_256_128", 0, 0, 16, 4, 32,
                      ("NULL", "HMAC-SHA-256-128 [RFC4868]")),
}


class EspError(ValueError):
    """An ESP packet that cannot be opened with the SA (why, in words)."""


@dataclass(frozen=True)
class SA:
    """One direction of a manual SA: what both ends must agree on."""

    spi: int
    algorithm: str
    key: bytes = field(repr=False)  # never in a log line or a report
    auth_key: bytes = field(default=b"", repr=False)
    mode: str = "transport"  # or "tunnel"
    src: str = ""  # the SA's outer addresses (tunnel mode) or the hosts' (transport)
    dst: str = ""

    def __post_init__(self):
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"unknown ESP algorithm {self.algorithm!r} (known: {', '.join(ALGORITHMS)})")
        alg = ALGORITHMS[self.algorithm]
        if len(self.key) != alg.key_len:
            raise ValueError(f"{self.algorithm}: the key is {len(self.key)} bytes, not {alg.key_len}")
        if len(self.auth_key) != alg.integ_key_len:
            raise ValueError(f"{self.algorithm}: the integrity key is {len(self.auth_key)} bytes, not "
                             f"{alg.integ_key_len}")
        if not 256 <= self.spi <= 0xFFFFFFFF:
            raise ValueError(f"SPI {self.spi:#x}: 1-255 are reserved (RFC 4303 §2.1) and 0 is never used")
        if self.mode not in ("transport", "tunnel"):
            raise ValueError(f"mode {self.mode!r}: transport or tunnel")

    @property
    def alg(self) -> Algorithm:
        return ALGORITHMS[self.algorithm]

    @classmethod
    def fresh(cls, spi: int, algorithm: str, **kw) -> SA:
        """An SA with fresh random keys (a check's own, never a user's)."""
        alg = ALGORITHMS[algorithm]
        return cls(spi, algorithm, os.urandom(alg.key_len), os.urandom(alg.integ_key_len), **kw)


def padding_for(length: int, block: int) -> bytes:
    """The default padding (RFC 4303 §2.4) that aligns ``length`` payload bytes
    plus the 2-byte trailer to ``block``."""
    n = (-(length + 2)) % block
    return bytes(range(1, n + 1))


@functools.lru_cache(maxsize=64)
def _gcm(key: bytes) -> AESGCM:
    return AESGCM(key)


def _icv(sa: SA, signed: bytes) -> bytes:
    return hmac.new(sa.auth_key, signed, hashlib.sha256).digest()[:sa.alg.icv_len]


def seal(sa: SA, seq: int, payload: bytes, next_header: int, *, padding: bytes | None = None,
         iv: bytes | None = None) -> bytes:
    """The ESP header, payload and ICV (everything after the header before
    ESP): ``payload`` is the upper-layer data (transport) or the inner IP
    packet (tunnel), ``next_header`` what it is.  ``padding`` replaces the
    default (it must keep the cipher's block alignment for AES-CBC)."""
    alg = sa.alg
    pad = padding_for(len(payload), alg.block) if padding is None else padding
    plain = payload + pad + bytes([len(pad), next_header])
    if alg.name == "aes-cbc" and len(plain) % 16:
        raise ValueError("AES-CBC needs the padded payload to fill whole 16-byte blocks")
    header = struct.pack("!II", sa.spi, seq & 0xFFFFFFFF)
    iv = os.urandom(alg.iv_len) if iv is None else iv
    if alg.name == "aes-gcm-16":
        sealed = _gcm(sa.key[:16]).encrypt(sa.key[16:] + iv, plain, header)
        return header + iv + sealed
    if alg.name == "aes-cbc":
        enc = Cipher(algorithms.AES(sa.key), modes.CBC(iv)).encryptor()
        body = header + iv + enc.update(plain) + enc.finalize()
    else:
        body = header + plain
    return body + _icv(sa, body)


@dataclass
class Opened:
    """An ESP packet opened with its SA: the fields a check judges."""

    spi: int
    seq: int
    next_header: int
    payload: bytes
    padding: bytes
    problems: list[str] = field(default_factory=list)  # well-formed but against RFC 4303 (padding)

    @property
    def pad_length(self) -> int:
        return len(self.padding)


def spi_seq(esp: bytes) -> tuple[int, int]:
    if len(esp) < 8:
        raise EspError(f"{len(esp)} bytes: shorter than the ESP header (8)")
    return struct.unpack("!II", esp[:8])


def open_esp(sa: SA, esp: bytes) -> Opened:
    """Verify and decrypt ``esp`` (the bytes after the header before ESP)
    with ``sa``; raise EspError saying why it cannot be (SPI, ICV, length);
    note padding that is not RFC 4303's default in ``problems``."""
    alg = sa.alg
    spi, seq = spi_seq(esp)
    if spi != sa.spi:
        raise EspError(f"SPI {spi:#x}, not the SA's {sa.spi:#x}")
    if len(esp) < 8 + alg.iv_len + 2 + alg.icv_len:
        raise EspError(f"{len(esp)} bytes: too short for {alg.name} (header, IV, trailer and ICV need "
                       f"{8 + alg.iv_len + 2 + alg.icv_len})")
    header, iv = esp[:8], esp[8:8 + alg.iv_len]
    if alg.name == "aes-gcm-16":
        try:
            plain = AESGCM(sa.key[:16]).decrypt(sa.key[16:] + iv, esp[8 + alg.iv_len:], header)
        except Exception:  # cryptography's InvalidTag
            raise EspError("the ICV does not verify (AES-GCM tag)") from None
    else:
        body, icv = esp[:-alg.icv_len], esp[-alg.icv_len:]
        if not hmac.compare_digest(_icv(sa, body), icv):
            raise EspError("the ICV does not verify (HMAC-SHA2-256-128)")
        cipher = body[8 + alg.iv_len:]
        if alg.name == "aes-cbc":
            if len(cipher) % 16:
                raise EspError(f"the ciphertext is {len(cipher)} bytes, not whole AES blocks")
            dec = Cipher(algorithms.AES(sa.key), modes.CBC(iv)).decryptor()
            plain = dec.update(cipher) + dec.finalize()
        else:
            plain = cipher
    pad_len, nh = plain[-2], plain[-1]
    if pad_len > len(plain) - 2:
        raise EspError(f"Pad Length {pad_len} exceeds the {len(plain) - 2} bytes before it")
    padding = plain[-2 - pad_len:-2]
    problems = []
    if padding != bytes(range(1, pad_len + 1)):
        problems.append(f"padding {padding.hex()} is not the default 1, 2, 3, ... (RFC 4303 §2.4)")
    if (len(plain) + alg.iv_len * (alg.name == "aes-gcm-16")) % 4 and alg.name != "aes-cbc":
        problems.append(f"the encrypted part ({len(plain)} bytes with the trailer) does not end on a 4-byte boundary "
                        "(RFC 4303 §2.4)")
    return Opened(spi, seq, nh, plain[:-2 - pad_len], padding, problems)


def peek(sa: SA, esp: bytes) -> bytes:
    """The plaintext of ``esp`` (payload, padding, trailer, as far as it
    goes) *without* verifying its ICV: what a stack that skips the check
    would process (the lab's impostor of such a stack; never the tester's
    own judgement)."""
    alg = sa.alg
    iv = esp[8:8 + alg.iv_len]
    if alg.name == "aes-gcm-16":
        body = esp[8 + alg.iv_len:]
        body = body[:-alg.icv_len] if len(body) > alg.icv_len else body
        ctr = Cipher(algorithms.AES(sa.key[:16]), modes.CTR(sa.key[16:] + iv + b"\0\0\0\x02")).decryptor()
        return ctr.update(body) + ctr.finalize()
    body = esp[8 + alg.iv_len:]
    body = body[:-alg.icv_len] if len(body) >= alg.icv_len + 2 else body
    if alg.name == "aes-cbc":
        body = body[:len(body) - len(body) % 16]
        dec = Cipher(algorithms.AES(sa.key), modes.CBC(iv)).decryptor()
        return dec.update(body) + dec.finalize()
    return body


def wireshark_sa(sa: SA, src: str, dst: str) -> str:
    """One line of Wireshark's ESP SA table (the ``esp_sa`` UAT file):
    protocol, source and destination, SPI, encryption algorithm and key,
    authentication algorithm and key."""
    enc, auth = sa.alg.wireshark
    family = "IPv6" if ":" in src else "IPv4"
    key = f"0x{sa.key.hex()}" if sa.key else ""
    auth_key = f"0x{sa.auth_key.hex()}" if sa.auth_key else ""
    return f'"{family}","{src}","{dst}","0x{sa.spi:08x}","{enc}","{key}","{auth}","{auth_key}"'
