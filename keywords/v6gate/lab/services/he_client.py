"""he-client: the lab DUT's applications connect with a Happy Eyeballs
client (lab/he_client.py, async_stagger) instead of a plain connect loop:
this service writes its configuration, ``<lab dir>/dut-connect.json``, which
the netns control adapter's ``connect`` looks for (faults rewrite it).

    - {name: he-client, params: {delay: 0.25, resolution_delay: 0.05, resolver: concurrent}}
"""

from __future__ import annotations

import json

from ...errors import LabError
from . import Service, service

CONFIG_NAME = "dut-connect.json"


@service("he-client")
class HeClient(Service):
    defaults = {"delay": 0.25, "resolution_delay": 0.05, "resolver": "concurrent"}

    def __init__(self, lab, node, spec):
        super().__init__(lab, node, spec)
        if self.params["resolver"] not in ("concurrent", "basic"):
            raise LabError(f"service {self.sid}: resolver must be concurrent or basic")
        self._written = False

    @property
    def path(self):
        return self.lab.workdir / CONFIG_NAME

    def start(self) -> None:
        self.path.write_text(json.dumps({k: self.params[k] for k in self.defaults}))
        self._written = True

    def stop(self) -> None:
        if self._written:
            self.path.unlink(missing_ok=True)
        self._written = False

    def running(self) -> bool:
        return self._written
