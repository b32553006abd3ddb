"""Bad input, table-driven: malformed or hostile target files, options,
captures and baselines.  Each gives exactly one line on stderr that names
what to fix, the exit code README.md documents (2: bad input, nothing was
run; 3: the bench cannot do its part, e.g. a tool is missing), no
traceback, and never a DUT verdict (no run directory, no results).

Every case runs the real CLI entry point (``v6gate.cli.main``) in this
process, with the two things that would start work (a pytest phase of a run,
the stale-lab sweep) replaced by tripwires: none of these inputs may get
that far, which is the point.  A closed stdout (``v6gate list | head``) is
tested with real pipes."""

from __future__ import annotations

import copy
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from v6gate.paths import FIXTURES, REPORTS

GOOD = yaml.safe_load((FIXTURES / "targets" / "example-host.yaml").read_text())
GOOD.pop("waiver_files", None)


def target(tmp: Path, change=None, text: str | None = None) -> str:
    """A target file: the example host's, changed by ``change(doc)``, or ``text`` verbatim."""
    p = tmp / "target.yaml"
    if text is None:
        doc = copy.deepcopy(GOOD)
        if change:
            change(doc)
        text = yaml.safe_dump(doc, sort_keys=False)
    p.write_text(text)
    return str(p)


def setf(path: str, value):
    def change(doc):
        *parents, last = path.split(".")
        d = doc
        for k in parents:
            d = d.setdefault(k, {})
        d[last] = value
    return change


def drop(path: str):
    def change(doc):
        *parents, last = path.split(".")
        d = doc
        for k in parents:
            d = d[k]
        d.pop(last)
    return change


PCAP_HDR = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)


def capture(tmp: Path, kind: str) -> str:
    p = tmp / f"{kind}.pcap"
    frame = bytes.fromhex("333300000001020000000002 86dd".replace(" ", "")) + bytes(40)
    rec = struct.pack("<IIII", 1, 0, len(frame), len(frame)) + frame
    data = {
        "empty": b"",
        "text": b"this is not a capture\n" * 10,
        "truncated_header": PCAP_HDR[:12],
        "truncated_record": PCAP_HDR + rec[:30],
        "huge_record": PCAP_HDR + struct.pack("<IIII", 1, 0, 0x7FFFFFFF, 0x7FFFFFFF) + frame,
        "bad_linktype": struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 0xFFFF) + rec,
        "gzip_garbage": gzip.compress(b"\x00\x01garbage" * 100),
        "big_junk": os.urandom(1 << 20) * 8,
    }[kind]
    p.write_bytes(data)
    return str(p)


def baseline(tmp: Path, kind: str) -> str:
    p = tmp / "baseline.json"
    p.write_text({"not_json": "{results: ", "list": "[1, 2, 3]", "other_schema": json.dumps({"checks": "all"}),
                  "no_checks": json.dumps({"schema_version": 1, "run": {}})}[kind])
    return str(p)


def no_tshark(monkeypatch) -> None:
    """A machine without tshark: every lookup of it fails (PATH and the sbin fallback)."""
    import v6gate.util.proc as proc

    real = shutil.which
    monkeypatch.setattr(proc.shutil, "which", lambda tool, *a, **kw: None if tool in ("tshark", "dumpcap")
                        else real(tool, *a, **kw))


