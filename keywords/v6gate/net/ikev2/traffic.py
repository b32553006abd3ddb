"""Traffic on a negotiated CHILD_SA: ESP packets the tester protects with
the keys its IKE derived, and the peer's ESP packets opened with them
(RFC 4303; transport and tunnel mode; UDP-encapsulated after NAT
detection, RFC 3948).  The ESP transform itself is Scapy's
``SecurityAssociation``; this module maps a ``ChildSa`` onto it."""

from __future__ import annotations

from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.ipsec import ESP, SecurityAssociation

from .const import Encr, Esn, Integ
from .crypto import encr
from .sa import ChildSa

_CRYPT = {Encr.AES_CBC: "AES-CBC", Encr.AES_GCM_16: "AES-GCM", Encr.TRIPLE_DES: "3DES", Encr.NULL: "NULL",
          Encr.AES_CTR: "AES-CTR"}
_AUTH = {Integ.HMAC_SHA2_256_128: "SHA2-256-128", Integ.HMAC_SHA2_384_192: "SHA2-384-192",
         Integ.HMAC_SHA2_512_256: "SHA2-512-256", Integ.HMAC_SHA1_96: "HMAC-SHA1-96",
         Integ.HMAC_MD5_96: "HMAC-MD5-96", None: "NULL", Integ.NONE: "NULL"}


class TrafficError(ValueError):
    """An ESP packet that does not open on the SA (which check failed)."""


def _sa(child: ChildSa, outbound: bool, local: str, remote: str, natt: bool) -> SecurityAssociation:
    c = child.chosen
    if c.encr not in _CRYPT or c.integ not in _AUTH:
        raise TrafficError(f"ESP {c.label()}: the tester's ESP (Scapy) has no such transform")
    key = child.encr_out if outbound else child.encr_in
    auth = child.integ_out if outbound else child.integ_in
    src, dst = (local, remote) if outbound else (remote, local)
    kwargs = {}
    if natt:
        kwargs["nat_t_header"] = UDP(sport=4500, dport=4500)
    if not child.transport:
        kwargs["tunnel_header"] = IPv6(src=src, dst=dst)
    e = encr(c.encr, c.key_bits)
    return SecurityAssociation(ESP, spi=child.spi_out_int if outbound else child.spi_in_int,
                               crypt_algo=_CRYPT[c.encr], crypt_key=key, auth_algo=_AUTH[c.integ],
                               auth_key=auth or None, esn_en=c.esn == Esn.YES,
                               crypt_icv_size=e.icv_size if e.aead else None, **kwargs)


class EspPair:
    """The tester's two ESP SAs of a CHILD_SA: ``protect`` an inner IPv6 packet, ``open`` the peer's."""

    def __init__(self, child: ChildSa, local: str, remote: str, natt: bool = False):
        self.child = child
        self.local, self.remote, self.natt = local, remote, natt
        self.out = _sa(child, True, local, remote, natt)
        self.inb = _sa(child, False, local, remote, natt)

    def protect(self, inner: IPv6, seq: int | None = None) -> IPv6:
        pkt = self.out.encrypt(inner, seq_num=seq)
        if UDP in pkt:  # Scapy leaves the UDP checksum 0, which IPv6 forbids (RFC 8200 §8.1; RFC 3948 §2.1 is IPv4)
            pkt[UDP].chksum = None
            pkt = IPv6(bytes(pkt))
        return pkt

    def is_ours(self, pkt) -> bool:
        """An ESP packet (or ESP in UDP 4500) carrying this pair's inbound SPI."""
        esp = _esp_of(pkt)
        return esp is not None and esp.spi == self.child.spi_in_int

    def open(self, pkt) -> IPv6:
        """The inner packet of the peer's ESP ``pkt`` (an IPv6 packet, possibly UDP-encapsulated)."""
        esp = _esp_of(pkt)
        if esp is None:
            raise TrafficError("not an ESP packet")
        ip = IPv6(bytes(pkt[IPv6]))
        if UDP in ip and ip[UDP].dport == 4500:
            ip = IPv6(src=ip.src, dst=ip.dst, nh=50, hlim=ip.hlim) / ESP(bytes(ip[UDP].payload))
        try:
            return self.inb.decrypt(ip)
        except Exception as exc:  # Scapy raises IPSecIntegrityError, ValueError, TypeError ...
            raise TrafficError(f"ESP SPI 0x{esp.spi:08x} seq {esp.seq} does not open: {type(exc).__name__}: "
                               f"{exc}") from None


def _esp_of(pkt):
    if IPv6 not in pkt:
        return None
    if ESP in pkt:
        return pkt[ESP]
    if UDP in pkt and pkt[UDP].dport == 4500:
        data = bytes(pkt[UDP].payload)
        if len(data) >= 8 and data[:4] != b"\0\0\0\0":
            return ESP(data)
    return None
