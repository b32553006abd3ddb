"""Happy Eyeballs trials (RFC 8305), measured on the tester's wire (any DUT).

Each trial gives the DUT a fresh service name with an AAAA and an A record
(the tester's DNS server: the DUT's resolver, as in the dns area) on a peer
that answers TCP at an IPv6 and an IPv4 address, and makes the DUT connect to
the name through its control adapter (``connect``).  The scenario of the
part breaks one thing:

* ``healthy``: nothing; IPv6 must win (RFC 8305 §4, RFC 6724);
* ``ipv6_blackhole``: the peer drops every IPv6 SYN;
* ``ipv6_slow``: the peer answers IPv6 SYNs ``delay_s`` late;
* ``aaaa_delayed``: the server holds the AAAA answer ``delay_s`` back (the A
  answer goes at once): RFC 8305 §3's Resolution Delay case.

What the DUT did is read from its frames: its first DNS query for the name
(the start), its first SYN of each family, and its ACK completing a
handshake (a connected socket, and the family that won).  ``connect`` is
that ACK's time after the first query, in ms (a trial with no handshake
within ``give_up_s`` counts as ``give_up_s``: a DUT that waits for the TCP
timeout is a very slow sample, not a hang); ``ipv6_won`` is 1 when the
winning handshake is IPv6's, else 0."""

from __future__ import annotations

import secrets
import subprocess
import threading
from dataclasses import dataclass, field

from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether

from ...core.context import NotApplicable
from ...errors import BenchError
from ..engine import Measure
from ..profiles import GateProfile
from ..registry import Workload, register_workload

SCENARIOS = ("healthy", "ipv6_blackhole", "ipv6_slow", "aaaa_delayed")
PORT = 8443


@dataclass
class HePeer:
    """A TCP peer at ``node``'s IPv6 address and at ``ipv4`` (answering
    ARP): SYN -> SYN-ACK (IPv6 ones dropped or held back per ``v6``),
    FIN -> FIN-ACK; every SYN and handshake-completing ACK is recorded."""

    node: object
    ipv4: str
    port: int
    v6: str = "answer"  # answer | drop | delay
    v6_delay_s: float = 0.0
    syns: list = field(default_factory=list)  # (time, family)
    acks: list = field(default_factory=list)  # (time, family): the DUT's ACK of our SYN-ACK
    _isn: int = field(default_factory=lambda: secrets.randbits(31))
    _timers: list = field(default_factory=list)

    def stop(self) -> None:
        for timer in self._timers:
            timer.cancel()

    def responder(self, port, frame) -> None:
        pkt = frame.pkt
        if ARP in pkt and pkt[ARP].op == 1 and pkt[ARP].pdst == self.ipv4:
            a = pkt[ARP]
            port.send(Ether(src=self.node.mac, dst=pkt[Ether].src)
                      / ARP(op=2, hwsrc=self.node.mac, psrc=self.ipv4, hwdst=a.hwsrc, pdst=a.psrc))
            return
        if TCP not in pkt or pkt[TCP].dport != self.port:
            return
        if IPv6 in pkt and self.node.owns(pkt[IPv6].dst):
            family, head = 6, IPv6(src=pkt[IPv6].dst, dst=pkt[IPv6].src)
        elif IP in pkt and pkt[IP].dst == self.ipv4:
            family, head = 4, IP(src=pkt[IP].dst, dst=pkt[IP].src)
        else:
            return
        tcp = pkt[TCP]
        flags = str(tcp.flags)
        base = Ether(src=self.node.mac, dst=pkt[Ether].src) / head
        if "S" in flags and "A" not in flags:
            self.syns.append((frame.time, family))
            if family == 6 and self.v6 == "drop":
                return
            synack = base / TCP(sport=self.port, dport=tcp.sport, flags="SA", seq=self._isn, ack=tcp.seq + 1,
                                window=65535)
            if family == 6 and self.v6 == "delay":
                timer = threading.Timer(self.v6_delay_s, port.send, args=(synack,))
                timer.daemon = True
                self._timers.append(timer)
                timer.start()
            else:
                port.send(synack)
        elif "F" in flags:
            port.send(base / TCP(sport=self.port, dport=tcp.sport, flags="FA", seq=self._isn + 1,
                                 ack=tcp.seq + len(bytes(tcp.payload)) + 1, window=65535))
        elif (flags == "A" and tcp.ack == self._isn + 1 and not bytes(tcp.payload)
              and not any(f == family for _, f in self.acks)):
            self.acks.append((frame.time, family))


