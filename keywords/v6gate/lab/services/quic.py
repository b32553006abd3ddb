"""quic-server: the lab DUT's QUIC endpoint with datagram PLPMTUD (area
plpmtud, RFC 8899 through RFC 9000 §14.3): ``v6gate-quicpeer server``
(quic-go, built by tools/setup), answering ``GET /<N>`` over ``hq-interop``
with N octets.

quic-go searches the path MTU after the handshake (binary search between its
1280-octet start, as UDP payload, and 1452; a probe is a PING padded to the
size, one every 5 smoothed RTTs, a size given up after 3 losses; it stops
within 20 octets).  Its switch is the settings file
``<lab dir>/<node>-<id>.settings``, read at each new connection: this service
writes ``dplpmtud on``; the fault ``dut_quic_without_dplpmtud`` writes
``dplpmtud off`` (quic-go's ``DisablePathMTUDiscovery``), and a rebuilt DUT
starts with it on again.

UDP GSO is off (``QUIC_GO_DISABLE_GSO``): on a veth, the tester's capture would
hold a GSO batch as one large frame, where a real link carries each datagram
on its own.
"""

from __future__ import annotations

from ...net import quicpeer
from ..daemon import Daemon
from . import Service, service


@service("quic-server")
class QuicServer(Service):
    defaults = {"port": 4433, "alpn": "hq-interop"}

    def settings_file(self):
        return self.lab.workdir / f"{self.node}-{self.sid}.settings"

    def start(self) -> None:
        p = self.params
        self.settings_file().write_text("dplpmtud on\n")
        d = Daemon("quic-server", [quicpeer.binary(), "server", "-listen", f"[::]:{int(p['port'])}",
                                   "-alpn", str(p["alpn"]), "-settings", str(self.settings_file())],
                   self.ns, self.lab.workdir / f"{self.node}-{self.sid}.log",
                   env={"QUIC_GO_DISABLE_GSO": "true", "QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING": "true"})
        self.daemons = [d.start()]
        d.check_running(0.05)
