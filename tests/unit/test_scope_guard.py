"""The scope guard's decision (pure logic): which tester interfaces a run
against a real device refuses without --i-own-this-link."""

import ipaddress
from types import SimpleNamespace

import pytest

from v6gate.scope_guard import OVERRIDE, LinkFacts, decide, refusal

P = ipaddress.IPv6Network("2001:db8:1::/64")
N = ipaddress.IPv6Network


@pytest.mark.parametrize("facts, refused, words", [
    (LinkFacts(), False, []),                                                        # a bare test NIC
    (LinkFacts(v6_networks=[N("2001:db8:1::/64")]), False, []),                     # the prefix is there
    (LinkFacts(v6_networks=[N("2001:db8:1::/64"), N("2001:db8:2::/64")]), False, []),
    (LinkFacts(v6_networks=[N("2001:db8:1::/48")]), False, []),                     # a covering route
    (LinkFacts(default_route_ifaces={"eth0"}), True, ["default route", OVERRIDE]),  # the uplink
    (LinkFacts(default_route_ifaces={"eth0"}, v6_networks=[N("2001:db8:1::/64")]), True, ["default route"]),
    (LinkFacts(default_route_ifaces={"wlan0"}), False, []),                         # default route elsewhere
    (LinkFacts(v6_networks=[N("2001:db8:99::/64")]), True, ["not on", "2001:db8:99::/64", OVERRIDE]),
    (LinkFacts(v6_networks=[N("fe80::/64")]), False, []),                           # link-local only
])
def test_decide(facts, refused, words):
    why = decide("eth0", P, facts)
    assert (why is not None) == refused, why
    for w in words:
        assert w in why


def test_override_and_lab_are_never_refused(monkeypatch):
    import v6gate.scope_guard as sg

    monkeypatch.setattr(sg, "link_facts", lambda iface, ns: LinkFacts(default_route_ifaces={iface}))
    real = SimpleNamespace(lab=None, tester_interface="eth0", tester_netns=None, link_prefix=P)
    lab = SimpleNamespace(lab={"topology": "x"}, tester_interface="eth0", tester_netns="t", link_prefix=P)
    assert refusal(real, own_link=False)
    assert refusal(real, own_link=True) is None
    assert refusal(lab, own_link=False) is None
