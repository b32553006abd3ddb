"""The offload area's lab parts (DUT configurations ``offload-on`` and
``offload-off``).

* ``echo-services``: the DUT's ordinary TCP/UDP services the offload checks
  talk to (TCP and UDP echo, TCP discard, and a TCP echo whose sockets carry
  a Destination Options header), one program (``lab/echo_server.py``) run in
  the DUT's namespace.  The lab target declares them under ``services:``; a
  real DUT declares its own.
* ``offloads``: the DUT's veth offloads set with ``ethtool -K`` (``features``:
  tx/rx checksum, TSO, GSO, GRO on or off), and the switch port towards the
  tester made a *wire*: with its own segmentation and checksum offloads off,
  the kernel segments and checksums in software every GSO super-frame and
  every partial-checksum frame the DUT hands the bridge, before the tester's
  capture sees it.  Without that, veth passes 64 KB GSO frames with partial
  (wrong) checksums straight to the tester, which no Ethernet carries.
  Stopped (DUT rebuilt), the switch port gets its offloads back.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ...util.proc import run
from ..daemon import Daemon
from . import Service, service

ECHO_SERVER = Path(__file__).resolve().parent.parent / "echo_server.py"

#: ethtool -K names of the features a configuration toggles
FEATURES = ("rx", "tx", "tso", "gso", "gro")
#: the tester's switch port as a wire: segmentation and checksums done in software before the capture
WIRE = {"tx": "off", "sg": "off", "tso": "off", "gso": "off"}


@service("echo-services")
class EchoServices(Service):
    defaults = {"tcp_echo": 7, "udp_echo": 7, "discard": 9, "tcp_echo_dstopts": 7007}

    def start(self) -> None:
        p = self.params
        argv = [sys.executable, str(ECHO_SERVER)]
        for key in ("tcp_echo", "udp_echo", "discard", "tcp_echo_dstopts"):
            if p.get(key):
                argv += [f"--{key.replace('_', '-')}", str(int(p[key]))]
        if p.get("send_timeout_s"):
            argv += ["--send-timeout", str(float(p["send_timeout_s"]))]
        d = Daemon("echo-services", argv, self.ns, self.lab.workdir / f"{self.node}-{self.sid}.log")
        self.daemons = [d.start()]
        d.check_running(0.05)


@service("offloads")
class Offloads(Service):
    defaults = {"features": {"rx": "on", "tx": "on", "tso": "on", "gso": "on", "gro": "on"}, "wire": True}

    def __init__(self, lab, node, spec):
        super().__init__(lab, node, spec)
        self._wire_port: str | None = None

    def start(self) -> None:
        feats = self.params["features"]
        unknown = set(feats) - set(FEATURES)
        if unknown:
            from ...errors import LabError

            raise LabError(f"offloads: unknown features {sorted(unknown)}; use {', '.join(FEATURES)}")
        args = [x for k, v in feats.items() for x in (k, _onoff(v))]
        run(["ethtool", "-K", self.ifname(), *args], ns=self.ns, what="DUT offloads (ethtool -K)")
        if self.params.get("wire"):
            port = self.lab._port_name(self.lab.tester_node.name, self.spec.get("iface", "lan"))
            run(["ethtool", "-K", port, *[x for kv in WIRE.items() for x in kv]], ns=self.lab.switch_ns,
                what="the tester's switch port as a wire (ethtool -K)")
            self._wire_port = port

    def stop(self) -> None:
        port, self._wire_port = self._wire_port, None
        if port:
            run(["ethtool", "-K", port, *[x for k in WIRE for x in (k, "on")]], ns=self.lab.switch_ns, check=False,
                what="the tester's switch port offloads restored")

    def running(self) -> bool:
        return self._wire_port is not None or not self.params.get("wire")


def _onoff(v) -> str:
    if v is True or v == "on":
        return "on"
    if v is False or v == "off":
        return "off"
    return str(v)
