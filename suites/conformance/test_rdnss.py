"""DNS configuration from Router Advertisements — RFC 8106 RDNSS and DNSSL.

Topology: the tester is the only router and runs the advertised resolver;
the lab DUT runs dhcpcd as its RA DNS consumer (configuration rdnss-client).
Declarations: keywords/v6gate/checks/rdnss.py (`v6gate list --area rdnss`).
"""

from v6gate.pytest_plugin import check_test

test_rdnss = check_test("rdnss")
