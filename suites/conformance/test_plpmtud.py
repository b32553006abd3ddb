"""Path MTU when ICMPv6 is blocked: Packetization Layer PMTUD for TCP (RFC 4821), datagram PLPMTUD through QUIC
(RFC 8899, RFC 9000 §14.3) and a PMTU method on by default (draft-ietf-6man-rfc8504-bis).

Topology: a node one router hop away behind a 1280-octet hop; its router drops every Packet Too Big (or delivers
them); the DUT sends 1 MiB through its TCP echo service.  For RFC 8899: a node behind a 1400-octet hop that drops
every Packet Too Big fetches 4 MiB from the DUT's QUIC endpoint; the DUT's datagram sizes show its search.
Declarations: keywords/v6gate/checks/plpmtud.py (`v6gate list --area plpmtud`).
"""

from v6gate.pytest_plugin import check_test

test_plpmtud = check_test("plpmtud")
