"""DHCPv6 client checks (RFC 8415, RFC 3646), one module per section:
``messages`` (what the client sends), ``retransmission`` (its timers),
``reception`` (how it handles what it receives), ``dns`` (DNS options);
``scenario/dhcpv6.py`` holds the drive-and-observe steps they share."""
