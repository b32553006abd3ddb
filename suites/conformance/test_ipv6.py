"""IPv6 header, extension headers and fragmentation — RFC 8200 (with RFC
5095, 7112, 5722, 6946, 8021); IPv6 Ready Core v6LC.1 (host scope).

Topology: the tester emulates on-link nodes (TN1, TN2) and, for the
Routing-header tests, the DUT's only router TR1 with off-link Host1 behind
it; the lab DUT is rebuilt before every check.  References, parts and
expected outcomes: keywords/v6gate/checks/ipv6.py (`v6gate list --area ipv6`).
The 60-second reassembly-timeout parts run in the `full` profile.
"""

from v6gate.pytest_plugin import check_test

test_ipv6 = check_test("ipv6")
