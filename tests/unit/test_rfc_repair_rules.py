"""Repair rules of issue 14 (lab/repair_rules/rd.py): what the DUT's kernel
gets instead of a Route Information option."""

from scapy.layers.inet6 import ICMPv6ND_RA, ICMPv6NDOptRouteInfo, IPv6

from v6gate.lab.repair import RULES, _load_rules
from v6gate.net.rd import route_information


def _ra(*opts) -> bytes:
    pkt = IPv6(src="fe80::1", dst="ff02::1", hlim=255) / ICMPv6ND_RA(routerlifetime=0)
    for o in opts:
        pkt = pkt / o
    return bytes(pkt)


def _rios(packet: bytes):
    rio = IPv6(packet)[ICMPv6ND_RA].payload
    out = []
    while isinstance(rio, ICMPv6NDOptRouteInfo):
        out.append((rio.prf, rio.rtlifetime))
        rio = rio.payload
    return out


def test_lifetime_floor_raises_zero_and_keeps_long_lifetimes():
    _load_rules()
    rule = RULES["rio_lifetime_floor"]
    got = rule(_ra(route_information("2001:db8:5::/48", lifetime=0), route_information("2001:db8:6::/48",
                                                                                       lifetime=9000)), {}, floor=1800)
    assert _rios(got) == [(0, 1800), (0, 9000)]
    fresh = IPv6(got)
    sent = fresh[ICMPv6ND_RA].cksum
    del fresh[ICMPv6ND_RA].cksum
    assert IPv6(bytes(fresh))[ICMPv6ND_RA].cksum == sent  # the checksum was recomputed
    assert rule(_ra(route_information("2001:db8:5::/48", lifetime=5000)), {}, floor=1800) is None


def test_preference_misread_swaps_high_and_low_only():
    _load_rules()
    rule = RULES["rio_preference_misread"]
    got = rule(_ra(route_information("2001:db8:5::/48", preference="high"),
                   route_information("2001:db8:6::/48", preference="low"),
                   route_information("2001:db8:7::/48", preference="medium")), {})
    assert [p for p, _ in _rios(got)] == [3, 1, 0]
    assert rule(_ra(route_information("2001:db8:7::/48", preference="medium")), {}) is None


def _pio_flags(packet: bytes) -> list[tuple[int, int]]:
    from scapy.layers.inet6 import ICMPv6NDOptPrefixInfo

    opt, out = IPv6(packet)[ICMPv6ND_RA].payload, []
    while opt:
        if isinstance(opt, ICMPv6NDOptPrefixInfo):
            out.append((opt.A, opt.res1 & 0x10))
        opt = opt.payload
    return out


def test_p_flag_rules_touch_only_options_with_p():
    from v6gate.net.nd import pd_preferred, prefix_option

    _load_rules()
    ra = _ra(pd_preferred(prefix_option("2001:db8:5::/64")), prefix_option("2001:db8:6::/64"))
    assert _pio_flags(ra) == [(1, 0x10), (1, 0)]
    assert _pio_flags(RULES["pio_p_flag_clears_a"](ra, {})) == [(0, 0x10), (1, 0)]
    assert _pio_flags(RULES["pio_p_flag_unseen"](ra, {})) == [(1, 0), (1, 0)]
    assert RULES["pio_p_flag_clears_a"](_ra(prefix_option("2001:db8:6::/64")), {}) is None
