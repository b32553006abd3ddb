"""DHCPv6 client — RFC 8415 (with RFC 7083's SOL_MAX_RT / INF_MAX_RT and RFC
7550's IA handling), RFC 3646 DNS options; IPv6 Ready DHCP_CONF.1.x
(stateful), 4.1.x (DNS options) and 7.1.x (stateless).

Topology: the tester is the link's only router (RA with M/O flags) and
plays the DHCPv6 server (every Advertise and Reply variant crafted); Kea
serves the happy path with a real server.  The lab DUT runs dhcpcd (DUT
configuration dhcp6-client).  Declarations: keywords/v6gate/checks/dhcpv6/
(`v6gate list --area dhcpv6`).
"""

from v6gate.pytest_plugin import check_test

test_dhcpv6 = check_test("dhcpv6")
