"""The impostor: a responder on the DUT's link that answers *as the DUT*
(its MAC and addresses), to simulate a stack that breaks a rule the Linux
kernel keeps.  It runs as a thread of the harness with a packet socket
opened inside the DUT's namespace, so it sees exactly what the DUT receives
and its frames leave through the DUT's own interface.

Rules live in ``v6gate/lab/impostor_rules/`` (one module per area) and are
named by faults: ``impostor: {rule: answer_invalid_ns, params: {...}}``.
A rule is called as ``rule(pkt, dut, impostor=<Impostor>, **params)`` (the
``impostor`` keyword only if the rule accepts it).  ``dut`` is a dict
(``mac``, ``link_local``, ``addresses``, ``prefix``, and ``netns``/``ifname``
of the lab DUT).  The rule returns the frames to send at once; besides that it
may

* keep memory for the impostor's lifetime in ``impostor.state`` (a simulated
  protocol client with its own transaction state),
* send later with ``impostor.later(seconds, frames)`` where ``frames`` is a
  list or a callable producing it when the timer fires (a stack's timers:
  a reassembly timeout, retransmissions), or at once with ``impostor.send``,
* see what the DUT sends too (``@rule(name, outgoing=True)``: the rule is
  also called with the DUT's outgoing frames, its own included),
* *react* in the DUT's namespace (``impostor.ns``), e.g. install the
  neighbour entry an invalid message would have created in a stack that
  skipped a validity test, so the kernel itself then behaves as that stack.

Everything stops with the impostor (timers cancelled, the port closed).
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


def rule(name: str, *, outgoing: bool = False):
    """Register a rule; ``outgoing``: it is also called with the frames the
    DUT sends (a simulated client acting on the DUT's own requests)."""

    def register(func):
        func.outgoing = outgoing
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
        self.ns = ns
        self.dut = {**dut, "netns": ns, "ifname": iface}
        self.port = Port(iface, ns)
        self.answers = 0
        self.state: dict = {}  # the rule's memory for this impostor's lifetime
        self._timers: list[threading.Timer] = []
        self._stopped = threading.Event()

    def start(self) -> Impostor:
        self.port.open()
        self.port.add_responder(self._on_frame)
        if getattr(self.rule, "outgoing", False):
            self.port.add_watcher(self._on_frame)
        return self

    def _on_frame(self, port: Port, frame: Frame) -> None:
        for reply in self.rule(frame.pkt, self.dut, **self.params) or ():
            self.answers += 1  # before the send: the check may read the count as soon as its answer arrives
            port.send(reply)

    def send(self, frames) -> None:
        """Send ``frames`` now (from a rule's timer); nothing once stopped."""
        for f in frames or ():
            if self._stopped.is_set():
                return
            with contextlib.suppress(Exception):  # the port closed under us: the fault is being removed
                self.port.send(f)
                self.answers += 1

    def later(self, seconds: float, frames: list | Callable[[], list]) -> threading.Timer:
        """Send ``frames`` after ``seconds`` unless the impostor stops first;
        a callable is called when the timer fires and its frames are sent."""

        def fire():
            if not self._stopped.is_set():
                self.send(frames() if callable(frames) else frames)

        timer = threading.Timer(max(0.0, seconds), fire)
        timer.daemon = True
        self._timers = [t for t in self._timers if t.is_alive()] + [timer]
        timer.start()
        return timer

    def stop(self) -> None:
        self._stopped.set()
        for timer in self._timers:
            timer.cancel()
        self.port.close()
