"""The audit's results: the same results.json (schema-valid), JUnit XML and
HTML report as a run, one entry per host and finding (``part`` is the
host's MAC), plus a per-host readiness table in the HTML report."""

from __future__ import annotations

import html
from pathlib import Path

from ..core.verdict import Result
from ..paths import shown
from ..report import html as html_report
from .findings import READY, Judged

AREA = "audit"


def result_for(j: Judged, mac: str, capture: Path, started: str) -> Result:
    f = j.finding
    pcap = shown(capture)
    if j.verdict in ("PASS", "FAIL"):
        reason = f"expected {f.expect}; seen {j.seen} (pcap: {pcap})"
    else:
        reason = f"{j.seen} (pcap: {pcap})"
    return Result(id=f.id, part=mac, title=f.title, area=AREA, ipv6ready=None, rfc=f.rfc, verdict=j.verdict,
                  reason=reason, expected=f.expect, seen=j.seen, evidence={"pcap": pcap}, duration_s=0.0,
                  started=started, kind="check", profile="default", capabilities=[], fault=None, setup="audit",
                  target=capture.name, measurements=j.measurements)


def _e(s) -> str:
    return html.escape(str(s if s is not None else ""))


def audit_section(doc: dict, report_dir: Path) -> str:
    """The per-host readiness table (only in an audit's report)."""
    info = doc["run"].get("audit")
    if not info:
        return ""
    by_host: dict[str, dict] = {}
    for c in doc["checks"]:
        by_host.setdefault(c["part"], {})[c["id"]] = c
    rows = []
    for mac, cs in by_host.items():
        ready = cs.get(READY.id, {})
        m = ready.get("measurements", {})
        cells = [f"<code>{_e(mac)}</code><br><small>{_e(', '.join(m.get('ipv6_addresses', [])[:3]))}"
                 f"{'<br>' + _e(', '.join(m.get('ipv4_addresses', [])[:3])) if m.get('ipv4_addresses') else ''}</small>",
                 f'<span class="v {_e(ready.get("verdict", "").lower())}">{_e(ready.get("verdict", "?"))}</span>',
                 _e(f"{m.get('ipv6_share_percent')}%" if m.get("ipv6_share_percent") is not None else "—")]
        for fid in ("audit.host_sends_no_ipv4", "audit.dhcpv4_asks_for_option_108", "audit.dhcpv4_stops_after_option_108",
                    "audit.dns_over_ipv6", "audit.ipv6_preferred_for_dual_stack_names", "audit.nd_behaviour",
                    "audit.checksums",
                    "audit.router_advertises_dns_and_nat64_prefix"):
            c = cs.get(fid)
            if c is None:
                cells.append("")
                continue
            cells.append(f'<span class="v {_e(c["verdict"].lower())}">{_e(c["verdict"])}</span>'
                         f'<br><small>{_e(c["seen"][:160])}</small>')
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = ("<tr><th>host</th><th>readiness</th><th>IPv6 share</th><th>no IPv4</th><th>asks option 108</th>"
            "<th>stops after 108</th><th>DNS over IPv6</th><th>IPv6 first</th><th>ND</th><th>checksums</th>"
            "<th>RAs</th></tr>")
    mem = ", ".join(f"{v} MiB {k}" for k, v in info["peak_rss_mib"].items() if v)
    stats = (f"{info['packets']} packets, {info['hosts_seen']} hosts, {info['duration_s']} s "
             f"({info['packets_per_s']} packets/s, {info.get('engine', 'tshark')} engine); peak memory {mem}")
    return (f"<h2>IPv6-only readiness per host</h2><p>Capture <code>{_e(info['capture'])}</code>: {_e(stats)}</p>"
            f"<table class=checks>{head}{''.join(rows)}</table>")


if audit_section not in html_report.SECTIONS:
    html_report.SECTIONS.append(audit_section)
