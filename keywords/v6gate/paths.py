"""Where the project's data lives.  The package is installed editable from the
repository, so data is found relative to the repository root; V6GATE_HOME
overrides it (for an installed copy pointing at a checkout)."""

import os
from pathlib import Path

ROOT = Path(os.environ.get("V6GATE_HOME") or Path(__file__).resolve().parents[2])
FIXTURES = ROOT / "fixtures"
REPORTS = ROOT / "reports"
SUITES = ROOT / "suites"
STATE_DIR = Path(os.environ.get("V6GATE_STATE_DIR", "/run/v6gate"))


def shown(path) -> str:
    """A path as reports show it: relative to the repository when inside it."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return str(p)
