"""http-server: a small HTTP server (Python's http.server) on a node: the
IPv4-only web server behind the NAT64, or a web service a DUT offers
(bound to '::' it answers over both families)."""

from __future__ import annotations

import sys

from ..daemon import Daemon
from . import Service, service


@service("http-server")
class HttpServer(Service):
    defaults = {"bind": "::", "port": 80, "body": "v6gate lab web server\n"}

    def start(self) -> None:
        p = self.params
        root = self.lab.workdir / f"{self.node}-{self.sid}-www"
        root.mkdir(parents=True, exist_ok=True)
        (root / "index.html").write_text(p["body"])
        d = Daemon("http-server", [sys.executable, "-m", "http.server", "--bind", str(p["bind"]), "--directory",
                                   str(root), str(int(p["port"]))], self.ns,
                   self.lab.workdir / f"{self.node}-{self.sid}.log")
        self.daemons = [d.start()]
        d.check_running(0.05)
