"""The neighbour-churn gate's tester side (gates/workloads/nd_churn.py): the
responder reads the DUT's NS from the bytes and answers with the NA built
before the clock, and the tester's own time is measured so the gate can take
it out of the DUT's."""

import ipaddress

from scapy.layers.inet6 import ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptDstLLAddr, ICMPv6NDOptSrcLLAddr, IPv6
from scapy.layers.l2 import Dot1Q, Ether

from v6gate.gates.workloads.nd_churn import Crowd, ns_of, union_s
from v6gate.net.port import Frame

DUT, DUT_MAC = "2001:db8:1::ff:fe00:2", "02:00:00:00:00:02"


def _ns(tgt, *, src=DUT, hlim=255, tagged=False):
    eth = Ether(src=DUT_MAC, dst="33:33:ff:00:00:01")
    ip = IPv6(src=src, dst="ff02::1:ff00:1", hlim=hlim) / ICMPv6ND_NS(tgt=tgt) / ICMPv6NDOptSrcLLAddr(lladdr=DUT_MAC)
    return bytes(eth / Dot1Q(vlan=7) / ip if tagged else eth / ip)


class FakePort:
    def __init__(self):
        self.sent = []
        self.clock = 10.0

    def send(self, frame):
        self.sent.append(bytes(frame))
        return self.clock

    def now(self):
        return self.clock + 0.004


def test_ns_is_read_from_the_bytes_untagged_or_tagged_and_nothing_else():
    tgt = "2001:db8:1::1234"
    want = (ipaddress.IPv6Address(tgt).packed, ipaddress.IPv6Address(DUT).packed, bytes.fromhex("020000000002"))
    assert ns_of(_ns(tgt)) == want
    assert ns_of(_ns(tgt, tagged=True)) == want
    assert ns_of(_ns(tgt, hlim=64)) is None  # not from the link (RFC 4861 §7.1.1)
    na = Ether(src=DUT_MAC) / IPv6(src=DUT, dst=tgt, hlim=255) / ICMPv6ND_NA(tgt=tgt)
    assert ns_of(bytes(na)) is None
    assert ns_of(_ns(tgt)[:60]) is None  # truncated


def test_responder_answers_with_the_na_built_before_the_clock_and_times_its_own_wait():
    crowd = Crowd(4, ipaddress.IPv6Network("2001:db8:1::/64"))
    crowd.foresee(DUT, DUT_MAC)
    tgt = next(iter(crowd.macs))
    port = FakePort()
    crowd.responder(port, Frame(9.99, _ns(tgt), 0))
    crowd.responder(port, Frame(9.99, _ns("2001:db8:1::dead"), 0))  # not one of the crowd: no answer
    crowd.responder(port, Frame(9.99, _ns(tgt, src="::"), 0))  # DAD: no answer
    assert len(port.sent) == 1
    na = Ether(port.sent[0])
    assert na[IPv6].src == tgt and na[IPv6].dst == DUT and na[IPv6].hlim == 255 and na[Ether].dst == DUT_MAC
    assert na[ICMPv6ND_NA].S == 1 and na[ICMPv6NDOptDstLLAddr].lladdr == crowd.macs[tgt]
    assert crowd.waits == [(9.99, 10.004)] and tgt in crowd.solicited
    # an NS from a source not foreseen (the DUT's link-local address) is answered too, to that source
    crowd.responder(port, Frame(10.5, _ns(tgt, src="fe80::2"), 0))
    assert Ether(port.sent[1])[IPv6].dst == "fe80::2"


def test_tester_time_is_the_union_of_its_intervals_within_the_trial():
    assert union_s([], 0, 1) == 0
    assert abs(union_s([(0.0, 0.1), (0.05, 0.2), (0.5, 0.6)], 0.0, 1.0) - 0.3) < 1e-9
    assert abs(union_s([(0.0, 0.3), (0.9, 2.0)], 0.1, 1.0) - 0.3) < 1e-9  # clipped to the trial
