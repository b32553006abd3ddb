"""clat: the lab DUT's CLAT (RFC 6877), a customer-side translator that
discovers the NAT64 prefix (RFC 8781 PREF64, RFC 7050 ipv4only.arpa) and
translates the host's IPv4 traffic with tayga (see v6gate.lab.clat_agent).

``<lab workdir>/<node>-clat.conf`` may hold ``plat_prefix=<prefix>``: a static
prefix that overrides discovery (a lab fault writes it; it is removed when
the DUT is rebuilt)."""

from __future__ import annotations

import sys

from ..daemon import Daemon
from . import Service, service


@service("clat")
class Clat(Service):
    def override_file(self):
        return self.lab.workdir / f"{self.node}-clat.conf"

    def start(self) -> None:
        override = self.override_file()
        override.unlink(missing_ok=True)
        work = self.lab.workdir / f"{self.node}-clat"
        work.mkdir(parents=True, exist_ok=True)
        d = Daemon("clat", [sys.executable, "-m", "v6gate.lab.clat_agent", "--iface", self.ifname(), "--workdir",
                            str(work), "--override", str(override)], self.ns,
                   self.lab.workdir / f"{self.node}-clat.log")
        self.daemons = [d.start()]
        d.check_running(0.05)
