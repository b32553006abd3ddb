"""Impostor rules of the ikev2 area: from the switch side (the lab's IKEv2
DUT is strongSwan in the VM), each hands the DUT a repaired copy of the
tester's damaged INFORMATIONAL requests, so that the DUT answers what a
conforming one discards, as a stack that skips that check would:

* ``ike_icv_not_verified``: the copy has the last octet of its ICV (or AEAD
  tag) changed back (the tester's bad-ICV probe flips that octet's low
  bit), as at a stack that compares its ICV short of its last octet; the
  copy goes a little later (ICV_COPY_AFTER_S), once the DUT is done with
  the original;
* ``ike_unknown_spi_accepted``: the copy has its responder SPI inverted
  back (the tester's unknown-SPI probe inverts it), as at a stack that
  looks an IKE SA up by the initiator SPI alone.

A good request's copy is damaged instead, and the DUT discards it: the rule
changes nothing else.  The DUT still receives every original."""

from __future__ import annotations

from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from ...net import packets as P
from ..impostor import rule

INFORMATIONAL, RESPONSE = 37, 0x20


def _ike_request_to_dut(pkt, dut) -> tuple[bytes, bytes] | None:
    """(UDP payload prefix, IKE message) of an INFORMATIONAL request the DUT receives, else None."""
    if IPv6 not in pkt or UDP not in pkt or Ether not in pkt:
        return None
    if pkt[Ether].dst.lower() != dut["mac"].lower():
        return None
    if not any(P.same_address(pkt[IPv6].dst, a) for a in dut.get("addresses") or []):
        return None
    udp = pkt[UDP]
    if udp.dport not in (500, 4500):
        return None
    data = bytes(udp.payload)
    prefix = b""
    if udp.dport == 4500:
        if data[:4] != b"\0\0\0\0":
            return None
        prefix, data = data[:4], data[4:]
    if len(data) < 28 or data[18] != INFORMATIONAL or data[19] & RESPONSE:
        return None
    return prefix, data


def _copy(pkt, payload: bytes):
    ip, udp = pkt[IPv6], pkt[UDP]
    return (Ether(src=pkt[Ether].src, dst=pkt[Ether].dst) / IPv6(src=ip.src, dst=ip.dst, hlim=ip.hlim)
            / UDP(sport=udp.sport, dport=udp.dport) / Raw(payload))


#: when the repaired copy of a bad-ICV request reaches the DUT, seconds after the original (within the check's
#: silence window, 1.5 s on the lab's VM): charon drops a request whose Message ID it is still processing
#: ("ignoring request with ID 2, already processing"), and under TCG the original's failed ICV check can take
#: longer than the 1-2 ms after which an immediate copy arrived (4 of 4 copies dropped, 2026-11-27, load 11);
#: the second copy is for a charon still slower than that (a copy after an answered one is answered again)
ICV_COPY_AFTER_S = (0.3, 0.8)


@rule("ike_icv_not_verified")
def ike_icv_not_verified(pkt, dut, impostor=None, **params):
    got = _ike_request_to_dut(pkt, dut)
    if got is None:
        return []
    prefix, data = got
    copy = _copy(pkt, prefix + data[:-1] + bytes([data[-1] ^ 0x01]))
    if impostor is None:
        return [copy]
    for after in ICV_COPY_AFTER_S:
        impostor.later(after, [copy])
    return []


@rule("ike_unknown_spi_accepted")
def ike_unknown_spi_accepted(pkt, dut, **params):
    got = _ike_request_to_dut(pkt, dut)
    if got is None:
        return []
    prefix, data = got
    return [_copy(pkt, prefix + data[:8] + bytes(b ^ 0xFF for b in data[8:16]) + data[16:])]
