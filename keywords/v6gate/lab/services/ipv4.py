"""ipv4: IPv4 addresses and routes on a node, only while a check needs them.

The lab is IPv6-only; an area that needs IPv4 somewhere (the IPv4-only
server behind the NAT64, a DHCPv4 server on an IPv6-mostly link) names an
optional ``ipv4`` service, so IPv4 exists exactly while such a check runs.
IPv4 addresses come from 198.18.0.0/15 (benchmarking) only.

    - name: ipv4
      id: v4srv-ipv4
      optional: true
      params:
        addresses: {wan4: [198.18.0.10/24]}   # per link of the node
        routes: ["default via 198.18.0.1"]
        forwarding: true                       # net.ipv4.ip_forward (a router)
"""

from __future__ import annotations

import ipaddress

from ...errors import LabError
from ...util.proc import ip_batch, run
from . import Service, service

BENCHMARK_V4 = ipaddress.IPv4Network("198.18.0.0/15")


@service("ipv4")
class Ipv4(Service):
    defaults = {"addresses": {}, "routes": [], "forwarding": False}

    def __init__(self, lab, node, spec):
        super().__init__(lab, node, spec)
        self._up = False
        for link, addrs in self.params["addresses"].items():
            for a in addrs:
                if ipaddress.IPv4Interface(a).ip not in BENCHMARK_V4:
                    raise LabError(f"service {self.sid}: {a} on {link} is outside 198.18.0.0/15; the lab uses "
                                   "only the benchmarking range for IPv4")

    def start(self) -> None:
        cmds = [f"addr add {a} dev {self.ifname(link)}"
                for link, addrs in self.params["addresses"].items() for a in addrs]
        cmds += [f"route add {r}" for r in self.params["routes"]]
        if self.params["forwarding"]:
            run(["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"], ns=self.ns, what=f"{self.sid} forwarding")
        ip_batch(cmds, self.ns, what=f"service {self.sid}")
        self._up = True

    def stop(self) -> None:
        if not self._up:
            return
        for link in self.params["addresses"]:
            run(["ip", "-4", "addr", "flush", "dev", self.ifname(link)], ns=self.ns, check=False)
        if self.params["forwarding"]:
            run(["sysctl", "-q", "-w", "net.ipv4.ip_forward=0"], ns=self.ns, check=False)
        self._up = False

    def running(self) -> bool:
        return self._up
