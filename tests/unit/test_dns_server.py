"""The tester's DNS server of the dns area and the area's repair rules (pure
logic: a recorded port, packets built here, no lab)."""

import struct

from scapy.layers.dns import DNS, DNSQR, DNSRROPT
from scapy.layers.inet import TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from v6gate.lab.repair_rules import dns as rules
from v6gate.net.dnsserver import DnsServer, https_rdata, ptr_name
from v6gate.net.nodes import EmulatedNode
from v6gate.net.port import Frame

DUT, DUT_MAC = "2001:db8:77:1::2", "02:00:00:00:00:02"


class FakePort:
    def __init__(self):
        self.sent = []

    def send(self, pkt):
        self.sent.append(pkt)


def _udp(node, name, qtype, *, opt=None, sport=40000, qid=0x4242):
    msg = DNS(id=qid, rd=1, qd=[DNSQR(qname=name, qtype=qtype)], ar=[DNSRROPT(rclass=opt)] if opt else [])
    pkt = Ether(src=DUT_MAC, dst=node.mac) / IPv6(src=DUT, dst=node.global_addr) / UDP(sport=sport, dport=53) / msg
    return Frame(1.0, bytes(pkt), 0)


def _tcp(node, flags, seq, ack=0, data=b""):
    pkt = (Ether(src=DUT_MAC, dst=node.mac) / IPv6(src=DUT, dst=node.global_addr)
           / TCP(sport=41000, dport=53, flags=flags, seq=seq, ack=ack))
    return Frame(2.0, bytes(pkt / Raw(data) if data else pkt), 0)


def test_queries_are_recorded_with_their_opt_record_and_answered():
    node = EmulatedNode.fresh("DNS", "2001:db8:77:1::/64")
    s = DnsServer(node)
    s.add("a.test", "AAAA", "2001:db8::1")
    port = FakePort()
    s.responder(port, _udp(node, "a.test.", "AAAA", opt=1232))
    s.responder(port, _udp(node, "a.test.", "A"))
    s.responder(port, _udp(node, "b.test.", "AAAA"))
    edns = [q.edns for q in s.asked()]
    assert edns == [1232, None, None]
    answers = [DNS(bytes(p[DNS])) for p in port.sent]
    assert answers[0].an[0].rdata == "2001:db8::1" and answers[0].rcode == 0 and not answers[0].tc
    assert answers[1].rcode == 0 and not answers[1].an  # NODATA
    assert answers[2].rcode == 3  # NXDOMAIN


def test_truncated_over_udp_full_over_tcp():
    node = EmulatedNode.fresh("DNS", "2001:db8:77:1::/64")
    s = DnsServer(node, truncate={"t.test"})
    s.add("t.test", "AAAA", "2001:db8::7")
    port = FakePort()
    s.responder(port, _udp(node, "t.test.", "AAAA"))
    udp = DNS(bytes(port.sent[0][DNS]))
    assert udp.tc == 1 and not udp.an
    s.responder(port, _tcp(node, "S", 1000))
    synack = port.sent[-1][TCP]
    assert str(synack.flags) == "SA" and synack.ack == 1001
    wire = bytes(DNS(id=7, rd=1, qd=[DNSQR(qname="t.test.", qtype="AAAA")]))
    s.responder(port, _tcp(node, "PA", 1001, synack.seq + 1, struct.pack("!H", len(wire)) + wire))
    seg = port.sent[-1][TCP]
    body = bytes(seg.payload)
    n = struct.unpack("!H", body[:2])[0]
    answer = DNS(body[2:2 + n])
    assert answer.id == 7 and answer.an[0].rdata == "2001:db8::7" and not answer.tc
    assert seg.ack == 1001 + 2 + len(wire)
    assert [q.transport for q in s.asked("t.test")] == ["udp", "tcp"]


def test_a_query_split_over_two_segments_is_answered_once_whole():
    node = EmulatedNode.fresh("DNS", "2001:db8:77:1::/64")
    s = DnsServer(node)
    s.add("s.test", "AAAA", "2001:db8::8")
    port = FakePort()
    s.responder(port, _tcp(node, "S", 5000))
    isn = port.sent[-1][TCP].seq
    wire = bytes(DNS(id=9, rd=1, qd=[DNSQR(qname="s.test.", qtype="AAAA")]))
    framed = struct.pack("!H", len(wire)) + wire
    s.responder(port, _tcp(node, "A", 5001, isn + 1, framed[:5]))
    assert not s.asked()
    s.responder(port, _tcp(node, "PA", 5006, isn + 1, framed[5:]))
    assert len(s.asked("s.test")) == 1


def test_ptr_name_and_https_rdata():
    assert ptr_name("2001:db8::1") == "1." + "0." * 23 + "8.b.d.0.1.0.0.2.ip6.arpa"
    rdata = https_rdata(1, ".", alpn=("h2",), port=443, ipv6hint=("2001:db8::5",))
    assert rdata[:2] == b"\x00\x01" and rdata[2] == 0  # priority 1, root target
    assert b"\x00\x06\x00\x10" + bytes.fromhex("20010db8000000000000000000000005") in rdata


def _answer(src, tc=1):
    return bytes(IPv6(src=src, dst=DUT) / UDP(sport=53, dport=40000)
                 / DNS(id=1, qr=1, tc=tc, qd=[DNSQR(qname="x.test.", qtype="AAAA")]))


def _query(name, opt=None):
    return bytes(IPv6(src=DUT, dst="2001:db8:1::53") / UDP(sport=40000, dport=53)
                 / DNS(id=1, rd=1, qd=[DNSQR(qname=name, qtype="PTR")], ar=[DNSRROPT(rclass=opt)] if opt else []))


def test_repair_rules_change_only_what_they_name():
    out = IPv6(rules.dns_clear_truncation(_answer("2001:db8:1::53"), {}))
    assert out[DNS].tc == 0
    again = out.copy()
    del again[UDP].chksum
    assert out[UDP].chksum == IPv6(bytes(again))[UDP].chksum  # recomputed over the new bytes
    assert rules.dns_clear_truncation(_answer("2001:db8:1::53", tc=0), {}) is None
    moved = IPv6(rules.dns_answer_from_any_address(_answer("2001:db8:1::99"), {}, resolver="2001:db8:1::53"))
    assert moved.src == "2001:db8:1::53"
    assert rules.dns_answer_from_any_address(_answer("2001:db8:1::53"), {}, resolver="2001:db8:1::53") is None
    arpa = "1." + "0." * 23 + "8.b.d.0.1.0.0.2.ip6.arpa."
    int_ = IPv6(rules.dns_reverse_in_ip6_int(_query(arpa), {}))
    assert int_[DNS].qd[0].qname == arpa[:-len("ip6.arpa.")].encode() + b"ip6.int."
    assert int_[UDP].len == len(bytes(int_[UDP]))
    assert rules.dns_reverse_in_ip6_int(_query("a.test."), {}) is None
    stripped = IPv6(rules.dns_query_edns(_query("a.test.", opt=1232), {}, payload=None))
    assert not [rr for rr in (stripped[DNS].ar or []) if isinstance(rr, DNSRROPT)]
    added = IPv6(rules.dns_query_edns(_query("a.test."), {}, payload=1232))
    assert [rr.rclass for rr in added[DNS].ar if isinstance(rr, DNSRROPT)] == [1232]
