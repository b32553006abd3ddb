"""dhcpcd-host: dhcpcd 9 as the lab DUT's own network configuration, as
on a Linux host managed by it: Router Advertisements (SLAAC, RDNSS and
DNSSL into resolv.conf, RFC 8106), DHCPv6 when an RA asks for it, and
DHCPv4 requesting the IPv6-Only Preferred option (RFC 8925), or a static
IPv4 address on a dual-stack link.

The DUT's files live where ``ip netns exec`` shows them to every program
of the namespace as /etc/*: ``/etc/netns/<dut>/resolv.conf`` and
``/etc/netns/<dut>/dhcpcd.conf`` (removed with the DUT at each rebuild).
dhcpcd's state directories (/run/dhcpcd, /var/lib/dhcpcd) are host paths,
so it runs in a private mount namespace with a tmpfs on each.

Parameters: ``v6only_preferred`` (request option 108), ``ipv4ll`` (RFC 3927
link-local addresses), ``static_ipv4`` (an address/len: no DHCPv4, a static
dual-stack host), ``checksum_offload`` (false: the DUT computes TCP/UDP
checksums itself, so captures on the link show real checksums).
"""

from __future__ import annotations

import time
from pathlib import Path

from ...errors import LabError
from ...util.proc import run
from ..daemon import Daemon
from . import Service, service


def netns_etc(ns: str) -> Path:
    """Files here appear as /etc/<name> to programs run with ``ip netns exec``."""
    return Path("/etc/netns") / ns


@service("dhcpcd-host")
class DhcpcdHost(Service):
    defaults = {
        "v6only_preferred": True,
        "ipv4ll": False,
        "static_ipv4": None,
        "checksum_offload": False,
        "extra": "",
    }

    def config_text(self) -> str:
        p = self.params
        lines = ["# dhcpcd.conf of the v6gate lab DUT (service dhcpcd-host)",
                 "# no persistent DUID or lease: every rebuild is a fresh boot",
                 "option domain_name_servers, domain_name, domain_search",
                 "option interface_mtu",
                 "require dhcp_server_identifier",
                 "slaac hwaddr",
                 "noipv6rs" if p.get("noipv6rs") else "ipv6rs"]
        if p["v6only_preferred"]:
            lines.append("option ipv6_only_preferred")
        if not p["ipv4ll"]:
            lines.append("noipv4ll")
        if p["static_ipv4"]:
            # the lab owns the address: no RFC 5227 probing (seconds) before using it
            lines += [f"interface {self.ifname()}", f"static ip_address={p['static_ipv4']}", "noarp"]
        if p["extra"]:
            lines.append(p["extra"])
        return "\n".join(lines) + "\n"

    def start(self) -> None:
        ifname = self.ifname()
        etc = netns_etc(self.ns)
        etc.mkdir(parents=True, exist_ok=True)
        # resolv.conf must exist before any `ip netns exec` for it to be the DUT's own
        (etc / "resolv.conf").write_text("# the DUT's resolvers: written by its dhcpcd from RAs and DHCP\n")
        (etc / "dhcpcd.conf").write_text(self.config_text())
        if not self.params["checksum_offload"]:
            run(["ethtool", "-K", ifname, "tx", "off"], ns=self.ns, check=False, what="DUT checksum offload off")
        script = ("mount -t tmpfs v6gate-dhcpcd /run/dhcpcd && mount -t tmpfs v6gate-dhcpcd /var/lib/dhcpcd "
                  f"&& exec dhcpcd -B -f /etc/dhcpcd.conf {ifname}")
        d = Daemon("dhcpcd", ["unshare", "-m", "sh", "-c", script], self.ns,
                   self.lab.workdir / f"{self.node}-dhcpcd.log")
        self.daemons = [d.start()]
        d.check_running(0.05)
        if self.params["static_ipv4"]:
            self._wait_ipv4(self.params["static_ipv4"].split("/")[0])

    def _wait_ipv4(self, address: str, timeout: float = 5.0) -> None:
        """The DUT is ready when its static IPv4 address is on its interface."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            cp = run(["ip", "-4", "-o", "addr", "show", "dev", self.ifname()], ns=self.ns, check=False)
            if f"inet {address}/" in cp.stdout:
                return
            time.sleep(0.02)
        raise LabError(f"dhcpcd did not configure the static IPv4 address {address} within {timeout:g} s: "
                       f"{self.daemons[0].log_tail()}")
