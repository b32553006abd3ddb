"""The embedded lab: network namespaces, veth and real daemons built from a
topology file.

Layout: every link of the topology is a bridge inside the lab's *switch*
namespace; every node (router, dut, tester, ...) is a namespace joined to the
bridges by veth pairs created directly inside the namespaces (nothing appears
in the root namespace).  Names carry a per-run, per-worker lab id, so any
number of labs run side by side.

The DUT can be rebuilt alone (``reset_dut``) in tens of milliseconds, which is
how every check starts from a freshly booted DUT and how faults are removed.
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import json
import os
import secrets
import shutil
import time
from pathlib import Path

from ..errors import BenchError, LabError
from ..paths import STATE_DIR
from ..util.proc import ip_batch, need, run
from . import registry, stand_in
from .services import build as build_service
from .topology import Topology, load_topology

SWITCH = "sw"


def new_lab_id(run_id: str | None = None, worker: str | None = None) -> str:
    run_id = (run_id or secrets.token_hex(3))[:8]
    worker = (worker or "").replace("gw", "w")
    return f"{registry.PREFIX}{run_id}{worker}"


def _worker_suffix() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "")


class Lab:
    def __init__(self, topology: Topology | str | Path | None = None, *, lab_id: str | None = None,
                 run_id: str | None = None, external_dut: str | None = None, tap_name: str = "tap0",
                 keep: bool = False):
        self.topology = topology if isinstance(topology, Topology) else load_topology(topology)
        self.lab_id = lab_id or new_lab_id(run_id or os.environ.get("V6GATE_RUN_ID"), _worker_suffix())
        self.external_dut = external_dut
        self.tap_name = tap_name
        self.keep = keep
        self.workdir = STATE_DIR / self.lab_id
        self.services: dict[str, list] = {}
        self.timings: dict[str, float] = {}
        self.is_up = False
        self.dut_node = self.topology.node_with_role("dut")
        self.tester_node = self.topology.node_with_role("tester")
        self.dut_faulted = False
        self.dut_reborn_at: float | None = None  # port time from which DUT frames are of its new boot
        self._paused: set[str] = set()
        self.wanted: set[str] = set()  # optional services the current check needs
        self.dut_config: str | None = None  # the DUT configuration (topology 'configs') in force
        #: True while the DUT restarts as a reboot (reset_dut(keep_state=True)): DUT-side services
        #: keep what a device keeps in stable storage (leases, identifiers); False: a fresh DUT
        self.keep_dut_state = False
        #: the device standing in for the DUT under the current DUT configuration (lab/stand_in.py), or None
        self.stand_in = None

    # -- names --------------------------------------------------------------
    def ns(self, node: str) -> str:
        return f"{self.lab_id}-{node}"

    @property
    def switch_ns(self) -> str:
        return self.ns(SWITCH)

    @property
    def dut_ns(self) -> str:
        return self.ns(self.dut_node.name)

    @property
    def tester_ns(self) -> str:
        return self.ns(self.tester_node.name)

    def managed_nodes(self) -> list[str]:
        return [n for n in self.topology.nodes if not (self.external_dut and n == self.dut_node.name)]

    def namespaces(self) -> list[str]:
        return [self.switch_ns] + [self.ns(n) for n in self.managed_nodes()]

    @staticmethod
    def _port_name(node: str, link: str) -> str:
        return f"{node[:7]}-{link[:7]}"

    # -- lifecycle ----------------------------------------------------------
    def _register(self) -> None:
        procs = [rec for svcs in self.services.values() for s in svcs for rec in s.records()]
        if self.stand_in is not None:
            procs += self.stand_in.records()
        registry.register(self.lab_id, {
            "lab_id": self.lab_id,
            "standalone": self.keep,
            "owner_pid": None if self.keep else os.getpid(),
            "owner_start": None if self.keep else registry.process_start_time(),
            "created": time.time(),
            "topology": self.topology.path,
            "namespaces": self.namespaces(),
            "workdir": str(self.workdir),
            "procs": procs,
            "external_dut": self.external_dut,
            "tap": self.tap_name if self.external_dut else None,
        })

    def up(self) -> Lab:
        if os.geteuid() != 0:
            raise LabError("the lab needs root (network namespaces): run as root")
        for tool in ("ip", "sysctl"):
            need(tool)
        t0 = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._register()  # before anything exists, so a crash mid-build is cleanable
        if not self.keep:
            atexit.register(self.down)
        try:
            run(["ip", "netns", "add", self.switch_ns])
            self._sysctl(self.switch_ns, {
                "net.ipv6.conf.all.disable_ipv6": 1,
                "net.ipv6.conf.default.disable_ipv6": 1,
            })
            # br_netfilter would silently drop malformed IPv6 crossing the bridge
            self._sysctl(self.switch_ns, {"net.bridge.bridge-nf-call-ip6tables": 0,
                                          "net.bridge.bridge-nf-call-iptables": 0,
                                          "net.bridge.bridge-nf-call-arptables": 0}, best_effort=True)
            cmds = []
            for link in self.topology.links.values():
                snoop = 1 if link.multicast_snooping else 0
                cmds += [f"link add br-{link.name} type bridge mcast_snooping {snoop}",
                         f"link set br-{link.name} mtu {link.mtu} up"]
            ip_batch(cmds, self.switch_ns, what="lab switch")
            if self.external_dut:
                self._add_tap()
            for node in self.managed_nodes():
                self._build_node(node)
            self.timings["netns_s"] = time.monotonic() - t0
            t1 = time.monotonic()
            for node in self.managed_nodes():
                self._start_services(node)
            self.timings["services_s"] = time.monotonic() - t1
            self._register()
            t2 = time.monotonic()
            if not self.external_dut:
                self.wait_dut_ready()
            self.timings["dut_ready_s"] = time.monotonic() - t2
            self.timings["up_s"] = time.monotonic() - t0
            self.is_up = True
        except BaseException:
            if not os.environ.get("V6GATE_KEEP_BROKEN_LAB"):
                self.down()
            raise
        return self

    def down(self) -> None:
        """Tear everything down; safe to call twice, from atexit and on errors."""
        t0 = time.monotonic()
        with contextlib.suppress(Exception):
            atexit.unregister(self.down)
        for svcs in self.services.values():
            for s in svcs:
                with contextlib.suppress(Exception):
                    s.stop()
        self.services = {}
        if self.stand_in is not None:
            self.stand_in.stop()
            self.stand_in = None
        namespaces = [n for n in self.namespaces() if os.path.exists(f"/run/netns/{n}")]
        registry.kill_ns_processes(namespaces, grace_s=1.0)
        registry.delete_namespaces(namespaces)
        shutil.rmtree(self.workdir, ignore_errors=True)
        registry.unregister(self.lab_id)
        self.is_up = False
        self.timings["down_s"] = time.monotonic() - t0

    def __enter__(self) -> Lab:
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()

    # -- building -----------------------------------------------------------
    def _sysctl(self, ns: str, values: dict, best_effort: bool = False) -> None:
        if not values:
            return
        argv = ["sysctl", "-q"] + (["-e"] if best_effort else []) + ["-w"] + [f"{k}={v}" for k, v in values.items()]
        run(argv, ns=ns, check=not best_effort, what=f"sysctl in {ns}")

    def _build_node(self, name: str, extra_sysctl: dict | None = None, extra_neigh: dict | None = None) -> None:
        node = self.topology.nodes[name]
        ns = self.ns(name)
        run(["ip", "netns", "add", ns])
        self._sysctl(ns, {**node.sysctl, **(extra_sysctl or {})})
        sw_cmds, node_cmds = [], ["link set lo up"]
        for link_name, iface in node.ifaces.items():
            link = self.topology.links[link_name]
            port = self._port_name(name, link_name)
            sw_cmds += [f"link add {port} mtu {link.mtu} type veth peer name {iface.ifname} netns {ns}",
                        f"link set {port} master br-{link_name} up"]
            if iface.mac:
                node_cmds.append(f"link set {iface.ifname} address {iface.mac}")
            node_cmds.append(f"link set {iface.ifname} mtu {link.mtu}")
        ip_batch(sw_cmds, self.switch_ns, what=f"lab ports of {name}")
        ip_batch(node_cmds, ns, what=f"lab node {name}")
        # per-interface neighbour settings must precede link-up (DAD uses them)
        neigh = {**node.neigh, **(extra_neigh or {})}
        per_if = {f"net.ipv6.neigh.{i.ifname}.{k}": v for i in node.ifaces.values() for k, v in neigh.items()}
        self._sysctl(ns, per_if)
        up_cmds = []
        for iface in node.ifaces.values():
            for addr in iface.addresses:
                extra = " nodad" if ":" in addr else ""
                up_cmds.append(f"addr add {addr} dev {iface.ifname}{extra}")
            up_cmds.append(f"link set {iface.ifname} up")
        ip_batch(up_cmds, ns, what=f"lab node {name} up")

    def _add_tap(self) -> None:
        lan = next(iter(self.dut_node.ifaces))
        ip_batch([f"tuntap add mode tap name {self.tap_name}",
                  f"link set {self.tap_name} mtu {self.topology.links[lan].mtu} master br-{lan} up"],
                 self.switch_ns, what="lab TAP for the external DUT")

    def _start_services(self, node: str, extra: list[dict] | None = None) -> None:
        """Start a node's services: the always-on ones, the optional ones the
        current check asked for (``self.wanted``), and ``extra`` (a DUT
        configuration's own services)."""
        svcs = []
        for spec in [*self.topology.nodes[node].services, *(extra or [])]:
            svc = build_service(self, node, spec)
            if svc.kind not in self._paused and (not spec.get("optional") or svc.sid in self.wanted):
                svc.start()
            svcs.append(svc)
        self.services[node] = svcs

    def ensure_services(self, wanted: set[str]) -> None:
        """Run exactly the optional services in ``wanted`` (by id) on the
        nodes other than the DUT; the DUT's are settled by reset_dut."""
        self.wanted = set(wanted)
        changed = False
        optional = [svc for node, svcs in self.services.items() if node != self.dut_node.name
                    for svc in svcs if svc.spec.get("optional")]
        for svc in optional:  # stopped first: two services may share a node's address (far-path's variants)
            if svc.sid not in self.wanted and svc.running():
                svc.stop()
                changed = True
        for svc in optional:
            if svc.sid in self.wanted and not svc.running():
                svc.start()
                changed = True
        if changed:
            self._register()

    def optional_services(self) -> set[str]:
        return {spec.get("id", spec["name"]) for n in self.topology.nodes.values() for spec in n.services
                if spec.get("optional")}

    def service(self, kind: str):
        for svcs in self.services.values():
            for s in svcs:
                if s.kind == kind:
                    return s
        return None

    def router_advertising(self) -> bool:
        s = self.service("radvd")
        return bool(s and s.running())

    def pause_router(self) -> None:
        """Before ``up``: the lab router's radvd is not started (a TAP lab
        whose tester is the only router on the link)."""
        self._paused.add("radvd")

    def set_router_advertising(self, on: bool) -> None:
        """Start or stop the lab router's RAs (checks where the tester must be
        the only router stop them, then rebuild the DUT so it forgets them)."""
        s = self.service("radvd")
        if s is None:
            return
        if on and not s.running():
            self._paused.discard("radvd")
            s.start()
            self._register()
        elif not on and s.running():
            self._paused.add("radvd")
            s.stop()

    @contextlib.contextmanager
    def link_mtu(self, mtu: int):
        """The DUT's link at ``mtu`` for the body (jumbo frames): its bridge, every
        switch port on it and every node interface on it, the DUT's included; then
        back to the topology's MTU (raising: the switch first; lowering: the nodes
        first, so that no port ever receives frames larger than its own MTU)."""
        if self.external_dut:
            raise LabError("the lab cannot change the MTU of a DUT it does not manage")
        link = next(iter(self.dut_node.ifaces))
        on_link = [(name, node.ifaces[link].ifname) for name, node in self.topology.nodes.items() if link in node.ifaces]

        def switch(v: int) -> None:
            ip_batch([*[f"link set {self._port_name(n, link)} mtu {v}" for n, _ in on_link],
                      f"link set br-{link} mtu {v}"], self.switch_ns, what=f"switch MTU {v}")

        def nodes(v: int) -> None:
            for n, ifname in on_link:
                run(["ip", "link", "set", ifname, "mtu", str(v)], ns=self.ns(n), what=f"MTU {v} on {n}")

        base = self.topology.links[link].mtu
        first, second = (switch, nodes) if mtu > base else (nodes, switch)
        first(mtu)
        second(mtu)
        try:
            yield
        finally:
            with contextlib.suppress(BenchError):  # back the other way round
                second(base)
                first(base)

    # -- the DUT ------------------------------------------------------------
    def dut_ifname(self) -> str:
        return next(iter(self.dut_node.ifaces.values())).ifname

    def dhcpv6_event(self, event: str) -> None:
        """Tell the simulated DHCPv6 client standing in for the DUT (a lab
        fault's impostor) about a DUT action: "fresh" (a new check: the DUT
        starts without a lease), "release" (it gives its lease back)."""
        from .impostor_rules.dhcpv6 import notify

        notify(next(iter(self.dut_node.ifaces.values())).mac, event)

    def release_dhcpv6_lease(self) -> None:
        """Make the DUT's DHCPv6 client give its lease back (a graceful stop),
        and the simulated client of a fault likewise."""
        client = next((s for svcs in self.services.values() for s in svcs if getattr(s, "dhcp6_client", False)),
                      None)
        if client is None:
            raise BenchError("the lab DUT runs no DHCPv6 client (check dut_config)")
        self.dhcpv6_event("release")
        client.release()

    def dut_addresses(self) -> list[dict]:
        cp = run(["ip", "-j", "-6", "addr", "show", "dev", self.dut_ifname()], ns=self.dut_ns, what="read DUT addresses")
        data = json.loads(cp.stdout or "[]")
        return data[0].get("addr_info", []) if data else []

    def wait_dut_ready(self, timeout: float = 15.0, want_global: bool | None = None) -> float:
        """Wait until the DUT's link-local (and, when the lab router advertises,
        its global address) has finished DAD.  Returns the seconds waited."""
        if self.stand_in is not None:
            return 0.0  # the device in the DUT's place was ready when it was prepared (lab/stand_in.py)
        ready = {**self.dut_node.ready, **self._dut_config(self.dut_config)["ready"]}
        prefix = ready.get("global_prefix")
        if want_global is None:
            want_global = bool(prefix) and self.router_advertising()
        net = ipaddress.IPv6Network(prefix) if prefix else None
        t0 = time.monotonic()
        while True:
            infos = self.dut_addresses()
            ll_ok = any(a.get("scope") == "link" and not a.get("tentative") for a in infos)
            gl_ok = not want_global or any(
                a.get("scope") == "global" and not a.get("tentative") and net
                and ipaddress.IPv6Address(a["local"]) in net for a in infos)
            if ll_ok and gl_ok:
                return time.monotonic() - t0
            if time.monotonic() - t0 > timeout:
                raise LabError(f"lab DUT not ready after {timeout:g}s (link-local ok={ll_ok}, global ok={gl_ok}); "
                               f"addresses: {[a.get('local') for a in infos]}")
            time.sleep(0.01)

    def reset_dut(self, want_global: bool | None = None, boot_sysctl: dict | None = None,
                  wait: bool = True, config: str | None = None, keep_state: bool = False) -> float:
        """Rebuild the DUT namespace from the topology: a fresh boot of the DUT.
        Removes every fault applied to it; ``boot_sysctl`` (a fault's) is set
        before the interface exists.  ``keep_state``: a reboot, DUT-side
        services keep their stable storage (see ``keep_dut_state``); otherwise
        the DUT starts as new.  Returns the seconds it took."""
        if self.external_dut:
            raise LabError("the external (TAP) DUT cannot be reset by the lab")
        t0 = time.monotonic()
        name = self.dut_node.name
        for s in self.services.get(name, []):
            s.stop()
        ns = self.dut_ns
        registry.kill_ns_processes([ns], grace_s=0.5)
        cmds = [f"link del {self._port_name(name, link)}" for link in self.dut_node.ifaces]
        with contextlib.suppress(Exception):
            ip_batch(cmds, self.switch_ns, what="remove DUT ports")
        # from now on no frame of the old boot can reach the link (its switch ports are gone): a check that
        # restarts the DUT judges the new boot's frames from here (a busy machine can delay the old
        # interface's last MLD reports past the moment the check asked for the restart)
        self.dut_reborn_at = time.monotonic()
        run(["ip", "netns", "del", ns], check=False)
        shutil.rmtree(f"/etc/netns/{ns}", ignore_errors=True)
        cfg = self._dut_config(config)
        self.dut_config = config
        self._build_node(name, {**cfg["sysctl"], **(boot_sysctl or {})}, cfg.get("neigh"))
        self.keep_dut_state = keep_state
        try:
            self._start_services(name, cfg["services"])
        finally:
            self.keep_dut_state = False
        stand_in.settle(self, cfg.get("stand_in"))  # a device in the DUT's place, or none (lab/stand_in.py)
        self._register()
        self.dut_faulted = bool(boot_sysctl)
        if wait:
            self.wait_dut_ready(want_global=want_global)
        return time.monotonic() - t0

    def _dut_config(self, name: str | None) -> dict:
        if not name:
            return {"sysctl": {}, "neigh": {}, "services": [], "ready": {}, "stand_in": None}
        configs = self.dut_node.configs
        if name not in configs:
            raise LabError(f"the topology {self.topology.path} has no DUT configuration {name!r}; "
                           f"known: {', '.join(sorted(configs)) or 'none'}")
        return configs[name]

    # -- targets ------------------------------------------------------------
    def target_overrides(self) -> dict:
        tester_iface = next(iter(self.tester_node.ifaces.values()))
        over = {
            "tester": {"interface": tester_iface.ifname, "netns": self.tester_ns},
            "link": {"mtu": next(iter(self.topology.links.values())).mtu},
        }
        lan = next(iter(self.dut_node.ifaces))
        prefix = self.topology.links[lan].prefix
        if prefix:
            over["link"]["prefix"] = str(prefix)
        if not self.external_dut:
            iface = next(iter(self.dut_node.ifaces.values()))
            over["dut"] = {"mac": iface.mac}
            over["control"] = {"adapter": "netns", "netns": self.dut_ns, "interface": iface.ifname}
        plpmtud: dict = {}  # area plpmtud: the clients behind the lab's narrower paths (the first of each kind)
        for far in (s for svcs in self.services.values() for s in svcs if s.kind == "far-path"):
            key, value = far.target_setting()
            plpmtud.setdefault(key, value)
        if plpmtud:
            over["extensions"] = {"plpmtud": plpmtud}
        return over

    def describe(self) -> dict:
        return {
            "lab_id": self.lab_id,
            "topology": self.topology.path,
            "namespaces": self.namespaces(),
            "tester": {"netns": self.tester_ns, "interface": next(iter(self.tester_node.ifaces.values())).ifname},
            "dut": {"netns": None if self.external_dut else self.dut_ns},
            "tap": {"netns": self.switch_ns, "name": self.tap_name} if self.external_dut else None,
            "timings_s": {k: round(v, 3) for k, v in self.timings.items()},
        }
