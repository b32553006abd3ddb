"""The impostor: a responder on the DUT's link that answers *as the DUT*
(its MAC and addresses), to simulate a stack that breaks a rule the Linux
kernel keeps.  It runs as a thread of the harness with a packet socket
opened inside the DUT's namespace, so it sees exactly what the DUT receives
and its frames leave through the DUT's own interface.

Rules live in ``v6gate/lab/impostor_rules/`` (one module per area) and are
named by faults: ``impostor: {rule: answer_invalid_ns, params: {...}}``.
A rule is called as ``rule(pkt, dut, impostor=<Impostor>, **params)``; it
returns the frames to send at once, and may schedule later ones with
``impostor.later(seconds, frames)`` (a stack's timers, e.g. a reassembly
timeout) or act on the DUT's namespace (``impostor.ns``).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import pkgutil
import threading
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
        sig = inspect.signature(self.rule).parameters
        if "impostor" in sig or any(p.kind is p.VAR_KEYWORD for p in sig.values()):
            self.params["impostor"] = self
        self.dut = dut
        self.ns = ns
        self.port = Port(iface, ns)
        self.answers = 0
        self._timers: list[threading.Timer] = []

    def start(self) -> Impostor:
        self.port.open()
        self.port.add_responder(self._on_frame)
        return self

    def _on_frame(self, port: Port, frame: Frame) -> None:
        for reply in self.rule(frame.pkt, self.dut, **self.params) or ():
            port.send(reply)
            self.answers += 1

    def later(self, seconds: float, frames) -> None:
        """Send ``frames`` after ``seconds`` (unless the impostor stops first)."""

        def fire():
            with contextlib.suppress(Exception):
                for f in frames:
                    self.port.send(f)
                    self.answers += 1

        timer = threading.Timer(seconds, fire)
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    def stop(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self.port.close()