def _ipv4_of(t) -> str:
    from ...scenario.v6only import dut_ipv4

    v4 = dut_ipv4(t)
    if v4 is None:
        raise NotApplicable("the DUT has no IPv4 address on this link (extensions.v6only.ipv4): Happy Eyeballs "
                            "races IPv6 against IPv4, so it needs a dual-stack DUT")
    hosts = [str(h) for h in v4.network.hosts() if h != v4.ip]
    return hosts[secrets.randbelow(len(hosts))] if hosts else str(v4.ip)


def happy_eyeballs(t, prof: GateProfile, i: int) -> Measure:
    from ...scenario import dns as D

    p = prof.params
    scenario = p.get("scenario", "healthy")
    if scenario not in SCENARIOS:
        raise BenchError(f"fixtures/gates/profiles.yaml: {prof.gate}: scenario {scenario!r}; use one of {SCENARIOS}")
    delay = float(p.get("delay_s", 1.0))
    give_up = float(p.get("give_up_s", 3.0))
    peer_node = t.node(f"WEB{i}")
    peer = HePeer(peer_node, _ipv4_of(t), int(p.get("port", PORT)),
                  v6={"ipv6_blackhole": "drop", "ipv6_slow": "delay"}.get(scenario, "answer"), v6_delay_s=delay)
    server = getattr(t, "_he_dns", None)
    if server is None:  # one server for the part's trials (it answers every name it was given)
        server = t._he_dns = D.serve(t, delay={"AAAA": delay} if scenario == "aaaa_delayed" else {})
    name = D.fresh_name(f"he{i}")
    server.add(name, "AAAA", peer_node.global_addr)
    server.add(name, "A", peer.ipv4)
    t.port.add_responder(peer.responder)
    start = t.port.now()
    try:
        proc = t.control.connect(name, peer.port, timeout_s=give_up)
        try:
            out, err = proc.communicate(timeout=give_up + 3.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        t.control.check_exit(proc, err)
        t.wait(0.05)  # the last frames in flight
    finally:
        t.port.remove_responder(peer.responder)
        peer.stop()
    asked = server.asked(name, since=start)
    if not asked:
        raise t.not_judged("resolver-in-use", D.REACHED, f"no query for {name} reached the DUT's resolver "
                                                         f"{server.address} when it was told to connect to it")
    t0 = min(q.time for q in asked)
    first6 = min((s for s, f in peer.syns if f == 6), default=None)
    first4 = min((s for s, f in peer.syns if f == 4), default=None)
    ack = min(peer.acks, default=None)
    raw = {"scenario": scenario, "name": name, "queries": [q.describe() for q in asked],
           "syn6_ms": _ms(first6, t0), "syn4_ms": _ms(first4, t0), "client": (out or "").strip()[-200:],
           "client_error": (err or "").strip()[-200:]}
    if ack is None:
        raw.update(connected=False, family=None)
        return Measure({"connect": give_up * 1000, "ipv6_won": 0.0}, 0.0, 0.0, raw)
    raw.update(connected=True, family=ack[1], fallback_ms=_ms(first4, first6) if first4 and first6 else None)
    return Measure({"connect": round((ack[0] - t0) * 1000, 2), "ipv6_won": 1.0 if ack[1] == 6 else 0.0}, 0.0, 0.0,
                   raw)


def _ms(when: float | None, since: float | None) -> float | None:
    return None if when is None or since is None else round((when - since) * 1000, 2)


register_workload(Workload(
    "happy_eyeballs", compare=frozenset({"target"}), metrics={"connect": ("ms", False), "ipv6_won": ("share", True)},
    params=frozenset({"scenario", "delay_s", "give_up_s", "port"}), sample=happy_eyeballs))
