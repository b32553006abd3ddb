"""The performance gates' lab parts.

* ``perf-peer`` (optional, on the peer node): the peer's kernel stack comes
  alive for the gates only: IPv6 enabled with a static address, an IPv4
  address in 198.18.0.0/15, and TCP settings a connect-per-transaction
  workload needs (wide ephemeral port range, TIME_WAIT reuse).  Stopped, it
  flushes the addresses and disables IPv6 again, so conformance checks see a
  silent peer.
* ``perf-servers`` (a DUT configuration's service): the DUT dual-stacked for
  the gate (an IPv4 address in 198.18.0.0/15 next to its SLAAC address) and
  the servers the workloads talk to: iperf3, qperf and v6gate-loadgen.
"""

from __future__ import annotations

from ...util.proc import ip_batch, run
from ..daemon import Daemon
from . import Service, service


@service("perf-peer")
class PerfPeer(Service):
    defaults = {"ipv6": "2001:db8:1::e/64", "ipv4": "198.18.1.14/24"}

    def __init__(self, lab, node, spec):
        super().__init__(lab, node, spec)
        self._on = False

    def start(self) -> None:
        ifname = self.ifname()
        run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=0", f"net.ipv6.conf.{ifname}.disable_ipv6=0",
             f"net.ipv6.conf.{ifname}.accept_dad=0", f"net.ipv6.conf.{ifname}.accept_ra=0",
             "net.ipv4.tcp_tw_reuse=1", "net.ipv4.ip_local_port_range=1024 65000"],
            ns=self.ns, what="perf-peer sysctls")
        ip_batch([f"addr add {self.params['ipv6']} dev {ifname} nodad"]
                 + ([f"addr add {self.params['ipv4']} dev {ifname}"] if self.params.get("ipv4") else []),
                 self.ns, what=f"{self.kind} addresses")
        self._on = True

    def stop(self) -> None:
        if not self._on:
            return
        ifname = self.ifname()
        try:
            ip_batch([f"addr flush dev {ifname}"], self.ns, what="perf-peer flush")
            run(["sysctl", "-q", "-w", f"net.ipv6.conf.{ifname}.disable_ipv6=1", "net.ipv6.conf.all.disable_ipv6=1"],
                ns=self.ns, what="perf-peer sysctls")
        finally:
            self._on = False

    def running(self) -> bool:
        return self._on

    @property
    def addresses(self) -> dict:
        return {"v6": self.params["ipv6"].split("/")[0], "v4": self.params["ipv4"].split("/")[0]}


@service("perf-servers")
class PerfServers(Service):
    defaults = {"ipv4": "198.18.1.2/24", "iperf3_port": 5201, "qperf_port": 19765, "loadgen_port": 5301,
                "loadgen_dstopts": 8}  # port +1 sends with a Destination Options header, +2 with Hop-by-Hop

    def start(self) -> None:
        from ...net.loadgen import binary

        ifname = self.ifname()
        ip_batch([f"addr add {self.params['ipv4']} dev {ifname}"], self.ns, what="perf-servers IPv4 address")
        wd = self.lab.workdir
        p = self.params
        self.daemons = [
            Daemon("iperf3", ["iperf3", "-s", "-p", str(p["iperf3_port"])], self.ns, wd / "dut-iperf3.log").start(),
            Daemon("qperf", ["qperf", "--listen_port", str(p["qperf_port"])], self.ns, wd / "dut-qperf.log").start(),
            Daemon("v6gate-loadgen", [binary(), "server", str(p["loadgen_port"]), str(p["loadgen_dstopts"])], self.ns,
                   wd / "dut-loadgen.log").start(),
        ]
        for d in self.daemons:
            d.check_running(0.0)

    @property
    def ports(self) -> dict:
        return {"iperf3": self.params["iperf3_port"], "qperf": self.params["qperf_port"],
                "loadgen": self.params["loadgen_port"]}

    def pids(self) -> dict:
        return {d.name: d.pid for d in self.daemons}
