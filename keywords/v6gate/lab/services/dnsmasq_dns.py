"""dnsmasq-dns: dnsmasq as an authoritative-style DNS server for a few host
records (no DHCP, no upstream): the A records of the IPv4-only network
behind the NAT64 (and ipv4only.arpa, RFC 7050 §2.2), or a DNS service a
DUT offers.

    params:
      listen: [198.18.0.10]          # addresses to bind (empty: every address, both families)
      records: {v4only.v6gate.test: [198.18.0.10], ipv4only.arpa: [192.0.0.170, 192.0.0.171]}
"""

from __future__ import annotations

from ..daemon import Daemon
from . import Service, service


@service("dnsmasq-dns")
class DnsmasqDns(Service):
    defaults = {"listen": [], "records": {}, "port": 53}

    def argv(self) -> list[str]:
        p = self.params
        pidfile = self.lab.workdir / f"{self.node}-{self.sid}.pid"
        argv = ["dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts",
                "--no-poll", f"--port={int(p['port'])}", f"--pid-file={pidfile}", "--log-facility=-",
                "--log-queries", "--user=root", "--local-ttl=5"]
        if p["listen"]:
            argv.append("--bind-interfaces")
            argv += [f"--listen-address={a}" for a in p["listen"]]
        for name, addrs in p["records"].items():
            argv.append(f"--local=/{name}/")  # authoritative: other types get NODATA, nothing is forwarded
            for a in addrs:
                argv.append(f"--host-record={name},{a}")
        return argv

    def start(self) -> None:
        d = Daemon("dnsmasq", self.argv(), self.ns, self.lab.workdir / f"{self.node}-{self.sid}.log")
        self.daemons = [d.start()]
        d.check_running(0.05)
