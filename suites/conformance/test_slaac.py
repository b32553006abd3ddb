"""Stateless address autoconfiguration — RFC 4862; IPv6 Ready Core v6LC.3 (host scope).

Topology: the tester sends Router Advertisements from an emulated router
(TR1) with a fresh prefix per check, or restarts the DUT to watch its
start-up.  Declarations: keywords/v6gate/checks/slaac.py
(`v6gate list --area slaac`).
"""

from v6gate.pytest_plugin import check_test

test_slaac = check_test("slaac")
