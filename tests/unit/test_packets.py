"""Address arithmetic and packet helpers against RFC-given values."""

from scapy.layers.inet6 import ICMPv6ND_NS, IPv6, in6_chksum
from scapy.layers.l2 import Ether

from v6gate.net import packets as P
from v6gate.net.nd import fresh_prefix, is_dad_ns_for, neighbor_solicitation
from v6gate.net.nodes import EmulatedNode


def test_solicited_node_group_rfc4291_2_7_1():
    assert P.solicited_node("fe80::2aa:ff:fe28:9c5a") == "ff02::1:ff28:9c5a"
    assert P.solicited_node("2001:db8::1:800:200e:8c6c") == "ff02::1:ff0e:8c6c"


def test_multicast_mac_rfc2464_7():
    assert P.multicast_mac("ff02::1") == "33:33:00:00:00:01"
    assert P.multicast_mac("ff02::1:ff28:9c5a") == "33:33:ff:28:9c:5a"


def test_eui64_link_local_rfc4291_appendix_a():
    assert P.link_local_from_mac("00:aa:00:28:9c:5a") == "fe80::2aa:ff:fe28:9c5a"
    assert P.link_local_from_mac("02:00:00:00:00:02") == "fe80::ff:fe00:2"


def test_fresh_nodes_are_unique_and_locally_administered():
    a, b = EmulatedNode.fresh("A", "2001:db8:1::/64"), EmulatedNode.fresh("B", "2001:db8:1::/64")
    assert a.mac != b.mac and a.link_local != b.link_local
    assert int(a.mac.split(":")[0], 16) & 0x02 and not int(a.mac.split(":")[0], 16) & 0x01
    assert a.global_addr.startswith("2001:db8:1:0:")


def _icmp_checksum_ok(frame) -> bool:
    ip = frame[IPv6]
    body = bytes(ip.payload)
    zeroed = body[:2] + b"\x00\x00" + body[4:]
    return in6_chksum(58, ip, zeroed) == int.from_bytes(body[2:4], "big")


def test_bad_checksum_is_bad_and_raw_rebuild_is_good():
    node = EmulatedNode.fresh("TN1", "2001:db8:1::/64")
    ns = neighbor_solicitation(node, "fe80::1", dut_mac="02:00:00:00:00:02")
    good = Ether(bytes(ns))
    assert _icmp_checksum_ok(good)
    bad = Ether(bytes(P.with_bad_checksum(ns, ICMPv6ND_NS)))
    assert not _icmp_checksum_ok(bad)
    short = Ether(bytes(P.icmpv6_from_bytes(ns, bytes(ns[ICMPv6ND_NS])[:20])))
    assert len(bytes(short[IPv6].payload)) == 20 and _icmp_checksum_ok(short)


def test_dad_probe_recognition():
    node = EmulatedNode.fresh("X", "2001:db8:1::/64")
    dad = neighbor_solicitation(node, "2001:db8:1::5", dut_mac="", src="::", sllao=False)
    assert is_dad_ns_for(Ether(bytes(dad)))
    normal = neighbor_solicitation(node, "2001:db8:1::5", dut_mac="")
    assert not is_dad_ns_for(Ether(bytes(normal)))


def test_test_prefixes_avoid_the_link_prefix():
    import ipaddress

    link = ipaddress.IPv6Network("2001:db8:1::/64")
    for _ in range(200):
        p = fresh_prefix(avoid=link)
        assert p.prefixlen == 64 and not p.overlaps(link) and p.subnet_of(ipaddress.IPv6Network("2001:db8::/32"))
