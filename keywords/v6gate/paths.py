"""Where the project's data lives.  The package is installed editable from the
repository, so data is found relative to the repository root; V6GATE_HOME
overrides it (for an installed copy pointing at a checkout)."""

import datetime as dt
import os
import secrets
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


def new_run_id() -> str:
    """A run's id: six hex digits, in its directory's name and V6GATE_RUN_ID."""
    return secrets.token_hex(3)


def new_run_dir(run_id: str) -> Path:
    """``reports/runs/<UTC time>-<run id>/``, made now (every front-end's run directory)."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    d = REPORTS / "runs" / f"{stamp}-{run_id}"
    d.mkdir(parents=True, exist_ok=True)
    return d
