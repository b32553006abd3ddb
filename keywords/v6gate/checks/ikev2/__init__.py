"""IKEv2 end node (area ``ikev2``, capability ``IKEv2``): RFC 7296 with the
RFC 8247 algorithms, over IPv6 only, the DUT as responder and as initiator.

The tester is the DUT's IKE peer with its own IKEv2 (``net/ikev2``); the
interoperability checks put a real one beside it (strongSwan's charon in a
namespace of the run's own on the tester's link).  One module per concern:
``initial`` (IKE_SA_INIT and IKE_AUTH: RFC 8247 suites, INVALID_KE_PAYLOAD,
COOKIE), ``auth`` (the pre-shared key), ``traffic`` (ESP on the CHILD_SA,
IPv6 only), ``lifecycle`` (rekeys, liveness, DELETE), ``reliability``
(retransmissions), ``refusals`` (deprecated transforms, bad ICV, unknown
SPI), ``interop`` (strongSwan).  The target's ``extensions.ikev2`` says how
the DUT is configured (``settings``).  The lab's DUT is strongSwan in the
lab's VM with the VM kernel's ESP (DUT configuration ``ipsec-vm``, role
``ikev2``: fixtures/lab/vm-target/v6g-ike).
"""
