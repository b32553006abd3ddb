"""Kea DHCPv6 server: an optional router-side service of the lab (checks
select it with ``lab_services=["kea-dhcp6"]``).  It serves the DHCPv6
happy path and the timing gates with a real server: addresses from a pool,
short T1/T2 and lifetimes, the DNS configuration options (RFC 3646).

Kea keeps lock and pid files in host paths by default; the ``KEA_*_DIR``
variables move them into the lab's work directory.  The configuration is
checked with ``kea-dhcp6 -t`` inside the namespace first (Kea checks that
the interface exists), so a bad template fails with Kea's own message.
"""

from __future__ import annotations

from ...errors import LabError
from ...util.proc import run
from ..daemon import Daemon
from . import Service, service


@service("kea-dhcp6")
class KeaDhcp6(Service):
    defaults = {
        "subnet": "2001:db8:1::/64",
        "pool": "2001:db8:1::d600-2001:db8:1::d6ff",
        "renew_timer": 4,
        "rebind_timer": 6,
        "preferred_lifetime": 10,
        "valid_lifetime": 12,
        "dns_servers": "2001:db8:1::53",
        "domain_search": "kea.v6gate.example",
    }

    def start(self) -> None:
        ifname = self.ifname()
        conf = self.render(self.spec.get("template", "kea-dhcp6.conf"), "kea-dhcp6.conf", ifname=ifname,
                           **self.params)
        rundir = self.lab.workdir / f"{self.node}-kea"
        rundir.mkdir(parents=True, exist_ok=True)
        env = {"KEA_LOCKFILE_DIR": str(rundir), "KEA_PIDFILE_DIR": str(rundir), "KEA_LOG_FILE_DIR": str(rundir)}
        cp = run(["env", *[f"{k}={v}" for k, v in env.items()], "kea-dhcp6", "-t", conf], ns=self.ns, check=False,
                 what="kea-dhcp6 -t")
        if cp.returncode != 0:
            lines = [ln for ln in (cp.stdout + cp.stderr).splitlines() if "ERROR" in ln or "FATAL" in ln]
            raise LabError(f"kea-dhcp6 rejects {conf}: {(lines or ['exit ' + str(cp.returncode)])[-1]}")
        d = Daemon("kea-dhcp6", ["kea-dhcp6", "-c", conf], self.ns, self.lab.workdir / f"{self.node}-kea-dhcp6.log",
                   env=env)
        self.daemons = [d.start()]
        d.check_running(0.1)
        self._flood(True)

    def stop(self) -> None:
        super().stop()
        self._flood(False)

    def _flood(self, on: bool) -> None:
        """Kea answers clients by unicast, which a learning bridge keeps from
        the tester's port; while Kea serves, the link's bridge forgets MACs at
        once (ageing 0) and floods every frame, so the tester sees (and
        records) Kea's Advertise and Reply too."""
        link = self.spec.get("iface")
        if not link or (not self.lab.is_up and on is False):
            return
        run(["ip", "link", "set", f"br-{link}", "type", "bridge", "ageing_time", "0" if on else "30000"],
            ns=self.lab.switch_ns, check=False, what="bridge ageing")
