"""The decisive packets of a check, dissected by tshark at report time: the
frames the DUT sent in the check's window (its pcap holds only that window),
as tshark's one-line summary and its detail view (-V), capped.  When the DUT
sent nothing, the last frames the tester sent are shown instead (what went
unanswered).  Only for checks that need a person (FAIL, ERROR, NOT_JUDGED,
INCONCLUSIVE), in parallel, one tshark per pcap, so the report stays quick
to build."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

from ..paths import ROOT

MAX_FRAMES = 6
MAX_DETAIL_LINES = 80  # per frame, after dropping tshark's capture metadata
TIMEOUT_S = 20
#: background the DUT sends in every window; left out unless the check's area is about it
BACKGROUND = {"mld": "icmpv6.type == 143 || icmpv6.type == 131 || icmpv6.type == 132"}

_FRAME = re.compile(r"^Frame (\d+): ")
_SUMMARY = re.compile(r"^\s*(\d+)\s+\d+\.\d+\s")


def _filter(dut_mac: str | None, area: str) -> str:
    parts = [f"eth.src == {dut_mac}"] if dut_mac else []
    for bg_area, expr in BACKGROUND.items():
        if area != bg_area:
            parts.append(f"!({expr})")
    return " && ".join(parts)


def _tshark(pcap: str, display_filter: str) -> str | None:
    argv = ["tshark", "-n", "-r", pcap, "-V", "-P"] + (["-Y", display_filter] if display_filter else [])
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return cp.stdout if cp.returncode == 0 else None


def parse(text: str) -> list[dict]:
    """tshark -V -P output -> [{number, summary, detail}] (the 'Frame N:' metadata block dropped)."""
    frames: list[dict] = []
    pending, state = "", "between"
    for line in text.splitlines():
        m = _FRAME.match(line)
        if m:
            frames.append({"number": int(m.group(1)), "summary": pending.strip(), "detail": []})
            pending, state = "", "meta"
        elif state == "meta":
            if line.startswith(" "):
                continue
            state = "body"
            if line.strip():
                frames[-1]["detail"].append(line)
        elif state == "body":
            if not line.strip():
                state = "between"
            else:
                frames[-1]["detail"].append(line)
        elif _SUMMARY.match(line):
            pending = line
    for f in frames:
        lines = f["detail"]
        f["detail"] = "\n".join(lines[:MAX_DETAIL_LINES]) + (
            f"\n… {len(lines) - MAX_DETAIL_LINES} more lines (open the pcap)" if len(lines) > MAX_DETAIL_LINES else "")
    return frames


def dissect(pcap_path: str, *, dut_mac: str | None, area: str = "") -> dict:
    """{frames: [...], who: 'DUT' | 'tester', total: n, note: str}"""
    path = str(ROOT / pcap_path)
    if not os.path.isfile(path):
        return {"frames": [], "who": "", "total": 0, "note": f"pcap {pcap_path} is missing"}
    text = _tshark(path, _filter(dut_mac, area))
    if text is None:
        return {"frames": [], "who": "", "total": 0, "note": "tshark could not read the pcap"}
    frames = parse(text)
    who = "DUT"
    note = ""
    if not frames:
        all_frames = parse(_tshark(path, "") or "")
        who = "tester"
        note = "the DUT sent nothing in this window; the last frames the tester sent:"
        frames = all_frames[-MAX_FRAMES:]
        total = len(all_frames)
    else:
        total = len(frames)
        if total > MAX_FRAMES:
            note = f"first {MAX_FRAMES} of {total} frames the DUT sent (all in the pcap)"
        frames = frames[:MAX_FRAMES]
    return {"frames": frames, "who": who, "total": total, "note": note}


def dissect_checks(checks: list[dict], *, dut_mac: str | None, workers: int | None = None) -> dict[str, dict]:
    """check key -> dissection, for the checks that have a pcap."""
    from .triage import key

    if not shutil.which("tshark"):
        return {}
    todo = [(key(c), c["evidence"]["pcap"], c["area"]) for c in checks if (c.get("evidence") or {}).get("pcap")]
    if not todo:
        return {}
    workers = workers or max(1, min(4, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = pool.map(lambda t: (t[0], dissect(t[1], dut_mac=dut_mac, area=t[2])), todo)
        return dict(done)
