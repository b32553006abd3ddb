"""The agency's fleet report (OMB M-21-07): hosts joined to the assets of
an inventory, each asset's class with the frames that prove it, counts and
percentages per class and per system, owner and location against the
plan's milestones, and the exception register, where an expired exception
is a finding.  Written as JSON and CSV (for the agency's reporting) and
HTML (for the auditor: every number links to its assets, every asset to
the captures and frames that prove its class).

The inputs are the user's files, so untrusted: ``tables.read_rows``
bounds them and each value is checked (one line naming the file, the row
and the field, exit 2)."""

from __future__ import annotations

import csv
import datetime as dt
import functools
import io
import ipaddress
import json
import os
import re
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path

from ..errors import UsageError
from ..paths import ROOT
from . import tables
from .assets import CLASSES, IPV6_ONLY, MIN_FRAMES, SIGNAL_TITLES, TITLES, UNKNOWN, classify, merge_hosts

DEFAULT_PLAN = ROOT / "fixtures" / "audit" / "plan-m-21-07.yaml"
GROUPS = ("system", "owner", "location")
MAC = re.compile(r"^[0-9a-f]{2}([:-][0-9a-f]{2}){5}$")
NOT_IN_INVENTORY = "(not in the inventory)"


# -- the plan ------------------------------------------------------------------------------------------------
@dataclass
class Plan:
    name: str
    counts_as_ipv6_only: tuple
    min_frames: int
    milestones: list  # [{"label", "by": date, "percent"}], by date


def _date(value, where: str) -> dt.date:
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value
    try:
        return dt.date.fromisoformat(str(value).strip())
    except ValueError:
        raise UsageError(f"{where}: {str(value)[:40]!r} is not a date; write it as YYYY-MM-DD") from None


def parse_as_of(value: str | None) -> dt.date:
    """--as-of (YYYY-MM-DD), or today (UTC)."""
    if value is None:
        return dt.datetime.now(dt.UTC).date()
    return _date(value, "--as-of")


def load_plan(path=None) -> Plan:
    path = Path(path or DEFAULT_PLAN)
    doc = tables.read_document(path, "plan")
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: a plan is a mapping (name, counts_as_ipv6_only, min_frames, milestones)")
    unknown = sorted(set(doc) - {"name", "counts_as_ipv6_only", "min_frames", "milestones", "source"})
    if unknown:
        raise UsageError(f"{path}: unknown key {unknown[0]!r}; a plan has name, counts_as_ipv6_only, min_frames, "
                         "milestones, source")
    name = doc.get("name", path.stem)
    counts = doc.get("counts_as_ipv6_only", [IPV6_ONLY])
    if not isinstance(counts, list) or not counts or any(c not in CLASSES for c in counts):
        raise UsageError(f"{path}: counts_as_ipv6_only must list classes among {', '.join(CLASSES)}")
    mf = doc.get("min_frames", MIN_FRAMES)
    if not isinstance(mf, int) or isinstance(mf, bool) or not 1 <= mf <= 1_000_000:
        raise UsageError(f"{path}: min_frames must be a whole number from 1 to 1000000")
    ms = doc.get("milestones", [])
    if not isinstance(ms, list) or len(ms) > 100:
        raise UsageError(f"{path}: milestones must be a list (at most 100) of {{label, by, percent}}")
    out = []
    for i, m in enumerate(ms):
        where = f"{path}: milestone {i + 1}"
        if not isinstance(m, dict) or set(m) - {"label", "by", "percent"} or "by" not in m or "percent" not in m:
            raise UsageError(f"{where}: give label, by (YYYY-MM-DD) and percent")
        p = m["percent"]
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 <= p <= 100:
            raise UsageError(f"{where}: percent must be a number from 0 to 100")
        out.append({"label": str(m.get("label", m["by"]))[:80], "by": _date(m["by"], where), "percent": p})
    return Plan(str(name)[:120], tuple(counts), mf, sorted(out, key=lambda m: m["by"]))


# -- the inventory and the exception register ---------------------------------------------------------------
@dataclass
class Asset:
    id: str
    owner: str = ""
    system: str = ""
    location: str = ""
    macs: list = field(default_factory=list)
    addresses: list = field(default_factory=list)
    in_inventory: bool = True


def _split(value) -> list[str]:
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    return [v for v in re.split(r"[\s;,]+", str(value or "").strip()) if v]


