"""A bench of veth pairs for external-DUT runs: a tester namespace and a DUT
namespace this test makes (not a lab's), joined by ``links`` veth pairs
(tester ``<p>0``, ``<p>2``, ...; DUT ``<p>1``, ``<p>3``, ... with MACs
52:54:00:00:<n>:01, :02, ...); the DUT is the second namespace's Linux
stack, so the run's presence probe gets its answers.  Both namespaces are
removed on every path."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml


class VethBench:
    def __init__(self, name: str, links: int = 1, prefix: str = "vb", mac_byte: int = 0x10):
        self.tester_ns, self.dut_ns, self.links, self.prefix = name, name + "d", links, prefix
        self.macs = [f"52:54:00:00:{mac_byte:02x}:{i + 1:02x}" for i in range(links)]

    def ip(self, ns: str, *args) -> None:
        subprocess.run(["ip", "-n", ns, *args], check=True, capture_output=True)

    def tester_if(self, i: int = 0) -> str:
        return f"{self.prefix}{2 * i}"

    def __enter__(self) -> VethBench:
        for ns in (self.tester_ns, self.dut_ns):
            subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
        try:
            self.ip(self.tester_ns, "link", "set", "lo", "up")
            for i, mac in enumerate(self.macs):
                a, b = self.tester_if(i), f"{self.prefix}{2 * i + 1}"
                self.ip(self.tester_ns, "link", "add", a, "type", "veth", "peer", "name", b)
                self.ip(self.tester_ns, "link", "set", b, "address", mac, "netns", self.dut_ns)
                self.ip(self.dut_ns, "link", "set", b, "up")
                self.ip(self.tester_ns, "link", "set", a, "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for ns in (self.tester_ns, self.dut_ns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def target(self, directory: Path, i: int = 0, **extra) -> str:
        doc = {"name": f"veth-{self.tester_if(i)}", "kind": "host", "capabilities": ["Core"],
               "tester": {"interface": self.tester_if(i), "netns": self.tester_ns},
               "dut": {"mac": self.macs[i], "link_local": "eui64"},
               "link": {"prefix": "2001:db8:1::/64", "mtu": 1500, "other_routers": False},
               "control": {"adapter": "none"},
               "timing": {"reply_timeout_s": 0.5, "silence_s": 0.5, "ready_timeout_s": 2, "retrans_timer_s": 1},
               **extra}
        p = Path(directory) / f"{self.tester_if(i)}.yaml"
        p.write_text(yaml.safe_dump(doc))
        return str(p)
