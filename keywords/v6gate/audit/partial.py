"""Partial results: one capture's audit as per-host records (``assets``)
that merge exactly with other captures' (associative, commutative), so an
agency's captures from many sites and days are one audit, in one process,
on a batch system, or as shards on a Dask cluster (``shards.py``).

A partial is a JSON document::

    {"v6gate_audit_partial": 1,
     "captures": {NAME: {"path", "frames", "bytes", "hosts", "first_t", "last_t"}},
     "hosts": {MAC: record}}

A capture is named by its file name: two captures of one name in one
audit are an error (rename one), as is the same capture in two partials
(it would be counted twice).  A partial given to ``v6gate audit`` is
untrusted: read within limits and checked field by field (``load``)."""

from __future__ import annotations

import json
import math
import os
from functools import reduce
from pathlib import Path

from .. import untrusted
from ..errors import UsageError
from ..paths import shown
from .assets import RANK, SIGNALS, host_record, merge_hosts
from .hosts import MAX_ADDRESSES, Audit

FORMAT = "v6gate_audit_partial"
VERSION = 1
LIMITS = untrusted.RUN_OUTPUT.but(kind="partial result", max_bytes=1 << 30, max_nodes=60_000_000)
MAX_TEXT = 4096  # a description or a finding's text


def capture_name(path) -> str:
    return Path(path).name


def from_audit(audit: Audit, path, packets: int, *, name: str | None = None, findings: bool = True,
               records: dict | None = None) -> dict:
    """The partial of one capture's audit (its hosts that sent frames; a host seen only as a receiver
    sent nothing to classify); ``records``: those made already (by the report), by MAC."""
    name = name or capture_name(path)
    records = records or {}
    hosts = {mac: records.get(mac) or host_record(audit, h, name, findings) for mac, h in sorted(audit.hosts.items())
             if h.frames}
    info = {"path": shown(path), "frames": packets, "bytes": os.path.getsize(path), "hosts": len(hosts),
            "first_t": audit.t0, "last_t": audit.t_last if audit.t0 is not None else None}
    return {FORMAT: VERSION, "captures": {name: info}, "hosts": hosts}


def from_records(records: str, path, packets: int, *, t0: float | None, t_last: float, name: str | None = None) -> dict:
    """The partial of one capture's audit from its report's records (``hostout``'s "records" stream: each
    host that sent frames, ``"MAC":{record}``, in MAC order)."""
    name = name or capture_name(path)
    hosts = json.loads("{" + records + "}")
    info = {"path": shown(path), "frames": packets, "bytes": os.path.getsize(path), "hosts": len(hosts),
            "first_t": t0, "last_t": t_last if t0 is not None else None}
    return {FORMAT: VERSION, "captures": {name: info}, "hosts": hosts}


def records_text(streams, part: dict):
    """``part``'s JSON text (``dump``'s) in pieces, its hosts the records stream's text as it is."""
    head = json.dumps({FORMAT: VERSION, "captures": part["captures"]}, separators=(",", ":"))
    yield head[:-1] + ',"hosts":{'
    with open(streams.paths["records"], encoding="utf-8") as f:
        while chunk := f.read(1 << 20):
            yield chunk
    yield "}}"


def merge(a: dict, b: dict) -> dict:
    """The partial of the captures of ``a`` and ``b`` (neither is changed)."""
    both = sorted(set(a["captures"]) & set(b["captures"]))
    if both:
        raise UsageError(f"capture {both[0]} is in two of the partial results merged (it would be counted twice); "
                         "give each capture once, under distinct file names")
    hosts = dict(a["hosts"])
    for mac, rec in b["hosts"].items():
        hosts[mac] = merge_hosts(hosts[mac], rec) if mac in hosts else rec
    return {FORMAT: VERSION, "captures": dict(sorted({**a["captures"], **b["captures"]}.items())),
            "hosts": dict(sorted(hosts.items()))}


def merge_all(partials) -> dict:
    partials = list(partials)
    if not partials:
        raise UsageError("nothing to merge: give at least one capture or partial result")
    return reduce(merge, partials)