def _mac(value: str, where: str) -> str:
    v = value.lower().replace("-", ":")
    if not MAC.match(v):
        raise UsageError(f"{where}: {value[:40]!r} is not a MAC address (write 02:00:5e:10:00:01)")
    return v


def _address(value: str, where: str) -> str:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise UsageError(f"{where}: {value[:60]!r} is not an IPv4 or IPv6 address") from None


class Inventory:
    """Assets by id, and the MACs and addresses that join hosts to them."""

    COLUMNS = ("asset", "macs", "addresses", "owner", "system", "location")

    def __init__(self, assets: list[Asset], source: str | None):
        self.assets = {a.id: a for a in assets}
        self.source = source
        self.by_mac: dict[str, str] = {}
        self.by_address: dict[str, str] = {}
        for a in assets:
            for m in a.macs:
                other = self.by_mac.setdefault(m, a.id)
                if other != a.id:
                    raise UsageError(f"{source}: MAC {m} is given to assets {other} and {a.id}; one host, one asset")
            for x in a.addresses:
                other = self.by_address.setdefault(x, a.id)
                if other != a.id:
                    raise UsageError(f"{source}: address {x} is given to assets {other} and {a.id}")

    @classmethod
    def load(cls, path) -> Inventory:
        rows = tables.read_rows(path, "inventory", cls.COLUMNS, required=("asset",))
        assets = []
        seen = {}
        for where, r in rows:
            aid = str(r["asset"]).strip()
            if not aid:
                raise UsageError(f"{where}: the asset id is empty")
            if aid in seen:
                raise UsageError(f"{where}: asset {aid!r} is listed twice (first at {seen[aid]})")
            seen[aid] = where
            macs = [_mac(m, where) for m in _split(r.get("macs"))]
            addrs = [_address(x, where) for x in _split(r.get("addresses"))]
            if not macs and not addrs:
                raise UsageError(f"{where}: asset {aid!r} has no MAC and no address to find it by")
            assets.append(Asset(aid, *(str(r.get(k) or "").strip() for k in ("owner", "system", "location")),
                                macs, addrs))
        return cls(assets, str(path))


def load_exceptions(path, today: dt.date) -> list[dict]:
    rows = tables.read_rows(path, "exception register", ("asset", "reason", "approved_by", "retire_by"),
                            required=("asset", "reason", "approved_by", "retire_by"))
    out, seen = [], {}
    for where, r in rows:
        e = {k: str(r[k]).strip() for k in ("asset", "reason", "approved_by")}
        for k in ("asset", "reason", "approved_by"):
            if not e[k]:
                raise UsageError(f"{where}: {k} is empty; an exception names its asset, reason and approver")
        if e["asset"] in seen:
            raise UsageError(f"{where}: asset {e['asset']!r} has two exceptions (first at {seen[e['asset']]})")
        seen[e["asset"]] = where
        e["retire_by"] = _date(r["retire_by"], f"{where}: retire_by").isoformat()
        e["expired"] = e["retire_by"] < today.isoformat()
        out.append(e)
    return out


# -- the fleet ----------------------------------------------------------------------------------------------
def _pct(n: int, total: int) -> float | None:
    return round(100.0 * n / total, 1) if total else None


def _evidence(rec: dict, signals: list[str], captures: dict) -> list[dict]:
    out = []
    for s in signals:
        v = rec["signals"].get(s)
        if v:
            count, _, cap, frame, t, what = v
            out.append({"signal": s, "title": SIGNAL_TITLES[s], "count": count, "capture": cap,
                        "path": captures.get(cap, {}).get("path", cap), "frame": frame, "time": t, "what": what})
    return out


def _counts(classes: list[str], plan: Plan) -> dict:
    total = len(classes)
    by = {c: classes.count(c) for c in CLASSES}
    v6 = sum(by[c] for c in plan.counts_as_ipv6_only)
    return {"assets": total, "classes": {c: {"count": by[c], "percent": _pct(by[c], total)} for c in CLASSES},
            "ipv6_only": {"count": v6, "percent": _pct(v6, total)}}


