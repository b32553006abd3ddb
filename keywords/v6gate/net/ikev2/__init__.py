"""The tester's own IKEv2 (RFC 7296; algorithms RFC 8247), on ``cryptography``.

* ``const``: the protocol's numbers and RFC 8247's requirement levels.
* ``codec``: messages and payloads to and from octets, bounded decoding.
* ``crypto``: Diffie-Hellman groups, PRFs, prf+, the key schedule, the SK
  payload's ciphers and integrity, AUTH (pre-shared key, signatures).
* ``proposals``: strongSwan-style proposal strings and a responder's choice.
* ``sa``: an IKE SA protecting and opening messages; CHILD_SA keys.
* ``peer``: initiator and responder logic without input/output.
* ``exchange``: moving messages over the tester's port (retransmissions,
  answering the peer's requests, withholding answers).
* ``certs``: certificates for signature authentication.
* ``keylog``: Wireshark's IKEv2 and ESP decryption tables for a pcap.

Proven on known vectors (tests/unit/test_ikev2_*.py) and live against
strongSwan (tests/lab/test_ikev2_strongswan.py).
"""
