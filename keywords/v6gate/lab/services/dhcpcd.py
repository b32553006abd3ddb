"""dhcpcd: the lab DUT's DHCPv6 client (a DUT-side service of a DUT
configuration, ``nodes.dut.configs.<name>.services`` in the topology).

Why dhcpcd (9.4, Debian's dhcpcd-base) and not dhclient -6 or wide-dhcpv6:
it is the only one of the three that acts on the Router Advertisement's M
and O flags by itself (M: stateful Solicit/Request, O only:
Information-request), which is how a host is expected to start DHCPv6
(RFC 4861 §4.2) and what the checks drive from the tester; it implements
Confirm on reboot, Decline after a failed DAD, Release on exit, the
SOL_MAX_RT / INF_MAX_RT options (RFC 7083 / RFC 8415 §21.24-25) and DUID-LLT,
-LL and configured DUIDs; it installs addresses with their lifetimes and
writes the DNS servers and search list it obtains to resolv.conf.

Every path it would share with other labs is private to the lab: it runs
under ``unshare -m`` with its state directory (``/var/lib/dhcpcd``: DUID and
leases) bound from the lab's work directory, a tmpfs on ``/run/dhcpcd``
(control socket, hook state) and ``/etc/resolv.conf`` bound to the namespace's own
``/etc/netns/<ns>/resolv.conf`` (created first, so nothing ever writes the
host's).  The DUID survives every DUT rebuild (a device's stable storage);
leases survive only a reboot inside a check (``lab.keep_dut_state``), so
every check starts from a client that holds no lease.

Another client can replace it: write a service module with the same
``dhcp6_client`` interface (``release()``) and name it in the topology's
DUT configurations; the checks only know the configuration names.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

from ...errors import LabError
from ..daemon import Daemon
from . import Service, service

DUID_HINTS = {"llt": "lt", "ll": "ll", "uuid": "uuid"}


@service("dhcpcd")
class Dhcpcd(Service):
    #: the DHCPv6 checks find the DUT's client by this marker
    dhcp6_client = True
    defaults = {
        "duid": "llt",                 # llt | ll | uuid | a DUID in hex (00:02:...: DUID-EN)
        "request": "dhcp6_name_servers, dhcp6_domain_search",
        "rapid_commit": False,
        "release": True,               # send Release when stopped gracefully (RFC 8415 §18.2.7)
        "template": "dhcpcd.conf",
    }

    def _paths(self) -> tuple[Path, Path]:
        tag = self.params["duid"] if self.params["duid"] in DUID_HINTS else "value"
        state = self.lab.workdir / f"{self.node}-dhcpcd-{tag}"
        resolv = Path("/etc/netns") / self.ns / "resolv.conf"
        return state, resolv

    def start(self) -> None:
        ifname = self.ifname()
        state, resolv = self._paths()
        state.mkdir(parents=True, exist_ok=True)
        if not self.lab.keep_dut_state:
            for lease in state.glob("*.lease*"):
                lease.unlink()
        duid = self.params["duid"]
        duid_line = f"duid {DUID_HINTS.get(duid, duid)}"
        if duid not in DUID_HINTS and not all(len(b) == 2 for b in duid.split(":")):
            raise LabError(f"dhcpcd service: duid {duid!r} is not llt, ll, uuid or a hex DUID like 00:02:00:00:7e:d9:..")
        conf = self.render(self.params["template"], "dhcpcd.conf", ifname=ifname, duid_line=duid_line,
                           request=self.params["request"],
                           rapid_commit="option dhcp6_rapid_commit" if self.params["rapid_commit"] else "",
                           release="release" if self.params["release"] else "")
        resolv.parent.mkdir(parents=True, exist_ok=True)
        if not resolv.exists():
            resolv.write_text("# v6gate lab DUT: written by its DHCPv6 client\n")
        script = " && ".join([
            "mount --make-rprivate /",
            f"mount --bind {shlex.quote(str(state))} /var/lib/dhcpcd",
            "mkdir -p /run/dhcpcd",  # an empty mount point on the host; the tmpfs on it is private
            "mount -t tmpfs -o mode=0755 v6gate-dhcpcd /run/dhcpcd",
            f"mount --bind {shlex.quote(str(resolv))} /etc/resolv.conf",
            f"exec dhcpcd --nobackground --debug --config {shlex.quote(conf)} {shlex.quote(ifname)}",
        ])
        d = Daemon("dhcpcd", ["unshare", "--mount", "sh", "-c", script], self.ns,
                   self.lab.workdir / f"{self.node}-dhcpcd.log")
        self.daemons = [d.start()]
        d.check_running(0.05)

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