def build(partial: dict, plan: Plan, *, inventory: Inventory | None = None, exceptions: list[dict] | None = None,
          as_of: dt.date) -> dict:
    """The fleet document from a (merged) partial result."""
    inv_assets = dict(inventory.assets) if inventory else {}
    members: dict[str, list[str]] = {aid: [] for aid in inv_assets}
    outside: dict[str, Asset] = {}
    for mac, rec in partial["hosts"].items():
        aid = None
        if inventory:
            aid = inventory.by_mac.get(mac) or min((inventory.by_address[x] for x in rec["v4"] + rec["v6"]
                                                    if x in inventory.by_address), default=None)
        if aid is None:
            aid = mac
            outside[aid] = Asset(mac, NOT_IN_INVENTORY, NOT_IN_INVENTORY, NOT_IN_INVENTORY, [mac], [],
                                 in_inventory=False)
        members.setdefault(aid, []).append(mac)
    register = {e["asset"]: e for e in exceptions or []}
    captures = partial["captures"]
    rows = []
    for aid in sorted(members):
        a = inv_assets.get(aid) or outside[aid]
        macs = sorted(members[aid])
        rec = reduce(merge_hosts, (partial["hosts"][m] for m in macs)) if macs else None
        if rec is None:
            cls, why, sig = UNKNOWN, "not seen on any capture", []
        else:
            cls, why, sig = classify(rec, plan.min_frames)
        exc = register.get(aid)
        row = {"asset": aid, "in_inventory": a.in_inventory, "owner": a.owner, "system": a.system,
               "location": a.location, "class": cls, "why": why, "hosts": macs,
               "evidence": _evidence(rec, sig, captures) if rec else [],
               "frames": rec["frames"] if rec else 0, "captures": rec["captures"] if rec else 0,
               "first_t": rec["first_t"] if rec else None, "last_t": rec["last_t"] if rec else None,
               "v4": rec["v4"] if rec else [], "v6": rec["v6"] if rec else [],
               "ready": rec.get("ready") if rec else None, "failing": rec.get("failing", {}) if rec else {},
               "exception": None}
        if exc:
            status = ("not needed (the asset is IPv6-only)" if cls in plan.counts_as_ipv6_only else
                      "expired" if exc["expired"] else "in force")
            row["exception"] = {**{k: exc[k] for k in ("reason", "approved_by", "retire_by")}, "status": status}
        rows.append(row)
    counted = [r for r in rows if r["in_inventory"]] if inventory else rows
    doc = {"plan": plan.name, "counts_as_ipv6_only": list(plan.counts_as_ipv6_only), "min_frames": plan.min_frames,
           "as_of": as_of.isoformat(), "basis": "inventory" if inventory else "hosts seen",
           "inventory": inventory.source if inventory else None, "captures": captures,
           "totals": _counts([r["class"] for r in counted], plan)}
    achieved = doc["totals"]["ipv6_only"]["percent"] or 0.0
    doc["milestones"] = [{"label": m["label"], "by": m["by"].isoformat(), "percent": m["percent"],
                          "achieved_percent": achieved, "met": achieved >= m["percent"],
                          "due": "passed" if m["by"] < as_of else "ahead"} for m in plan.milestones]
    target = next((m for m in doc["milestones"] if m["due"] == "ahead"), doc["milestones"][-1] if plan.milestones
                  else None)
    doc["groups"] = {}
    for g in GROUPS:
        by: dict[str, list[str]] = {}
        for r in counted:
            by.setdefault(r[g] or "(none)", []).append(r["class"])
        doc["groups"][g] = [{"name": name, **_counts(cls, plan),
                             "target_percent": target["percent"] if target else None,
                             "meets_target": (_pct(sum(c in plan.counts_as_ipv6_only for c in cls), len(cls)) or 0)
                             >= target["percent"] if target else None}
                            for name, cls in sorted(by.items())]
    doc["assets"] = rows
    doc["unknown_assets"] = [r["asset"] for r in rows if not r["in_inventory"]] if inventory else []
    doc["exceptions"] = [{**{k: e[k] for k in ("asset", "reason", "approved_by", "retire_by")},
                          "status": next((r["exception"]["status"] for r in rows if r["asset"] == e["asset"]
                                          and r["exception"]), "names no asset of the inventory")}
                         for e in exceptions or []]
    doc["findings"] = _findings(doc, plan)
    return doc


