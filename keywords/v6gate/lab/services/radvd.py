"""radvd: the lab router's Router Advertisements (RFC 4861 §6.2)."""

from ..daemon import Daemon
from . import Service, service


@service("radvd")
class Radvd(Service):
    defaults = {
        "min_interval": 3,
        "max_interval": 10,
        "router_lifetime": 1800,
        "valid_lifetime": 86400,
        "preferred_lifetime": 14400,
        "managed": "off",
        "other": "off",
        "extra": "",
    }

    def start(self) -> None:
        ifname = self.ifname()
        conf = self.render(self.spec.get("template", "radvd.conf"), "radvd.conf", ifname=ifname, **self.params)
        pidfile = self.lab.workdir / f"{self.node}-radvd.pid"
        d = Daemon("radvd", ["radvd", "-n", "-C", conf, "-p", str(pidfile), "-m", "stderr"],
                   self.ns, self.lab.workdir / f"{self.node}-radvd.log")
        self.daemons = [d.start()]
        d.check_running(0.02)
