"""tayga: the lab's stateless NAT64 (RFC 6145/6146 translation, RFC 6052
addresses) between the IPv6 link and an IPv4-only network.

It uses a network-specific prefix (tayga drops 64:ff9b::/96 combined with
non-global IPv4 such as 198.18.0.0/15) and a dynamic IPv4 pool from
198.18.0.0/15.  The node needs IPv4 forwarding and an IPv4 address on
the IPv4 side (an ``ipv4`` service with ``forwarding: true``)."""

from __future__ import annotations

from ...util.proc import ip_batch, run
from ..daemon import Daemon
from . import Service, service


@service("tayga")
class Tayga(Service):
    defaults = {"tun": "nat64", "prefix": "2001:db8:64::/96", "ipv4_addr": "198.19.64.1",
                "pool": "198.19.64.0/24"}

    def start(self) -> None:
        p = self.params
        data = self.lab.workdir / f"{self.node}-{self.sid}"
        data.mkdir(parents=True, exist_ok=True)
        conf = self.render(self.spec.get("template", "tayga.conf"), f"{self.sid}.conf", data_dir=str(data), **p)
        run(["tayga", "-c", conf, "--mktun"], ns=self.ns, what="tayga --mktun")
        ip_batch([f"link set {p['tun']} up", f"route add {p['pool']} dev {p['tun']}",
                  f"route add {p['prefix']} dev {p['tun']}"], self.ns, what=f"service {self.sid}")
        d = Daemon("tayga", ["tayga", "-c", conf, "--nodetach"], self.ns, self.lab.workdir / f"{self.node}-{self.sid}.log")
        self.daemons = [d.start()]
        d.check_running(0.05)

    def stop(self) -> None:
        was = bool(self.daemons)
        super().stop()
        if was:
            run(["ip", "link", "del", self.params["tun"]], ns=self.ns, check=False)
