"""What the DUT did send, in words a triager can act on.

When the expected answer does not come, a check's result lists the DUT's
frames in the window (``dut_sent``), PTF-style: "NS for TN1 at +0.012 s",
"Destination Unreachable code 4 to TN2 at +0.100 s", "Parameter Problem
code 2 pointer 42 to TN1 at +0.004 s, quoting the invoking packet from its
Destination Options header (octet 40), not from its IPv6 header".

Addresses are named after the check's emulated nodes (TN1, TR1, ...) where
they are theirs.  Pure functions over packets and bytes (unit-tested).
"""

from __future__ import annotations

import ipaddress

from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6ND_RA,
    ICMPv6ND_Redirect,
    ICMPv6ND_RS,
    IPv6,
)
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from . import icmperr
from .exthdr import NH_ICMPV6, NH_TCP, NH_UDP
from .frag import header_chain
from .icmperr import HEADER_NAMES, quote_offset, quote_problem  # noqa: F401 (re-exported)

MLD_TYPES = {130: "MLD Query", 131: "MLDv1 Report", 132: "MLD Done", 143: "MLDv2 Report"}


def _norm(a: str) -> str:
    try:
        return str(ipaddress.IPv6Address(a))
    except ValueError:
        return a


class Names:
    """Address -> name of the emulated node it belongs to (TN1, TR1 ...)."""

    def __init__(self, nodes: dict | None = None, dut: dict | None = None):
        self.by_addr: dict[str, str] = {}
        for name, n in (nodes or {}).items():
            for a in (getattr(n, "link_local", None), getattr(n, "global_addr", None)):
                if a:
                    self.by_addr[_norm(a)] = name
        for name, a in (dut or {}).items():
            if a:
                self.by_addr.setdefault(_norm(a), name)

    def __call__(self, addr: str) -> str:
        a = _norm(addr)
        name = self.by_addr.get(a)
        return f"{name} ({a})" if name else a

    def short(self, addr: str) -> str:
        return self.by_addr.get(_norm(addr)) or _norm(addr)


def describe(pkt: Packet | bytes, names: Names | None = None, invoking: bytes | list[bytes] | None = None) -> str:
    """One line for a frame the DUT sent."""
    names = names or Names()
    if isinstance(pkt, bytes | bytearray):
        try:
            pkt = Ether(pkt)
        except Exception:
            return f"{len(pkt)}-byte frame"
    if IPv6 not in pkt:
        return pkt.summary() if hasattr(pkt, "summary") else "non-IPv6 frame"
    ip = pkt[IPv6]
    to = f" to {names(ip.dst)}"
    if ICMPv6ND_NS in pkt:
        kind = "DAD NS" if _norm(ip.src) == "::" else "NS"
        return f"{kind} for {names.short(pkt[ICMPv6ND_NS].tgt)}{to}"
    if ICMPv6ND_NA in pkt:
        na = pkt[ICMPv6ND_NA]
        flags = "".join(f for f, on in (("R", na.R), ("S", na.S), ("O", na.O)) if on)
        return f"NA for {names.short(na.tgt)} [{flags or '-'}]{to}"
    if ICMPv6ND_RS in pkt:
        return f"RS{to}"
    if ICMPv6ND_RA in pkt:
        return f"RA (router lifetime {pkt[ICMPv6ND_RA].routerlifetime} s){to}"
    if ICMPv6ND_Redirect in pkt:
        return f"Redirect{to}"
    if ICMPv6EchoReply in pkt:
        e = pkt[ICMPv6EchoReply]
        return f"Echo Reply id {e.id:#06x} seq {e.seq} from {names(ip.src)}{to}"
    if ICMPv6EchoRequest in pkt:
        return f"Echo Request{to}"
    err = icmperr.parse(pkt)
    if err is not None and err.type in icmperr.NAMES:
        field = f" {icmperr.FIELD[err.type]} {err.field}" if err.type in icmperr.FIELD else ""
        text = f"{icmperr.NAMES[err.type]} code {err.code}{field} from {names(err.src)}{to}"
        problem = quote_problem(err.quoted, invoking) if invoking is not None else None
        if problem:
            return f"{text}, {problem.replace('the quote starts at', 'quoting from')}"
        if err.quoted_src:
            return f"{text}, quoting a packet from {names(err.quoted_src)} to {names(err.quoted_dst)}"
        return f"{text}, quoting {len(err.quoted)} octets"
    nh, start, _ = header_chain(bytes(ip))[-1]
    raw = bytes(ip)
    if nh == NH_ICMPV6 and start < len(raw):
        t = raw[start]
        return f"{MLD_TYPES.get(t, f'ICMPv6 type {t}')}{to}"
    if nh in (NH_UDP, NH_TCP) and start + 4 <= len(raw):
        dport = int.from_bytes(raw[start + 2:start + 4], "big")
        return f"{HEADER_NAMES[nh]} to port {dport}{to}"
    return f"IPv6 next header {nh}{to}"


def window(frames, since: float, names: Names | None = None, invoking=None, limit: int = 12) -> list[str]:
    """``describe`` every frame with its time from ``since``."""
    out = []
    for f in frames[:limit]:
        out.append(f"{describe(f.pkt, names, invoking)} at +{f.time - since:.3f} s")
    if len(frames) > limit:
        out.append(f"... and {len(frames) - limit} more frames")
    return out
