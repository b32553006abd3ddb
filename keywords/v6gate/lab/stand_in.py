"""A stand-in DUT: a device the lab puts in the namespace DUT's place for the
checks of one DUT configuration, where the lab's own kernel cannot be that
DUT (this machine's kernel has no ESP: the ``ipsec`` and ``ikev2`` areas
judge Debian 12's kernel in the lab's VM instead).

A DUT configuration with a ``stand_in`` (fixtures/lab/topology.yaml) names
the lab service that is the device (today ``vm-target``) and, optionally, the
target ``timing`` it is judged with::

    ipsec-vm:
      stand_in: {name: vm-target, id: ipsec-vm, iface: lan, params: {roles: [ipsec], ...},
                 timing: {reply_timeout_s: 2.0}}

For such a check the DUT *is* the device: its MAC, link-local and global
address are the DUT's (``view``: a Target and a DutView of it), its control
adapter (``vm-console``: addresses, ping and ``command`` through its serial
console) is the check's ``t.control``, liveness and the Common Test Setup
probe it, and the check's fault is applied to it (``apply_fault``: commands,
sysctls and nft rulesets on its console, tc on its switch port, an impostor
answering as it from the switch side).  The device outlives the check: it boots once
(QEMU under TCG: 7-13 s) and between checks ``v6g-reset`` on its console puts
it back as it was when it booted (processes, addresses, neighbours, path
MTUs, IPv6 settings, each role's own state such as SAs: well under a second);
a device whose console does not answer is rebooted.  A check of any other
configuration stops it, so it never sits on the link under another check.

Nothing here is used for a real DUT (the target file describes it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import shlex
import time

from ..errors import LabError, V6GateError
from ..net import packets as P
from ..util.proc import ip_batch, run
from .faults import AppliedFault, Fault, _del_root_qdiscs, _fmt, nft_counter_total
from .services import build as build_service

#: fault mechanisms a stand-in takes (the others act on the namespace DUT's kernel); nft needs its nft role
MECHANISMS = ("commands", "sysctl", "nft", "switch_tc", "impostor")
#: base64 characters of an nft ruleset per console line
NFT_CHUNK = 3000
#: the console's reset of the device between checks, and how long it may take
RESET_COMMAND, RESET_TIMEOUT_S = "v6g-reset", 30.0
#: the veth pair through which a fault's impostor answers as the device from the switch side
IMPOSTOR_PORT = "v6gimp"


class StandIn:
    """One device standing in for the DUT, kept by the lab (``lab.stand_in``)."""

    def __init__(self, lab, spec: dict):
        self.lab = lab
        self.spec = dict(spec)
        self.timing = dict(spec.get("timing") or {})
        service_spec = {k: v for k, v in spec.items() if k != "timing"}
        self.service = build_service(lab, lab.dut_node.name, service_spec)
        self.boots = 0
        self.resets = 0
        self._view = None

    # -- lifecycle --------------------------------------------------------------
    @staticmethod
    def key_of(spec: dict) -> str:
        """Two configurations naming the same device share it (their checks follow each other without a reboot)."""
        return repr(sorted((k, repr(v)) for k, v in spec.items() if k != "timing"))

    def running(self) -> bool:
        return self.service.running()

    def prepare(self) -> float:
        """The device fresh for a check: booted if it is not running, else
        reset over its console (rebooted when that fails).  Returns the
        seconds it took."""
        t0 = time.monotonic()
        if self.running():
            try:
                rc, out = self.exec(RESET_COMMAND, timeout=RESET_TIMEOUT_S)
                if rc == 0 and out.strip().endswith("reset"):
                    self.resets += 1
                    self._forget()
                    return time.monotonic() - t0
            except LabError:
                pass
            self.stop()  # its console did not put it back: a reboot does
        self.service.start()
        self.boots += 1
        self._forget()
        return time.monotonic() - t0

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.service.stop()
        self._view = None

    def records(self) -> list[dict]:
        return self.service.records()

    def exec(self, command: str, timeout: float = 20.0) -> tuple[int, str]:
        """(exit status, output) of ``command`` in the device's console shell."""
        return self.service.exec(command, timeout)

    def _forget(self) -> None:
        if self._view is not None:
            self._view[2].forget()

    # -- the DUT it stands in for -------------------------------------------------
    @property
    def mac(self) -> str:
        return str(self.service.params["mac"]).lower()

    @property
    def address(self) -> str:
        return self.service.address

    @property
    def link_local(self) -> str:
        return P.link_local_from_mac(self.mac)  # the kernel's default (addr_gen_mode 0)

    def view(self, base, port, make):
        """(Target, Control, DutView) of the device for the checks on ``port``:
        ``base`` (the run's target) with the device's MAC, addresses and
        timing; ``make(target)`` gives its control adapter and DutView (the
        session: they are the framework's, core/control.py ``VmConsoleControl``)."""
        if self._view is None or self._view[2].port is not port:
            target = dataclasses.replace(
                base, dut_mac=self.mac, dut_link_local=self.link_local, dut_global=[self.address], dut_iid="eui64",
                control={"adapter": "vm-console"}, timing={**base.timing, **self.timing},
                description=f"{base.description}; standing in: {self.spec.get('id', self.spec['name'])}")
            self._view = (target, *make(target))
        return self._view

    # -- faults ---------------------------------------------------------------
    def apply_fault(self, fault: Fault) -> AppliedFault:
        """Apply ``fault`` to the device: ``commands`` and ``sysctl`` on its
        console, ``switch_tc`` ({dut_port} is its switch port), ``impostor``
        answering as it from the switch side."""
        other = [m for m in ("tc", "boot_sysctl", "repair") if getattr(fault, m)]
        if other:
            raise LabError(f"fault {fault.name} uses {', '.join(other)}, which act on the namespace DUT's kernel; the "
                           f"stand-in DUT {self.spec.get('id')} takes {', '.join(MECHANISMS)}")
        link = next(iter(self.lab.dut_node.ifaces))
        values = {"dut_if": "eth0", "dut_port": self.service.tap, "dut_mac": self.mac, "dut_ll": self.link_local,
                  "prefix": str(self.lab.topology.links[link].prefix or ""), "dut_ns": "", "lab_dir": str(self.lab.workdir),
                  "peer_port": self.lab._port_name("peer", link) if "peer" in self.lab.topology.nodes else ""}
        qdisc_ports: list[str] = []
        impostor = None
        try:
            for key, value in fault.sysctl.items():
                self._must(f"sysctl -w {shlex.quote(_fmt(key, values) + '=' + str(value))}", fault, "sysctl")
            if fault.nft:
                self._load_nft(_fmt(fault.nft, values), fault)
            for cmd in fault.commands:
                self._must(_fmt(cmd, values), fault, "command")
            for cmd in fault.switch_tc:
                words = _fmt(cmd, values).split()
                run(["tc", *words], ns=self.lab.switch_ns, what=f"fault {fault.name} (switch tc)")
                if words[:2] == ["qdisc", "add"] and "root" in words and "dev" in words:
                    qdisc_ports.append(words[words.index("dev") + 1])
            if fault.impostor:
                dut = {"mac": self.mac, "link_local": self.link_local, "addresses": [self.link_local, self.address],
                       "prefix": values["prefix"], "exec": self.exec}
                impostor = SwitchSideImpostor(self.lab, fault.impostor, dut).start()
        except BaseException:
            if impostor is not None:
                impostor.stop()
            with contextlib.suppress(Exception):
                _del_root_qdiscs(self.lab.switch_ns, qdisc_ports)
            raise
        return StandInFault(self, fault, impostor, None, (self.lab.switch_ns, qdisc_ports) if qdisc_ports else None)

    def _load_nft(self, ruleset: str, fault: Fault) -> None:
        """An nft ruleset into the device (its nft role), in pieces: its console takes lines of at most 4095
        characters."""
        import base64

        data = base64.b64encode(ruleset.encode()).decode()
        self._must("rm -f /tmp/v6g-fault.b64", fault, "nft")
        for i in range(0, len(data), NFT_CHUNK):
            self._must(f"echo -n {data[i:i + NFT_CHUNK]} >> /tmp/v6g-fault.b64", fault, "nft")
        self._must("base64 -d /tmp/v6g-fault.b64 > /tmp/v6g-fault.nft && /usr/sbin/nft -f /tmp/v6g-fault.nft", fault,
                   "nft (the stand-in needs the nft role: fixtures/lab/vm-target/roles.yaml)")

    def _must(self, command: str, fault: Fault, what: str) -> None:
        rc, out = self.exec(command)
        if rc != 0:
            raise LabError(f"could not apply fault {fault.name} ({what} on the stand-in's console: {command!r} exit "
                           f"{rc}: {out.strip()[-200:]})")


