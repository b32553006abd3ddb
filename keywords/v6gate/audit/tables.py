"""The audit's user files (inventory, exception register, plan), read as
untrusted input: JSON and YAML through the project's one loader
(``v6gate.untrusted``: size, depth, nodes, duplicate keys, no aliases);
CSV (chosen by the suffix) as bounded text with bounded rows and fields;
every problem one line naming the file (and the row), exit 2."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from .. import untrusted
from ..errors import UsageError

MAX_ROWS = 1_000_000
MAX_FIELD = 4096  # characters in one field
#: an inventory of a few hundred thousand assets (some 10 values each) is larger than a target file: only the
#: size and the node count are raised, and a person's inventory has no use for YAML aliases
LIMITS = untrusted.CONFIG.but(max_bytes=64 << 20, max_nodes=5_000_000, aliases=False)


def _limits(what: str) -> untrusted.Limits:
    return LIMITS.but(kind=what)


def read_document(path, what: str):
    """A JSON or YAML file (by suffix), through ``untrusted.load``."""
    return untrusted.load(Path(path), _limits(what))


def read_rows(path, what: str, columns: tuple, required: tuple) -> list[tuple[str, dict]]:
    """Rows of ``columns`` (``required`` ones present) from a CSV file with a header line, or a JSON/YAML
    list of mappings (or a mapping with that list under its one key); each as (where, row)."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        rows = _csv(path, what)
    else:
        doc = read_document(path, what)
        if isinstance(doc, dict) and len(doc) == 1 and isinstance(next(iter(doc.values())), list):
            doc = next(iter(doc.values()))
        if not isinstance(doc, list):
            raise UsageError(f"{path}: an {what} is a list of rows with {', '.join(columns)}")
        rows = []
        for i, r in enumerate(doc):
            if not isinstance(r, dict):
                raise UsageError(f"{path}: row {i + 1} is not a mapping of {', '.join(columns)}")
            rows.append((f"{path}: row {i + 1}", r))
    if len(rows) > MAX_ROWS:
        raise UsageError(f"{path}: {len(rows)} rows, more than {MAX_ROWS}; split the {what}")
    for where, r in rows:
        unknown = sorted(str(k) for k in set(r) - set(columns))
        if unknown:
            raise UsageError(f"{where}: unknown column {unknown[0][:40]!r}; an {what} has {', '.join(columns)}")
        missing = [c for c in required if r.get(c) in (None, "")]
        if missing:
            raise UsageError(f"{where}: {missing[0]} is missing")
        for k, v in r.items():
            if isinstance(v, (dict, bool)) or (isinstance(v, list) and any(isinstance(x, (dict, list)) for x in v)):
                raise UsageError(f"{where}: {k} must be text (or a list of text)")
    return rows


def _csv(path: Path, what: str) -> list[tuple[str, dict]]:
    text = untrusted.read_text(path, _limits(what))
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[tuple[str, dict]] = []
    try:
        header = next(reader, None)
        if not header:
            raise UsageError(f"{path}: empty; an {what} CSV starts with a header line")
        header = [h.strip().lower() for h in header]
        if len(set(header)) != len(header):
            raise UsageError(f"{path}: a column is named twice in the header line")
        for row in reader:
            where = f"{path}: line {reader.line_num}"
            if not any(c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise UsageError(f"{where}: {len(row)} fields, the header has {len(header)}")
            if any(len(c) > MAX_FIELD for c in row):
                raise UsageError(f"{where}: a field longer than {MAX_FIELD} characters")
            rows.append((where, dict(zip(header, row))))
            if len(rows) > MAX_ROWS:
                raise UsageError(f"{path}: more than {MAX_ROWS} rows; split the {what}")
    except csv.Error as exc:
        raise UsageError(f"{path}: line {reader.line_num}: bad CSV ({exc})") from None
    return rows