def _findings(doc: dict, plan: Plan) -> list[dict]:
    out = []
    for e in doc["exceptions"]:
        if e["status"] == "expired":
            out.append({"finding": "exception_expired", "asset": e["asset"], "severity": "FAIL",
                        "detail": f"retire-by {e['retire_by']} has passed (as of {doc['as_of']}) and the asset is "
                                  f"still {next(r['class'] for r in doc['assets'] if r['asset'] == e['asset'])}; "
                                  f"reason given: {e['reason']}; approved by {e['approved_by']}"})
        elif e["status"].startswith("names no asset"):
            out.append({"finding": "exception_for_unknown_asset", "asset": e["asset"], "severity": "WARN",
                        "detail": "the exception register names an asset the inventory does not list"})
    for m in doc["milestones"]:
        if m["due"] == "passed" and not m["met"]:
            out.append({"finding": "milestone_missed", "asset": None, "severity": "WARN",
                        "detail": f"{m['label']}: {m['percent']}% IPv6-only by {m['by']}; "
                                  f"{m['achieved_percent']}% as of {doc['as_of']}"})
    for aid in doc["unknown_assets"]:
        out.append({"finding": "not_in_inventory", "asset": aid, "severity": "WARN",
                    "detail": "a host on the captures that no inventory asset names (by MAC or address)"})
    return out


def exit_code(doc: dict) -> int:
    """1 when an exception has expired or an asset's readiness FAILs, else 0."""
    failing = any(f["severity"] == "FAIL" for f in doc["findings"]) or \
        any(r["ready"] and r["ready"][0] == "FAIL" for r in doc["assets"])
    return 1 if failing else 0


# -- the files ------------------------------------------------------------------------------------------------
def write_all(doc: dict, out_dir: Path) -> dict[str, Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"fleet_json": out_dir / "fleet.json", "fleet_csv": out_dir / "fleet-assets.csv",
             "fleet_summary_csv": out_dir / "fleet-summary.csv", "fleet_html": out_dir / "fleet.html"}
    # each file streamed (an asset at a time: the text of 100,000 assets is never whole in memory), written to a
    # temporary name and renamed: whole or not at all
    _atomic(paths["fleet_json"], _json_pieces(doc))
    _atomic(paths["fleet_csv"], [assets_csv(doc)])
    _atomic(paths["fleet_summary_csv"], [summary_csv(doc)])
    _atomic(paths["fleet_html"], html_pieces(doc))
    return paths


def _atomic(path: Path, pieces) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as f:
        for piece in pieces:
            f.write(piece)
    os.replace(tmp, path)


_compact = json.JSONEncoder(separators=(",", ":")).encode  # json.dumps(x, separators=(",", ":"))
_BATCH = 1000  # assets encoded at once (an encoder call per asset cost more than the encoding)


def _json_pieces(doc: dict):
    """The document as compact JSON, its assets last, a thousand assets at a time."""
    head = _compact({k: v for k, v in doc.items() if k != "assets"})
    yield head[:-1] + ',"assets":['
    rows = doc["assets"]
    for i in range(0, len(rows), _BATCH):
        yield ("," if i else "") + _compact(rows[i:i + _BATCH])[1:-1]
    yield "]}\n"


def _cell(v) -> str:
    """A CSV cell a spreadsheet will not run as a formula (OWASP CSV injection)."""
    s = "" if v is None else str(v)
    return "'" + s if s[:1] in ("=", "+", "-", "@", "\t", "\r") else s


def assets_csv(doc: dict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["asset", "in_inventory", "class", "owner", "system", "location", "hosts", "frames", "captures",
                "evidence", "ready", "exception_status", "retire_by", "why"])
    for r in doc["assets"]:
        ev = "; ".join(f"{e['title']} x{e['count']}: {e['capture']} frame {e['frame']}" for e in r["evidence"])
        exc = r["exception"] or {}
        w.writerow([_cell(x) for x in (r["asset"], "yes" if r["in_inventory"] else "no", r["class"], r["owner"],
                                       r["system"], r["location"], " ".join(r["hosts"]), r["frames"], r["captures"],
                                       ev, r["ready"][0] if r["ready"] else "", exc.get("status", ""),
                                       exc.get("retire_by", ""), r["why"])])
    return buf.getvalue()


