"""Address architecture — RFC 7217 / RFC 8064 stable interface identifiers, RFC 8981 temporary addresses,
RFC 6724 default source address selection (where the wire shows it).

Topology: the tester is the only router; the lab runs the Stable-IID and
Temp-Addr checks in its DUT configurations 'stable-iid' and 'temp-addr'.
Declarations: keywords/v6gate/checks/addrarch.py (`v6gate list --area addrarch`).
"""

from v6gate.pytest_plugin import check_test

test_addrarch = check_test("addrarch")
