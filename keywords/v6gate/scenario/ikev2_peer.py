"""The tester's side of an IKEv2 interoperability check: a namespace of the run's own on the tester's link,
where a real IKE peer (net/ikev2/strongswan.py) runs beside the tester."""

from __future__ import annotations

import os
import secrets
import subprocess
import time

from ..errors import BenchError
from ..lab import registry
from ..util.proc import in_ns


class PeerNamespace:
    """A namespace of the run's own for a tester-side strongSwan, on the tester's link: a macvlan of the tester
    interface (so the tester's capture holds its frames too), IPv6 with one static address, no RA, no DAD.
    Registered as this process's (``lab down --stale`` removes it if the run dies); ``close`` removes it."""

    def __init__(self, tester_iface: str, tester_ns: str | None, address: str, prefixlen: int = 64):
        self._registry = registry
        tag = secrets.token_hex(3)
        self.lab_id = f"{registry.PREFIX}ikp{tag}"
        self.ns = f"{self.lab_id}-p"
        self.address = address
        self.ifname = "eth0"
        tmp = f"ikp{tag}"
        registry.register(self.lab_id, {"lab_id": self.lab_id, "owner_pid": os.getpid(), "namespaces": [self.ns],
                                        "owner_start": registry.process_start_time(), "created": time.time()})
        try:
            self._ip(["netns", "add", self.ns])
            self._ip(["link", "add", tmp, "link", tester_iface, "type", "macvlan", "mode", "bridge"], tester_ns)
            self._ip(["link", "set", tmp, "netns", self.ns], tester_ns)
            self._ip(["link", "set", tmp, "name", self.ifname], self.ns)
            for key in ("accept_dad=0", "accept_ra=0", "autoconf=0", "disable_ipv6=0"):
                self._run(["sysctl", "-qw", f"net.ipv6.conf.{self.ifname}.{key}"], self.ns)
            self._ip(["addr", "add", f"{address}/{prefixlen}", "dev", self.ifname, "nodad"], self.ns)
            self._ip(["link", "set", "lo", "up"], self.ns)
            self._ip(["link", "set", self.ifname, "up"], self.ns)
        except BaseException:
            self.close()
            raise

    def _run(self, argv: list[str], ns: str | None = None) -> None:
        cp = subprocess.run(in_ns(ns, argv), capture_output=True, text=True, timeout=30)
        if cp.returncode != 0:
            raise BenchError(f"the tester-side IKE peer's namespace: {' '.join(argv)} failed: "
                             f"{(cp.stderr or cp.stdout).strip()[-200:]}")

    def _ip(self, args: list[str], ns: str | None = None) -> None:
        self._run(["ip", *args], ns)

    def ping(self, dst: str, count: int = 3, wait_s: float = 2.0) -> tuple[int, str]:
        cp = subprocess.run(in_ns(self.ns, ["ping", "-6", "-n", "-c", str(count), "-i", "0.3", "-W", str(int(wait_s)),
                                            dst]), capture_output=True, text=True, timeout=count * wait_s + 10)
        return cp.returncode, cp.stdout + cp.stderr

    def close(self) -> None:
        self._registry.kill_ns_processes([self.ns], grace_s=0.5)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
        self._registry.unregister(self.lab_id)