def summary_csv(doc: dict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["scope", "group", "assets", *[f"{c} count" for c in CLASSES], *[f"{c} percent" for c in CLASSES],
                "ipv6_only_percent"])

    def row(scope, name, c):
        w.writerow([_cell(scope), _cell(name), c["assets"], *[c["classes"][k]["count"] for k in CLASSES],
                    *[c["classes"][k]["percent"] for k in CLASSES], c["ipv6_only"]["percent"]])

    row("fleet", "all", doc["totals"])
    for g in GROUPS:
        for x in doc["groups"][g]:
            row(g, x["name"], x)
    return buf.getvalue()


_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})


def _e(x) -> str:
    """``html.escape(x, quote=True)``, translated only when it must be (most values need nothing)."""
    s = "" if x is None else x if type(x) is str else str(x)
    if "&" in s or "<" in s or ">" in s or '"' in s or "'" in s:
        return s.translate(_HTML)
    return s


def _link(n, **filt) -> str:
    q = "&amp;".join(f"{k}={_e(v)}" for k, v in filt.items())
    return f'<a href="#assets?{q}">{_e(n)}</a>'


_STYLE = """body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}th{background:#f2f2f2}
.fail{color:#b00;font-weight:bold}.ok{color:#070}.warn{color:#a60}small{color:#555}code{font-size:12px}
tr.hidden{display:none}"""
_SCRIPT = """function f(){var h=decodeURIComponent(location.hash),i=h.indexOf('?'),q={};if(i>=0)h.slice(i+1).split('&')
.forEach(function(p){var k=p.split('=');q[k[0]]=k.slice(1).join('=')});var n=0;document.querySelectorAll('#assets tbody tr')
.forEach(function(r){var ok=Object.keys(q).every(function(k){return r.dataset[k]===q[k]});r.className=ok?'':'hidden';n+=ok});
document.getElementById('shown').textContent=i>=0?n+' assets where '+h.slice(i+1)+' (all: #assets)':'all assets';
if(i>=0)document.getElementById('assets').scrollIntoView()}window.addEventListener('hashchange',f);
window.addEventListener('DOMContentLoaded',f);"""


def render_html(doc: dict) -> str:
    return "".join(html_pieces(doc))


