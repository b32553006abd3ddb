"""IKEv2 end node over IPv6 (RFC 7296, algorithms RFC 8247) — the DUT as
responder and as initiator: the RFC 8247 MUST suites accepted and offered,
INVALID_KE_PAYLOAD and COOKIE honoured, IKE_AUTH with a pre-shared key, ESP
traffic on the negotiated CHILD_SA over IPv6 only, CHILD_SA and IKE SA rekeys
without losing traffic, liveness answered, DELETE honoured, retransmissions
with the same Message ID and exponential back-off, deprecated proposals
refused, messages with a bad ICV or an unknown SPI discarded, and
interoperation with strongSwan in both roles.

Topology: the tester is the DUT's IKE peer (its own IKEv2, keywords/v6gate/
net/ikev2); the lab's DUT is strongSwan 5.9.8 in the lab's VM with its
kernel's ESP (DUT configuration `ipsec-vm`).  Checks, parts and expected
outcomes are declared in keywords/v6gate/checks/ikev2/ (`v6gate list --area ikev2`).
"""

from v6gate.pytest_plugin import check_test

test_ikev2 = check_test("ikev2")
