"""The ESP gate's workload: how fast the DUT opens ESP over IPv6 against the
same SA configuration over IPv4, and what it costs it (CPU per byte).

The DUT's ESP receive path is driven to saturation: the tester seals UDP
datagrams (net/esp.py) into 1500-octet ESP packets on an SA pair the DUT
holds in each family (AES-GCM-16, transport mode; installed through the
DUT's hooks, ``extensions.ipsec.commands``) and sends them from the sender
port (lab: the peer node's interface; a real DUT: ``perf.client``) faster
than the DUT can open them, paced at ``rate_factor`` x the rate the DUT
showed in a warm-up; what the DUT delivered to UDP (its ``Udp``/``Udp6``
counters) over the seconds of sending is the rate, its CPU busy time over the
same window per MB is the cost.  Both families' packets are 1500 octets on
the wire (the UDP payload differs by IPv4's 20 shorter header octets), so MB/s
of ESP packets and packets/s say the same.  A third flow, plain IPv6 UDP of
the same size from an address outside the SA's policy and sent unpaced, gives
ESP's cost against unprotected IPv6: both rates and CPU per MB (reported,
not judged).

The DUT counts the gate's datagrams per family and drops them in its input
filter (``extensions.ipsec.gate.setup``: nftables counters on UDP port 9,
and 10 for the plain flow; no socket, no ICMP error: only the ESP path is
measured); ``extensions.ipsec.gate.counters`` prints them with the DUT's own
clock (/proc/uptime) and CPU time (/proc/stat) through the control adapter,
so the rate is per second of the DUT's clock.  The lab's DUT for the gate
is the VM counting instructions (DUT configuration ``ipsec-vm-icount``,
QEMU -icount): busy, its clock advances 8 ns per instruction, so its rate
and CPU time per packet follow the instructions it runs, not the shared
machine's load (the emulator's speed still sets how long a trial takes in
real time).  A DUT without these hooks SKIPs with the fields that would make
it run.
"""

from __future__ import annotations

import ipaddress
import os
import random
import re
import socket
import threading
import time
from dataclasses import dataclass, field

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from ...core.context import NotApplicable
from ...core.verdict import Outcome
from ...errors import BenchError
from ...ipsec.association import _fresh_spi, install
from ...ipsec.settings import settings_of
from ...net import esp as E
from ...net import packets as P
from ...util.netns import netns
from ..bench import Bench
from ..engine import Measure, PairedComparison
from ..outcome import note_trial, outcome
from ..profiles import GateProfile
from ..registry import Workload, register_workload

WIRE = 1500  # every packet's IP length, both families
UDP_PORT = 9  # the gate's datagrams: counted and dropped by the DUT's input filter (extensions.ipsec.gate.setup)
#: the flows of the gate: family, its ESP or not
FLOWS = ("v4", "v6", "plain6")
FAMILY = {"v4": "IPv4", "v6": "IPv6", "plain6": "plain IPv6"}


def esp_payload_len(family: str, alg: E.Algorithm) -> int:
    """UDP payload octets that make an ESP packet of ``WIRE`` octets (transport mode), or the largest below it
    the cipher's block allows (AES-CBC over IPv6: 1488)."""
    ip = 20 if family == "v4" else 40
    room = WIRE - ip - 8 - alg.iv_len - alg.icv_len  # ESP header, IV, ICV
    n = room - 2 - 8  # trailer, UDP header
    while (8 + n + 2) % alg.block:
        n -= 1
    return n


@dataclass
class Flow:
    family: str
    src: str
    dst: str
    sa: E.SA | None  # None: plain
    seq: int = 1
    payload: bytes = b""
    header: bytes = field(default=b"", repr=False)  # Ether (and, for plain, the whole packet)
    _ip: bytes = field(default=b"", repr=False)  # Ether and IP header of every ESP frame

    @property
    def octets(self) -> int:
        """The IP packet's length on the wire (every frame of the flow has it)."""
        if self.sa is None:
            return len(self.header) - 14
        ip = 20 if self.family == "v4" else 40
        return ip + len(E.seal(self.sa, 1, self.payload, 17))

    def frame(self) -> bytes:
        """The next frame (the next sequence number: the SA's anti-replay never sees one twice); the Ethernet
        and IP headers are the same for every packet of a flow (same length), built once."""
        if self.sa is None:
            return self.header
        if not self._ip:
            body = E.seal(self.sa, 1, self.payload, 17)
            ip = (IP(src=self.src, dst=self.dst, proto=E.ESP_PROTO, ttl=64) / Raw(body) if self.family == "v4"
                  else IPv6(src=self.src, dst=self.dst, nh=E.ESP_PROTO) / Raw(body))
            self._ip = self.header + bytes(ip)[:20 if self.family == "v4" else 40]
        seq = self.seq
        self.seq += 1
        iv = seq.to_bytes(8, "big") if self.sa.alg.iv_len == 8 else None  # GCM: a counter IV (RFC 4106 §3)
        return self._ip + E.seal(self.sa, seq, self.payload, 17, iv=iv)


