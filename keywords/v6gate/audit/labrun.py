"""A capture of a lab run: active checks on the embedded lab with one
continuous capture of the tester's link around them, for auditing the
same DUT passively and comparing the verdicts (the audit's fixtures in
fixtures/captures/ are made this way, see tools/make-audit-fixtures).

The capture holds everything between the first check and the last one,
DUT rebuilds included (the per-check pcaps of a run do not: a rebuild
happens before its check's capture starts)."""

from __future__ import annotations

import json
from pathlib import Path

from ..core.check import find
from ..core.session import Session
from ..net.capture import Capture
from .findings import ACTIVE

#: (check id, part, lab fault or None)
Item = tuple[str, str | None, str | None]


def capture_lab_run(items: list[Item], pcap: Path, run_dir: Path) -> dict:
    """Run ``items`` on a fresh lab while capturing the link into ``pcap``;
    returns {"dut_mac", "checks": [{id, part, fault, verdict, reason}]}."""
    pcap = Path(pcap)
    pcap.parent.mkdir(parents=True, exist_ok=True)
    session = Session.for_lab(Path(run_dir))
    verdicts = []
    try:
        t = session.target
        capture = Capture(t.tester_interface, t.tester_netns).start()
        try:
            capture.begin(pcap)
            for check_id, part, fault in items:
                c = find(check_id)
                r = session.run(c, c.part(part), fault=fault, setup=f"fault:{fault}" if fault else "as-is")
                verdicts.append({"id": check_id, "part": part, "fault": fault, "verdict": r.verdict,
                                 "reason": r.reason})
            capture.end(wait=True)
        finally:
            capture.stop()
        return {"dut_mac": t.dut_mac, "checks": verdicts}
    finally:
        session.close()


def active_verdicts(record: dict) -> dict[str, str]:
    """The active verdict behind each audit finding, from a lab run's
    record: one check (or check#part) may have run several times; a finding
    FAILs on the capture if any of its runs FAILed."""
    out: dict[str, str] = {}
    for finding, active in ACTIVE.items():
        runs = [c["verdict"] for c in record["checks"]
                if active in (c["id"], f"{c['id']}#{c['part']}")]
        if runs:
            out[finding] = "FAIL" if "FAIL" in runs else "PASS" if set(runs) == {"PASS"} else runs[0]
    return out


def write_record(record: dict, path: Path) -> None:
    Path(path).write_text(json.dumps(record, indent=1) + "\n")
