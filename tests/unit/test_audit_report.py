"""The audit's report, host by host, is written by the C writer (engine/report.c and judge.c, from the
engine's state) with exactly the bytes of the Python writer (hostout.py, from findings.py's judged
findings): every stream (results.json's host table, the JUnit testcases, the HTML rows, the terminal
lines, the partial's records, the FAILs) and every count, on every fixture, the benchmark's captures,
the captures generated at the rules' edges (Ethernet, Linux cooked, raw IP) and hundreds of mutants.
results.json's host table (schema v6gate/results/2) expands to exactly the checks the list of
results gave (v6gate/results/1: ``result_for`` of every judged finding), with the same summary and
compliance files, read back from the file too; the C writer's code runs under AddressSanitizer and
UBSan in test_audit_engine's fuzz; and the report's memory does not grow with the hosts."""

import dataclasses
import json
import random
import tracemalloc
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from audit_rulegen import frames as rule_frames
from audit_rulegen import write_pcap
from test_audit_fuzz import bases, mutate

from v6gate.audit import fast
from v6gate.audit.capture import seed_frames, synthesize, synthesize_mix
from v6gate.audit.fast import read_into
from v6gate.audit.findings import judge_host
from v6gate.audit.fixtures import CAPTURES
from v6gate.audit.hostout import STREAMS, Streams, write_python
from v6gate.audit.hosts import Audit
from v6gate.audit.report import build_document, result_for, write_all
from v6gate.audit.run import audit_capture
from v6gate.errors import UsageError
from v6gate.report import compliance, diff, results

STARTED = "2026-11-24T00:00:00+00:00"
FIXTURES = sorted(CAPTURES.glob("*.pcapng"))


def c_written(path) -> Streams | None:
    """The C writer's streams of ``path`` (None: the capture is read on the Python path)."""
    got = fast.read(path)
    try:
        return got.write(Streams(), "cap-1", "captures/x.pcap") if got.engine is not None else None
    finally:
        got.close()


def py_written(path) -> Streams:
    audit = Audit()
    read_into(audit, path)
    return write_python(Streams(), audit, list(audit.hosts), "cap-1", "captures/x.pcap")


def same_bytes(path) -> int:
    """The C writer's streams and counts are the Python writer's; the hosts written (0: the capture is
    one the engine leaves to the Python path, or bad input on both)."""
    try:
        ref = py_written(path)
    except UsageError as exc:
        with pytest.raises(UsageError) as got:
            c_written(path)
        assert str(got.value) == str(exc)
        return 0
    got = c_written(path)
    if got is None:
        return 0
    for s in STREAMS:
        a, b = got.read(s), ref.read(s)
        if a != b:
            at = next(i for i in range(len(a) + 1) if a[i:i + 1] != b[i:i + 1])
            pytest.fail(f"{path}: the C writer's {s} differs at {at}:\n C  {a[max(0, at - 200):at + 80]!r}\n "
                        f"Py {b[max(0, at - 200):at + 80]!r}")
    assert (got.counts, got.first_rows, got.hosts) == (ref.counts, ref.first_rows, ref.hosts)
    got.close()
    ref.close()
    return ref.hosts


@pytest.fixture(scope="module")
def seeds():
    return seed_frames(FIXTURES)


@pytest.mark.parametrize("capture", FIXTURES, ids=lambda p: p.stem)
def test_the_c_writer_writes_the_python_writer_s_bytes_on_every_fixture(capture):
    assert same_bytes(capture) >= 1


@pytest.mark.parametrize("kind", ["control", "mix"])
def test_the_c_writer_writes_the_python_writer_s_bytes_on_the_benchmark_captures(seeds, kind, tmp_path):
    cap = tmp_path / f"{kind}.pcap"
    if kind == "control":
        synthesize(cap, seeds, 12_000, hosts=15)
    else:
        synthesize_mix(cap, seeds, 20_000, hosts=15, control_percent=3)
    assert same_bytes(cap) > 30


@pytest.mark.parametrize("seed", range(12))
def test_the_c_writer_writes_the_python_writer_s_bytes_at_the_rules_edges(seed, tmp_path):
    """(audit_rulegen: bounds crossed, V6ONLY_WAIT windows, dual-stack names, odd checksums, time going
    back: every finding's every verdict and text.)"""
    fr = rule_frames(seed, 2500)
    for linktype in (1, 113, 101):
        cap = tmp_path / f"rules-{linktype}.pcap"
        write_pcap(cap, fr, linktype)
        assert same_bytes(cap) > 3


