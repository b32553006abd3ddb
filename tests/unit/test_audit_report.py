"""The audit's report from checks kept on disk (``audit.report.Spool``, made from templates) is the
report the list of results gave: the same checks, results.json the same document, junit.xml and the
compliance files byte for byte, the HTML the same triage groups and per-host table (it lists the
first 50 checks of a cause and none of the passed ones, which the table holds), on every fixture
capture and on a synthetic capture of many hosts; and its memory does not grow with the number of
hosts."""

import dataclasses
import html as html_mod
import io
import json
import re
import tracemalloc

import pytest

from v6gate.audit.capture import seed_frames, synthesize_mix
from v6gate.audit.fast import read_into
from v6gate.audit.findings import judge_host
from v6gate.audit.fixtures import CAPTURES
from v6gate.audit.hosts import Audit
from v6gate.audit.report import Spool, build_document, result_for, write_all
from v6gate.audit.run import audit_capture
from v6gate.paths import shown
from v6gate.report import compliance, html, junit, results

STARTED = "2026-11-24T00:00:00+00:00"


def audited(capture, tmp_path):
    """(Audit, the run metadata an audit of the capture writes)."""
    _, doc = audit_capture(capture, out=tmp_path / "meta")
    audit = Audit()
    read_into(audit, capture)
    meta = {k: v for k, v in doc["run"].items() if k != "baseline"}
    return audit, meta


def from_list(audit, macs, capture, meta):
    res = [result_for(j, mac, capture, STARTED, shown(capture)) for mac in macs
           for j in judge_host(audit, audit.hosts[mac])]
    return results.build_document(res, run_meta=meta)


def written(doc, tmp_path, name):
    """results.json text (dump_document), junit.xml bytes, HTML pages (build time masked)."""
    out = io.StringIO()
    results.dump_document(doc, out)
    jx = tmp_path / f"{name}.xml"
    junit.write_junit(doc, jx)
    pages = {k: re.sub(r"Report built in [\d.]+ s", "", v)
             for k, v in html.pages(doc, tmp_path, dissect=False).items()}
    return out.getvalue(), jx.read_bytes(), pages


def many_hosts(audit, n):
    """The capture's hosts copied under ``n`` MACs in all (each copy judged like its original)."""
    hosts = list(audit.hosts.values())
    for i in range(n - len(hosts)):
        h = hosts[i % len(hosts)]
        mac = f"0a:{i >> 16 & 255:02x}:{i >> 8 & 255:02x}:{i & 255:02x}:{h.mac[12:]}"
        audit.hosts[mac] = dataclasses.replace(h, mac=mac)
    return audit


@pytest.mark.parametrize("capture", [*sorted(CAPTURES.glob("*.pcapng")), "mix"], ids=lambda p: getattr(p, "stem", p))
def test_the_spooled_report_is_the_listed_report_byte_for_byte(capture, tmp_path):
    if capture == "mix":
        capture = tmp_path / "mix.pcap"
        synthesize_mix(capture, seed_frames(sorted(CAPTURES.glob("*.pcapng"))), 20000, hosts=15)
    audit, meta = audited(capture, tmp_path)
    macs = sorted(audit.hosts, key=lambda m: -audit.hosts[m].frames)
    listed = from_list(audit, macs, capture, meta)
    spooled = build_document(audit, macs, capture, STARTED, meta)
    assert isinstance(spooled["checks"], Spool) and len(spooled["checks"]) == len(listed["checks"]) > 8
    assert list(spooled["checks"]) == listed["checks"]
    assert spooled["summary"] == listed["summary"]
    a = written(listed, tmp_path, "listed")
    assert a[0] == json.dumps(listed, indent=1, default=str)  # dump_document writes json.dumps's bytes
    (tmp_path / "spooled").mkdir()
    paths = write_all(tmp_path / "spooled", spooled)
    assert json.loads(paths["results"].read_text()) == json.loads(a[0])
    assert paths["junit"].read_bytes() == a[1]
    assert compliance.matrix(spooled) == compliance.matrix(listed)
    (tmp_path / "listed").mkdir()
    compliance.write(listed, tmp_path / "listed")
    for name in ("compliance.csv", "compliance.json"):
        assert (tmp_path / "listed" / name).read_bytes() == (tmp_path / "spooled" / name).read_bytes()
    page = paths["html"].read_text()
    listed_page = a[2]["report.html"]
    at = listed_page.index("IPv6-only readiness per host")
    table = listed_page[at:listed_page.index("</table>", at)]
    assert table in page  # the per-host table as the listed report has it
    fails = [c for c in listed["checks"] if c["verdict"] == "FAIL"]
    assert all(html_mod.escape(c["seen"][:60]) in page for c in fails[:50])
    results.validate(spooled)


def test_the_report_s_memory_does_not_grow_with_the_hosts(tmp_path):
    capture = CAPTURES / "dual-stack-host.pcapng"
    _, meta = audited(capture, tmp_path)
    peaks = {}
    for n in (150, 1200):
        audit = many_hosts(audited(capture, tmp_path)[0], n)
        tracemalloc.start()
        doc = build_document(audit, sorted(audit.hosts), capture, STARTED, meta)
        (tmp_path / str(n)).mkdir()
        write_all(tmp_path / str(n), doc)
        peaks[n] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert len(doc["checks"]) >= 8 * n
    print(f"report peak traced memory: {peaks}")
    # 8x the hosts: the hosts' summary entries grow (a few bytes each), the checks stay on disk
    assert peaks[1200] < 1.5 * peaks[150] + (4 << 20), peaks
