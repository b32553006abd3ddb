"""Impostor rules for ESP: a stack that skips one of RFC 4303's inbound
tests, simulated where Linux's xfrm cannot be made to skip it.  The rule
reads the SAs the check installed on the DUT (``ip xfrm state`` on the
stand-in's console, keys included: they are the check's own fresh keys),
opens the packet the kernel discards as such a stack would (decrypting
without verifying the ICV, or with the SA its addresses name whatever its
SPI) and answers the Echo Request inside with an Echo Reply in ESP on the
DUT's outbound SA, as the DUT."""

from __future__ import annotations

import re
import struct

from scapy.layers.inet6 import ICMPv6EchoReply, IPv6
from scapy.layers.ipsec import ESP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from ...net import esp as E
from ...net.packets import same_address
from ..impostor import rule

_STATE = re.compile(r"^src (\S+) dst (\S+)\s*\n\s+proto esp spi (0x[0-9a-f]+).*?mode (\w+)(.*?)(?=^src |\Z)", re.M | re.S)
_ALG = {"rfc4106(gcm(aes))": "aes-gcm-16", "cbc(aes)": "aes-cbc", "ecb(cipher_null)": "null"}
#: the impostor's own outbound sequence numbers start here (far from the kernel's)
FIRST_SEQ = 100_000


def xfrm_states(text: str) -> list[tuple[str, str, E.SA]]:
    """(src, dst, SA) of each ESP state in ``ip xfrm state`` output (keys shown)."""
    out = []
    for m in _STATE.finditer(text):
        src, dst, spi, mode, rest = m.groups()
        aead = re.search(r"aead (\S+) 0x([0-9a-f]+)", rest)
        enc = re.search(r"enc (\S+)(?: 0x([0-9a-f]+))?", rest)
        auth = re.search(r"auth-trunc \S+ 0x([0-9a-f]+)", rest)
        if aead:
            alg, key, akey = _ALG.get(aead.group(1)), bytes.fromhex(aead.group(2)), b""
        elif enc and auth:
            alg, key, akey = _ALG.get(enc.group(1)), bytes.fromhex(enc.group(2) or ""), bytes.fromhex(auth.group(1))
        else:
            continue
        if alg:
            out.append((src, dst, E.SA(int(spi, 16), alg, key, akey, mode if mode in ("transport", "tunnel")
                                       else "transport")))
    return out


def _states(dut: dict, impostor, refresh: bool = False) -> list:
    if refresh or "sas" not in impostor.state:
        rc, text = dut["exec"]("/usr/bin/ip xfrm state")
        impostor.state["sas"] = xfrm_states(text) if rc == 0 else []
    return impostor.state["sas"]


@rule("esp_accepts_invalid")
def esp_accepts_invalid(pkt, dut, impostor, defect: str):
    """``defect``: ``bad_icv`` (an ICV that does not verify), ``unknown_spi``
    (an SPI the DUT has no SA for: the SA of the packet's addresses is used),
    ``truncated`` (a packet cut short: what is there is decrypted)."""
    if ESP not in pkt or IPv6 not in pkt or not any(same_address(pkt[IPv6].dst, a) for a in dut["addresses"]):
        return []
    ip, esp = pkt[IPv6], bytes(pkt[ESP])
    if len(esp) < 8:
        return []
    spi = struct.unpack("!I", esp[:4])[0]
    states = _states(dut, impostor)
    if not any(s.spi == spi for _, _, s in states) and defect != "unknown_spi":
        states = _states(dut, impostor, refresh=True)
    inbound = [s for src, dst, s in states if same_address(src, ip.src) and same_address(dst, ip.dst)]
    by_spi = next((s for s in inbound if s.spi == spi), None)
    if defect == "unknown_spi":
        if by_spi is not None or not inbound:
            return []  # an SPI the kernel knows: it answers that itself
        sa = inbound[0]
    else:
        if by_spi is None:
            return []
        sa = by_spi
        try:
            E.open_esp(sa, esp)
            return []  # valid: the kernel answers it
        except E.EspError:
            pass
    plain = E.peek(sa, esp)
    if len(plain) < 8 or plain[0] != 128:  # transport mode: the upper layer is an Echo Request
        return []
    ident, seq = struct.unpack("!HH", plain[4:8])
    outbound = next((s for src, dst, s in states if same_address(src, ip.dst) and same_address(dst, ip.src)), None)
    if outbound is None:
        return []
    n = impostor.state.setdefault("seq", FIRST_SEQ)
    impostor.state["seq"] = n + 1
    reply = IPv6(bytes(IPv6(src=ip.dst, dst=ip.src) / ICMPv6EchoReply(id=ident, seq=seq)))
    body = E.seal(outbound, n, bytes(reply.payload), 58)
    return [Ether(src=dut["mac"], dst=pkt[Ether].src) / IPv6(src=ip.dst, dst=ip.src, nh=E.ESP_PROTO) / Raw(body)]