def test_the_c_writer_writes_the_python_writer_s_bytes_on_mutants(tmp_path):
    """400 of the fuzz test's mutants: the same bytes, or the same one line on both."""
    rng = random.Random(33)
    captures = bases()
    written = 0
    for i in range(400):
        name, data, recs = rng.choice(captures)
        _, mutant = mutate(rng, data, recs, name.endswith(".pcapng"))
        cap = tmp_path / f"m{i % 2}{Path(name).suffix}"
        cap.write_bytes(mutant)
        written += same_bytes(cap) > 0
    assert written > 300


def listed_document(capture, doc) -> dict:
    """The v6gate/results/1 document of the audit's checks: ``result_for`` of every judged finding of
    every host (the list an audit wrote before its host table), with the audit's run metadata."""
    audit = Audit()
    read_into(audit, capture)
    table = doc["audit"]
    pcap = (table.head if hasattr(table, "head") else table)["check"]["evidence"]["pcap"]
    started = doc["run"]["started"]
    res = [result_for(j, mac, Path(capture), started, pcap) for mac in sorted(audit.hosts)
           for j in judge_host(audit, audit.hosts[mac])]
    return results.build_document(res, run_meta={k: v for k, v in doc["run"].items() if k != "baseline"})


@pytest.mark.parametrize("capture", [*FIXTURES, "mix"], ids=lambda p: getattr(p, "stem", p))
def test_the_host_table_expands_to_the_checks_the_list_gave(capture, tmp_path):
    if capture == "mix":
        capture = tmp_path / "mix.pcap"
        synthesize_mix(capture, seed_frames(FIXTURES), 20000, hosts=15)
    paths, doc = audit_capture(capture, out=tmp_path / "out")
    listed = listed_document(capture, doc)
    got = list(results.all_checks(doc))
    assert got == listed["checks"] and len(got) > 8
    assert doc["summary"] == listed["summary"]
    assert compliance.matrix(doc) == compliance.matrix(listed)
    compliance.write(listed, tmp_path)
    for name in ("compliance.csv", "compliance.json"):
        assert (tmp_path / name).read_bytes() == (tmp_path / "out" / name).read_bytes()
    # the file: schema-valid whole (every row), and the same checks read back
    back = json.loads(Path(paths["results"]).read_text())
    assert back["schema"] == "v6gate/results/2" and back["checks"] == []
    jsonschema.Draft202012Validator(json.loads(results.SCHEMA.read_text())).validate(back)
    assert list(results.all_checks(back)) == listed["checks"]
    assert diff.compare(diff.load(paths["results"])[0], listed)["common"] == len(got)
    # junit: a testcase per host, failing with each of its FAILs
    suite = ET.parse(paths["junit"]).getroot()[0]
    failing = {c["part"] for c in got if c["verdict"] == "FAIL"}
    assert int(suite.get("tests")) == len(suite) == len({c["part"] for c in got})
    assert int(suite.get("failures")) == len(failing) == sum(1 for case in suite if case.find("failure") is not None)
    # the HTML: every host's row, the FAILs' causes
    page = Path(paths["html"]).read_text()
    assert page.count('<tr><td><code>') >= len({c["part"] for c in got})
    for c in [c for c in got if c["verdict"] == "FAIL"][:20]:
        assert c["part"] in page


def many_hosts(audit, n):
    """The capture's hosts copied under ``n`` MACs in all (each copy judged like its original)."""
    hosts = list(audit.hosts.values())
    for i in range(n - len(hosts)):
        h = hosts[i % len(hosts)]
        mac = f"0a:{i >> 16 & 255:02x}:{i >> 8 & 255:02x}:{i & 255:02x}:{h.mac[12:]}"
        audit.hosts[mac] = dataclasses.replace(h, mac=mac)
    return audit


def test_the_report_s_memory_does_not_grow_with_the_hosts(tmp_path):
    capture = CAPTURES / "dual-stack-host.pcapng"
    _, doc = audit_capture(capture, out=tmp_path / "meta")
    meta = {k: v for k, v in doc["run"].items() if k != "baseline"}
    peaks = {}
    for n in (150, 1200):
        audit = Audit()
        read_into(audit, capture)
        audit = many_hosts(audit, n)
        tracemalloc.start()
        streams = write_python(Streams(), audit, sorted(audit.hosts), "cap-1", "x.pcap")
        doc = build_document(streams, capture, STARTED, "x.pcap", meta)
        (tmp_path / str(n)).mkdir()
        write_all(tmp_path / str(n), doc)
        peaks[n] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert sum(doc["summary"]["counts"].values()) >= 8 * n
    print(f"report peak traced memory: {peaks}")
    # 8x the hosts: the FAILs' keys grow (some bytes each), the rows stay on disk
    assert peaks[1200] < 1.5 * peaks[150] + (4 << 20), peaks
