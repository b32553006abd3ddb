"""What a gate is made of, each piece registered by the module that provides
it (docs/writing-gates.md):

* a **workload** (``gates/workloads/<name>.py``, one module each): what one
  trial runs and which metrics it measures; it registers itself with
  ``register_workload(Workload(...))`` when its module is imported;
* a **comparison** (``gates/comparisons.py``): the arms a gate compares
  (IPv4 vs IPv6, offload off vs on, without vs with a Destination Options
  header; or one arm against a target; or a check of facts) and how the
  verdict is decided.

A gate's profile (``fixtures/gates/profiles.yaml``) names one of each;
``gates/profiles.py`` validates the pair against what they registered, and
``gates/run.py`` hands the profile to its comparison.  Nothing dispatches on
a workload's or a comparison's name.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..errors import UsageError


@dataclass(frozen=True)
class Workload:
    """A workload, as its module registers it.

    ``trial(bench, prof, family, *, baseline, **arm)`` runs one trial of one
    arm of a paired comparison (``arm`` as the comparison gives it, e.g.
    ``header="dstopts"``) and returns an ``engine.Measure``; ``alternate(bench,
    prof, order)`` runs both arms in one finely alternated trial (profile
    ``params.interleave: slices``); ``sample(t, prof, i)`` is one trial of a
    target comparison, measured on the tester's wire; ``judge(facts, prof)``
    gives ``(problems, facts)`` for a comparison of facts (``parity``);
    ``decide(t, prof, bench)`` takes a paired comparison over where the
    workload decides its own way (the payload sweep: one decision per size).
    ``check_params(params, compare)`` says what is wrong with the profile's
    ``params`` for this workload, as ``(field, problem, fix)``, or None."""

    name: str
    compare: frozenset[str]
    metrics: Mapping[str, tuple[str, bool]]  # name -> (unit, higher is better)
    params: frozenset[str] = frozenset()
    trial: Callable | None = None
    alternate: Callable | None = None
    sample: Callable | None = None
    judge: Callable | None = None
    decide: Callable | None = None
    check_params: Callable | None = None
    slice_s: float = 0.05  # the slice of an alternated trial (params.slice_s) when the profile gives none


@dataclass(frozen=True)
class Comparison:
    """A comparison, as ``gates/comparisons.py`` registers it.

    ``run(t, prof, workload)`` returns the gate's Outcome.  ``arms`` are the
    two sides of a paired comparison (the baseline first), ``("dut",)`` for
    a target, ``()`` for a check of facts.  What a profile must say for it:
    ``target`` (a number per metric), ``family`` (one family for the whole
    gate); ``judges_metrics``: False where nothing is measured (facts)."""

    name: str
    run: Callable
    arms: tuple[str, ...] = ()
    needs_target: bool = False
    needs_family: bool = False
    judges_metrics: bool = True
    arms_are_families: bool = False
    families: Callable | None = None  # prof -> the address families the gate needs (SKIP early without one)
    measure: Callable | None = None  # (t, prof, bench, workload) -> (arm -> Measure, cleanup)
    order_statistics: bool = False  # decided on an order-statistics interval (target), not the profile's method

    @property
    def paired(self) -> bool:
        return len(self.arms) == 2


_WORKLOADS: dict[str, Workload] = {}
_COMPARISONS: dict[str, Comparison] = {}
_LOADED = False


def register_workload(w: Workload) -> Workload:
    if w.name in _WORKLOADS and _WORKLOADS[w.name] != w:
        raise ValueError(f"workload {w.name!r} registered twice")
    _WORKLOADS[w.name] = w
    return w


def register_comparison(c: Comparison) -> Comparison:
    if c.name in _COMPARISONS and _COMPARISONS[c.name] != c:
        raise ValueError(f"comparison {c.name!r} registered twice")
    _COMPARISONS[c.name] = c
    return c


def _load() -> None:
    """Import every workload module and the comparisons (they register themselves)."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    from . import comparisons, workloads  # noqa: F401

    for m in pkgutil.iter_modules(workloads.__path__):
        if not m.name.startswith("_"):
            importlib.import_module(f"{workloads.__name__}.{m.name}")


def workloads() -> dict[str, Workload]:
    _load()
    return _WORKLOADS


def comparisons() -> dict[str, Comparison]:
    _load()
    return _COMPARISONS


def workload(name: str) -> Workload:
    w = workloads().get(name)
    if w is None:
        raise UsageError(f"no gate workload {name!r}; known: {', '.join(sorted(_WORKLOADS))}")
    return w


def comparison(name: str) -> Comparison:
    c = comparisons().get(name)
    if c is None:
        raise UsageError(f"no gate comparison {name!r}; known: {', '.join(sorted(_COMPARISONS))}")
    return c
