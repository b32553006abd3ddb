"""unbound as a DNS64 resolver (RFC 6147): synthesizes AAAA records in the
NAT64 prefix for names that have only A records upstream.  The upstream
serves the A records (unbound does no DNS64 synthesis for its own
local-data), e.g. a ``dnsmasq-dns`` service on the IPv4-only network."""

from __future__ import annotations

from ...util.proc import run
from ..daemon import Daemon
from . import Service, service


@service("unbound")
class Unbound(Service):
    defaults = {"listen": "2001:db8:1::1", "prefix": "2001:db8:64::/96", "upstream": "198.18.0.10"}

    def _offload(self, on: bool) -> None:
        """Its answers leave a veth with partial checksums (TX offload) that a
        capture on the link shows as bad: the lab computes them in software
        while the resolver runs."""
        if self.spec.get("iface"):
            run(["ethtool", "-K", self.ifname(), "tx", "on" if on else "off"], ns=self.ns, check=False)

    def stop(self) -> None:
        was = bool(self.daemons)
        super().stop()
        if was:
            self._offload(True)

    def start(self) -> None:
        self._offload(False)
        pidfile = self.lab.workdir / f"{self.node}-{self.sid}.pid"
        conf = self.render(self.spec.get("template", "unbound-dns64.conf"), f"{self.sid}.conf",
                           workdir=str(self.lab.workdir), pidfile=str(pidfile), **self.params)
        d = Daemon("unbound", ["unbound", "-d", "-c", conf], self.ns, self.lab.workdir / f"{self.node}-{self.sid}.log")
        self.daemons = [d.start()]
        d.check_running(0.05)
