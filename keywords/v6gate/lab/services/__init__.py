"""Lab services: real daemons the topology asks for, one module each.

A service module registers a class with ``@service("name")``.  Modules in this
package are imported automatically, so adding an area's daemon (Kea, a DHCPv6
client, tayga, ...) means adding one file here and naming it in a topology.
"""

from __future__ import annotations

import importlib
import pkgutil
from string import Template

from ...errors import LabError
from ...paths import FIXTURES

SERVICES: dict[str, type] = {}
TEMPLATES = FIXTURES / "lab" / "templates"


def service(name: str):
    def register(cls):
        cls.kind = name
        SERVICES[name] = cls
        return cls

    return register


class Service:
    """Base class.  Subclasses implement start(); stop() kills the daemons."""

    kind = "?"
    #: Services that only make sense in a namespace of this role
    defaults: dict = {}

    def __init__(self, lab, node: str, spec: dict):
        self.lab = lab
        self.node = node
        self.spec = spec
        self.params = {**self.defaults, **spec.get("params", {})}
        self.sid = spec.get("id", spec["name"])
        self.daemons = []

    @property
    def ns(self) -> str:
        return self.lab.ns(self.node)

    def ifname(self, link: str | None = None) -> str:
        link = link or self.spec.get("iface")
        return self.lab.topology.nodes[self.node].ifaces[link].ifname

    def render(self, template: str, dest_name: str, **params) -> str:
        path = TEMPLATES / template
        try:
            text = Template(path.read_text()).substitute(params)
        except KeyError as exc:
            raise LabError(f"template {path} needs parameter {exc}") from None
        dest = self.lab.workdir / f"{self.node}-{dest_name}"
        dest.write_text(text)
        return str(dest)

    def start(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def stop(self) -> None:
        for d in self.daemons:
            d.stop()
        self.daemons = []

    def running(self) -> bool:
        return bool(self.daemons) and all(d.alive() for d in self.daemons)

    def records(self) -> list[dict]:
        return [d.record() for d in self.daemons if d.pid]


def build(lab, node: str, spec: dict) -> Service:
    name = spec.get("name")
    if name not in SERVICES:
        raise LabError(f"topology names unknown service {name!r}; known: {', '.join(sorted(SERVICES))}")
    return SERVICES[name](lab, node, spec)


def _import_all() -> None:
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")


_import_all()
