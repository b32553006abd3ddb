"""kea-dhcp4: Kea's DHCPv4 server on a link, optionally offering the
IPv6-Only Preferred option (RFC 8925 §3.3: only to clients that request
it) so the link is "IPv6-mostly".  The interface needs an IPv4 address
(an ``ipv4`` service listed before this one on the same node)."""

from __future__ import annotations

import ipaddress
import json

from ..daemon import Daemon
from . import Service, service


@service("kea-dhcp4")
class KeaDhcp4(Service):
    defaults = {"subnet": "198.18.1.0/24", "pool": "198.18.1.100 - 198.18.1.199", "v6only_wait": None,
                "valid_lifetime": 600}

    def start(self) -> None:
        p = self.params
        options = []
        if p["v6only_wait"] is not None:
            options.append({"name": "v6-only-preferred", "data": str(int(p["v6only_wait"]))})
        conf = self.render(self.spec.get("template", "kea-dhcp4.json"), f"{self.sid}.json", ifname=self.ifname(),
                           subnet=str(ipaddress.IPv4Network(p["subnet"])), pool=p["pool"],
                           valid_lifetime=int(p["valid_lifetime"]),
                           option_data=", ".join(json.dumps(o) for o in options))
        # like kea-dhcp6: lock, pid and log files in a directory of this service (Kea's defaults are host paths)
        rundir = self.lab.workdir / f"{self.node}-{self.sid}-kea"
        rundir.mkdir(parents=True, exist_ok=True)
        env = {"KEA_LOCKFILE_DIR": str(rundir), "KEA_PIDFILE_DIR": str(rundir), "KEA_LOG_FILE_DIR": str(rundir)}
        d = Daemon("kea-dhcp4", ["kea-dhcp4", "-c", conf], self.ns, self.lab.workdir / f"{self.node}-{self.sid}.log",
                   env=env)
        self.daemons = [d.start()]
        d.check_running(0.1)
