"""ICMPv6 — RFC 4443; IPv6 Ready Core v6LC.5 (host scope), plus the
RFC 4443 §2.4 rules every error obeys (minimum-MTU size, rate limit, no
error about an error).

Topology: the tester emulates on-link nodes (TN1, ...) on the DUT's link and
TR1 where a prefix must be advertised; the lab DUT is rebuilt before every
check.  Each check's references, parts and expected outcome are declared in
keywords/v6gate/checks/icmpv6.py (`v6gate list --area icmpv6` prints them).
The 60-second reassembly-timeout parts run in the `full` profile.
"""

from v6gate.pytest_plugin import check_test

test_icmpv6 = check_test("icmpv6")
