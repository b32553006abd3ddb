"""The simulated HTTPS-record client (lab/impostor_rules/dns_svcb.py): what
it sends on the DUT's A/AAAA query, and when it connects to the ipv6hint."""

from scapy.layers.dns import DNS, DNSQR, DNSRR
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from v6gate.lab.impostor_rules.dns_svcb import https_hint, svcb_client
from v6gate.net.dnsserver import https_rdata

DUT = {"mac": "02:00:00:00:00:02", "link_local": "fe80::2"}
DUT_ADDR, SERVER, ROUTER_MAC, HINT = "2001:db8:1::2", "2001:db8:1::53", "02:00:00:00:00:01", "2001:db8:1::443"


class FakeImpostor:
    ns = "v6gate-test-dut"

    def __init__(self):
        self.state, self.timers = {}, []

    def later(self, seconds, frames):
        self.timers.append((seconds, frames))


def _query(qtype="AAAA", name="svcb-1.dns.v6gate.test"):
    return Ether(bytes(Ether(src=DUT["mac"], dst=ROUTER_MAC) / IPv6(src=DUT_ADDR, dst=SERVER)
                       / UDP(sport=33333, dport=53) / DNS(id=7, rd=1, qd=DNSQR(qname=name, qtype=qtype))))


def _answer(query, rdata):
    q = query[DNS]
    return Ether(bytes(Ether(src=ROUTER_MAC, dst=DUT["mac"]) / IPv6(src=SERVER, dst=DUT_ADDR)
                       / UDP(sport=53, dport=query[UDP].sport)
                       / DNS(id=q.id, qr=1, qd=q.qd, an=DNSRR(rrname=q.qd[0].qname, type=65, rdata=rdata))))


def test_asks_the_same_server_for_the_https_record_as_the_dut_once_per_name():
    imp = FakeImpostor()
    [frame] = svcb_client(_query(), DUT, imp)
    assert frame[IPv6].src == DUT_ADDR and frame[IPv6].dst == SERVER and frame[Ether].dst == ROUTER_MAC
    assert frame[DNSQR].qtype == 65 and frame[DNSQR].qname == b"svcb-1.dns.v6gate.test."
    assert svcb_client(_query("A"), DUT, imp) == []  # the same name: asked already
    assert svcb_client(Ether(bytes(frame)), DUT, imp) == []  # its own HTTPS query, seen going out


def test_connects_to_the_hint_on_the_answer_unless_the_mistake_says_not():
    for mistake, connects in ((None, 1), ("ignores_hint", 0)):
        imp = FakeImpostor()
        [query] = svcb_client(_query(), DUT, imp, mistake=mistake)
        answer = _answer(Ether(bytes(query)), https_rdata(1, ".", alpn=("h2",), port=8443, ipv6hint=(HINT,)))
        assert svcb_client(answer, DUT, imp, mistake=mistake) == []
        assert len(imp.timers) == connects
        assert https_hint(answer) == (HINT, 8443)


def test_an_answer_it_did_not_ask_for_or_without_a_hint_is_ignored():
    imp = FakeImpostor()
    [query] = svcb_client(_query(), DUT, imp)
    stranger = _answer(_query(), https_rdata(1, ".", ipv6hint=(HINT,)))  # the DUT's own query's port and ID
    assert svcb_client(stranger, DUT, imp) == [] and imp.timers == []
    no_hint = _answer(Ether(bytes(query)), https_rdata(1, ".", alpn=("h2",)))
    assert https_hint(no_hint) is None
    assert svcb_client(no_hint, DUT, imp) == [] and imp.timers == []
    assert https_hint(_answer(Ether(bytes(query)), https_rdata(1, ".", ipv6hint=(HINT,)))) == (HINT, 443)
