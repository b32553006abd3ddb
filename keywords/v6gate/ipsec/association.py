"""The SAs one check talks over, and the packets on them.

``establish(t, encr, mode, topology)`` gives the check an ``Association``:

* topology ``host`` (host-to-host, IPv6 Ready IPsec's End-Node to End-Node):
  the tester's peer is an emulated node on the link (TN1), in transport or
  tunnel mode (the outer addresses are the hosts');
* topology ``gateway`` (host-to-security-gateway, tunnel mode): the tester
  emulates a security gateway on the link (SG1) and a host behind it (HOST1,
  in a prefix of its own); the DUT's tunnel ends at SG1, its traffic to HOST1
  goes inside it.  SG1 advertises itself as a router (the DUT needs a route
  to HOST1 before its policy can tunnel the packet; withdrawn at the end).

The SAs come from the target (``ipsec.settings``): installed through the
DUT's hooks with keys the check draws (``fresh``: the DUT's outbound SA
starts at sequence number 1, and Wireshark's ``esp_sa`` table is written
next to the pcap), or the SAs the target file says the DUT was given by hand
(keys never written anywhere; the tester's sequence numbers continue across
the run's checks, from ``sequence_start`` or from the clock: sixteen a second
since 2026-01-01, so that a later run starts above an earlier one's).
Neither: NotApplicable, with the field that would make it apply.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
import shlex
import time
import weakref
from dataclasses import dataclass, field

from scapy.layers.inet6 import IPv6
from scapy.layers.ipsec import ESP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from ..core.context import CheckContext, NotApplicable
from ..core.control import NotSupported
from ..errors import BenchError
from ..net import esp as E
from ..net import packets as P
from ..net.nd import router_advertisement
from ..net.nodes import EmulatedNode
from .settings import IpsecSettings, ManualSa, settings_of

#: the prefix of the hosts the tester emulates behind its security gateway (RFC 3849 documentation space)
PROTECTED_NET = "2001:db8:5ec::/64"
#: seconds of SG1's Router Lifetime (withdrawn when the check ends)
GATEWAY_ROUTER_LIFETIME = 600
_EPOCH_2026 = 1767225600
_SEQ: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # session -> {SA name: next sequence number}
NH_IPV6 = 41


@dataclass
class Answer:
    """What the DUT sent back: ESP opened with the SA (``opened``) or in the
    clear, and the packet inside (``inner``: the upper layer over the
    addresses it was protected between, or the tunnel's inner packet)."""

    frame: object
    inner: Packet
    opened: E.Opened | None
    spi: int | None = None

    @property
    def protected(self) -> bool:
        return self.opened is not None


@dataclass
class Association:
    t: CheckContext
    encr: str
    mode: str
    topology: str
    dut: str  # the DUT's address: the SAs' and the policies' (inner and outer)
    peer: EmulatedNode  # the host the DUT talks to (in the tunnel: the inner source)
    gateway: EmulatedNode  # the outer end (the peer itself, but host-to-gateway)
    to_dut: E.SA
    from_dut: E.SA
    window: int
    fresh: bool
    name: str
    _seq_state: dict = field(default_factory=dict, repr=False)
    _dut_seq: int = 0  # the highest sequence number the DUT used on from_dut so far

    # -- sequence numbers ---------------------------------------------------------
    def next_seq(self) -> int:
        n = self._seq_state[self.name]
        self._seq_state[self.name] = n + 1
        return n

    def skip_to(self, seq: int) -> None:
        """The tester's next sequence number is ``seq`` (the numbers between are never used)."""
        self._seq_state[self.name] = max(self._seq_state[self.name], seq)

    @property
    def last_seq(self) -> int:
        return self._seq_state[self.name] - 1

    # -- protecting -----------------------------------------------------------------
    def inner(self, upper: Packet) -> IPv6:
        """``upper`` (an ICMPv6 message, ...) from the peer to the DUT as the
        IPv6 packet it is inside the SA (checksums computed)."""
        return IPv6(bytes(IPv6(src=self.peer.global_addr, dst=self.dut) / upper))

    def protect(self, upper: Packet, *, seq: int | None = None, before: tuple = (), padding: bytes | None = None,
                spi: int | None = None, hlim: int = 64) -> Ether:
        """The frame that carries ``upper`` from the peer to the DUT on the
        SA: in transport mode ESP follows the IPv6 header and the extension
        headers ``before`` (Hop-by-Hop, Destination Options, Fragment: RFC
        4303 §3.1.1); in tunnel mode the inner packet is a whole IPv6 packet.
        ``seq`` replaces the next sequence number, ``spi`` the SA's (a packet
        sealed with the SA's keys under another SPI)."""
        inner = self.inner(upper)
        seq = self.next_seq() if seq is None else seq
        sa = self.to_dut if spi is None else E.SA(spi, self.to_dut.algorithm, self.to_dut.key, self.to_dut.auth_key,
                                                   self.to_dut.mode)
        if self.mode == "tunnel":
            body = E.seal(sa, seq, bytes(inner), NH_IPV6, padding=padding)
        else:
            body = E.seal(sa, seq, bytes(inner.payload), inner.nh, padding=padding)
        return self.carry(body, before=before, hlim=hlim)

    def carry(self, esp: bytes, *, before: tuple = (), hlim: int = 64) -> Ether:
        """ESP bytes (header to ICV) in a frame from the outer source to the DUT."""
        headers = [IPv6(src=self.gateway.global_addr, dst=self.dut, hlim=hlim), *(h.copy() for h in before)]
        headers[-1].nh = E.ESP_PROTO
        outer = Ether(src=self.gateway.mac, dst=self.t.dut.mac)
        for h in headers:
            outer = outer / h
        return Ether(bytes(outer / Raw(esp)))

    # -- answers --------------------------------------------------------------------
    def answer(self, pkt: Packet) -> Answer | None:
        """The DUT's frame as an answer on this association: ESP between the
        DUT and the outer end (opened when its SPI is the SA's; ``opened`` is
        None and ``spi`` set when it is not, or it does not verify), or a
        cleartext packet from the DUT to the peer.  None: neither."""
        if IPv6 not in pkt or Ether not in pkt or pkt[Ether].src.lower() != self.t.dut.mac:
            return None
        ip = pkt[IPv6]
        if ESP in pkt and P.same_address(ip.dst, self.gateway.global_addr):
            esp = bytes(pkt[ESP])
            spi, _ = E.spi_seq(esp) if len(esp) >= 8 else (None, None)
            try:
                opened = E.open_esp(self.from_dut, esp)
            except E.EspError:
                return Answer(pkt, pkt, None, spi)
            if self.mode == "tunnel":
                inner = IPv6(opened.payload)
            else:
                inner = IPv6(bytes(IPv6(src=ip.src, dst=ip.dst, nh=opened.next_header) / Raw(opened.payload)))
            return Answer(pkt, inner, opened, spi)
        if ESP not in pkt and P.same_address(ip.dst, self.peer.global_addr):
            return Answer(pkt, ip, None, None)
        return None

    def await_answer(self, match_inner, since: float, within: float | None = None) -> Answer | None:
        """The first answer whose inner packet ``match_inner`` accepts (ESP on
        the SA, or the same inner packet in the clear), from ``since`` on."""
        cache: dict[int, Answer | None] = {}

        def accepts(p) -> bool:
            a = cache.setdefault(id(p), self.answer(p))
            return a is not None and a.inner is not None and (a.opened is not None or ESP not in a.frame) \
                and bool(match_inner(a.inner))

        frame = self.t.port.expect(accepts, self.t.reply_timeout if within is None else within, since=since)
        if frame is None:
            return None
        a = self.answer(frame.pkt)
        how = f"ESP SPI {a.opened.spi:#x} seq {a.opened.seq}" if a.opened else "in the clear"
        self.t.note(f"inner: {a.inner.summary()} ({how})")
        return a

    def esp_from_dut(self, since: float, until: float | None = None) -> list[Answer]:
        """Every ESP packet the DUT sent toward the outer end since ``since``
        (opened where the SA opens it)."""
        out = []
        for f in self.t.port.frames_since(since):
            if until is not None and f.time > until:
                continue
            a = self.answer(f.pkt)
            if a is not None and ESP in f.pkt:
                out.append(a)
        return out

    def judge_trailer(self, a: Answer) -> list[str]:
        """RFC 4303 on one ESP answer: on the SA's SPI, its sequence number
        the next (1 on a fresh SA, RFC 4303 §3.3.3), the default padding
        (§2.4), a Next Header that says what is inside (§2.6)."""
        problems = []
        if not a.protected:
            return [f"ESP on SPI {a.spi:#x}, not the SA's {self.from_dut.spi:#x}" if a.spi != self.from_dut.spi
                    else f"ESP on the SA's SPI {self.from_dut.spi:#x} that does not verify with its keys"]
        o = a.opened
        want = self._dut_seq + 1
        if self.fresh and o.seq != want:
            problems.append(f"sequence number {o.seq}, not {want} (a new SA's first packet has 1, each next one "
                            "the number after: RFC 4303 §3.3.3)")
        elif o.seq <= self._dut_seq:
            problems.append(f"sequence number {o.seq} after {self._dut_seq}: it did not increase (RFC 4303 §3.3.3)")
        self._dut_seq = max(self._dut_seq, o.seq)
        problems += o.problems
        want_nh = NH_IPV6 if self.mode == "tunnel" else a.inner.nh
        if self.mode == "tunnel" and o.next_header != NH_IPV6:
            problems.append(f"Next Header {o.next_header}, not 41: the tunnel's payload is an IPv6 packet (RFC 4303 §2.6)")
        elif self.mode == "transport" and o.next_header != want_nh:
            problems.append(f"Next Header {o.next_header} does not say what the payload is ({want_nh})")
        return problems

    def describe(self) -> str:
        how = "installed with fresh keys through the DUT's hooks" if self.fresh else f"the target's SA {self.name!r}"
        where = (f"between {self.dut} and {self.peer.global_addr}" if self.topology == "host" else
                 f"between {self.dut} and {self.peer.global_addr} behind the gateway {self.gateway.global_addr}")
        return (f"{E.ALGORITHMS[self.encr].title}, {self.mode} mode, {where} (SPI to the DUT {self.to_dut.spi:#x}, "
                f"from it {self.from_dut.spi:#x}; {how})")

    # -- the DUT's own view -----------------------------------------------------------
    def dut_state(self) -> str | None:
        """The DUT's IPsec counters through its ``state`` hook (None: none)."""
        cmd = (settings_of(self.t.target).commands or {}).get("state")
        if not cmd:
            return None
        try:
            return self.t.control.command(cmd, timeout_s=20)
        except (BenchError, NotSupported) as exc:
            return f"(its state hook failed: {exc})"


def counters_moved(before: str | None, after: str | None) -> str:
    """The kernel-style ``Name value`` counters that moved between two
    ``state`` outputs, as "Name +n, ..." (empty: none, or no hook)."""
    def parse(text):
        return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(Xfrm\w+|\w*[Ee]rror\w*)\s+(\d+)\s*$", text or "",
                                                                re.M)}
    b, a = parse(before), parse(after)
    return ", ".join(f"{k} +{v - b.get(k, 0)}" for k, v in sorted(a.items()) if v > b.get(k, 0))


