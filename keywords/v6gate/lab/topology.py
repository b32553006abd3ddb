"""Lab topologies as data (fixtures/lab/*.yaml), validated on load."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import yamlfile
from ..errors import UsageError
from ..paths import FIXTURES

DEFAULT_TOPOLOGY = FIXTURES / "lab" / "topology.yaml"
_NAME = re.compile(r"^[a-z][a-z0-9]{0,7}$")
_MAC = re.compile(r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$")


@dataclass
class Iface:
    link: str
    ifname: str
    mac: str | None
    addresses: list[str]


@dataclass
class Node:
    name: str
    role: str
    ifaces: dict[str, Iface]
    sysctl: dict
    neigh: dict
    services: list[dict]
    ready: dict
    configs: dict = field(default_factory=dict)


@dataclass
class Link:
    name: str
    mtu: int
    prefix: ipaddress.IPv6Network | None
    multicast_snooping: bool


@dataclass
class Topology:
    name: str
    description: str
    links: dict[str, Link]
    nodes: dict[str, Node]
    path: str
    extra: dict = field(default_factory=dict)

    def node_with_role(self, role: str) -> Node:
        for n in self.nodes.values():
            if n.role == role:
                return n
        raise UsageError(f"{self.path}: no node with role '{role}'; add one (roles: dut, tester, router)")


def _bad(path, where, problem, fix):
    return UsageError(f"{path}: {where}: {problem}; {fix}")


def load_topology(path: str | Path | None = None) -> Topology:
    path = Path(path or DEFAULT_TOPOLOGY)
    if not path.exists():
        raise UsageError(f"{path}: topology file not found; pass an existing file under fixtures/lab/")
    doc = yamlfile.load_data_file(path, "topology file")
    if not isinstance(doc, dict) or "nodes" not in doc or "links" not in doc:
        raise _bad(path, "(top level)", "needs 'links' and 'nodes'", "start from fixtures/lab/topology.yaml")
    links = {}
    for name, spec in (doc["links"] or {}).items():
        if not _NAME.match(name):
            raise _bad(path, f"links.{name}", "bad name", "use 1-8 lowercase letters/digits")
        spec = spec or {}
        prefix = ipaddress.IPv6Network(spec["prefix"]) if spec.get("prefix") else None
        links[name] = Link(name, int(spec.get("mtu", 1500)), prefix, bool(spec.get("multicast_snooping", False)))
    nodes = {}
    roles = []
    for name, spec in (doc["nodes"] or {}).items():
        if not _NAME.match(name) or name == "sw":
            raise _bad(path, f"nodes.{name}", "bad node name", "use 1-8 lowercase letters/digits, not 'sw'")
        spec = spec or {}
        ifaces = {}
        for link, ispec in (spec.get("ifaces") or {}).items():
            if link not in links:
                raise _bad(path, f"nodes.{name}.ifaces.{link}", "unknown link", f"use one of {sorted(links)}")
            mac = (ispec.get("mac") or "").lower() or None
            if mac and not _MAC.match(mac):
                raise _bad(path, f"nodes.{name}.ifaces.{link}.mac", f"{mac!r} is not a MAC", "write aa:bb:cc:dd:ee:ff")
            ifaces[link] = Iface(link, ispec.get("ifname", "eth0"), mac, list(ispec.get("addresses", [])))
        role = spec.get("role", name)
        roles.append(role)
        configs = {}
        for cname, cspec in (spec.get("configs") or {}).items():
            cspec = cspec or {}
            unknown = set(cspec) - {"description", "sysctl", "neigh", "services", "ready", "stand_in"}
            if unknown:
                raise _bad(path, f"nodes.{name}.configs.{cname}", f"unknown keys {sorted(unknown)}",
                           "use description, sysctl, neigh, services, ready, stand_in")
            si = cspec.get("stand_in")
            if si is not None and (not isinstance(si, dict) or "name" not in si):
                raise _bad(path, f"nodes.{name}.configs.{cname}.stand_in", "needs a service 'name'",
                           "name the service of the device that stands in for the DUT (keywords/v6gate/lab/stand_in.py)")
            configs[cname] = {"description": cspec.get("description", ""), "sysctl": dict(cspec.get("sysctl") or {}),
                              "neigh": dict(cspec.get("neigh") or {}),
                              "services": list(cspec.get("services") or []), "ready": dict(cspec.get("ready") or {}),
                              "stand_in": dict(si) if si else None}
        for svc in spec.get("services") or []:
            if not isinstance(svc, dict) or "name" not in svc:
                raise _bad(path, f"nodes.{name}.services", "each service needs a 'name'", "see fixtures/lab/topology.yaml")
        nodes[name] = Node(name, role, ifaces, dict(spec.get("sysctl") or {}), dict(spec.get("neigh") or {}),
                           list(spec.get("services") or []), dict(spec.get("ready") or {}), configs)
    for required in ("dut", "tester"):
        if required not in roles:
            raise _bad(path, "nodes", f"no node with role '{required}'", f"add a '{required}' node")
    extra = {k: v for k, v in doc.items() if k not in ("name", "description", "links", "nodes")}
    return Topology(doc.get("name", path.stem), doc.get("description", ""), links, nodes, str(path), extra)
