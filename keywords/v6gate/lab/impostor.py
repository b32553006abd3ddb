"""The impostor: a responder on the DUT's link that answers *as the DUT*
(its MAC and addresses), to simulate a stack that breaks a rule the Linux
kernel keeps.  It runs as a thread of the harness with a packet socket
opened inside the DUT's namespace, so it sees exactly what the DUT receives
and its frames leave through the DUT's own interface.

Rules live in ``v6gate/lab/impostor_rules/`` (one module per area) and are
named by faults: ``impostor: {rule: answer_invalid_ns, params: {...}}``.

A rule receives the DUT as a dict (``mac``, ``link_local``, ``addresses``,
``prefix``, and ``netns``/``ifname`` of the lab DUT).  Besides answering, a
rule may *react* in the DUT's namespace (e.g. install the neighbour entry an
invalid message would have created in a stack that skipped a validity test),
so the kernel itself then behaves as that stack would.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

from ..errors import LabError
from ..net.port import Frame, Port

RULES: dict[str, Callable] = {}


def rule(name: str):
    def register(func):
        RULES[name] = func
        return func

    return register


def _load_rules() -> None:
    from . import impostor_rules

    for mod in pkgutil.iter_modules(impostor_rules.__path__):
        importlib.import_module(f"{impostor_rules.__name__}.{mod.name}")


class Impostor:
    def __init__(self, ns: str, iface: str, spec: dict, dut: dict):
        _load_rules()
        name = spec.get("rule")
        if name not in RULES:
            raise LabError(f"unknown impostor rule {name!r}; known: {', '.join(sorted(RULES))}")
        self.rule = RULES[name]
        self.params = dict(spec.get("params") or {})
        self.dut = {**dut, "netns": ns, "ifname": iface}
        self.port = Port(iface, ns)
        self.answers = 0

    def start(self) -> Impostor:
        self.port.open()
        self.port.add_responder(self._on_frame)
        return self

    def _on_frame(self, port: Port, frame: Frame) -> None:
        for reply in self.rule(frame.pkt, self.dut, **self.params) or ():
            port.send(reply)
            self.answers += 1

    def stop(self) -> None:
        self.port.close()
