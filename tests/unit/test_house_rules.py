"""The rules of the house the code keeps as it grows (issue 36), checked on
the source: a check states its verdict one way (docs/writing-checks.md)."""

import ast
from pathlib import Path

import v6gate

PKG = Path(v6gate.__file__).parent
RETIRED = {"verdict": "t.verdict(ok, seen) is retired",
           "passed": "t.passed is a half of t.conclude",
           "failed": "t.failed is a half of t.conclude"}


def _calls(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RETIRED:
            yield node


def test_checks_end_on_the_one_verdict_path():
    """A check ends in ``return t.conclude(seen, problems)``, ``raise
    Deviation(...)``, ``raise t.not_judged(...)`` or a SKIP/ERROR exception;
    ``t.passed``/``t.failed`` only where ``conclude`` cannot say it, with the
    reason on the line (``# verdict: ...``)."""
    bad = []
    for path in sorted((PKG / "checks").rglob("*.py")):
        lines = path.read_text().splitlines()
        for call in _calls(path):
            if "# verdict:" not in lines[call.lineno - 1]:
                bad.append(f"{path.relative_to(PKG)}:{call.lineno}: {RETIRED[call.func.attr]}")
    assert not bad, ("use t.conclude(seen, problems) or raise Deviation(problem) (docs/writing-checks.md):\n"
                     + "\n".join(bad))


#: the packages of v6gate by layer, highest first: a module imports only its own layer and the ones below
#: (docs/writing-checks.md, "The layers"); modules at the top level of the package count as their own units
LAYERS = [
    {"cli", "commands", "cli_guard", "scope_guard", "pytest_plugin", "robot", "campaign"},
    {"report", "audit"},
    {"checks"},
    {"gates"},
    {"scenario", "ipsec"},
    {"core", "runlock"},
    {"lab"},
    {"net"},
    {"util", "errors", "paths", "yamlfile", "untrusted", "target_values", "__init__"},
]
#: imports that run back up, each with the reason it is still there
BACK_UP: dict[tuple[str, str], str] = {}


def _imports() -> dict[tuple[str, str], list[str]]:
    """(importing unit, imported unit) -> 'module -> module' for every import of v6gate by v6gate, at module
    level or inside functions."""
    modules = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = p
    unit = lambda mod: mod.split(".")[1] if "." in mod else "__init__"  # noqa: E731
    arrows: dict[tuple[str, str], list[str]] = {}
    for mod, p in modules.items():
        for node in ast.walk(ast.parse(p.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if p.name == "__init__.py" else mod.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
                targets = subs or [target]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                if target.startswith("v6gate") and unit(target) != unit(mod):
                    arrows.setdefault((unit(mod), unit(target)), []).append(f"{mod} -> {target}")
    return arrows


def test_imports_run_down_the_layers():
    layer = {u: i for i, units in enumerate(LAYERS) for u in units}
    arrows = _imports()
    unknown = sorted({u for pair in arrows for u in pair} - set(layer))
    assert not unknown, f"place these packages in a layer (LAYERS): {unknown}"
    up = {pair: mods for pair, mods in arrows.items() if layer[pair[1]] < layer[pair[0]] and pair not in BACK_UP}
    assert not up, "imports that run back up the layers (move the shared code down, or ask the session or the " \
                    "control adapter):\n" + "\n".join(m for mods in up.values() for m in mods)
    assert set(BACK_UP) <= set(arrows), f"no longer needed in BACK_UP: {set(BACK_UP) - set(arrows)}"


def test_no_package_cycle():
    arrows = _imports()
    graph: dict[str, set[str]] = {}
    for a, b in arrows:
        graph.setdefault(a, set()).add(b)
    seen: dict[str, int] = {}  # 1 on the path, 2 done

    def visit(n: str, path: list[str]) -> list[str] | None:
        seen[n] = 1
        for m in sorted(graph.get(n, ())):
            if seen.get(m) == 1:
                return [*path[path.index(m):], m] if m in path else [n, m]
            if m not in seen and (cycle := visit(m, [*path, m])):
                return cycle
        seen[n] = 2
        return None

    for n in sorted(graph):
        if n not in seen:
            cycle = visit(n, [n])
            assert cycle is None, f"a circle of imports between packages: {' -> '.join(cycle)}"


def test_net_is_packet_code():
    """net/ holds packets and protocols: it never imports the check framework or the scenario layer."""
    bad = [m for (a, b), mods in _imports().items() if a == "net" and b in ("core", "scenario", "checks", "lab")
           for m in mods]
    assert not bad, bad


def test_every_import_of_v6gate_names_a_module_that_exists():
    """Imports inside functions too: a module that moved is found by every import of it, not by the first run
    that takes that branch."""
    modules = set()
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        modules.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    bad = []
    for p in sorted(PKG.rglob("*.py")):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        mod = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("v6gate")):
                base = mod.split(".") if p.name == "__init__.py" else mod.split(".")[:-1]
                target = node.module or "" if not node.level else ".".join(
                    base[:len(base) - (node.level - 1)] + ([node.module] if node.module else []))
                if target not in modules:
                    bad.append(f"{p.relative_to(PKG)}:{node.lineno}: no module {target}")
    assert not bad, "\n".join(bad)
