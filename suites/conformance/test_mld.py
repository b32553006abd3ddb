"""Multicast Listener Discovery, listener side — RFC 2710 / RFC 3810; IPv6 Ready MLD Operations MLD.1.1-1.15
and the host-relevant MLDv2 report-format items; MLDv2 source filtering
(RFC 3810 §6, Tables 1 and 3) and SSM channels (RFC 4604).

Topology: the tester is the querier; the DUT's solicited-node group is the group
under test, and the control adapter makes the DUT join and leave others.
Declarations: keywords/v6gate/checks/mld/ (`v6gate list --area mld`).
"""

from v6gate.pytest_plugin import check_test

test_mld = check_test("mld")