@dataclass
class Counters:
    """The DUT's view at one moment: its clock, its CPU busy time, the gate's datagrams it opened per family."""

    uptime_s: float
    busy_s: float
    delivered: dict[str, int]


#: a trial is saturated when the DUT was busy this share of its window (its clock's jiffies: 0.01 s resolution)
SATURATED = 0.97
ATTEMPTS = 4
#: how long a trial waits, after its warm-up, for the DUT to finish opening the packets an earlier trial of
#: another flow left queued in front of it (a slow flow's queue, e.g. IPv6 under a handicap, takes seconds)
DRAIN_S = 30.0
PLAIN_PORT = 10  # the plain IPv6 flow's: counted apart, so that ESP still queued in the DUT is not counted as it
_NFT_RULE = re.compile(r"meta nfproto (ipv4|ipv6) udp dport (\d+) counter packets (\d+) bytes \d+ drop")


def parse_counters(text: str) -> Counters:
    """The counters hook's output: /proc/uptime, /proc/stat's cpu line (USER_HZ 100) and the gate table's
    nft counters (``meta nfproto ipv4|ipv6 udp dport 9 counter packets N ...``)."""
    up = re.search(r"^(\d+\.\d+) \d+\.\d+$", text, re.M)
    cpu = re.search(r"^cpu\s+(.*)$", text, re.M)
    if up is None or cpu is None:
        raise BenchError("the DUT's counters hook printed no /proc/uptime or /proc/stat cpu line "
                         "(extensions.ipsec.gate.counters)")
    v = [int(x) for x in cpu.group(1).split()]
    busy = sum(v[:8]) - v[3] - (v[4] if len(v) > 4 else 0)  # user..steal, less idle and iowait
    got = {}
    for m in _NFT_RULE.finditer(text):
        port = int(m.group(2))
        key = "plain6" if port == PLAIN_PORT else ("v4" if m.group(1) == "ipv4" else "v6") if port == UDP_PORT else None
        if key:
            got[key] = int(m.group(3))
    if not {"v4", "v6"} <= set(got):
        raise BenchError("the DUT's counters hook printed no per-family counters of the gate's datagrams "
                         "(extensions.ipsec.gate.setup/counters)")
    return Counters(float(up.group(1)), busy / 100.0, got)