def html_pieces(doc: dict):
    t = doc["totals"]
    out = [f"<!doctype html><meta charset=utf-8><title>v6gate fleet audit: {_e(doc['plan'])}</title>"
           f"<style>{_STYLE}</style><script>{_SCRIPT}</script>",
           f"<h1>IPv6-only fleet audit ({_e(doc['plan'])})</h1>",
           f"<p>As of {_e(doc['as_of'])}: {t['assets']} assets ({_e(doc['basis'])}"
           f"{', inventory ' + _e(doc['inventory']) if doc['inventory'] else ''}) from {len(doc['captures'])} "
           f"captures. <b>IPv6-only: {_link(t['ipv6_only']['count'], ipv6only='yes')} "
           f"({t['ipv6_only']['percent']}%)</b>.</p>", "<h2>Classes</h2><table><tr><th>class</th><th>assets</th>"
           "<th>percent</th></tr>"]
    for c in CLASSES:
        x = t["classes"][c]
        out.append(f"<tr><td>{_e(TITLES[c])}</td><td>{_link(x['count'], cls=c, counted='yes')}</td>"
                   f"<td>{x['percent']}%</td></tr>")
    out.append("</table><h2>Milestones</h2><table><tr><th>milestone</th><th>by</th><th>target</th><th>achieved</th>"
               "<th></th></tr>")
    for m in doc["milestones"]:
        state = ("met" if m["met"] else "missed" if m["due"] == "passed" else "not yet met")
        out.append(f"<tr><td>{_e(m['label'])}</td><td>{_e(m['by'])}</td><td>{m['percent']}%</td>"
                   f"<td>{m['achieved_percent']}%</td><td class={'ok' if m['met'] else 'fail' if state == 'missed' else 'warn'}>"
                   f"{state}</td></tr>")
    out.append("</table>")
    if doc["findings"]:
        out.append("<h2>Findings</h2><table><tr><th></th><th>finding</th><th>asset</th><th>detail</th></tr>")
        for f in doc["findings"]:
            asset = _link(f["asset"], asset=f["asset"]) if f["asset"] else ""
            out.append(f"<tr><td class={'fail' if f['severity'] == 'FAIL' else 'warn'}>{_e(f['severity'])}</td>"
                       f"<td>{_e(f['finding'])}</td><td>{asset}</td><td>{_e(f['detail'])}</td></tr>")
        out.append("</table>")
    for g in GROUPS:
        out.append(f"<h2>Per {g}</h2><table><tr><th>{g}</th><th>assets</th>"
                   + "".join(f"<th>{_e(TITLES[c])}</th>" for c in CLASSES) + "<th>IPv6-only</th><th>target</th></tr>")
        for x in doc["groups"][g]:
            cells = "".join(f"<td>{_link(x['classes'][c]['count'], cls=c, counted='yes', **{g: x['name']})} "
                            f"<small>{x['classes'][c]['percent']}%</small></td>" for c in CLASSES)
            ok = x["meets_target"]
            out.append(f"<tr><td>{_e(x['name'])}</td><td>{_link(x['assets'], counted='yes', **{g: x['name']})}</td>"
                       f"{cells}<td>{x['ipv6_only']['percent']}%</td><td class={'ok' if ok else 'warn'}>"
                       f"{'' if x['target_percent'] is None else str(x['target_percent']) + '%'}</td></tr>")
        out.append("</table>")
    if doc["exceptions"]:
        out.append("<h2>Exception register</h2><table><tr><th>asset</th><th>reason</th><th>approved by</th>"
                   "<th>retire by</th><th>status</th></tr>")
        for e in doc["exceptions"]:
            out.append(f"<tr><td>{_link(e['asset'], asset=e['asset'])}</td><td>{_e(e['reason'])}</td>"
                       f"<td>{_e(e['approved_by'])}</td><td>{_e(e['retire_by'])}</td>"
                       f"<td class={'fail' if e['status'] == 'expired' else 'ok'}>{_e(e['status'])}</td></tr>")
        out.append("</table>")
    out.append('<h2>Assets</h2><p id=shown></p><table id=assets><thead><tr><th>asset</th><th>class</th><th>system / '
               'owner / location</th><th>hosts</th><th>evidence (capture, frame)</th><th>readiness</th>'
               '<th>exception</th></tr></thead><tbody>')
    yield "".join(out)
    six = set(doc.get("counts_as_ipv6_only") or [IPV6_ONLY])
    rows, basis = doc["assets"], doc["basis"] != "inventory"
    for i in range(0, len(rows), _BATCH):  # (a thousand rows a write)
        yield "".join([_asset_row(r, r["in_inventory"] or basis, six) for r in rows[i:i + _BATCH]])
    yield "</tbody></table>\n"


def _asset_row(r: dict, counted: bool, six: set) -> str:
    ev = "<br>".join(f"{_e(e['title'])} &times;{e['count']}: <a href=\"file://{_abs(e['path'])}\">"
                     f"{_e(e['capture'])}</a> frame {e['frame']} <small>{_e(e['what'][:120])}</small>"
                     for e in r["evidence"])
    exc = r["exception"]
    ready = r["ready"]
    data = (f' data-asset="{_e(r["asset"])}" data-cls="{_e(r["class"])}" data-system="{_e(r["system"] or "(none)")}"'
            f' data-owner="{_e(r["owner"] or "(none)")}" data-location="{_e(r["location"] or "(none)")}"'
            f' data-counted="{"yes" if counted else "no"}" data-ipv6only="{"yes" if counted and r["class"] in six else "no"}"')
    fails = "; ".join(f"{_e(k)} ({_e(v[0])})" for k, v in r["failing"].items())
    return (f"<tr id=\"a-{_e(r['asset'])}\"{data}><td><code>{_e(r['asset'])}</code></td><td><b>{_e(TITLES[r['class']])}"
            f"</b><br><small>{_e(r['why'])}</small></td><td>{_e(r['system'])}<br>{_e(r['owner'])}<br>"
            f"{_e(r['location'])}</td><td><code>{'<br>'.join(_e(m) for m in r['hosts'])}</code></td><td>{ev}</td>"
            f"<td>{_e(ready[0]) if ready else ''}<br><small>{fails}</small></td>"
            f"<td>{_e(exc['status'] + ', retire by ' + exc['retire_by']) if exc else ''}</td></tr>")


@functools.lru_cache(maxsize=1024)
def _abs(path: str) -> str:
    """A capture's path as a link target (made once per capture, not per asset)."""
    p = Path(path)
    return _e(str(p if p.is_absolute() else ROOT / p))
