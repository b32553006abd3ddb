"""What the DUT showed on the wire during the run, seen passively from the
tester's port: every Duplicate Address Detection probe it sent (which
address, when), since its last reset.

Two judgements rest on it:

* **Does the DUT perform DAD at all?**  A DUT that assigns an address
  without probing it either performs no DAD (one root cause, judged by the
  DAD check: the DAD-validation parts are NOT_JUDGED ``dad``), or it probes
  some addresses and not this one (its own FAIL).  The run has seen it probe
  (its link-local address when it started, any address of an earlier part,
  or of an earlier run that it still defends, core/carryover.py) or not.
* **Which addresses did the run make it form?**  The discovered address
  table (core/room.py) counts them.

The observer is a port responder that reads the frame's bytes (no Scapy
dissection: it sees every frame the tester receives).
"""

from __future__ import annotations

import ipaddress
import threading
from dataclasses import dataclass

_IPV6, _ICMPV6, _NS = b"\x86\xdd", 58, 135
_UNSPECIFIED = bytes(16)


@dataclass(frozen=True)
class Probe:
    time: float
    address: str


class DutObserver:
    def __init__(self, mac: str):
        self.mac = bytes.fromhex(mac.replace(":", "")) if mac and len(mac) == 17 else b""
        self._lock = threading.Lock()
        self._probes: list[Probe] = []
        self.epoch = 0.0  # port time of the DUT's last reset: what it did before was another boot's

    def __call__(self, port, frame) -> None:
        raw = frame.raw
        if (len(raw) < 78 or raw[6:12] != self.mac or raw[12:14] != _IPV6 or raw[20] != _ICMPV6
                or raw[54] != _NS or raw[22:38] != _UNSPECIFIED):
            return
        probe = Probe(frame.time, str(ipaddress.IPv6Address(raw[62:78])))
        with self._lock:
            self._probes.append(probe)
            if len(self._probes) > 4096:
                del self._probes[:1024]

    def earlier(self, address: str, at: float) -> None:
        """The DUT probed ``address`` in an earlier run and still defends it
        (core/carryover.py): the same boot, which performs DAD; recorded as a
        probe at port time ``at``."""
        with self._lock:
            self._probes.insert(0, Probe(at, address))

    def reset(self, at: float) -> None:
        """The DUT was rebuilt or reset at port time ``at``."""
        with self._lock:
            self.epoch = at
            self._probes = [p for p in self._probes if p.time >= at]

    def probes(self, since: float | None = None) -> list[Probe]:
        start = self.epoch if since is None else max(since, self.epoch)
        with self._lock:
            return [p for p in self._probes if p.time >= start]

    def did_dad(self, before: float | None = None) -> Probe | None:
        """The first DAD probe of the DUT's current boot (before port time
        ``before``, when given), or None: it has not been seen probing."""
        for p in self.probes():
            if before is None or p.time < before:
                return p
        return None

    def probed_in(self, net: ipaddress.IPv6Network, since: float) -> list[str]:
        return sorted({p.address for p in self.probes(since) if ipaddress.IPv6Address(p.address) in net})
