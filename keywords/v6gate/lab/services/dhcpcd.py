"""dhcpcd: the lab DUT's one dhcpcd service (dhcpcd 9.4, Debian's
dhcpcd-base), in three profiles of one wrapper:

- ``dhcpv6`` (service ``dhcpcd``): the DUT's DHCPv6 client.  Why dhcpcd and
  not dhclient -6 or wide-dhcpv6: it is the only one of the three that acts
  on the Router Advertisement's M and O flags by itself (M: stateful
  Solicit/Request, O only: Information-request), which is how a host is
  expected to start DHCPv6 (RFC 4861 §4.2) and what the checks drive from the
  tester; it implements Confirm on reboot, Decline after a failed DAD, Release
  on exit, SOL_MAX_RT / INF_MAX_RT (RFC 7083 / RFC 8415 §21.24-25) and DUID-LLT,
  -LL and configured DUIDs; it installs addresses with their lifetimes and
  writes the DNS servers and search list it obtains to resolv.conf.
- ``host`` (service ``dhcpcd-host``): the DUT's whole network configuration,
  as on a Linux host managed by dhcpcd: SLAAC, RDNSS/DNSSL into resolv.conf
  (RFC 8106), DHCPv6 when an RA asks, DHCPv4 requesting the IPv6-Only
  Preferred option (RFC 8925), or a static IPv4 address on a dual-stack link.
- ``ra`` (service ``dhcpcd-ra``): IPv6 RAs only; the kernel forwards RDNSS and
  DNSSL (RFC 8106) to user space and dhcpcd writes them to resolv.conf.

State, the same in every profile: dhcpcd's state directory (/var/lib/dhcpcd:
DUID, leases) is a directory of the lab's work directory per node and DUID
kind, so the DUID survives every DUT rebuild (a device's stable storage);
leases survive only a reboot inside a check (``lab.keep_dut_state``), so every
check starts from a client that holds no lease.

Host paths, the same in every profile (``lab/hostpaths.py``): dhcpcd runs in
a private mount namespace where /var/lib/dhcpcd is that state directory,
/run is an empty tmpfs holding the /run/dhcpcd the wrapper makes (control
socket, hook state), and /etc/resolv.conf is the namespace's own
``/etc/netns/<ns>/resolv.conf`` (created first, removed with the DUT).  Mount
points that do not exist on a fresh machine are made inside private overlays,
so nothing is written to the host and nothing depends on what ran before.

Another client can replace the DHCPv6 one: write a service module with the
same ``dhcp6_client`` interface (``release()``) and name it in the topology's
DUT configurations; the checks only know the configuration names.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from ...errors import LabError
from ...util.hostpaths import PrivatePaths
from ...util.proc import run
from ..daemon import Daemon
from . import Service, service

DUID_HINTS = {"llt": "lt", "ll": "ll", "uuid": "uuid"}
PROFILES = ("dhcpv6", "host", "ra")
RESOLV_HEADER = {
    "dhcpv6": "# v6gate lab DUT: written by its DHCPv6 client\n",
    "host": "# the DUT's resolvers: written by its dhcpcd from RAs and DHCP\n",
    "ra": "# v6gate lab DUT: no resolver until an RA names one (RFC 8106)\n",
}


def netns_etc(ns: str) -> Path:
    """Files here appear as /etc/<name> to programs run with ``ip netns exec``."""
    return Path("/etc/netns") / ns


@service("dhcpcd")
class Dhcpcd(Service):
    defaults = {
        "profile": "dhcpv6",            # dhcpv6 | host | ra (see the module's docstring)
        # dhcpv6 profile
        "duid": "llt",                  # llt | ll | uuid | a DUID in hex (00:02:...: DUID-EN)
        "request": "dhcp6_name_servers, dhcp6_domain_search",
        "rapid_commit": False,
        "release": True,                # send Release when stopped gracefully (RFC 8415 §18.2.7)
        # host profile
        "v6only_preferred": True,       # request option 108
        "ipv4ll": False,                # RFC 3927 link-local addresses
        "static_ipv4": None,            # an address/len: no DHCPv4, a static dual-stack host
        "checksum_offload": False,      # false: captures on the link show real checksums
        # host and ra profiles
        "extra": "",
    }

    def __init__(self, lab, node: str, spec: dict):
        super().__init__(lab, node, spec)
        if self.params["profile"] not in PROFILES:
            raise LabError(f"dhcpcd service: profile {self.params['profile']!r} is not one of {', '.join(PROFILES)}")
        #: the DHCPv6 checks find the DUT's client by this marker
        self.dhcp6_client = self.params["profile"] == "dhcpv6"

    # -- configuration, per profile -------------------------------------------
    def _config_dhcpv6(self, ifname: str) -> str:
        duid = self.params["duid"]
        if duid not in DUID_HINTS and not all(len(b) == 2 for b in duid.split(":")):
            raise LabError(f"dhcpcd service: duid {duid!r} is not llt, ll, uuid or a hex DUID like 00:02:00:00:7e:d9:..")
        return self._render(self.spec.get("template", "dhcpcd.conf"), ifname=ifname,
                            duid_line=f"duid {DUID_HINTS.get(duid, duid)}", request=self.params["request"],
                            rapid_commit="option dhcp6_rapid_commit" if self.params["rapid_commit"] else "",
                            release="release" if self.params["release"] else "")

    def _config_host(self, ifname: str) -> str:
        p = self.params
        lines = ["# dhcpcd.conf of the v6gate lab DUT (service dhcpcd, profile host)",
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
            lines += [f"interface {ifname}", f"static ip_address={p['static_ipv4']}", "noarp"]
        # the hooks that would touch the host's hostname (no UTS namespace) or time daemons: off
        lines.append("nohook 30-hostname, 50-timesyncd, 60-ntp-common.conf, 62-chrony.conf, 64-timesyncd.conf, "
                     "68-openntpd.conf")
        if p["extra"]:
            lines.append(p["extra"])
        return "\n".join(lines) + "\n"

    def _config_ra(self, ifname: str) -> str:
        return self._render(self.spec.get("template", "dhcpcd-ra.conf"), **self.params)

    def _render(self, template: str, **params) -> str:
        return Path(self.render(template, "dhcpcd.conf", **params)).read_text()

    def _argv(self, conf: str, ifname: str) -> list[str]:
        profile = self.params["profile"]
        if profile == "dhcpv6":
            return ["dhcpcd", "--nobackground", "--debug", "--config", conf, ifname]
        if profile == "ra":
            return ["dhcpcd", "-6", "-B", "-d", "-f", conf, ifname]
        return ["dhcpcd", "-B", "-f", conf, ifname]

    # -- the wrapper ------------------------------------------------------------
    def state_dir(self) -> Path:
        p = self.params
        tag = p["duid"] if p["profile"] == "dhcpv6" and p["duid"] in DUID_HINTS else \
            "value" if p["profile"] == "dhcpv6" else p["profile"]
        return self.lab.workdir / f"{self.node}-dhcpcd-{tag}"

    def start(self) -> None:
        ifname = self.ifname()
        profile = self.params["profile"]
        state = self.state_dir()
        state.mkdir(parents=True, exist_ok=True)
        if not self.lab.keep_dut_state:
            for lease in state.glob("*.lease*"):
                lease.unlink()
        conf_text = getattr(self, f"_config_{profile}")(ifname)
        # the configuration lives in the state directory: the one lab path dhcpcd sees
        (state / "v6gate-dhcpcd.conf").write_text(conf_text)
        etc = netns_etc(self.ns)
        etc.mkdir(parents=True, exist_ok=True)
        resolv = etc / "resolv.conf"
        if profile != "dhcpv6" or not resolv.exists():
            resolv.write_text(RESOLV_HEADER[profile])
        if profile == "host" and not self.params["checksum_offload"]:
            run(["ethtool", "-K", ifname, "tx", "off"], ns=self.ns, check=False, what="DUT checksum offload off")
        private = (PrivatePaths(self.lab.workdir / f"{self.node}-dhcpcd-private")
                   .bind(state, "/var/lib/dhcpcd")
                   .bind(resolv, "/etc/resolv.conf")
                   .tmpfs("/run", mkdirs=("/run/dhcpcd",)))
        argv = private.wrap(self._argv("/var/lib/dhcpcd/v6gate-dhcpcd.conf", ifname))
        d = Daemon("dhcpcd", argv, self.ns, self.lab.workdir / f"{self.node}-dhcpcd.log")
        self.daemons = [d.start()]
        d.check_running(0.05)
        if profile == "host" and self.params["static_ipv4"]:
            self._wait_ipv4(self.params["static_ipv4"].split("/")[0])

    def _wait_ipv4(self, address: str, timeout: float = 5.0) -> None:
        """The DUT is ready when its static IPv4 address is on its interface."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            cp = run(["ip", "-4", "-o", "addr", "show", "dev", self.ifname()], ns=self.ns, check=False)
            if f"inet {address}/" in cp.stdout:
                return
            if not self.daemons[0].alive():
                break
            time.sleep(0.02)
        raise LabError(f"dhcpcd did not configure the static IPv4 address {address} within {timeout:g} s: "
                       f"{self.daemons[0].log_tail()}")

    def release(self, timeout_s: float = 10.0) -> None:
        """Make the client give its lease back: SIGTERM to dhcpcd alone (not
        its privilege-separation helpers, which it needs to send), so that it
        runs its Release exchange (RFC 8415 §18.2.7) before exiting."""
        for d in self.daemons:
            deadline = time.monotonic() + timeout_s
            # dhcpcd can miss a SIGTERM that lands while it runs a hook script: repeat it
            while d.alive() and time.monotonic() < deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(d.pid, signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    d.proc.wait(1.0)
            d.stop()
        self.daemons = []


@service("dhcpcd-host")
class DhcpcdHost(Dhcpcd):
    """The ``host`` profile under the name the topology's v6only configurations use."""

    defaults = {**Dhcpcd.defaults, "profile": "host"}


@service("dhcpcd-ra")
class DhcpcdRa(Dhcpcd):
    """The ``ra`` profile under the name the topology's rdnss configuration uses."""

    defaults = {**Dhcpcd.defaults, "profile": "ra"}
