"""ICMPv6 — RFC 4443; IPv6 Ready Core v6LC.5 (host scope).

Topology: the tester emulates on-link nodes (TN1, ...) on the DUT's link;
the lab DUT is rebuilt before every check.  Each check's references, parts
and expected outcome are declared in keywords/v6gate/checks/icmpv6.py
(`v6gate list --area icmpv6` prints them).
"""

from v6gate.pytest_plugin import check_test

test_icmpv6 = check_test("icmpv6")
