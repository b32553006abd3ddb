"""IPsec machinery of the ``ipsec`` area (ESP with manual keys), apart from
the checks (``checks/ipsec/``) and the codec (``net/esp.py``):

* ``settings``: the target file's ``extensions.ipsec`` (the DUT's SAs, its
  hooks, where the keys come from), validated when a target is loaded;
  secrets are resolved only when a check needs them and never printed;
* ``association``: the SAs of one check (installed through the DUT's hooks
  or taken from the target file), the tester's sequence numbers, the
  packets it protects and opens, and the evidence (Wireshark's ``esp_sa``
  next to the pcap, the inner packets in the check's timeline).
"""