class EspBench:
    """The gate's flows, sender and the DUT's counters, set up once per gate run."""

    def __init__(self, t, prof, bench: Bench):
        self.t = t
        self.prof = prof
        self.sender = bench.client  # where the frames leave (netns, interface)
        settings = settings_of(t.target)
        gate = ((t.target.extensions or {}).get("ipsec") or {}).get("gate") or {}
        if settings is None or not settings.commands.get("install"):
            raise NotApplicable("the ESP gate installs its SAs through the DUT's hooks (extensions.ipsec.commands); "
                                "the target has none")
        if not all(gate.get(k) for k in ("setup", "counters")):
            raise NotApplicable("the ESP gate needs the DUT's counting hooks (extensions.ipsec.gate: {setup: COMMAND, "
                                "counters: COMMAND})")
        self.settings = settings
        self.setup_cmd = gate["setup"]
        self.counters_cmd = gate["counters"]
        self.encr = prof.params.get("encr", "aes-gcm-16")
        self.alg = E.ALGORITHMS[self.encr]
        self.rate_factor = float(prof.params.get("rate_factor", 1.5))
        #: the pace before the DUT's rate is known: well above what a software-crypto VM opens
        self.warmup_pps = float(prof.params.get("warmup_pps", 5000))
        self.dut4 = str(ipaddress.IPv4Address(bench.address("v4")))
        self.dut6 = bench.address("v6")
        self.flows: dict[str, Flow] = {}
        self.rate_pps: float | None = None
        self.sock: socket.socket | None = None
        self.src_mac = ""

    # -- setup ---------------------------------------------------------------------------------------
    def open(self) -> EspBench:
        with netns(self.sender.netns):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            s.bind((self.sender.interface, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        self.sock = s
        self.src_mac = ":".join(f"{b:02x}" for b in s.getsockname()[4][:6])
        eth = bytes(Ether(src=self.src_mac, dst=self.t.dut.mac, type=0x86DD))
        eth4 = bytes(Ether(src=self.src_mac, dst=self.t.dut.mac, type=0x0800))
        prefix = self.t.target.link_prefix
        peer6 = P.address_in(prefix, P.random_iid())
        plain6 = P.address_in(prefix, P.random_iid())
        net4 = ipaddress.ip_network(f"{self.dut4}/24", strict=False)
        peer4 = str(net4.network_address + 200 + (P.random_iid() % 50))
        self.flows["v6"] = self._install("v6", peer6, self.dut6, eth)
        self.flows["v4"] = self._install("v4", peer4, self.dut4, eth4)
        plain = IPv6(bytes(IPv6(src=plain6, dst=self.dut6) / UDP(sport=40000, dport=PLAIN_PORT)
                           / Raw(bytes(WIRE - 48))))
        self.flows["plain6"] = Flow("plain6", plain6, self.dut6, None, header=eth + bytes(plain))
        self.t.control.command(self.setup_cmd, timeout_s=60)
        return self

    def _install(self, family: str, peer: str, dut: str, eth: bytes) -> Flow:
        spi_in = _fresh_spi()
        to_dut = E.SA.fresh(spi_in, self.encr, src=peer, dst=dut)
        back = E.SA.fresh(_fresh_spi({spi_in}), self.encr, src=dut, dst=peer)
        install(self.t, self.settings, mode="transport", dut=dut, peer=peer, gateway=peer, to_dut=to_dut,
                from_dut=back)
        n = esp_payload_len(family, self.alg)
        udp = UDP(sport=40000, dport=UDP_PORT) / Raw(bytes(n))
        inner = (IP(src=peer, dst=dut, proto=17) / udp) if family == "v4" else (IPv6(src=peer, dst=dut) / udp)
        payload = bytes(inner.__class__(bytes(inner)).payload)  # the UDP datagram, checksum computed
        self.t.note(f"ESP gate: {family} SA {peer} -> {dut} SPI {spi_in:#x} ({self.alg.title}), {n}-octet UDP "
                    f"payload, {WIRE}-octet packets")
        return Flow(family, peer, dut, to_dut, 1, payload, eth)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    # -- measuring -------------------------------------------------------------------------------------
    def counters(self) -> Counters:
        return parse_counters(self.t.control.command(self.counters_cmd, timeout_s=30))

    def _sender(self, flow: Flow, rate: float | None, stop: threading.Event, done: dict) -> None:
        """Send ``flow``'s frames, sealed as they go, paced at ``rate`` frames/s (None: as fast as the socket
        takes them), until ``stop``; ``done``: how many went, over how long."""
        send = self.sock.send
        i, burst = 0, 8
        t0 = time.monotonic()
        while not stop.is_set():
            if rate is not None and i > rate * (time.monotonic() - t0):
                time.sleep(0.001)
                continue
            for _ in range(burst):
                try:
                    send(flow.frame())
                except OSError:  # the queue toward the link is full: it takes no more now
                    break
                i += 1
        done.update(sent=i, seconds=time.monotonic() - t0)

    def trial(self, flow: str, seconds: float, warmup_s: float = 1.2) -> Measure:
        """One saturated trial of ``flow`` (see ``_trial``).  The gate's premise is a DUT that is never idle
        while it is measured: a trial whose window finds it idle (busy below SATURATED of its clock: the
        tester did not keep up, or the DUT got faster than the pace) is repeated at a pace raised to what it
        just did; after ATTEMPTS the bench could not saturate it (an ERROR, never a verdict)."""
        for attempt in range(1, ATTEMPTS + 1):
            m = self._trial(flow, seconds, warmup_s)
            if m.raw.get("others_opened"):  # the window was not this flow's alone: an earlier queue still drained
                self.t.note(f"ESP gate: the {flow} trial's window also opened {m.raw['others_opened']} (an earlier "
                            "flow's queue); repeated")
                continue
            host = m.raw.get("host_pps") or 0
            if flow != "plain6" and host and self.rate_pps is not None:
                self.rate_pps = max(self.rate_pps, host)  # follow a DUT that got faster (a quieter machine)
            if m.raw["busy_fraction"] >= SATURATED or (flow == "plain6" and attempt == 2):
                m.raw["attempts"] = attempt  # (plain IPv6 is reported, not judged: its figure stays, saturated or not)
                return m
            self.t.note(f"ESP gate: the {flow} trial found the DUT busy {m.raw['busy_fraction'] * 100:.0f}% of "
                        f"its window (not saturated: offered {m.raw['offered_pps']} /s); repeated at "
                        f"{self.rate_pps * self.rate_factor:.0f} /s")
        if m.raw.get("others_opened"):
            raise BenchError(f"the ESP gate could not measure the {flow} flow alone: in {ATTEMPTS} trials the DUT "
                             f"was still opening another flow's queued packets ({m.raw['others_opened']})")
        raise BenchError(f"the ESP gate could not keep the DUT busy: {ATTEMPTS} {flow} trials found it idle part of "
                         f"the time (busy {m.raw['busy_fraction'] * 100:.0f}%, offered {m.raw['offered_pps']} /s): "
                         "the tester's sender did not keep up")

    def _trial(self, flow: str, seconds: float, warmup_s: float) -> Measure:
        """One trial of ``flow`` (v4, v6, plain6) with the DUT saturated: after ``warmup_s`` of sending and
        once the DUT has opened what an earlier trial of another flow left queued in front of it (about 0.8 s
        of its traffic on the healthy lab VM; seconds for a flow it opens slowly: the other flows' counters
        must stand still between two reads, up to DRAIN_S), its counters are read twice ``seconds`` apart
        while the sending goes on; the rate is the gate's datagrams the DUT opened per second of *its* clock
        between the reads, the cost its CPU busy time per MB of them (the reads' own cost is the same in every
        trial).  ``raw["others_opened"]``: other flows' datagrams it opened inside the window (the window was
        not this flow's alone: the caller repeats the trial)."""
        f = self.flows[flow]
        rate = self.warmup_pps if self.rate_pps is None else self.rate_pps * self.rate_factor
        if flow == "plain6":
            rate = None  # plain IPv6 costs the DUT a fraction of ESP: only an unpaced sender saturates it
        stop, done = threading.Event(), {}
        cpu0 = os.times()
        th = threading.Thread(target=self._sender, args=(f, rate, stop, done), daemon=True)
        th.start()
        try:
            time.sleep(warmup_s)
            a = self.counters()
            drained = time.monotonic() + DRAIN_S
            while True:  # the other flows' queues drained: their counters stand still between two reads
                time.sleep(0.2)
                a2 = self.counters()
                moved = self._others_moved(flow, a, a2)
                a = a2
                if not moved or time.monotonic() > drained:
                    break
            ta = time.monotonic()
            time.sleep(seconds)
            b = self.counters()
            host_s = time.monotonic() - ta
        finally:
            stop.set()
            th.join(10)
        cpu1 = os.times()
        dt = b.uptime_s - a.uptime_s
        if flow not in b.delivered:
            raise BenchError(f"the DUT's counters hook counts no {flow} datagrams (extensions.ipsec.gate.setup)")
        got = b.delivered[flow] - a.delivered[flow]
        busy = max(b.busy_s - a.busy_s, 0.0)
        mb = got * f.octets / 1e6
        values = {"throughput": mb / dt if dt > 0 else 0.0}
        if mb > 0:  # nothing opened: no cost per MB to compare (the throughput of 0 says it)
            values["cpu_per_unit"] = busy * 1000 / mb
        raw = {"flow": flow, "dut_window_s": round(dt, 3), "host_window_s": round(host_s, 3), "delivered": got,
               "others_opened": self._others_moved(flow, a, b),
               "dut_busy_s": round(busy, 3), "busy_fraction": round(busy / dt, 3) if dt > 0 else 0.0,
               "host_pps": round(got / host_s, 1) if host_s > 0 else None,
               "delivered_pps": round(got / dt, 1) if dt > 0 else None, "sent": done.get("sent"),
               "offered_pps": round(done["sent"] / done["seconds"], 1) if done.get("seconds") else None}
        return Measure(values, seconds, (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system), raw)

    @staticmethod
    def _others_moved(flow: str, a: Counters, b: Counters) -> dict[str, int]:
        """The other flows' datagrams the DUT opened between reads ``a`` and ``b`` (empty: none)."""
        return {k: b.delivered[k] - a.delivered.get(k, 0) for k in b.delivered
                if k != flow and b.delivered[k] != a.delivered.get(k, 0)}

    @property
    def wire(self) -> int:
        return WIRE

    def warm_up(self, seconds: float) -> float:
        """The DUT's ESP rate (packets/s, the faster family's) under ``warmup_pps``: the trials are paced at
        ``rate_factor`` x it (offered more than it opens in either family, so it is saturated, with no more
        sender CPU than that takes)."""
        seen = {}
        for family in ("v6", "v4"):
            m = self._trial(family, seconds, 1.2)
            seen[family] = m.raw
        # the pace is the host's: packets per second of the host's clock (the DUT's may count instructions)
        self.rate_pps = max(100.0, *(r["host_pps"] or 0 for r in seen.values()))
        self.t.note("ESP gate warm-up: the DUT opened " + "; ".join(
            f"{FAMILY[k]} {r['host_pps']} ESP packets per host second ({r['delivered_pps']} per second of its "
            f"clock) offered {r['offered_pps']} /s" for k, r in seen.items())
            + f"; trials are paced at {self.rate_factor:g} x the faster")
        return self.rate_pps


def esp_cost(bench: EspBench, prof, note=None) -> dict:
    """ESP's cost against plain IPv6 on the DUT: ``cost_pairs`` alternated pairs of an ESP IPv6 trial and a
    plain IPv6 trial (same packet size), the median ratio of their rates and CPU per MB (reported)."""
    import statistics

    pairs = int(prof.params.get("cost_pairs", 3))
    rates, costs, raw = [], [], []
    for i in range(pairs):
        order = ("v6", "plain6") if i % 2 == 0 else ("plain6", "v6")
        m = {flow: bench.trial(flow, prof.trial_s, prof.warmup_s) for flow in order}
        none = [FAMILY[f] for f in order if "cpu_per_unit" not in m[f].values]
        if none:  # a flow the DUT opened none of: no cost to compare (reported, so it never overrides the verdict)
            return {"pairs": i, "summary": f"not measured: the DUT opened no {' or '.join(none)} datagram in a "
                                           "saturated trial"}
        rates.append(m["v6"].values["throughput"] / m["plain6"].values["throughput"])
        costs.append(m["v6"].values["cpu_per_unit"] / m["plain6"].values["cpu_per_unit"])
        raw.append({flow: {**m[flow].values, **m[flow].raw} for flow in order})
        if note:
            note(f"ESP vs plain IPv6 pair {i}: throughput {m['v6'].values['throughput']:.3g} vs "
                 f"{m['plain6'].values['throughput']:.3g} MB/s, CPU {m['v6'].values['cpu_per_unit']:.4g} vs "
                 f"{m['plain6'].values['cpu_per_unit']:.4g} ms/MB")
    rate, cost = statistics.median(rates), statistics.median(costs)
    saturated = all(r["plain6"]["busy_fraction"] >= SATURATED for r in raw)
    how = "both saturated" if saturated else ("plain IPv6 not saturated by the tester's sender in every pair: its "
                                              "rate is a lower bound, its CPU per MB carries the reads' own cost")
    return {"pairs": pairs, "cpu_per_mb_ratio_esp_to_plain": round(cost, 4),
            "throughput_ratio_esp_to_plain": round(rate, 4), "plain_saturated": saturated, "trials": raw,
            "summary": f"ESP over IPv6 opened {rate:.3f} x the MB/s of plain IPv6 UDP at {cost:.1f} x its CPU per MB "
                       f"(median of {pairs} alternated pairs, {how}; reported, not judged)"}


def decide(t, prof: GateProfile, bench: Bench) -> Outcome:
    """The gate (the family comparison hands it over: it decides its own way): the paired IPv4/IPv6 trials of
    the DUT opening ESP, then ESP's cost against plain IPv6 (alternated ESP and plain IPv6 trials, reported)."""
    esp = EspBench(t, prof, bench).open()
    try:
        esp.warm_up(prof.trial_s)
        t.measure("esp", {"dut": {"mac": t.dut.mac, "ipv6": esp.dut6, "ipv4": esp.dut4},
                          "sender": {"netns": esp.sender.netns, "interface": esp.sender.interface, "mac": esp.src_mac},
                          "esp": esp.alg.title, "packet_octets": WIRE, "pace_pps": round(esp.rate_pps * esp.rate_factor, 1)})
        dec = PairedComparison(arms=prof.arms, metrics=prof.metrics, budget=prof.budget, policy=prof.disturbance,
                               method=prof.method, confidence=prof.confidence, rng=random.Random(),
                               measure=lambda arm: esp.trial(arm, prof.trial_s, prof.warmup_s),
                               on_trial=lambda tr: note_trial(t, tr)).run()
        cost = esp_cost(esp, prof, note=t.note)
        t.measure("esp_cost_vs_plain_ipv6", cost)
    finally:
        esp.close()
    return outcome(t, prof, dec, f"; ESP against plain IPv6: {cost['summary']}")


register_workload(Workload(
    "esp_udp", compare=frozenset({"family"}),
    metrics={"throughput": ("MB/s", True), "cpu_per_unit": ("CPU ms per MB", False)},
    params=frozenset({"encr", "rate_factor", "warmup_pps", "cost_pairs"}), decide=decide))