# (id, argv builder (tmp -> list), expected exit code, words the one line must contain, extra env builder)
CASES = [
    # -- target files ------------------------------------------------------------------------------
    ("name-wrong-type", lambda t: ["validate", target(t, setf("name", [1, 2]))], 2, ["name"]),
    ("capabilities-not-a-list", lambda t: ["validate", target(t, setf("capabilities", "Core"))], 2, ["capabilities"]),
    ("unknown-capability", lambda t: ["validate", target(t, setf("capabilities", ["Core", "Coer"]))], 2, ["Coer"]),
    ("unknown-top-level-key", lambda t: ["validate", target(t, setf("colour", "blue"))], 2, ["colour"]),
    ("unknown-nested-key", lambda t: ["validate", target(t, setf("dut.macc", "52:54:00:12:34:56"))], 2, ["macc"]),
    ("missing-tester", lambda t: ["validate", target(t, drop("tester"))], 2, ["tester"]),
    ("missing-dut-mac", lambda t: ["validate", target(t, drop("dut.mac"))], 2, ["mac"]),
    ("duplicate-key", lambda t: ["validate", target(t, text=(FIXTURES / "targets" / "example-host.yaml").read_text()
                                                    + "\nname: again\n")], 2, ["duplicate key 'name'"]),
    ("bad-mac", lambda t: ["validate", target(t, setf("dut.mac", "zz:00:00:00:00:01"))], 2, ["dut.mac"]),
    ("mac-too-short", lambda t: ["validate", target(t, setf("dut.mac", "52:54:00:12:34"))], 2, ["dut.mac"]),
    ("prefix-len-129", lambda t: ["validate", target(t, setf("link.prefix", "2001:db8:1::/129"))], 2, ["link.prefix"]),
    ("prefix-host-bits", lambda t: ["validate", target(t, setf("link.prefix", "2001:db8:1::1/64"))], 2,
     ["link.prefix"]),
    ("prefix-ipv4", lambda t: ["validate", target(t, setf("link.prefix", "192.0.2.0/24"))], 2, ["link.prefix"]),
    ("link-local-garbage", lambda t: ["validate", target(t, setf("dut.link_local", "fe80::zz"))], 2,
     ["dut.link_local"]),
    ("global-is-ipv4", lambda t: ["validate", target(t, setf("dut.global", ["192.0.2.1"]))], 2, ["dut.global"]),
    ("mtu-not-a-number", lambda t: ["validate", target(t, setf("link.mtu", "big"))], 2, ["link.mtu"]),
    ("mtu-below-1280", lambda t: ["validate", target(t, setf("link.mtu", 1000))], 2, ["link.mtu"]),
    ("interface-name-too-long", lambda t: ["validate", target(t, setf("tester.interface", "x" * 16))], 2,
     ["tester.interface"]),
    ("negative-timeout", lambda t: ["validate", target(t, setf("timing.reply_timeout_s", -1))], 2,
     ["reply_timeout_s"]),
    ("unknown-control-adapter", lambda t: ["validate", target(t, setf("control.adapter", "telnet"))], 2,
     ["control.adapter"]),
    ("waiver-for-unknown-check", lambda t: ["validate", target(t, setf("waivers", [{"check": "nd.nope", "reason": "the vendor says this is expected on firmware 4.2"}]))],
     2, ["nd.nope"]),
    ("yaml-syntax-error", lambda t: ["validate", target(t, text="name: [unclosed\nkind: host\n")], 2, ["line"]),
    ("empty-file", lambda t: ["validate", target(t, text="")], 2, ["target.yaml"]),
    ("top-level-list", lambda t: ["validate", target(t, text="- a\n- b\n")], 2, ["target.yaml"]),
    ("binary-file", lambda t: ["validate", _binary(t)], 2, ["not a text file"]),
    ("target-is-a-directory", lambda t: ["validate", str(t)], 2, ["{tmp}"]),
    ("target-missing", lambda t: ["run", "--target", str(t / "nope.yaml")], 2, ["file not found"]),
    ("tester-interface-does-not-exist", lambda t: ["run", "--target", target(t, setf("tester.interface", "v6gnosuch0"))],
     2, ["v6gnosuch0", "tester.interface"]),
    # -- options -------------------------------------------------------------------------------------
    ("unknown-area", lambda t: ["run", "--area", "nosucharea"], 2, ["nosucharea"]),
    ("unknown-check", lambda t: ["run", "--check", "nd.no_such_check"], 2, ["nd.no_such_check"]),
    ("list-unknown-area", lambda t: ["list", "--area", "nosucharea"], 2, ["nosucharea"]),
    ("negative-workers", lambda t: ["run", "-n", "-3"], 2, ["-n"]),
    ("workers-not-a-number", lambda t: ["run", "-n", "many"], 2, ["many"]),
    ("bad-profile", lambda t: ["run", "--profile", "fastest"], 2, ["fastest"]),
    ("unknown-option", lambda t: ["run", "--frobnicate"], 2, ["--frobnicate"]),
    ("unknown-command", lambda t: ["frobnicate"], 2, ["frobnicate"]),
    ("repeat-once", lambda t: ["repeat", "1"], 2, ["at least 2"]),
    ("out-dir-unwritable", lambda t: ["run", "--out", "/proc/v6gate-run"], 2, ["/proc/v6gate-run"]),
    ("out-dir-is-a-file", lambda t: ["run", "--out", target(t)], 2, ["--out"]),
    # -- baselines -----------------------------------------------------------------------------------
    ("baseline-missing", lambda t: ["run", "--baseline", str(t / "none.json")], 2, ["--baseline"]),
    ("baseline-not-json", lambda t: ["run", "--baseline", baseline(t, "not_json")], 2, ["--baseline"]),
    ("baseline-a-list", lambda t: ["run", "--baseline", baseline(t, "list")], 2, ["--baseline"]),
    ("baseline-other-schema", lambda t: ["run", "--baseline", baseline(t, "other_schema")], 2, ["--baseline"]),
    ("baseline-without-checks", lambda t: ["run", "--baseline", baseline(t, "no_checks")], 2, ["--baseline"]),
    # -- captures for v6gate audit -------------------------------------------------------------------
    ("audit-missing-file", lambda t: ["audit", str(t / "none.pcap")], 2, ["none.pcap"]),
    ("audit-directory", lambda t: ["audit", str(t)], 2, ["{tmp}"]),
    ("audit-empty", lambda t: ["audit", capture(t, "empty")], 2, ["empty.pcap"]),
    ("audit-text-file", lambda t: ["audit", capture(t, "text")], 2, ["text.pcap"]),
    ("audit-truncated-header", lambda t: ["audit", capture(t, "truncated_header")], 2, ["truncated_header.pcap"]),
    ("audit-truncated-record", lambda t: ["audit", capture(t, "truncated_record")], 2, ["truncated_record.pcap"]),
    ("audit-huge-record-length", lambda t: ["audit", capture(t, "huge_record")], 2, ["huge_record.pcap"]),
    ("audit-unknown-linktype", lambda t: ["audit", capture(t, "bad_linktype")], 2, ["bad_linktype.pcap"]),
    ("audit-gzip-of-garbage", lambda t: ["audit", capture(t, "gzip_garbage")], 2, ["gzip_garbage.pcap"]),
    ("audit-8MiB-of-noise", lambda t: ["audit", capture(t, "big_junk")], 2, ["big_junk.pcap"]),
    ("audit-jobs-zero", lambda t: ["audit", capture(t, "text"), "--jobs", "0"], 2, ["--jobs"]),
    ("audit-out-unwritable", lambda t: ["audit", str(FIXTURES / "captures" / _a_capture()), "--out", "/proc/v6gate-a"],
     2, ["/proc/v6gate-a"]),
    ("audit-without-tshark", lambda t: ["audit", str(FIXTURES / "captures" / _a_capture()), "--engine", "tshark"], 3, ["tshark"],
     no_tshark),
    # -- other commands ------------------------------------------------------------------------------
    ("report-of-a-non-run", lambda t: ["report", str(t)], 2, ["records/"]),
    ("report-of-a-file", lambda t: ["report", target(t)], 2, ["records/"]),
]


