"""hub: the lab switch floods every frame of a link to every port (bridge
ageing time 0), as a hub or a SPAN port would, so the tester's capture
holds the DUT's unicast exchanges with the lab's router and servers (DNS64,
NAT64, DHCPv4) as evidence.  Without it the bridge delivers those frames
only to their destination's port.

    - {name: hub, id: hub, optional: true, params: {link: lan}}
"""

from __future__ import annotations

from ...util.proc import run
from . import Service, service

#: the Linux bridge default (300 s, in centiseconds)
DEFAULT_AGEING_CS = 30000


@service("hub")
class Hub(Service):
    defaults = {"link": "lan"}

    def __init__(self, lab, node, spec):
        super().__init__(lab, node, spec)
        self._up = False

    def _ageing(self, centiseconds: int) -> None:
        run(["ip", "link", "set", f"br-{self.params['link']}", "type", "bridge", "ageing_time", str(centiseconds)],
            ns=self.lab.switch_ns, what=f"service {self.sid}")

    def start(self) -> None:
        self._ageing(0)
        self._up = True

    def stop(self) -> None:
        if self._up:
            self._ageing(DEFAULT_AGEING_CS)
        self._up = False

    def running(self) -> bool:
        return self._up
