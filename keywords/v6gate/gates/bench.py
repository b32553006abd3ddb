"""Where a gate's workloads run: the client side (a node with a kernel stack
on the DUT's link) and the DUT's servers, and the facts recorded with every
gate (kernel, MTU and ``ethtool -k`` of both ends).

* The lab's stand-in DUT (the VM of the ESP gate, lab/stand_in.py): the
  client is the ``peer`` node's interface, the DUT's addresses the VM's.
* The embedded lab: the client runs in the ``peer`` namespace (its
  ``perf-peer`` service gives it IPv6 and, for the gates only, IPv4 in
  198.18.0.0/15); the DUT runs with the topology's ``perf`` configuration
  (dual-stacked, iperf3 / qperf / v6gate-loadgen servers).  The lab may
  change the link MTU and the offloads of both ends for a gate.
* A real DUT: the target file's ``perf:`` section names the client side (a
  namespace or this host, its interface) and the DUT's addresses and server
  ports.  What the harness cannot do there (change the DUT's MTU or offloads,
  read the DUT's CPU) makes the gates that need it SKIP with the reason.

This module is the only place of the gates that knows about namespaces.
"""

from __future__ import annotations

import contextlib
import json
import platform
import subprocess
from dataclasses import dataclass, field

from ..core.context import NotApplicable
from ..errors import BenchError
from ..util.proc import in_ns, run

PERF_FIELDS_HELP = ("perf: {client: {netns: NS or omit for this host, interface: IF}, dut: {ipv4: A, ipv6: A}, "
                    "ports: {iperf3: 5201, qperf: 19765, loadgen: 5301}}")


@dataclass
class End:
    """One end of the workload: a namespace (or this host) and its interface."""

    name: str
    netns: str | None
    interface: str | None
    managed: bool  # the harness may run commands there (lab namespaces; this host)

    def argv(self, argv: list[str]) -> list[str]:
        return in_ns(self.netns, argv)

    def run(self, argv: list[str], timeout: float = 30, check: bool = True, what: str | None = None):
        if not self.managed:
            raise NotApplicable(f"the harness cannot run commands on the {self.name}")
        return run(argv, ns=self.netns, timeout=timeout, check=check, what=what or f"{argv[0]} on the {self.name}")

    def facts(self) -> dict:
        """Kernel, MTU and ethtool -k of this end (what can be read)."""
        out: dict = {"netns": self.netns, "interface": self.interface}
        if not self.managed:
            out["note"] = "not readable by the harness"
            return out
        out["kernel"] = platform.release()  # namespaces share the host's kernel
        if self.interface:
            try:
                link = json.loads(self.run(["ip", "-j", "link", "show", "dev", self.interface]).stdout)[0]
                out["mtu"] = link.get("mtu")
                out["mac"] = link.get("address")
            except (BenchError, ValueError, IndexError) as exc:
                out["mtu_error"] = str(exc)
            out["ethtool_k"] = ethtool_features(self)
        return out


def parse_ethtool_k(text: str) -> dict[str, str]:
    """``ethtool -k`` output -> {feature: "on" | "off" | "on [fixed]" ...}."""
    feats = {}
    for line in text.splitlines():
        if ":" not in line or line.startswith("Features for"):
            continue
        name, _, value = line.partition(":")
        feats[name.strip()] = value.strip()
    return feats


def ethtool_features(end: End) -> dict[str, str]:
    try:
        return parse_ethtool_k(end.run(["ethtool", "-k", end.interface], what="ethtool -k").stdout)
    except BenchError as exc:
        return {"error": str(exc)}


