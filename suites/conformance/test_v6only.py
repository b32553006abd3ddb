"""IPv6-only readiness — no IPv4 dependence (RFC 8925 §3.2, RFC 6540 §2), the
IPv6-Only Preferred DHCPv4 option (RFC 8925), DNS over IPv6 (RFC 8106, RFC
8415/3646), the DNS64/NAT64 path to an IPv4-only server (RFC 6147, 6146, 6052),
service parity (RFC 6540 §2) and address selection on a dual-stack link (RFC 6724).

Topology: the tester emulates the DUT's configuration sources (an RA with RDNSS,
a DNS server, stateless DHCPv6, dual-stack peers); the lab adds, per check, a
DHCPv4 server offering option 108, and a NAT64 (tayga) with DNS64 (unbound) in
front of an IPv4-only server.  The lab DUT runs dhcpcd (DUT configurations
v6only-host and dual-stack-host).  Checks, parts and expected outcomes are
declared in keywords/v6gate/checks/v6only.py (`v6gate list --area v6only`).
"""

from v6gate.pytest_plugin import check_test

test_v6only = check_test("v6only")
