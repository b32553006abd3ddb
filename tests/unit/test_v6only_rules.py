"""The IPv6-only rules shared by the active checks and the audit, and the
RFC 6052 / RFC 8781 / RFC 7050 arithmetic (pure logic)."""

import pytest
from scapy.layers.inet6 import ICMPv6ND_RA, ICMPv6NDOptSrcLLAddr

from v6gate.lab.clat_agent import pref64_of
from v6gate.net import v6only as V


@pytest.mark.parametrize("prefix,address", [  # RFC 6052 §2.4, Table 1: 192.0.2.33 under each length
    ("2001:db8::/32", "2001:db8:c000:221::"),
    ("2001:db8:100::/40", "2001:db8:1c0:2:21::"),
    ("2001:db8:122::/48", "2001:db8:122:c000:2:2100::"),
    ("2001:db8:122:300::/56", "2001:db8:122:3c0:0:221::"),
    ("2001:db8:122:344::/64", "2001:db8:122:344:c0:2:2100:0"),
    ("2001:db8:122:344::/96", "2001:db8:122:344::c000:221"),
])
def test_rfc6052_embedding_both_ways(prefix, address):
    assert V.nat64_address(prefix, "192.0.2.33") == address
    assert V.nat64_extract(prefix, address) == "192.0.2.33"


def test_a_prefix_length_rfc6052_does_not_define_is_refused():
    with pytest.raises(ValueError, match="RFC 6052"):
        V.nat64_address("2001:db8::/80", "192.0.2.33")


def test_rfc7050_finds_the_prefix_behind_ipv4only_arpa():
    assert V.prefix_from_ipv4only_answer("2001:db8:64::c000:aa") == "2001:db8:64::/96"
    assert V.prefix_from_ipv4only_answer(V.nat64_address("2001:db8:100::/40", "192.0.0.171")) == "2001:db8:100::/40"
    assert V.prefix_from_ipv4only_answer("2001:db8::1") is None


@pytest.mark.parametrize("prefix,lifetime", [("2001:db8:64::/96", 1800), ("2001:db8:6400::/40", 600),
                                             ("2001:db8::/32", 8)])
def test_pref64_option_round_trips_through_the_clat_agent(prefix, lifetime):
    ra = ICMPv6ND_RA() / ICMPv6NDOptSrcLLAddr(lladdr="02:00:00:00:00:01") / V.pref64_option(prefix, lifetime)
    net, got = pref64_of(bytes(ra))
    assert str(net) == prefix and got == lifetime


@pytest.mark.parametrize("ethertype,sport,dport,prl,kind", [
    (0x0806, None, None, None, V.ARP),
    (0x0800, 68, 67, [1, 3, 108], V.DHCPV4_RFC8925),
    (0x0800, 68, 67, [1, 3, 6], V.DHCPV4),
    (0x0800, 5353, 53, None, V.IPV4),
    (0x0800, 67, 68, [108], V.IPV4),  # a server's DHCP is not the client asking
    (0x86DD, None, None, None, None),
])
def test_what_counts_as_ipv4_on_an_ipv6_only_link(ethertype, sport, dport, prl, kind):
    assert V.classify_ipv4(ethertype, udp_sport=sport, udp_dport=dport, dhcp_prl=prl) == kind
    assert V.allowed_on_ipv6_only_link(kind) == (kind in (None, V.DHCPV4_RFC8925))


def test_resolver_output_is_parsed_in_order():
    out = "2001:db8::1      STREAM x\n2001:db8::1      DGRAM\n198.18.0.10 STREAM\n[2001:db8::2]\nnot-an-address\n"
    assert V.parse_addresses(out) == ["2001:db8::1", "198.18.0.10", "2001:db8::2"]
