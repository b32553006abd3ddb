"""The audit's user files (inventory, exception register, plan) read
within limits: CSV, JSON or YAML, chosen by the file's suffix; size, rows,
fields, depth, nodes and aliases bounded; a key given twice is an error;
every problem one line naming the file (and the row), exit 2."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import yaml

from .. import yamlfile
from ..errors import UsageError

MAX_BYTES = 64 << 20  # an inventory of a few hundred thousand assets
MAX_ROWS = 1_000_000
MAX_FIELD = 4096  # characters in one field
MAX_DEPTH = 8
MAX_NODES = 5_000_000
MAX_ALIASES = 100


def _text(path: Path, what: str) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise UsageError(f"{path}: {size} bytes, more than an {what} file may hold ({MAX_BYTES}); split it")
        data = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: {what} file not found") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory; give the {what} file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the {what} file ({exc.strerror})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start}); save the {what} file as UTF-8") from None


def _walk(x, path: Path, depth: int = 0, count: list | None = None) -> None:
    count = count if count is not None else [0]
    count[0] += 1
    if count[0] > MAX_NODES:
        raise UsageError(f"{path}: more than {MAX_NODES} values; split the file")
    if depth > MAX_DEPTH:
        raise UsageError(f"{path}: nested more than {MAX_DEPTH} levels deep; the file is flat rows")
    if isinstance(x, dict):
        for _k, v in x.items():
            _walk(v, path, depth + 1, count)
    elif isinstance(x, list):
        for v in x:
            _walk(v, path, depth + 1, count)
    elif isinstance(x, str) and len(x) > MAX_FIELD:
        raise UsageError(f"{path}: a value of {len(x)} characters, more than {MAX_FIELD}")


def _unique(pairs: list) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"the key {str(dup)[:60]!r} is given twice in one object")
    return d


def read_document(path, what: str):
    """A JSON or YAML file (by suffix; .csv is not a document), bounded and checked."""
    path = Path(path)
    text = _text(path, what)
    if path.suffix.lower() == ".json":
        try:
            doc = json.loads(text, object_pairs_hook=_unique)
        except (ValueError, RecursionError) as exc:
            raise UsageError(f"{path}: not valid JSON ({str(exc)[:160]})") from None
    else:
        try:
            aliases = sum(isinstance(t, yaml.AliasToken) for t in yaml.scan(text, Loader=yaml.SafeLoader))
            if aliases > MAX_ALIASES:
                raise UsageError(f"{path}: {aliases} YAML aliases, more than {MAX_ALIASES}; write the values out")
            doc = yamlfile.load(text)
        except yaml.YAMLError as exc:
            raise UsageError(f"{path}: YAML error at {yamlfile.describe(exc)}; fix the {what} file") from None
        except RecursionError:
            raise UsageError(f"{path}: nested too deeply; the {what} file is flat rows") from None
    _walk(doc, path)
    return doc


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
    text = _text(path, what)
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