def dump(doc: dict, path, text=None) -> Path:
    """Written whole to a temporary name, then renamed: never half-written.  ``text``: the document's
    compact JSON text in pieces (``records_text``), when it is made already."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as f:
        if text is None:
            f.write(json.dumps(doc, separators=(",", ":")))  # (json.dump would take the pure-Python encoder)
        else:
            f.writelines(text)
        f.write("\n")
    os.replace(tmp, path)
    return path


def is_partial(path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(64).lstrip()
    except OSError:
        return False
    return head.startswith(b"{") and FORMAT.encode() in head


# -- an untrusted partial, checked ------------------------------------------------------------------------
class _Bad(Exception):
    pass


def _need(ok: bool, where: str, what: str) -> None:
    if not ok:
        raise _Bad(f"{where}: {what}")


def _num(x, where: str, integer: bool = True) -> None:
    ok = isinstance(x, int) and not isinstance(x, bool) if integer else \
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
    _need(ok and x >= 0 if integer else ok, where, "must be a non-negative integer" if integer else "must be a number")


def _text(x, where: str) -> None:
    _need(isinstance(x, str) and len(x) <= MAX_TEXT, where, f"must be a string of at most {MAX_TEXT} characters")


def _record(rec, where: str) -> None:
    _need(isinstance(rec, dict), where, "must be an object")
    for k in ("frames", "bytes", "captures"):
        _num(rec.get(k), f"{where}.{k}")
    for k in ("first_t", "last_t"):
        _num(rec.get(k), f"{where}.{k}", integer=False)
    sig = rec.get("signals")
    _need(isinstance(sig, dict) and set(sig) <= set(SIGNALS), f"{where}.signals",
          f"must be an object of {', '.join(SIGNALS)}")
    for k, s in sig.items():
        w = f"{where}.signals.{k}"
        _need(isinstance(s, list) and len(s) == 6, w, "must be [count, capture start, capture, frame, time, what]")
        _num(s[0], w + "[0]")
        _num(s[1], w + "[1]", integer=False)
        _text(s[2], w + "[2]")
        _num(s[3], w + "[3]")
        _num(s[4], w + "[4]", integer=False)
        _text(s[5], w + "[5]")
    for k in ("v4", "v6"):
        a = rec.get(k)
        _need(isinstance(a, list) and len(a) <= MAX_ADDRESSES, f"{where}.{k}",
              f"must be a list of at most {MAX_ADDRESSES} addresses")
        for x in a:
            _text(x, f"{where}.{k}")
    if "ready" in rec:
        r = rec["ready"]
        _need(isinstance(r, list) and len(r) == 3 and r[0] in RANK, f"{where}.ready", "must be [verdict, capture, seen]")
        _text(r[1], f"{where}.ready")
        _text(r[2], f"{where}.ready")
        f = rec.get("failing")
        _need(isinstance(f, dict) and len(f) <= 16, f"{where}.failing", "must be an object of findings")
        for k, v in f.items():
            _text(k, f"{where}.failing")
            _need(isinstance(v, list) and len(v) == 2, f"{where}.failing.{k}", "must be [capture, seen]")
            _text(v[0], f"{where}.failing.{k}")
            _text(v[1], f"{where}.failing.{k}")


def check(doc, where: str = "partial") -> dict:
    """``doc`` if it is a partial result; a one-line UsageError naming the first bad field otherwise."""
    try:
        _need(isinstance(doc, dict) and doc.get(FORMAT) == VERSION, where,
              f"not a v6gate audit partial result of version {VERSION}")
        caps = doc.get("captures")
        _need(isinstance(caps, dict) and caps, f"{where}.captures", "must name at least one capture")
        for name, c in caps.items():
            w = f"{where}.captures.{name[:60]}"
            _text(name, w)
            _need(isinstance(c, dict), w, "must be an object")
            _text(c.get("path"), w + ".path")
            for k in ("frames", "bytes", "hosts"):
                _num(c.get(k), f"{w}.{k}")
        hosts = doc.get("hosts")
        _need(isinstance(hosts, dict), f"{where}.hosts", "must be an object of hosts by MAC")
        for mac, rec in hosts.items():
            _text(mac, f"{where}.hosts")
            _record(rec, f"{where}.hosts.{mac[:40]}")
    except _Bad as exc:
        raise UsageError(f"{exc}; give a partial result written by v6gate audit") from None
    return doc


def load(path) -> dict:
    """A partial result given back (a run's output: ``untrusted.RUN_OUTPUT``, raised to what a partial of
    a million hosts needs, some 600 MB and 50 million values), then checked field by field."""
    doc = untrusted.load_json(Path(path), LIMITS)
    return check(doc, str(path))