def _a_capture() -> str:
    caps = sorted(p.name for p in (FIXTURES / "captures").iterdir() if p.suffix in (".pcap", ".pcapng", ".gz"))
    return caps[0] if caps else "none"


def _runs() -> set:
    d = REPORTS / "runs"
    return set(d.iterdir()) if d.is_dir() else set()


def _binary(tmp: Path) -> str:
    p = tmp / "target.yaml"
    p.write_bytes(b"\x00\x01\x02\xff\xfe" * 50)
    return str(p)


@pytest.fixture
def tripwires(monkeypatch):
    """Fail the case (instead of starting work) if the CLI gets past its input checks."""
    import v6gate.cli as cli
    from v6gate.lab import registry

    def started(*a, **kw):
        raise AssertionError("bad input got past the checks: a run phase was started")

    monkeypatch.setattr(cli, "_run_child", started)
    monkeypatch.setattr(registry, "cleanup", started)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_one_line_and_its_exit_code(case, tmp_path, capsys, monkeypatch, tripwires):
    from v6gate.cli import main

    name, argv_of, code, words, *setup = case
    argv = argv_of(tmp_path)
    if setup:
        setup[0](monkeypatch)
    monkeypatch.chdir(tmp_path)
    before = _runs()
    rc = main(argv)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"{name}: want one line on stderr, got {len(lines)}:\n{err}"
    for w in (w.format(tmp=tmp_path) for w in words):
        assert w in lines[0], f"{name}: {w!r} not in {lines[0]!r}"
    assert rc == code, f"{name}: exit {rc}, want {code}: {lines[0]}"
    assert _runs() == before, f"{name}: a run directory was created"
    for verdict in ("PASS", "FAIL"):
        assert f" {verdict} " not in out, f"{name}: a verdict was printed: {out}"


def test_there_are_at_least_thirty_cases():
    assert len(CASES) >= 30


@pytest.mark.parametrize("argv", [["list"], ["list", "--json"], ["--help"], ["run", "--help"]])
def test_a_closed_pipe_is_not_a_traceback(argv):
    """`v6gate list | head -3`: the reader goes away; the command ends quietly."""
    shell = f"{sys.executable} -m v6gate.cli {' '.join(argv)} | head -c 10 >/dev/null"
    cp = subprocess.run(["bash", "-o", "pipefail", "-c", shell], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in cp.stderr and "BrokenPipe" not in cp.stderr, cp.stderr
    assert cp.stderr.strip() == "", cp.stderr
