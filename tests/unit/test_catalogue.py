"""Every declared check is complete: references, a stated expectation, and
a way to prove it FAILs (a lab fault that exists, or a written reason why
the lab cannot); every fault and impostor rule it names exists."""

import re

import pytest
import yaml

from v6gate.core.check import all_items, load_all
from v6gate.lab.faults import load_faults
from v6gate.lab.impostor import RULES, _load_rules
from v6gate.paths import FIXTURES

ITEMS = all_items(profile="full", kind=None)
CHECKLIST = {t["id"]: t for t in yaml.safe_load((FIXTURES / "ipv6ready" / "host-checklist.yaml").read_text())["tests"]}


def test_there_are_checks():
    assert len(load_all()) >= 5


@pytest.mark.parametrize("item", ITEMS, ids=[f"{c.id}#{p.letter}" for c, p in ITEMS])
def test_check_part_is_fully_declared(item):
    c, p = item
    assert re.search(r"RFC \d{3,4}", c.rfc_of(p)), f"{c.id}: rfc must name an RFC"
    assert len(c.expect_of(p)) > 20, f"{c.id}: state the expected outcome in words"
    assert c.title_of(p)
    assert c.doc, f"{c.id}: the check function needs a docstring quoting the RFC intent"
    ref = c.ipv6ready_of(p)
    if ref is not None:
        assert ref in CHECKLIST, f"{c.id}: {ref} is not in fixtures/ipv6ready/host-checklist.yaml"
        entry = CHECKLIST[ref]
        if p.letter and len(p.letter) == 1:
            assert ord(p.letter) - ord("A") < entry["parts"], f"{c.id}: {ref} has only {entry['parts']} parts"
        if entry["scope"] == "R":
            assert c.scope_of(p) == "router", f"{c.id}: {ref} is router-only in the checklist"
    fault = c.fault_of(p)
    if c.scope_of(p) != "router" and not c.uncontrollable_of(p):
        assert fault, f"{c.id}#{p.letter}: name the lab fault that must make it FAIL (or why none can)"
    if fault:
        assert fault in load_faults(), f"{c.id}: fault {fault!r} is not in fixtures/faults/*.yaml"


def test_every_impostor_rule_named_by_a_fault_exists():
    _load_rules()
    for f in load_faults().values():
        if f.impostor:
            assert f.impostor["rule"] in RULES, f"{f.name}: unknown impostor rule {f.impostor['rule']}"


def test_every_fault_is_used():
    used = {c.fault_of(p) for c, p in ITEMS}
    from v6gate.core.target import load_target

    lab = load_target(FIXTURES / "targets" / "lab.yaml")
    used |= {w.corrective_fault for w in lab.waivers}
    # faults the lab tests name for checks of capabilities the lab target does not claim (the project's
    # simulated clients, tests/lab/test_simulated_clients.py: their PASS side)
    import re

    for test in (FIXTURES.parent / "tests" / "lab").glob("test_*.py"):
        used |= set(re.findall(r'"([a-z0-9_]+)"', test.read_text())) & set(load_faults())
    # and the simulated peers the controls run such parts against (stands_in_for: their PASS side)
    used |= {f.name for f in load_faults().values() if f.stands_in_for}
    unused = sorted(set(load_faults()) - used - {None})
    assert not unused, f"faults nobody uses (delete or use them): {unused}"


def test_lab_waivers_name_real_checks_and_corrective_faults():
    from v6gate.core.target import load_target

    registry = load_all()
    for w in load_target(FIXTURES / "targets" / "lab.yaml").waivers:
        assert w.check in registry, f"waiver for unknown check {w.check} in {w.source}"
        assert w.rfc and w.observed, f"{w.check}: a documented deviation needs rfc and observed ({w.source})"
        assert w.corrective_fault in load_faults(), f"{w.check}: corrective fault {w.corrective_fault!r} missing"
