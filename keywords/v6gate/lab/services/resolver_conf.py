"""resolver-conf: the lab DUT's stub resolver configuration (area dns).

The DUT's glibc resolver is pointed at a fixed IPv6 address on the link
(the target file's ``extensions.dns.resolver``), where the tester plays the
DNS server; nothing else configures it (no dhcpcd, no RDNSS), so every
query of a dns check goes to the server the check controls.  The file is
the namespace's own ``/etc/netns/<ns>/resolv.conf`` (``ip netns exec``
shows it as /etc/resolv.conf), written as Debian writes one: no options
beyond the short timeout that keeps a lookup the check does not answer
within the check's window.

    - {name: resolver-conf, params: {nameserver: "2001:db8:1::53"}}
"""

from __future__ import annotations

import ipaddress

from ...errors import LabError
from . import Service, service
from .dhcpcd import netns_etc


@service("resolver-conf")
class ResolverConf(Service):
    defaults = {"nameserver": "2001:db8:1::53", "options": "timeout:2 attempts:2"}

    def __init__(self, lab, node, spec):
        super().__init__(lab, node, spec)
        try:
            self.nameserver = str(ipaddress.IPv6Address(self.params["nameserver"]))
        except ValueError:
            raise LabError(f"service {self.sid}: nameserver {self.params['nameserver']!r} is not an IPv6 "
                           "address") from None
        self._written = False

    def start(self) -> None:
        etc = netns_etc(self.ns)
        etc.mkdir(parents=True, exist_ok=True)
        options = str(self.params.get("options") or "").split()
        text = "# v6gate lab DUT (area dns): the tester plays this resolver\n" + f"nameserver {self.nameserver}\n"
        if options:
            text += f"options {' '.join(options)}\n"
        (etc / "resolv.conf").write_text(text)
        self._written = True

    def stop(self) -> None:
        if self._written:
            (netns_etc(self.ns) / "resolv.conf").unlink(missing_ok=True)
        self._written = False

    def running(self) -> bool:
        return self._written
