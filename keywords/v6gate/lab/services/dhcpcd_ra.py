"""dhcpcd as the lab DUT's consumer of RA DNS options (RFC 8106 RDNSS and
DNSSL): the Linux kernel only forwards those options to user space, so a
DUT configuration that is to use them runs dhcpcd, which writes the DUT's
resolv.conf.

dhcpcd keeps state in host paths (/var/lib/dhcpcd, /run/dhcpcd), so it runs
in a private mount namespace with tmpfs over them; its resolv.conf is the
DUT namespace's own (/etc/netns/<ns>/resolv.conf, bind-mounted by
'ip netns exec'), which the lab removes with the DUT."""

import contextlib
import shutil
from pathlib import Path

from ..daemon import Daemon
from . import Service, service


@service("dhcpcd-ra")
class DhcpcdRa(Service):
    defaults = {"extra": ""}

    def _etc(self) -> Path:
        return Path("/etc/netns") / self.ns

    def start(self) -> None:
        etc = self._etc()
        etc.mkdir(parents=True, exist_ok=True)
        (etc / "resolv.conf").write_text("# v6gate lab DUT: no resolver until an RA names one (RFC 8106)\n")
        ifname = self.ifname()
        conf = self.render(self.spec.get("template", "dhcpcd-ra.conf"), "dhcpcd.conf", **self.params)
        script = ("mount -t tmpfs tmpfs /var/lib/dhcpcd && mount -t tmpfs tmpfs /run && mkdir -p /run/dhcpcd && "
                  f"exec dhcpcd -6 -B -d -f {conf} {ifname}")
        d = Daemon("dhcpcd", ["unshare", "-m", "sh", "-c", script], self.ns, self.lab.workdir / f"{self.node}-dhcpcd.log")
        self.daemons = [d.start()]
        d.check_running(0.05)

    def stop(self) -> None:
        super().stop()
        with contextlib.suppress(OSError):
            shutil.rmtree(self._etc())
