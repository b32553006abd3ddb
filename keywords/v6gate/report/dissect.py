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

MAX_FRAMES = 5
MAX_DETAIL_LINES = 60  # per frame, after dropping tshark's capture metadata and MAC bit fields
TIMEOUT_S = 20
#: background the DUT sends in every window, left out unless the check's area is about it (summary text)
BACKGROUND = {"mld": ("Multicast Listener Report", "Multicast Listener Done")}
_NOISE = re.compile(r"^\s+\.\.\.\. .*= (LG|IG) bit:")

_FRAME = re.compile(r"^Frame (\d+): ")
_SUMMARY = re.compile(r"^\s*(\d+)\s+\d+\.\d+\s")


def decryption_args(pcap: str) -> list[str]:
    """tshark options that decrypt the pcap with the tables written next to
    it (``<stem>.esp_sa``, ``<stem>.ikev2_decryption_table``: Wireshark's UAT
    lines, the check's own keys), so the report shows the packets inside."""
    args = []
    for suffix, uat in ((".ikev2_decryption_table", "ikev2_decryption_table"), (".esp_sa", "esp_sa")):
        path = os.path.splitext(pcap)[0] + suffix
        if os.path.isfile(path) and os.path.getsize(path) < 65536:
            with open(path, errors="replace") as f:
                args += [a for ln in f.read().splitlines() if ln.strip() for a in ("-o", f"uat:{uat}:{ln.strip()}")]
    if any(a.startswith("uat:esp_sa:") for a in args):
        args += ["-o", "esp.enable_encryption_decode:TRUE"]
    return args


def _tshark(pcap: str) -> str | None:
    try:
        cp = subprocess.run(["tshark", "-n", *decryption_args(pcap), "-r", pcap, "-V", "-P"], capture_output=True,
                            text=True, timeout=TIMEOUT_S)
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
            elif not _NOISE.match(line):
                frames[-1]["detail"].append(line)
        elif _SUMMARY.match(line):
            pending = line
    for f in frames:
        lines = f["detail"]
        f["detail"] = "\n".join(lines[:MAX_DETAIL_LINES]) + (
            f"\n… {len(lines) - MAX_DETAIL_LINES} more lines (open the pcap)" if len(lines) > MAX_DETAIL_LINES else "")
    return frames


def _source(frame: dict) -> str:
    first = frame["detail"].split("\n", 1)[0] if isinstance(frame["detail"], str) else (frame["detail"] or [""])[0]
    m = re.search(r"Src: ([0-9a-f:]{17})", first, re.I)
    return m.group(1).lower() if m else ""


def dissect(pcap_path: str, *, dut_mac: str | None, area: str = "") -> dict:
    """{frames: [...], who: 'DUT' | 'tester', total: n, note: str}: one tshark run per pcap."""
    path = str(ROOT / pcap_path)
    if not os.path.isfile(path):
        return {"frames": [], "who": "", "total": 0, "note": f"pcap {pcap_path} is missing"}
    text = _tshark(path)
    if text is None:
        return {"frames": [], "who": "", "total": 0, "note": "tshark could not read the pcap"}
    frames = parse(text)
    background = tuple(t for a, texts in BACKGROUND.items() if a != area for t in texts)
    dut = [f for f in frames if (not dut_mac or _source(f) == dut_mac.lower())
           and not any(t in f["summary"] for t in background)]
    if dut:
        note = f"first {MAX_FRAMES} of {len(dut)} frames the DUT sent (all in the pcap)" if len(dut) > MAX_FRAMES else ""
        return {"frames": dut[:MAX_FRAMES], "who": "DUT", "total": len(dut), "note": note}
    return {"frames": frames[-MAX_FRAMES:], "who": "tester", "total": len(frames),
            "note": "the DUT sent nothing in this window (background left out); the last frames on the link:"}


def dissect_checks(checks: list[dict], *, dut_mac: str | None, workers: int | None = None) -> dict[str, dict]:
    """check key -> dissection, for the checks that have a pcap."""
    from .triage import key

    if not shutil.which("tshark"):
        return {}
    # a check whose DUT was another device than the run's (the lab's stand-in) names its MAC in its evidence
    todo = [(key(c), c["evidence"]["pcap"], c["area"], c["evidence"].get("dut_mac") or dut_mac) for c in checks
            if (c.get("evidence") or {}).get("pcap")]
    if not todo:
        return {}
    workers = workers or max(1, min(4, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = pool.map(lambda t: (t[0], dissect(t[1], dut_mac=t[3], area=t[2])), todo)
        return dict(done)
