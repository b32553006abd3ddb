"""Router and prefix discovery — RFC 4861 §6, RFC 6980 §5; IPv6 Ready Core v6LC.2.2 and v6LC.2.1.3/2.1.4 (host
scope; router-only parts SKIP on hosts).

Topology: the tester is the only router (the lab stops its radvd); emulated
routers TR1/TR2 advertise fresh prefixes with short lifetimes and timers, and
an off-link node TN2 shows which next hop the DUT picks.  Declarations:
keywords/v6gate/checks/rd/ (`v6gate list --area rd`).
"""

from v6gate.pytest_plugin import check_test

test_rd = check_test("rd")
