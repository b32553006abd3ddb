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