class StandInFault(AppliedFault):
    """A fault in force on the stand-in: its nft counters are read on its console."""

    def __init__(self, stand_in: StandIn, *args):
        super().__init__(*args)
        self.stand_in = stand_in

    def counters(self, ns: str | None = None) -> dict:
        out = super().counters(None)
        if self.fault.nft and "counter" in self.fault.nft:
            with contextlib.suppress(LabError, ValueError):
                rc, text = self.stand_in.exec("/usr/sbin/nft -j list ruleset")
                if rc == 0:
                    out["nft_matched"] = nft_counter_total(text)
        return out


def settle(lab, spec: dict | None) -> StandIn | None:
    """The lab's stand-in for a DUT configuration whose ``stand_in`` is
    ``spec`` (None: the namespace DUT is the DUT): the running one prepared
    for the next check, or a new one; a stand-in of another specification is
    stopped first."""
    current = lab.stand_in
    if current is not None and (spec is None or StandIn.key_of(current.spec) != StandIn.key_of(spec)):
        current.stop()
        lab.stand_in = current = None
    if spec is None:
        return None
    if current is None:
        current = lab.stand_in = StandIn(lab, spec)
    try:
        lab.timings["stand_in_prepare_s"] = current.prepare()
    except BaseException:
        current.stop()
        lab.stand_in = None
        raise
    return current


