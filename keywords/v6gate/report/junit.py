"""JUnit XML from results.json (one testcase per check and part)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path


def write_junit(doc: dict, path: Path) -> None:
    """Written one testcase at a time (``doc["checks"]`` may be a sequence read from disk): the bytes
    ElementTree writes for the whole tree, without the whole tree in memory."""
    checks = doc["checks"]
    head, tail = suite_head_tail(doc, len(checks), sum(c["duration_s"] for c in checks))
    with open(path, "w", encoding="utf-8", errors="xmlcharrefreplace") as f:  # as ElementTree.write opens it
        f.write("<?xml version='1.0' encoding='utf-8'?>\n" + head)
        for c in checks:
            f.write(ET.tostring(_case(c), encoding="unicode"))
        f.write(tail)


def suite_head_tail(doc: dict, tests: int, seconds: float, *, failures: int | None = None, errors: int | None = None,
                    skipped: int | None = None) -> tuple[str, str]:
    """The text of the testsuites element before and after its testcases (the counts: the summary's,
    unless given: an audit's testcases are hosts)."""
    counts = doc["summary"]["counts"]
    failures = counts["FAIL"] + counts["INCONCLUSIVE"] if failures is None else failures
    errors = counts["ERROR"] if errors is None else errors
    skipped = counts["SKIP"] + counts.get("NOT_JUDGED", 0) if skipped is None else skipped
    suite = ET.Element("testsuite", name=f"v6gate {doc['run']['target'].get('name', '')}",
                       tests=str(tests), failures=str(failures), errors=str(errors), skipped=str(skipped),
                       time=f"{seconds:.3f}", timestamp=doc["run"]["started"])
    ET.SubElement(suite, "cases")
    root = ET.Element("testsuites")
    root.append(suite)
    head, tail = ET.tostring(root, encoding="unicode").split("<cases />")
    return head, tail


def _case(c: dict) -> ET.Element:
    name = f"{c['ipv6ready'] or c['id']}{'-' + c['part'] if c['part'] else ''} {c['title']}"
    case = ET.Element("testcase", classname=f"v6gate.{c['area']}.{c['id']}", name=name,
                      time=f"{c['duration_s']:.3f}")
    text = f"{c['rfc']}: {c['reason']}"
    v = c["verdict"]
    if v == "FAIL" and c.get("waived"):
        ET.SubElement(case, "skipped", message=f"waived FAIL: {text}")
    elif v in ("FAIL", "INCONCLUSIVE"):
        ET.SubElement(case, "failure", message=text[:500], type=v).text = text
    elif v == "ERROR":
        ET.SubElement(case, "error", message=text[:500], type="ERROR").text = text
    elif v == "NOT_JUDGED":
        # neither a pass nor a second FAIL: the precondition's own check carries the FAIL
        ET.SubElement(case, "skipped", type="NOT_JUDGED", message=f"NOT_JUDGED: {text}"[:500]).text = text
    elif v == "SKIP":
        ET.SubElement(case, "skipped", message=text[:500])
    if c.get("evidence", {}).get("pcap"):
        ET.SubElement(case, "system-out").text = f"pcap: {c['evidence']['pcap']}"
    return case
