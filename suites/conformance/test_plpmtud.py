"""Path MTU when ICMPv6 is blocked: Packetization Layer PMTUD for TCP (RFC 4821) and a PMTU method on by default
(draft-ietf-6man-rfc8504-bis).

Topology: a node one router hop away behind a 1280-octet hop; its router drops every Packet Too Big (or delivers
them); the DUT sends 1 MiB through its TCP echo service.  Declarations: keywords/v6gate/checks/plpmtud.py
(`v6gate list --area plpmtud`).
"""

from v6gate.pytest_plugin import check_test

test_plpmtud = check_test("plpmtud")