def _fresh_spi(taken=()) -> int:
    while True:
        spi = secrets.randbelow(0xFFFF0000) + 0x10000
        if spi not in taken:
            return spi


def _redact(text: str, secrets_: list[str]) -> str:
    for s in secrets_:
        if s:
            text = text.replace(s, "<key>")
    return text


def establish(t, encr: str, *, mode: str = "transport", topology: str = "host") -> Association:
    """The check's SAs (see the module docstring); NotApplicable when the
    target gives none for ``encr`` and ``mode``."""
    settings = settings_of(t.target)
    if settings is None:
        raise NotApplicable("the target file says nothing of the DUT's IPsec SAs (extensions.ipsec: the DUT's hooks "
                            "to install SAs, or the SAs it was given by hand; docs/ipsec.md)")
    if topology == "gateway" and mode != "tunnel":
        raise ValueError("a security gateway is reached in tunnel mode")
    dut = t.dut.global_address()
    if settings.commands.get("install"):
        return _installed(t, settings, encr, mode, topology, dut)
    manual = settings.manual(encr, mode)
    if manual is None:
        raise NotApplicable(f"the target gives no {mode}-mode SA with {encr} (extensions.ipsec.sas) and no hook to "
                            "install one (extensions.ipsec.commands.install)")
    return _manual(t, settings, manual, topology, dut)


