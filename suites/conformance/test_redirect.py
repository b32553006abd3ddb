"""Redirect — RFC 4861 §8 (+ RFC 6980); IPv6 Ready Core v6LC.2.3 (host scope; v6LC.2.3.16/17 are for routers).

Topology: the tester's TR1 is the DUT's only router (Common Test Setup 1.1);
TN1/TN2 have off-link addresses and reach the DUT through TR1; TR2/TR3 are
alternate routers.  Declarations: keywords/v6gate/checks/redirect.py
(`v6gate list --area redirect`).
"""

from v6gate.pytest_plugin import check_test

test_redirect = check_test("redirect")
