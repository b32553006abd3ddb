#!/usr/bin/env python3
"""Turn the IPv6 Ready host checklist (markdown tables) into data:
fixtures/ipv6ready/host-checklist.yaml.  Run once per checklist revision:
    .venv/bin/python tools/import-checklist.py ../shared/reference/host-checklist.md
Every test ID gets its scope (H, R, H+R), part count and the (abridged) part
titles, so coverage can be checked against it; the Core 5.0.x additions are
marked ``added_in: 5.0.x`` and changed tests ``changed_in_5_0``."""

import re
import sys
from pathlib import Path

import yaml

ID = r"(?:v6LC|DHCP_CONF|MLD)\.[\d.]*\d"
src = Path(sys.argv[1])
out = Path(__file__).resolve().parents[1] / "fixtures" / "ipv6ready" / "host-checklist.yaml"
tests: dict[str, dict] = {}


def part_titles(text: str) -> dict:
    return {m.group(1): m.group(2).strip().rstrip(".")
            for m in re.finditer(r"(?:^|; )([A-Z]): (.*?)(?=; [A-Z]: |$)", text)}


for line in src.read_text().splitlines():
    if not line.startswith("|"):
        continue
    cells = [c.strip() for c in line.strip().strip("|").split("|")] + [""] * 4
    ids = re.findall(ID, cells[0])
    if not ids:
        continue
    changes_row = len(ids) > 1 or "5.0" in cells[0] or (ids[0].startswith("v6LC") and cells[2] not in ("H", "R", "H+R"))
    if changes_row:  # the "Changes in Core v5.0.x" table (its third column is an RFC, not a scope)
        n = re.search(r"Parts ([A-Z])[–-]([A-Z])", cells[0])
        parts = ord(n.group(2)) - ord(n.group(1)) + 1 if n else 1
        for tid in ids:
            if tid in tests:
                tests[tid]["changed_in_5_0"] = f"{cells[1]} ({cells[2]})"
            else:
                tests[tid] = {"id": tid, "title": cells[1], "scope": "H+R", "parts": parts, "added_in": "5.0.x",
                              "rfc": cells[2]}
        continue
    tid = ids[0]
    if tid.startswith("v6LC"):
        entry = {"id": tid, "title": cells[1], "scope": cells[2], "parts": int(cells[3]) if cells[3].isdigit() else 1}
        titles = cells[4]
    elif tid.startswith("DHCP_CONF"):
        entry = {"id": tid, "title": cells[1], "scope": "H", "parts": int(cells[2]) if cells[2].isdigit() else 1}
        titles = cells[3]
    else:
        entry = {"id": tid, "title": cells[1], "scope": "H", "parts": 1}
        titles = ""
    pt = part_titles(titles)
    if pt:
        entry["part_titles"] = pt
    tests[tid] = entry

doc = {"source": f"{src.name}: IPv6 Ready Core v4.0.7 with the 5.0.x changes, DHCPv6 v1.1.4 (client), MLD v1.3",
       "note": "part titles are abridged in the source; a test has 'parts' parts lettered A, B, ...",
       "tests": list(tests.values())}
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=200))
print(f"{len(tests)} tests -> {out}")
