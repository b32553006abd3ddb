"""An IKE SA's keys at work: the Encrypted payload protected and opened
(RFC 7296 §3.14; AEADs RFC 5282 §5 and RFC 7634 §4), and the CHILD_SAs
whose keys it derives (§2.17).

``IkeSa.protect`` builds a whole message around its inner payloads and
takes overrides for what a negative check breaks (the IV, the padding,
an ICV flipped by the caller after).  ``IkeSa.open`` verifies the ICV
before it decrypts anything and says which check failed.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from . import crypto
from .codec import SK, Message, Payload, Selector, decode_chain, encode_chain
from .const import HEADER_LEN, Flag, Proto
from .proposals import Chosen, is_aead


@dataclass
class IkeSa:
    """The IKE SA as one side holds it: who initiated it, its SPIs, algorithms and keys."""
    initiator: bool  # this side initiated the IKE SA (it sets the I flag)
    spi_i: bytes
    spi_r: bytes
    chosen: Chosen
    keys: crypto.IkeKeys
    ni: bytes
    nr: bytes
    #: the next Message ID this side will use for a request, and expects on the peer's next request
    next_request: int = 0
    next_peer_request: int = 0
    children: list = field(default_factory=list)

    def __post_init__(self):
        self.prf = crypto.prf(self.chosen.prf)
        self.encr = crypto.encr(self.chosen.encr, self.chosen.key_bits)
        self.integ = None if is_aead(self.chosen.encr) else crypto.integ(self.chosen.integ)

    @property
    def sk_d(self) -> bytes:
        return self.keys.sk_d

    def _keys_for(self, from_initiator: bool) -> tuple[bytes, bytes]:
        k = self.keys
        return (k.sk_ei, k.sk_ai) if from_initiator else (k.sk_er, k.sk_ar)

    def flags(self, response: bool) -> int:
        return (Flag.INITIATOR if self.initiator else 0) | (Flag.RESPONSE if response else 0)

    # -- protecting ---------------------------------------------------------------------------------------------
    def protect(self, exchange: int, msg_id: int, inner: list[Payload], *, response: bool,
                clear: list[Payload] | None = None, iv: bytes | None = None, pad: int | None = None,
                flags: int | None = None, spi_i: bytes | None = None, spi_r: bytes | None = None) -> bytes:
        """The octets of a message whose payloads ``inner`` travel in the SK payload (after ``clear`` ones);
        ``pad`` forces the padding length (the receiver must accept any, §3.14), ``flags``/SPIs override."""
        fl = self.flags(response) if flags is None else flags
        first, plain = encode_chain(inner)
        e = self.encr
        need = (-(len(plain) + 1)) % e.block if pad is None else pad
        plain += bytes(range(1, need + 1)) + bytes([need])
        iv = os.urandom(e.iv_size) if iv is None else iv
        icv_len = e.icv_size if e.aead else self.integ.icv_size
        ct_len = len(plain) + (e.icv_size if e.aead else 0)
        sk_body_len = len(iv) + ct_len + (0 if e.aead else icv_len)
        clear = clear or []
        cfirst, cbytes = encode_chain([*clear, SK(first, b"\x00" * sk_body_len)])
        total = HEADER_LEN + len(cbytes)
        head = struct.pack("!8s8sBBBBII", spi_i or self.spi_i, spi_r or self.spi_r, cfirst, 0x20, exchange, fl,
                           msg_id, total)
        prefix = head + cbytes[:len(cbytes) - sk_body_len]  # up to and including the SK payload's header
        enc_key, int_key = self._keys_for(bool(fl & Flag.INITIATOR))
        if e.aead:
            return prefix + iv + e.encrypt(enc_key, iv, plain, aad=prefix)
        body = prefix + iv + e.encrypt(enc_key, iv, plain)
        return body + self.integ(int_key, body)

    # -- opening ----------------------------------------------------------------------------------------------
    def open(self, data: bytes) -> Message:
        """The message with ``inner`` set; CryptoError when its ICV does not verify or its padding is
        impossible, IkeParseError when it is malformed (before or after decryption)."""
        msg = Message.decode(data)
        sk = msg.sk
        if sk is None:
            msg.inner = []
            return msg
        e = self.encr
        enc_key, int_key = self._keys_for(msg.from_initiator)
        blob = sk.blob
        if e.aead:
            if len(blob) < e.iv_size + e.icv_size:
                raise crypto.CryptoError(f"an Encrypted payload of {len(blob)} octets cannot hold an IV and ICV")
            aad = data[:len(data) - len(blob)]
            plain = e.decrypt(enc_key, blob[:e.iv_size], blob[e.iv_size:], aad=aad)
        else:
            icv = self.integ.icv_size
            if len(blob) < e.iv_size + icv + e.block:
                raise crypto.CryptoError(f"an Encrypted payload of {len(blob)} octets cannot hold an IV, one block "
                                         "and an ICV")
            want = self.integ(int_key, data[:-icv])
            if want != data[-icv:]:
                raise crypto.CryptoError("the Integrity Checksum Data does not verify")
            plain = e.decrypt(enc_key, blob[:e.iv_size], blob[e.iv_size:-icv])
        padlen = plain[-1] if plain else 0
        if padlen + 1 > len(plain):
            raise crypto.CryptoError(f"Pad Length {padlen} is longer than the {len(plain)} decrypted octets")
        msg.inner = decode_chain(sk.first, plain[:-(padlen + 1)], "Encrypted payload")
        return msg


@dataclass
class ChildSa:
    """A CHILD_SA pair (ESP), as this side holds it: ``spi_in`` is the SPI the peer sends with (this side's
    inbound SA), ``spi_out`` the one this side sends with."""
    spi_in: bytes
    spi_out: bytes
    chosen: Chosen
    encr_out: bytes
    integ_out: bytes
    encr_in: bytes
    integ_in: bytes
    ts_local: list[Selector]
    ts_remote: list[Selector]
    transport: bool = True
    proto: int = Proto.ESP
    #: the CHILD_SA that rekeyed this one (§2.8), once there is one
    rekeyed_by: ChildSa | None = None

    @property
    def spi_in_int(self) -> int:
        return int.from_bytes(self.spi_in, "big")

    @property
    def spi_out_int(self) -> int:
        return int.from_bytes(self.spi_out, "big")

    def label(self) -> str:
        return (f"ESP {self.chosen.label()} SPIs in 0x{self.spi_in.hex()} out 0x{self.spi_out.hex()} "
                f"({'transport' if self.transport else 'tunnel'} mode)")


def child_sa(ike: IkeSa, chosen: Chosen, *, exchange_initiator: bool, ni: bytes, nr: bytes, spi_in: bytes,
             spi_out: bytes, ts_local: list[Selector], ts_remote: list[Selector], transport: bool,
             gir: bytes = b"") -> ChildSa:
    """The CHILD_SA an exchange created: KEYMAT from SK_d (§2.17); the exchange's initiator sends with the
    first half of it."""
    e = crypto.encr(chosen.encr, chosen.key_bits)
    a = None if is_aead(chosen.encr) or chosen.integ in (None, 0) else crypto.integ(chosen.integ)
    keys = crypto.child_keys(ike.prf, ike.sk_d, ni, nr, e.key_size, a.key_size if a else 0, gir=gir)
    if exchange_initiator:
        out = (keys.encr_i, keys.integ_i, keys.encr_r, keys.integ_r)
    else:
        out = (keys.encr_r, keys.integ_r, keys.encr_i, keys.integ_i)
    return ChildSa(spi_in, spi_out, chosen, *out, ts_local=ts_local, ts_remote=ts_remote, transport=transport)
