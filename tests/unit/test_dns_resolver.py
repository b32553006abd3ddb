"""The tester's DNS resolver for the RFC 8106 checks (pure logic: a recorded
port, no lab)."""

from scapy.layers.dns import DNS, DNSQR
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from v6gate.net.dns import Resolver
from v6gate.net.nodes import EmulatedNode
from v6gate.net.port import Frame


class FakePort:
    def __init__(self):
        self.sent = []

    def send(self, pkt):
        self.sent.append(pkt)


def _query(node, name, qtype, src="2001:db8:77:1::2"):
    pkt = (Ether(src="02:00:00:00:00:02", dst=node.mac) / IPv6(src=src, dst=node.global_addr)
           / UDP(sport=40000, dport=53) / DNS(id=0x4242, rd=1, qd=[DNSQR(qname=name, qtype=qtype)]))
    return Frame(1.0, bytes(pkt), 0)


def test_resolver_answers_known_names_and_records_every_query():
    node = EmulatedNode.fresh("DNS1", "2001:db8:77:1::/64")
    r = Resolver(node, {"host.v6g.example": "2001:db8:1:2::3"})
    port = FakePort()
    r(port, _query(node, "host.v6g.example.", "AAAA"))
    r(port, _query(node, "other.example.", "AAAA"))
    r(port, _query(node, "host.v6g.example.", "A"))
    answers = [DNS(bytes(p[DNS])) for p in port.sent]
    assert answers[0].rcode == 0 and answers[0].an[0].rdata == "2001:db8:1:2::3" and answers[0].id == 0x4242
    assert answers[1].rcode == 3
    assert answers[2].rcode == 0 and not answers[2].an
    assert [q.qtype for q in r.asked(name="host.v6g.example")] == ["AAAA", "A"]
    assert port.sent[0][IPv6].src == node.global_addr and port.sent[0][UDP].dport == 40000


def test_resolver_ignores_other_destinations():
    node = EmulatedNode.fresh("DNS1", "2001:db8:77:1::/64")
    r = Resolver(node)
    port = FakePort()
    frame = _query(EmulatedNode.fresh("X", "2001:db8:77:1::/64"), "a.example.", "AAAA")
    r(port, frame)
    assert not port.sent and not r.queries
