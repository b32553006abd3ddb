"""The impostor: a responder on the DUT's link that answers *as the DUT*
(its MAC and addresses), to simulate a stack that breaks a rule the Linux
kernel keeps.  It runs as a thread of the harness with a packet socket
opened inside the DUT's namespace, so it sees exactly what the DUT receives
and its frames leave through the DUT's own interface.

Rules live in ``v6gate/lab/impostor_rules/`` (one module per area) and are
named by faults: ``impostor: {rule: answer_invalid_ns, params: {...}}``.

A rule is called as ``rule(pkt, dut, _impostor=<Impostor>, **params)``.  Rules
that need memory or must send later (a simulated protocol client with
retransmission timers) keep it in ``_impostor.state`` and schedule frames
with ``_impostor.later(delay, frames)``; everything stops with the impostor.
"""

from __future__ import annotations

import contextlib
import importlib
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
        self.dut = dut
        self.port = Port(iface, ns)
        self.answers = 0
        self.state: dict = {}  # the rule's memory for this impostor's lifetime
        self._timers: list[threading.Timer] = []
        self._stopped = threading.Event()

    def start(self) -> Impostor:
        self.port.open()
        self.port.add_responder(self._on_frame)
        return self

    def _on_frame(self, port: Port, frame: Frame) -> None:
        for reply in self.rule(frame.pkt, self.dut, _impostor=self, **self.params) or ():
            port.send(reply)
            self.answers += 1

    def send(self, frames) -> None:
        """Send frames now (from a rule's timer); nothing once stopped."""
        for f in frames or ():
            if self._stopped.is_set():
                return
            with contextlib.suppress(Exception):  # the port closed under us: the fault is being removed
                self.port.send(f)
                self.answers += 1

    def later(self, delay: float, produce: Callable[[], list]) -> threading.Timer:
        """Call ``produce()`` after ``delay`` seconds and send the frames it returns."""
        def fire():
            if not self._stopped.is_set():
                self.send(produce())

        timer = threading.Timer(max(0.0, delay), fire)
        timer.daemon = True
        self._timers = [t for t in self._timers if t.is_alive()] + [timer]
        timer.start()
        return timer

    def stop(self) -> None:
        self._stopped.set()
        for t in self._timers:
            t.cancel()
        self.port.close()
