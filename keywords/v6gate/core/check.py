"""Checks: one testable behaviour each, registered with its references.

A check module (``v6gate/checks/<area>.py``) declares checks with ``@check``.
The declaration carries everything a report needs (IPv6 Ready test ID and
parts, RFC clause, the expected outcome in words, applicability, the lab
fault that must make it FAIL); the function holds the packets.

    @check(
        area="icmpv6", ipv6ready="v6LC.5.1.2", title="Replying to Echo Requests",
        rfc="RFC 4443 §4.2", fault="dut_drops_echo_request",
        expect="an Echo Reply with the request's identifier, sequence number and data",
        parts=[Part("A", "Request sent to the link-local address", dst="link_local"), ...],
    )
    def echo_request_is_answered(t): ...

Parts are data: ``Part(letter, title, **params)``; the function reads
``t.p.<param>``.  A part may override rfc, expect, fault, scope, profile and
capabilities.

Lab-side declarations (ignored for real devices, which bring their own):
``lab_services`` names optional services of the topology the check needs
(Kea, a NAT64 path, ...; a real target SKIPs such a check), ``dut_config``
names a DUT configuration of the topology (``nodes.dut.configs``: sysctls
and DUT-side daemons such as a DHCPv6 client) applied when the lab DUT is
rebuilt for the check.

``any_address=True``: the check needs some global address of the DUT, not
one in a prefix of its own (a path through the tester's router TR1: PMTU,
routed packets).  On a DUT whose address table is known to be small
(declared or discovered, core/room.py) it uses the address the DUT holds in
the link prefix (scenario/offlink.py) and takes no room that a check of
address forming needs.

``forms_addresses=False``: the check's RAs carry no prefix the DUT would
form an address from (it judges other RA fields).  On a DUT whose address
table is discovered, the checks of the address-forming areas (slaac, rd,
...) wait for room before their first probe; such a check does not.  An RA
of it that would form an address is a harness error (core/room.py).

``concurrent_parts=True``: each part drives a neighbour of its own and
shares only DUT state that is the same for all of them (the Neighbor Cache
checks: a fresh TN1 per part, the RA timers of the entry state).  On a DUT
the run does not rebuild, its consecutive parts run side by side in small
batches (core/together.py); a step whose DUT state the parts share goes
through the batch (``t.together``).  Needs ``forms_addresses=False``.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import SimpleNamespace

SCOPES = ("host", "router", "both")
PROFILES = ("default", "full")

#: What a check may need from the bench, and what that means for a target.
NEEDS = {
    "exclusive_router": "the tester must be the only router on the link",
    "reset": "the DUT must be reset to a fresh state before the check",
    "originate": "the DUT must be told to send traffic (ping) through the control adapter",
    "addresses": "the DUT's addresses must be readable through the control adapter",
    "lab_router": "the lab's real router (radvd) must serve the link",
    "no_reset": "the check runs against the DUT as it is (the lab must not rebuild it first)",
}


@dataclass(frozen=True)
class Part:
    letter: str | None
    title: str = ""
    params: dict = field(default_factory=dict)
    rfc: str | None = None
    expect: str | None = None
    fault: str | None = None
    scope: str | None = None
    profile: str | None = None
    capabilities: tuple[str, ...] | None = None
    ipv6ready: str | None = None
    uncontrollable: str | None = None

    def __init__(self, letter, title="", *, rfc=None, expect=None, fault=None, scope=None, profile=None,
                 capabilities=None, ipv6ready=None, uncontrollable=None, **params):
        object.__setattr__(self, "letter", letter)
        object.__setattr__(self, "title", title)
        object.__setattr__(self, "params", dict(params))
        object.__setattr__(self, "rfc", rfc)
        object.__setattr__(self, "expect", expect)
        object.__setattr__(self, "fault", fault)
        object.__setattr__(self, "scope", scope)
        object.__setattr__(self, "profile", profile)
        object.__setattr__(self, "capabilities", tuple(capabilities) if capabilities else None)
        object.__setattr__(self, "ipv6ready", ipv6ready)
        object.__setattr__(self, "uncontrollable", uncontrollable)


@dataclass
class Check:
    id: str
    area: str
    title: str
    rfc: str
    expect: str
    func: Callable
    ipv6ready: str | None = None
    parts: tuple[Part, ...] = (Part(None),)
    capabilities: tuple[str, ...] = ("Core",)
    scope: str = "both"
    fault: str | None = None
    profile: str = "default"
    needs: frozenset[str] = frozenset()
    liveness: str | None = "ns"
    kind: str = "check"
    doc: str = ""
    uncontrollable: str | None = None
    lab_services: frozenset[str] = frozenset()
    dut_config: str | None = None
    common_setup: tuple[str, ...] | None = None  # None: the area's (core/setup.py); () a cold start
    any_address: bool = False  # some global address of the DUT will do (see the module docstring)
    forms_addresses: bool | None = None  # False: its RAs form no address (see the module docstring); None: by area
    concurrent_parts: bool = False  # its parts may run side by side (see the module docstring)

    # resolved per part -------------------------------------------------------
    def part(self, letter: str | None) -> Part:
        for p in self.parts:
            if p.letter == letter:
                return p
        raise KeyError(f"{self.id} has no part {letter!r}")

    def rfc_of(self, part: Part) -> str:
        return part.rfc or self.rfc

    def expect_of(self, part: Part) -> str:
        return part.expect or self.expect

    def fault_of(self, part: Part) -> str | None:
        return part.fault or self.fault

    def scope_of(self, part: Part) -> str:
        return part.scope or self.scope

    def profile_of(self, part: Part) -> str:
        return part.profile or self.profile

    def capabilities_of(self, part: Part) -> tuple[str, ...]:
        return part.capabilities or self.capabilities

    def ipv6ready_of(self, part: Part) -> str | None:
        return part.ipv6ready or self.ipv6ready

    def title_of(self, part: Part) -> str:
        return f"{self.title}: {part.title}" if part.title else self.title

    def uncontrollable_of(self, part: Part) -> str | None:
        return part.uncontrollable or self.uncontrollable

    def keys(self) -> list[tuple[Check, Part]]:
        return [(self, p) for p in self.parts]


REGISTRY: dict[str, Check] = {}
_ID = re.compile(r"^[a-z0-9_]+\.[a-z0-9_]+$")


def check(*, area: str, title: str, rfc: str, expect: str, ipv6ready: str | None = None,
          parts: Iterable[Part] | None = None, capabilities: Iterable[str] = ("Core",), scope: str = "both",
          fault: str | None = None, profile: str = "default", needs: Iterable[str] = (),
          liveness: str | None = "ns", kind: str = "check", uncontrollable: str | None = None,
          lab_services: Iterable[str] = (), dut_config: str | None = None, id: str | None = None,
          common_setup: Iterable[str] | None = None, any_address: bool = False,
          forms_addresses: bool | None = None, concurrent_parts: bool = False):
    """Register a check.  See the module docstring."""

    def register(func: Callable) -> Callable:
        check_id = id or f"{area}.{func.__name__}"
        if not _ID.match(check_id):
            raise ValueError(f"check id {check_id!r} must look like area.behaviour_in_words")
        if check_id in REGISTRY and REGISTRY[check_id].func is not func:
            raise ValueError(f"duplicate check id {check_id}")
        if scope not in SCOPES or profile not in PROFILES:
            raise ValueError(f"{check_id}: scope must be one of {SCOPES}, profile one of {PROFILES}")
        unknown = set(needs) - set(NEEDS)
        if unknown:
            raise ValueError(f"{check_id}: unknown needs {sorted(unknown)}; known: {sorted(NEEDS)}")
        if concurrent_parts and (forms_addresses is not False or "reset" in needs):
            raise ValueError(f"{check_id}: concurrent_parts needs forms_addresses=False and no reset (parts that "
                             "run side by side share the DUT's address table and cannot each reset it)")
        plist = tuple(parts) if parts else (Part(None),)
        letters = [p.letter for p in plist]
        if len(set(letters)) != len(letters):
            raise ValueError(f"{check_id}: duplicate part letters {letters}")
        c = Check(id=check_id, area=area, title=title, rfc=rfc, expect=expect, func=func, ipv6ready=ipv6ready,
                  parts=plist, capabilities=tuple(capabilities), scope=scope, fault=fault, profile=profile,
                  needs=frozenset(needs), liveness=liveness, kind=kind, doc=(func.__doc__ or "").strip(),
                  uncontrollable=uncontrollable, lab_services=frozenset(lab_services), dut_config=dut_config,
                  common_setup=tuple(common_setup) if common_setup is not None else None,
                  any_address=any_address, forms_addresses=forms_addresses, concurrent_parts=concurrent_parts)
        REGISTRY[check_id] = c
        # for callers that hold the function
        func.check = c  # type: ignore[attr-defined]
        return func

    return register


_loaded = False
#: where ``load_all`` finds the check modules, by name: they import the framework (core), which does not
#: import them (the layers run checks -> scenario -> core -> net; a plugin package is found, not imported)
CHECK_PACKAGES = ("v6gate.checks",)


def load_all() -> dict[str, Check]:
    """Import every check module (v6gate.checks.*) once and return the registry."""
    global _loaded
    if not _loaded:
        for name in CHECK_PACKAGES:
            pkg = importlib.import_module(name)
            # one module per area, or a package per area with a module per section (checks/nd/...);
            # modules and packages whose name starts with "_" hold shared helpers, not checks
            for mod in sorted(pkgutil.walk_packages(pkg.__path__, prefix=f"{pkg.__name__}."), key=lambda m: m.name):
                if not any(part.startswith("_") for part in mod.name.split(".")[2:]):
                    importlib.import_module(mod.name)
        _loaded = True
    return REGISTRY


def all_items(*, areas: Iterable[str] | None = None, profile: str = "default", kind: str | None = "check",
              ids: Iterable[str] | None = None) -> list[tuple[Check, Part]]:
    """Every (check, part) selected, in a stable order.  profile 'full' includes 'default'."""
    load_all()
    areas = set(areas) if areas else None
    ids = set(ids) if ids else None
    out = []
    for c in sorted(REGISTRY.values(), key=lambda c: (c.area, c.ipv6ready or "~", c.id)):
        if areas and c.area not in areas:
            continue
        if kind and c.kind != kind:
            continue
        for p in c.parts:
            if ids and c.id not in ids and f"{c.id}#{p.letter}" not in ids:
                continue
            prof = c.profile_of(p)
            if profile == "default" and prof != "default":
                continue
            out.append((c, p))
    return out


def find(check_id: str) -> Check:
    load_all()
    try:
        return REGISTRY[check_id]
    except KeyError:
        from ..errors import UsageError

        close = [k for k in REGISTRY if check_id.split(".")[-1] in k][:3]
        hint = f" (did you mean {', '.join(close)}?)" if close else "; run 'v6gate list' to see them"
        raise UsageError(f"unknown check id {check_id!r}{hint}") from None


def params_of(part: Part) -> SimpleNamespace:
    return SimpleNamespace(**part.params)