@dataclass
class Bench:
    client: End
    dut: End
    addresses: dict[str, str]  # family -> the DUT's address the client talks to
    client_addresses: dict[str, str]
    ports: dict[str, int]
    server_pids: dict[str, int] = field(default_factory=dict)
    lab: object | None = None
    switch_ports: list[str] = field(default_factory=list)  # lab: the bridge ports between the two ends

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def for_check(cls, t) -> Bench:
        session = t.session
        lab = getattr(session, "lab", None)
        if lab is not None and not lab.external_dut:
            if lab.stand_in is not None:
                return cls._for_stand_in(t, lab)
            return cls._for_lab(t, lab)
        return cls._for_target(t)

    @classmethod
    def _for_stand_in(cls, t, lab) -> Bench:
        """The lab's stand-in DUT (lab/stand_in.py, the ESP gate's VM): the client is the peer node's
        interface, from which the gate sends frames it crafts itself (the peer's kernel stays out of it:
        IPv6 disabled, no address); the DUT's addresses are the stand-in's (its IPv4 one if it has one);
        the harness runs nothing on the DUT's side but through the control adapter."""
        if "peer" not in lab.topology.nodes:
            raise BenchError("the lab topology has no 'peer' node to send the gate's frames from")
        iface = next(iter(lab.topology.nodes["peer"].ifaces.values())).ifname
        client = End("peer", lab.ns("peer"), iface, True)
        addresses = {"v6": t.dut.global_address()}
        v4 = lab.stand_in.service.params.get("ipv4")
        if v4:
            addresses["v4"] = str(v4).split("/")[0]
        return cls(client, End("DUT", None, None, False), addresses, {}, {}, lab=lab)

    @classmethod
    def _for_lab(cls, t, lab) -> Bench:
        peer = lab.service("perf-peer")
        servers = lab.service("perf-servers")
        if peer is None or not peer.running():
            raise BenchError("the lab's peer node is not up (the topology needs a 'peer' node with the optional "
                             "perf-peer service, and the gate must list it in lab_services)")
        if servers is None or not servers.running():
            raise BenchError("the lab DUT runs no perf servers (the gate needs dut_config='perf' and the "
                             "topology's 'perf' DUT configuration)")
        v6 = t.dut.global_address()
        v4 = servers.params["ipv4"].split("/")[0]
        client = End("peer", lab.ns(peer.node), peer.ifname(), True)
        dut = End("DUT", lab.dut_ns, lab.dut_ifname(), True)
        link = peer.spec.get("iface")
        ports = [lab._port_name(peer.node, link), lab._port_name(lab.dut_node.name, link)]
        return cls(client, dut, {"v4": v4, "v6": v6}, peer.addresses, servers.ports, servers.pids(), lab, ports)

    @classmethod
    def _for_target(cls, t) -> Bench:
        perf = t.target.perf or {}
        if not perf.get("dut") or not perf.get("client"):
            raise NotApplicable(f"the target file has no perf endpoints; add {PERF_FIELDS_HELP}")
        c = perf["client"]
        d = perf["dut"]
        addrs = {k: v for k, v in (("v4", d.get("ipv4")), ("v6", d.get("ipv6"))) if v}
        ports = {"iperf3": 5201, "qperf": 19765, "loadgen": 5301, **(perf.get("ports") or {})}
        client = End("client", c.get("netns"), c.get("interface"), True)
        dut = End("DUT", None, d.get("interface"), False)
        return cls(client, dut, addrs, {}, ports)

    # -- what the gate may need ------------------------------------------------------------------
    def address(self, family: str) -> str:
        if family not in self.addresses:
            name = "IPv4" if family == "v4" else "IPv6"
            raise NotApplicable(f"the DUT has no {name} address for the gates (perf.dut.ip{family} in the target "
                                "file); a family comparison needs both")
        return self.addresses[family]

    def server_cpu_s(self, name: str) -> float | None:
        from .disturbance import process_cpu_s

        pid = self.server_pids.get(name)
        return process_cpu_s(pid) if pid else None

    def pin_server(self, name: str, pinned: bool) -> None:
        """Lab only: the DUT's ``name`` server (all its threads, and the ones it starts later) on the
        last CPU, or on every CPU again."""
        self.pin_pid(self.server_pids.get(name), pinned, name)

    def pin_pid(self, pid: int | None, pinned: bool, name: str = "server") -> None:
        """Lab only: process ``pid`` of the DUT (all its threads) on the last CPU, or on every CPU again."""
        import os

        n = os.cpu_count() or 1
        if self.lab is None or not pid or n < 2:
            return
        cpus = str(n - 1) if pinned else f"0-{n - 1}"
        run(["taskset", "-a", "-p", "-c", cpus, str(pid)], what=f"taskset of the DUT's {name}")

    def facts(self) -> dict:
        return {"client": self.client.facts(), "dut": self.dut.facts(),
                "addresses": {"dut": self.addresses, "client": self.client_addresses}}

    # -- changing the link for a gate (lab only) -------------------------------------------------------
    @contextlib.contextmanager
    def mtu(self, mtu: int):
        """Run the body with both ends (and the switch ports between them) at ``mtu``."""
        lab = self.lab
        current = self._mtu_of(self.client)
        if current == mtu:
            yield
            return
        if lab is None:
            raise NotApplicable(f"the gate needs link MTU {mtu}; the harness can only change it on the lab "
                                f"(the link is at {current})")
        ports = self.switch_ports

        def set_all(value: int) -> None:
            from ..util.proc import ip_batch

            ip_batch([f"link set {p} mtu {value}" for p in ports], lab.switch_ns, what="switch port MTU")
            for end in (self.client, self.dut):
                end.run(["ip", "link", "set", end.interface, "mtu", str(value)], what="link MTU")

        set_all(mtu)
        try:
            yield
        finally:
            with contextlib.suppress(BenchError):
                set_all(current)

    def _mtu_of(self, end: End) -> int | None:
        try:
            return json.loads(end.run(["ip", "-j", "link", "show", "dev", end.interface]).stdout)[0]["mtu"]
        except (BenchError, ValueError, IndexError, KeyError):
            return None

    OFFLOADS = ("tso", "gso", "gro", "tx", "rx")

    def set_offloads(self, on: bool, saved: dict[str, dict[str, str]]) -> None:
        """Offloads of both ends off (on=False) or back as they were (on=True)."""
        for end in (self.client, self.dut):
            if not end.managed:
                raise NotApplicable(f"the harness cannot change the offloads of the {end.name}")
            if on:
                state = saved.get(end.name) or {}
                args = [x for k in self.OFFLOADS if k in state for x in (k, state[k])]
            else:
                args = [x for k in self.OFFLOADS for x in (k, "off")]
            if args:
                end.run(["ethtool", "-K", end.interface, *args], check=False, what="ethtool -K")

    def offload_state(self) -> dict[str, dict[str, str]]:
        names = {"tso": "tcp-segmentation-offload", "gso": "generic-segmentation-offload",
                 "gro": "generic-receive-offload", "tx": "tx-checksumming", "rx": "rx-checksumming"}
        out = {}
        for end in (self.client, self.dut):
            feats = ethtool_features(end)
            out[end.name] = {k: feats.get(v, "off").split()[0] for k, v in names.items() if v in feats}
        return out


def dut_facts(t) -> dict:
    """What a gate measured on the tester's wire records of the DUT: its
    addresses and the target's timing, and on the lab its kernel, MTU and
    ``ethtool -k``."""
    facts = {"dut": {"mac": t.dut.mac, "link_local": t.dut.link_local}, "timing": dict(t.timing)}
    lab = getattr(t.session, "lab", None)
    if lab is not None and not lab.external_dut:
        facts["dut"].update(End("DUT", lab.dut_ns, lab.dut_ifname(), True).facts())
    return facts


def popen(end: End, argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen(end.argv(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
