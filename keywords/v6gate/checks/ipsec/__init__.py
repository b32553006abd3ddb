"""IPsec ESP with manual keys (area ``ipsec``): the DUT as an ESP end node
under RFC 4303 (ESP) and RFC 4301 (the architecture: SPD, SAD), with the
RFC 8221 MUST algorithms, over IPv6.

The tester holds the SAs (``ipsec/association.py``; the codec is
``net/esp.py``); the DUT holds the same ones, installed through its hooks
with keys each check draws, or configured by hand as its target file says
(``extensions.ipsec``, docs/ipsec.md).  One module per concern:

* ``echo``: an ESP-protected Echo Request answered on the right SA, and a
  cleartext packet that matches a protect policy not delivered;
* ``discard``: bad ICV, unknown SPI, replayed sequence number, sequence
  number left of the window, truncated packet: each silently discarded, and
  a valid packet right after still answered;
* ``modes``: tunnel mode, host-to-host and host-to-security-gateway;
* ``exthdr``: ESP after Hop-by-Hop / Destination Options / Fragment headers,
  ESP that arrives in fragments, a Packet Too Big for a tunnel's outer path.

Every part runs with each RFC 8221 MUST algorithm where the clause is about
the algorithm's processing (A: AES-GCM-16 with a 128-bit key, B: AES-CBC
128 with HMAC-SHA2-256-128, C: ENCR_NULL with HMAC-SHA2-256-128).  The lab's
DUT is Debian 12's kernel in the lab VM standing in for the namespace DUT
(DUT configuration ``ipsec-vm``: this machine's kernel has no ESP).
"""