def _nodes(t, topology: str, peer_addr: str | None = None, gateway_addr: str | None = None):
    if topology == "host":
        if peer_addr is None:
            peer = t.tn1
        else:
            peer = t.node("TN1")
            peer.global_addr = peer_addr  # the address the DUT's SA is bound to (the node answers ND for it)
        return peer, peer
    gw = t.node("SG1", router=True)
    if gateway_addr is not None:
        gw.global_addr = gateway_addr
    net = ipaddress.IPv6Network(PROTECTED_NET)
    host = EmulatedNode("HOST1", P.random_mac(), P.address_in("fe80::/64", P.random_iid()),
                        peer_addr or P.address_in(net, P.random_iid()))
    t.note(f"HOST1 is {host.global_addr}, behind SG1 (off the link)")
    # the DUT needs a route to HOST1 before its policy tunnels the packet to SG1: SG1 is a router on the link
    t.send(router_advertisement(gw, router_lifetime=GATEWAY_ROUTER_LIFETIME))
    return host, gw


def install(t, settings: IpsecSettings, *, mode: str, dut: str, peer: str, gateway: str, to_dut: E.SA,
            from_dut: E.SA) -> None:
    """Put an SA pair and its policies on the DUT through its ``install`` hook (its keys never shown: a
    failing hook's message has them replaced); the check's end runs its ``flush``."""
    alg = to_dut.alg
    values = {"mode": mode, "dut": dut, "peer": peer, "gateway": gateway, "spi_in": f"0x{to_dut.spi:08x}",
              "spi_out": f"0x{from_dut.spi:08x}", "encr": to_dut.algorithm, "key_in": to_dut.key.hex(),
              "key_out": from_dut.key.hex(), "integ": "hmac-sha2-256-128" if alg.integ_key_len else "none",
              "auth_in": to_dut.auth_key.hex(), "auth_out": from_dut.auth_key.hex(), "window": str(settings.window)}
    command = re.sub(r"\{(\w+)\}", lambda m: shlex.quote(values[m.group(1)]) if values.get(m.group(1)) else "''"
                     if m.group(1) in values else m.group(0), settings.commands["install"])
    flush = settings.commands["flush"]
    t.defer(lambda: t.control.command(flush, timeout_s=60))
    try:
        t.control.command(command, timeout_s=60)
    except BenchError as exc:
        hidden = [values[k] for k in ("key_in", "key_out", "auth_in", "auth_out")]
        raise BenchError(f"the DUT's IPsec install hook failed: {_redact(str(exc), hidden)}") from None


