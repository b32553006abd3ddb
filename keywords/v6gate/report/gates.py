"""The gates in the HTML report and in results.json.

* ``RENDERERS["gate"]``: per gate result, inline SVG plots and a table of
  numbers: per-trial IPv4 and IPv6 values (discarded trials hollow), the
  per-pair ratio with the interval against the margin; a payload sweep as
  curves per size; a timing gate as its samples against the target.
* ``SECTIONS``: "Conformance areas and their gates", the pairing of
  fixtures/gates/pairings.yaml with this run's gate verdicts.
* ``results.DOCUMENT_PARTS["pairings"]``: the same pairing in results.json.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

from ..gates.profiles import pairings
from . import html as H
from . import results as R

W, HGT, PAD = 420, 150, 34
COLORS = {"v4": "#1f77b4", "v6": "#d62728", "off": "#7f7f7f", "on": "#2ca02c", "without": "#7f7f7f",
          "with": "#9467bd", "dut": "#333"}


def _e(s) -> str:
    return html.escape(str(s if s is not None else ""))


def _scale(lo: float, hi: float, a: float, b: float, log: bool = False):
    if log:
        lo, hi = math.log(max(lo, 1e-12)), math.log(max(hi, 1e-12))
    if hi <= lo:
        hi = lo + 1
    return lambda v: a + ((math.log(max(v, 1e-12)) if log else v) - lo) / (hi - lo) * (b - a)


def _svg(body: str, title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{HGT}" viewBox="0 0 {W} {HGT}" '
            f'style="font:10px sans-serif;background:#fcfcfc;border:1px solid #ddd;margin:2px">'
            f'<text x="{PAD}" y="11">{_e(title)}</text>{body}</svg>')


def _axis(y, lo, hi, fmt="{:.3g}") -> str:
    return (f'<line x1="{PAD}" y1="{PAD - 14}" x2="{PAD}" y2="{HGT - 18}" stroke="#999"/>'
            f'<text x="2" y="{y(hi) + 3:.0f}">{fmt.format(hi)}</text><text x="2" y="{y(lo) + 3:.0f}">{fmt.format(lo)}</text>')


def trials_plot(dec: dict, metric: str, unit: str) -> str:
    trials = [t for t in dec.get("trials", []) if t["values"].get(metric) is not None]
    if not trials:
        return ""
    vals = [t["values"][metric] for t in trials]
    lo, hi = min(vals), max(vals)
    pad = (hi - lo) * 0.1 or abs(hi) * 0.05 or 1
    lo, hi = lo - pad, hi + pad
    y = _scale(lo, hi, HGT - 18, PAD - 14)
    n = max(t["pair"] for t in trials) + 1
    x = _scale(0, max(n - 1, 1), PAD + 8, W - 60)
    dots = []
    for t in trials:
        c = COLORS.get(t["arm"], "#000")
        fill = "none" if t.get("discarded") else c
        tip = f"pair {t['pair']} {t['arm']}: {t['values'][metric]:.4g} {unit}" + (" (discarded)" if t.get("discarded") else "")
        dots.append(f'<circle cx="{x(t["pair"]) + (3 if t["position"] else -3):.1f}" cy="{y(t["values"][metric]):.1f}" '
                    f'r="3" fill="{fill}" stroke="{c}"><title>{_e(tip)}</title></circle>')
    arms = dec.get("arms", [])
    legend = "".join(f'<text x="{W - 55}" y="{24 + 12 * i}" fill="{COLORS.get(a, "#000")}">● {_e(a)}</text>'
                     for i, a in enumerate(arms))
    return _svg(_axis(y, lo, hi) + "".join(dots) + legend, f"{metric} per trial ({unit}); hollow = discarded")


def ratio_plot(dec: dict, metric: str) -> str:
    m = dec.get("metrics", {}).get(metric) or {}
    arms = dec.get("arms", [])
    if len(arms) != 2:
        return ""
    pairs: dict[int, dict] = {}
    for t in dec.get("trials", []):
        if not t.get("discarded") and t["values"].get(metric):
            pairs.setdefault(t["pair"], {})[t["arm"]] = t["values"][metric]
    ratios = [(p, v[arms[1]] / v[arms[0]]) for p, v in sorted(pairs.items()) if arms[0] in v and arms[1] in v]
    if not ratios:
        return ""
    iv = m.get("interval") or {}
    thr = m.get("threshold", 1.0)
    pts = [r for _, r in ratios] + [thr, 1.0] + [v for v in (iv.get("low"), iv.get("high")) if v is not None]
    lo, hi = min(pts), max(pts)
    pad = (hi - lo) * 0.1 or 0.02
    lo, hi = lo - pad, hi + pad
    y = _scale(lo, hi, HGT - 18, PAD - 14)
    x = _scale(0, max(len(ratios) - 1, 1), PAD + 8, W - 90)
    body = [_axis(y, lo, hi),
            f'<line x1="{PAD}" x2="{W - 80}" y1="{y(thr):.1f}" y2="{y(thr):.1f}" stroke="#d62728" stroke-dasharray="4 3"/>'
            f'<text x="{W - 78}" y="{y(thr) + 3:.1f}" fill="#d62728">threshold {thr:.3f}</text>',
            f'<line x1="{PAD}" x2="{W - 80}" y1="{y(1.0):.1f}" y2="{y(1.0):.1f}" stroke="#bbb"/>']
    for i, (p, r) in enumerate(ratios):
        body.append(f'<circle cx="{x(i):.1f}" cy="{y(r):.1f}" r="2.5" fill="#555"><title>pair {p}: {r:.4f}</title></circle>')
    if iv.get("low") is not None and iv.get("high") is not None:
        xi = W - 62
        color = {"PASS": "#2ca02c", "FAIL": "#d62728"}.get(m.get("status"), "#7f5fbf")
        body.append(f'<line x1="{xi}" x2="{xi}" y1="{y(iv["low"]):.1f}" y2="{y(iv["high"]):.1f}" stroke="{color}" '
                    f'stroke-width="4"/><circle cx="{xi}" cy="{y(iv["estimate"]):.1f}" r="4" fill="{color}"/>'
                    f'<text x="{xi + 6}" y="{y(iv["estimate"]) - 4:.1f}" fill="{color}">{iv["estimate"]:.3f}</text>')
    return _svg("".join(body), f"{arms[1]}/{arms[0]} {metric} ratio per pair; interval (bar) vs threshold")


def sweep_plot(sweep: dict, metric: str, unit: str, arms=("v4", "v6")) -> str:
    sizes = sorted(int(s) for s in sweep)
    if not sizes:
        return ""
    med = {a: [] for a in arms}
    for s in sizes:
        dec = sweep[str(s)]
        for a in arms:
            xs = sorted(t["values"][metric] for t in dec.get("trials", []) if t["arm"] == a and not t.get("discarded")
                        and t["values"].get(metric))
            med[a].append(xs[len(xs) // 2] if xs else None)
    vals = [v for a in arms for v in med[a] if v]
    if not vals:
        return ""
    y = _scale(min(vals) * 0.8, max(vals) * 1.25, HGT - 18, PAD - 14, log=True)
    x = _scale(sizes[0], sizes[-1], PAD + 8, W - 60, log=True)
    body = [f'<text x="2" y="{PAD - 8}">{max(vals):.3g}</text><text x="2" y="{HGT - 18}">{min(vals):.3g}</text>']
    for a in arms:
        pts = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in zip(sizes, med[a]) if v)
        body.append(f'<polyline points="{pts}" fill="none" stroke="{COLORS[a]}" stroke-width="1.5"/>')
        body += [f'<circle cx="{x(s):.1f}" cy="{y(v):.1f}" r="2" fill="{COLORS[a]}"><title>{a} {s} B: {v:.4g} {unit}'
                 f'</title></circle>' for s, v in zip(sizes, med[a]) if v]
    body += [f'<text x="{x(s) - 6:.1f}" y="{HGT - 6}">{s if s < 1024 else str(s // 1024) + "K"}</text>'
             for s in sizes[::2]]
    body.append("".join(f'<text x="{W - 55}" y="{24 + 12 * i}" fill="{COLORS[a]}">● {a}</text>' for i, a in enumerate(arms)))
    return _svg("".join(body), f"{metric} ({unit}, log) vs payload bytes (log), median per size")


def target_plot(dec: dict, metric: str, unit: str) -> str:
    m = dec.get("metrics", {}).get(metric) or {}
    xs = [(t["pair"], t["values"][metric], t.get("discarded")) for t in dec.get("trials", []) if t["values"].get(metric) is not None]
    if not xs:
        return ""
    target = m.get("target") or m.get("threshold")
    vals = [v for _, v, _ in xs] + [target]
    y = _scale(0, max(vals) * 1.15, HGT - 18, PAD - 14)
    x = _scale(0, max(len(xs) - 1, 1), PAD + 8, W - 70)
    body = [_axis(y, 0, max(vals) * 1.15),
            f'<line x1="{PAD}" x2="{W - 66}" y1="{y(target):.1f}" y2="{y(target):.1f}" stroke="#d62728" stroke-dasharray="4 3"/>'
            f'<text x="{W - 64}" y="{y(target) + 3:.1f}" fill="#d62728">target {target:g}</text>']
    for i, (p, v, disc) in enumerate(xs):
        body.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3" fill="{"none" if disc else "#333"}" stroke="#333">'
                    f'<title>trial {p}: {v:.4g} {unit}</title></circle>')
    return _svg("".join(body), f"{metric} per trial ({unit}) vs target")


def numbers_table(dec: dict) -> str:
    rows = []
    for name, m in (dec.get("metrics") or {}).items():
        iv = m.get("interval") or {}
        d = m.get("delta_pct") or {}
        est = iv.get("estimate")
        rows.append(
            f"<tr><td>{_e(name)}</td><td>{_e(m.get('rule'))}</td>"
            f"<td>{'' if est is None else f'{est:.4g}'}</td>"
            f"<td>[{_num(iv.get('low'))}, {_num(iv.get('high'))}]</td>"
            f"<td>{_delta(d)}</td>"
            f"<td>{_e(m.get('status'))}</td></tr>")
    head = ("<table class=gate><tr><th>metric</th><th>rule</th><th>estimate</th><th>interval</th><th>delta</th>"
            "<th>decision</th></tr>")
    foot = (f"<p class=meta>{dec.get('kept')} kept, {dec.get('discarded')} discarded as disturbed; "
            f"{dec.get('traffic_s')} s of traffic, {dec.get('wall_s')} s wall; {_e(dec.get('confidence'))} "
            f"{_e(dec.get('method'))} interval"
            + (f" ({_e(dec.get('per_look_confidence'))} at each of up to {_e(dec.get('looks_planned'))} looks)"
               if (dec.get('looks_planned') or 1) > 1 else "")
            + f"; order {_e(dec.get('order'))}; decided by: {_e(', '.join(dec.get('decided_by') or []) or 'nothing')}"
            f"; stop: {_e(dec.get('stop'))}</p>")
    return head + "".join(rows) + "</table>" + foot


def _delta(d: dict) -> str:
    if not d:
        return ""
    return f"{_num(d.get('estimate'), 2)}% [{_num(d.get('low'), 2)}%, {_num(d.get('high'), 2)}%]"


def _num(v, digits=4) -> str:
    return "unbounded" if v is None else f"{v:.{digits}g}" if digits == 4 else f"{v:+.{digits}f}"


def render_gate(c: dict, report_dir: Path) -> str:
    meas = c.get("measurements") or {}
    parts = []
    dec = meas.get("decision")
    gate = meas.get("gate") or {}
    units = {"throughput": "MB/s", "transactions": "1/s", "cpu_per_unit": "CPU ms/unit", "latency": "us",
             "time": "s" if gate.get("workload") != "ns_to_na" else "ms"}
    if dec:
        plots = []
        for metric in dec.get("metrics", {}):
            if len(dec.get("arms", [])) == 2:
                plots += [trials_plot(dec, metric, units.get(metric, "")), ratio_plot(dec, metric)]
            else:
                plots.append(target_plot(dec, metric, units.get(metric, "")))
        parts.append("<div class=plots>" + "".join(plots) + "</div>" + numbers_table(dec))
    if meas.get("sweep"):
        metric = (gate.get("metrics") or ["throughput"])[0]
        rows = []
        for size, d in sorted(meas["sweep"].items(), key=lambda kv: int(kv[0])):
            m = d["metrics"].get(metric, {})
            iv = m.get("interval") or {}
            rows.append(f"<tr><td>{size}</td><td>{_num(iv.get('estimate'))}</td><td>[{_num(iv.get('low'))}, "
                        f"{_num(iv.get('high'))}]</td><td>{_e(d['verdict'])}</td><td>{d['kept']}</td></tr>")
        parts.append("<div class=plots>" + sweep_plot(meas["sweep"], metric, units.get(metric, "")) + "</div>"
                     "<table class=gate><tr><th>payload B</th><th>v6/v4 ratio</th><th>interval</th><th>decision</th>"
                     "<th>pairs</th></tr>" + "".join(rows) + "</table>")
    if meas.get("parity"):
        parts.append("<pre>" + _e("\n".join(meas["parity"].get("features", []))) + "</pre>")
    facts = meas.get("facts")
    if facts:
        short = {k: ({kk: vv for kk, vv in v.items() if kk != "ethtool_k"} if isinstance(v, dict) else v)
                 for k, v in facts.items()}
        parts.append("<details><summary>bench facts (kernel, MTU, ethtool -k of both ends)</summary><pre>"
                     + _e(_json(short)) + "\n" + _e(_ethtool_diff(facts)) + "</pre></details>")
    return "".join(parts)


def _json(x) -> str:
    import json

    return json.dumps(x, indent=1, default=str)


def _ethtool_diff(facts: dict) -> str:
    a = (facts.get("client") or {}).get("ethtool_k") or {}
    b = (facts.get("dut") or {}).get("ethtool_k") or {}
    if not a and not b:
        return ""
    keys = sorted(set(a) | set(b))
    lines = [f"{'ethtool -k':40} {'client':18} DUT"]
    lines += [f"{k:40} {a.get(k, '-'):18} {b.get(k, '-')}" for k in keys]
    return "\n".join(lines)


# -- pairing ----------------------------------------------------------------------------------------------------
def pairings_document(results) -> dict | None:
    """conformance area -> its gates and their verdicts in this run."""
    try:
        pairs = pairings()
    except Exception:
        return None
    verdicts = {}
    for r in results:
        if getattr(r, "kind", "check") == "gate":
            # a gate names its parts ("1x1500:PASS"); a gate of one part is its verdict alone, listed once
            verdicts.setdefault(r.id, []).append(f"{r.part}:{r.verdict}" if r.part else r.verdict)
            if r.part:
                verdicts.setdefault(r.key, []).append(r.verdict)
    areas_run = {r.area for r in results if getattr(r, "kind", "check") == "check"}
    return {area: {"gates": spec["gates"], "why": spec["why"], "status": spec["status"],
                   "checks_in_run": area in areas_run,
                   "verdicts": {g: verdicts.get(g, []) for g in spec["gates"]}}
            for area, spec in pairs.items()}


def pairing_section(doc: dict, report_dir: Path) -> str:
    pairs = doc.get("pairings")
    if not pairs:
        return ""
    rows = []
    for area, p in pairs.items():
        gates = "<br>".join(f"<code>{_e(g)}</code> {' '.join(_e(v) for v in p['verdicts'].get(g, [])) or '(not run)'}"
                            for g in p["gates"])
        rows.append(f"<tr><td>{_e(area)}{'' if p['checks_in_run'] else ' <small>(' + _e(p['status']) + ')</small>'}"
                    f"</td><td>{gates}</td><td>{_e(p['why'])}</td></tr>")
    return ("<h2>Conformance areas and their gates</h2><table><tr><th>area</th><th>gate(s) and verdicts in this run"
            "</th><th>why</th></tr>" + "".join(rows) + "</table>")


def register() -> None:
    H.RENDERERS["gate"] = render_gate
    if pairing_section not in H.SECTIONS:
        H.SECTIONS.append(pairing_section)
    R.DOCUMENT_PARTS["pairings"] = pairings_document


register()