class SwitchSideImpostor:
    """A fault's impostor for a stand-in: it cannot run on the device, so it
    answers as the device from the switch: a veth port on the link's bridge,
    the bridge flooding every frame to every port while it runs (ageing time
    0, as the ``hub`` service does) so that it sees what is sent to the
    device.  The device still receives everything too."""

    def __init__(self, lab, spec: dict, dut: dict):
        from .impostor import Impostor

        self.lab = lab
        self.link = next(iter(lab.dut_node.ifaces))
        self.bridge = f"br-{self.link}"
        self._ageing: str | None = None
        ip_batch([f"link add {IMPOSTOR_PORT} type veth peer name {IMPOSTOR_PORT}-br",
                  f"link set {IMPOSTOR_PORT}-br master {self.bridge} up", f"link set {IMPOSTOR_PORT} up"],
                 lab.switch_ns, what="the stand-in impostor's port")
        try:
            self._ageing = self._bridge_ageing()
            self._set_ageing("0")
            self.impostor = Impostor(lab.switch_ns, IMPOSTOR_PORT, spec, dut)
        except BaseException:
            self._undo()
            raise

    def _bridge_ageing(self) -> str:
        cp = run(["ip", "-d", "link", "show", self.bridge], ns=self.lab.switch_ns, what="the bridge's ageing time")
        m = re.search(r"ageing_time (\d+)", cp.stdout)
        return m.group(1) if m else "30000"

    def _set_ageing(self, centiseconds: str) -> None:
        run(["ip", "link", "set", self.bridge, "type", "bridge", "ageing_time", centiseconds], ns=self.lab.switch_ns,
            what="the bridge's ageing time")

    @property
    def answers(self) -> int:
        return self.impostor.answers

    @property
    def port(self):
        return self.impostor.port

    def start(self) -> SwitchSideImpostor:
        self.impostor.start()
        return self

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.impostor.stop()
        self._undo()

    def _undo(self) -> None:
        with contextlib.suppress(V6GateError):
            run(["ip", "link", "del", IMPOSTOR_PORT], ns=self.lab.switch_ns, check=False, what="the impostor's port")
        if self._ageing is not None:
            with contextlib.suppress(V6GateError):
                self._set_ageing(self._ageing)
            self._ageing = None