def _installed(t, settings: IpsecSettings, encr, mode, topology, dut) -> Association:
    peer, gw = _nodes(t, topology)
    spi_in = _fresh_spi()
    spi_out = _fresh_spi({spi_in})
    to_dut = E.SA.fresh(spi_in, encr, mode=mode, src=gw.global_addr, dst=dut)
    from_dut = E.SA.fresh(spi_out, encr, mode=mode, src=dut, dst=gw.global_addr)
    install(t, settings, mode=mode, dut=dut, peer=peer.global_addr, gateway=gw.global_addr, to_dut=to_dut,
            from_dut=from_dut)
    assoc = Association(t, encr, mode, topology, dut, peer, gw, to_dut, from_dut, settings.window, True,
                        f"fresh-{spi_in:x}", _seq_state={f"fresh-{spi_in:x}": 1})
    t.note(f"SAs: {assoc.describe()}")
    _write_esp_sa(t, assoc)
    return assoc


def _manual(t, settings: IpsecSettings, m: ManualSa, topology, dut) -> Association:
    if topology == "gateway" and m.gateway == m.peer:
        raise NotApplicable(f"the target's SA {m.name!r} has no gateway (extensions.ipsec.sas: gateway), so the "
                            "host-to-gateway topology cannot be drawn with it")
    peer, gw = _nodes(t, topology, m.peer, m.gateway if topology == "gateway" else None)
    try:
        keys = {k: (src.read() if src is not None else b"") for k, src in
                (("key_in", m.key_in), ("key_out", m.key_out), ("auth_in", m.auth_in), ("auth_out", m.auth_out))}
    except ValueError as exc:
        raise BenchError(f"the key of the target's SA {m.name!r} cannot be read now: {exc}") from None
    to_dut = E.SA(m.spi_in, m.encr, keys["key_in"], keys["auth_in"], m.mode, gw.global_addr, dut)
    from_dut = E.SA(m.spi_out, m.encr, keys["key_out"], keys["auth_out"], m.mode, dut, gw.global_addr)
    state = _SEQ.setdefault(t.session, {}) if t.session is not None else {}
    if m.name not in state:
        state[m.name] = m.sequence_start or max(1, int(time.time() - _EPOCH_2026) * 16)
    assoc = Association(t, m.encr, m.mode, topology, dut, peer, gw, to_dut, from_dut, m.window, False, m.name,
                        _seq_state=state)
    t.note(f"SAs: {assoc.describe()}; the tester's next sequence number {state[m.name]}")
    t.note("no esp_sa table is written for the target's own keys (they are secrets)")
    return assoc


def _write_esp_sa(t, assoc: Association) -> None:
    """Wireshark's ESP SA table next to the pcap (the check's own fresh keys):
    ``<pcap stem>.esp_sa`` (report/dissect.py and keylog.wireshark_command read it)."""
    session = getattr(t, "session", None)
    capture = getattr(session, "capture", None)
    pcap = getattr(capture, "path", None)
    if pcap is None:
        return
    lines = [E.wireshark_sa(assoc.to_dut, assoc.gateway.global_addr, assoc.dut),
             E.wireshark_sa(assoc.from_dut, assoc.dut, assoc.gateway.global_addr)]
    path = pcap.with_suffix(".esp_sa")
    old = path.read_text().splitlines() if path.exists() else []
    path.write_text("\n".join(dict.fromkeys([*old, *lines])) + "\n")

