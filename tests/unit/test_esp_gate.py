"""The ESP gate's pure parts (gates/workloads/esp_udp.py): packet sizes that make 1500
octets on the wire in both families, each frame a fresh sequence number that
the DUT's SA opens, and the DUT's counters read from its hooks' output."""

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from v6gate.errors import BenchError
from v6gate.gates.profiles import profile_of
from v6gate.gates.workloads import esp_udp as G
from v6gate.net import esp as E

COUNTERS = """1234.56 2222.22
cpu  100 0 50 1000 7 3 2 0 0 0
cpu0 100 0 50 1000 7 3 2 0 0 0
table inet v6gate_gate {
	chain input {
		type filter hook input priority filter; policy accept;
		meta nfproto ipv4 udp dport 9 counter packets 4096 bytes 6144000 drop
		meta nfproto ipv6 udp dport 9 counter packets 5120 bytes 7680000 drop
		meta nfproto ipv6 udp dport 10 counter packets 77 bytes 115500 drop
	}
}
"""


@pytest.mark.parametrize("family, ip", [("v4", 20), ("v6", 40)])
@pytest.mark.parametrize("alg", list(E.ALGORITHMS))
def test_every_esp_packet_is_1500_octets(family, ip, alg):
    a = E.ALGORITHMS[alg]
    n = G.esp_payload_len(family, a)
    sa = E.SA.fresh(0x1000, alg)
    body = E.seal(sa, 1, bytes(8 + n), 17)
    if a.block == 4:  # AES-GCM, NULL: exactly
        assert ip + len(body) == G.WIRE
    else:  # AES-CBC: the largest whole number of blocks below (IPv6: 1488)
        assert G.WIRE - a.block < ip + len(body) <= G.WIRE


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_frames_carry_increasing_sequence_numbers_that_the_sa_opens(family):
    sa = E.SA.fresh(0x2000, "aes-gcm-16")
    src, dst = ("198.18.1.200", "198.18.1.5") if family == "v4" else ("2001:db8:1::200", "2001:db8:1::5")
    n = G.esp_payload_len(family, sa.alg)
    udp = UDP(sport=40000, dport=G.UDP_PORT) / bytes(n)
    inner = (IP(src=src, dst=dst) / udp) if family == "v4" else (IPv6(src=src, dst=dst) / udp)
    payload = bytes(inner.__class__(bytes(inner)).payload)
    eth = bytes(Ether(src="02:00:00:00:00:0f", dst="02:00:00:00:00:05", type=0x0800 if family == "v4" else 0x86DD))
    flow = G.Flow(family, src, dst, sa, 7, payload, eth)
    assert flow.octets == G.WIRE
    frames = [flow.frame() for _ in range(3)]
    assert flow.seq == 10
    for i, f in enumerate(frames):
        assert len(f) == 14 + G.WIRE
        pkt = Ether(f)
        ip = pkt[IP] if family == "v4" else pkt[IPv6]
        assert (ip.src, ip.dst) == (src, dst)
        esp = bytes(ip.payload)
        opened = E.open_esp(sa, esp)
        assert opened.seq == 7 + i and opened.next_header == 17 and opened.payload == payload
    ivs = {Ether(f).payload.payload.original[8:16] if family == "v4" else bytes(Ether(f)[IPv6].payload)[8:16]
           for f in frames}
    assert len(ivs) == 3, "a fresh IV (the counter) per packet"


def test_counters_are_read_from_the_hooks_output():
    c = G.parse_counters(COUNTERS)
    assert c.uptime_s == 1234.56
    assert c.busy_s == pytest.approx((100 + 50 + 3 + 2) / 100)  # user, system, irq, softirq: not idle or iowait
    assert c.delivered == {"v4": 4096, "v6": 5120, "plain6": 77}


@pytest.mark.parametrize("text, says", [
    ("cpu 1 2 3 4\n", "no /proc/uptime"),
    ("1.0 2.0\n", "no /proc/uptime or /proc/stat"),
    ("1.0 2.0\ncpu 1 2 3 4 5 6 7 0\n", "no per-family counters"),
])
def test_counters_missing_from_the_hooks_output_are_the_benchs(text, says):
    with pytest.raises(BenchError, match=says):
        G.parse_counters(text)


def test_the_gate_profile_judges_rate_and_cost():
    prof = profile_of("esp", None)
    assert prof.workload == "esp_udp" and prof.compare == "family"
    assert [m.name for m in prof.metrics if m.judged] == ["throughput", "cpu_per_unit"]
    assert prof.params["encr"] == "aes-gcm-16"


def test_a_window_that_opened_another_flows_queue_is_named():
    """A slow flow's queue drains into the next trial (the DUT opens what was queued in front of it first): the
    other flows' counters that moved between two reads say so, and the trial is not that flow's alone."""
    a = G.Counters(10.0, 5.0, {"v4": 100, "v6": 200, "plain6": 7})
    b = G.Counters(11.0, 6.0, {"v4": 1200, "v6": 950, "plain6": 7})
    assert G.EspBench._others_moved("v4", a, b) == {"v6": 750}
    assert G.EspBench._others_moved("v4", a, G.Counters(11.0, 6.0, {"v4": 1200, "v6": 200, "plain6": 7})) == {}
