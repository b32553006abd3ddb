"""Neighbor Discovery — RFC 4861 (+ RFC 6980); IPv6 Ready Core v6LC.2 (host scope).

Topology: the tester emulates on-link nodes and routers with fresh MAC and
interface identifiers per check, so the DUT starts without neighbour cache
entries for them.  Declarations: keywords/v6gate/checks/nd/
(`v6gate list --area nd`).
"""

from v6gate.pytest_plugin import check_test

test_nd = check_test("nd")
