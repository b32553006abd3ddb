"""IPsec ESP with manual keys — the DUT as an ESP end node over IPv6 (RFC 4303,
RFC 4301, the RFC 8221 MUST algorithms): protected Echo Requests answered on the
right SA, cleartext that a protect policy covers not delivered, bad ICV, unknown
SPI, replays, sequence numbers left of the window and truncated packets silently
discarded while the DUT keeps answering, tunnel mode host-to-host and
host-to-security-gateway, ESP after extension headers and in fragments, a Packet
Too Big for a tunnel's outer path.

Topology: the tester holds the SAs and emulates the peer (TN1) or a security
gateway (SG1) with a host behind it; the DUT holds the same SAs (installed per
check through its hooks, or configured by hand: extensions.ipsec).  The lab's
DUT is Debian 12's kernel (xfrm) in the lab VM standing in for the DUT (DUT
configuration `ipsec-vm`).  Checks, parts and expected outcomes are declared in
keywords/v6gate/checks/ipsec/ (`v6gate list --area ipsec`; docs/ipsec.md).
"""

from v6gate.pytest_plugin import check_test

test_ipsec = check_test("ipsec")
