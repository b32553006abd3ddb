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
import time
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


EXAMPLE = "".join(line for line in (FIXTURES / "targets" / "example-host.yaml").read_text().splitlines(True)
                  if not line.startswith("waiver_files:"))


def hostile(tmp: Path, kind: str, name: str = "target.yaml") -> str:
    """A target file (the example host's, verbatim) with something hostile appended, or a hostile file."""
    laughs = 'lol0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
        f"lol{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9))
    p = tmp / name
    extra = {
        "alias_bomb": laughs,  # 9**9 = 387 M strings once expanded, in 500 bytes
        "alias_cycle": "description: &d [*d]\n",
        "too_deep": "x_deep: " + "[" * 40 + "]" * 40 + "\n",
        "too_deep_by_alias": "x_a: &a " + "[" * 20 + "]" * 20 + "\nx_b: " + "[" * 15 + "*a" + "]" * 15 + "\n",
        "too_many_values": "x_many: [" + "1, " * 50_001 + "1]\n",
        "oversize": "# a comment line, repeated past the size limit\n" * 30_000,
        "nul_in_string": 'name: "acme\\0ctl"\n',
        "escape_in_string": 'name: "acme\\e[2J\\e[31mPASS"\n',
        "impossible_date": "x_when: 2024-02-30\n",
        "huge_integer": "x_n: " + "9" * 5000 + "\n",
        "second_document": "---\nname: other\n",
        "undefined_alias": "x_a: *nowhere\n",
        "python_tag": 'x_t: !!python/object/apply:os.system ["touch /tmp/v6gate-pwned"]\n',
    }.get(kind)
    if extra is not None:
        p.write_text(EXAMPLE.replace("\nname:", "\nx_name:", 1) + extra if kind in ("nul_in_string", "escape_in_string")
                     else EXAMPLE + extra)
    elif kind == "utf16":
        p.write_bytes(EXAMPLE.encode("utf-16"))
    elif kind == "fifo":
        os.mkfifo(p)
    return str(p)


def with_waiver_file(tmp: Path, kind: str) -> str:
    """A target whose waiver_files names a hostile waiver file."""
    hostile(tmp, kind, "waivers.yaml")
    p = tmp / "target.yaml"
    p.write_text(EXAMPLE + "waiver_files: [waivers.yaml]\n")
    return str(p)


def hostile_json(tmp: Path, kind: str, name: str = "baseline.json") -> str:
    p = tmp / name
    if kind == "oversize":  # sparse: 65 MiB that take no disk
        with open(p, "wb") as f:
            f.truncate(65 << 20)
        return str(p)
    p.write_text({
        "too_deep": "[" * 100_000 + "]" * 100_000,
        "duplicate_key": '{"schema": "v6gate/results/1", "checks": [], "checks": [{"id": "x", "verdict": "FAIL"}]}',
        "too_many_values": "[" + "0," * 2_000_001 + "0]",
        "huge_integer": '{"checks": [' + "9" * 5000 + "]}",
        "lone_surrogate": '{"checks": [{"id": "\\ud800", "verdict": "FAIL"}]}',
    }[kind])
    return str(p)


def bad_bundle(tmp: Path, manifest: bytes) -> str:
    """A .tar.gz shaped like a bundle whose MANIFEST.sha256 is ``manifest``."""
    import io
    import tarfile

    p = tmp / "run.tar.gz"
    with tarfile.open(p, "w:gz") as tar:
        info = tarfile.TarInfo("run/MANIFEST.sha256")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
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
    # -- hostile files (the one untrusted loader: untrusted.py) -----------------------------------------
    ("alias-bomb", lambda t: ["validate", hostile(t, "alias_bomb")], 2, ["target.yaml", "more than 50,000 values"]),
    ("alias-bomb-run", lambda t: ["run", "--target", hostile(t, "alias_bomb")], 2, ["target.yaml", "aliases expanded"]),
    ("alias-cycle", lambda t: ["validate", hostile(t, "alias_cycle")], 2, ["target.yaml", "*d", "cycle"]),
    ("nested-too-deep", lambda t: ["validate", hostile(t, "too_deep")], 2, ["target.yaml", "32 levels"]),
    ("nested-too-deep-by-alias", lambda t: ["validate", hostile(t, "too_deep_by_alias")], 2, ["32 levels"]),
    ("too-many-values", lambda t: ["validate", hostile(t, "too_many_values")], 2, ["target.yaml", "50,000 values"]),
    ("target-over-1MiB", lambda t: ["validate", hostile(t, "oversize")], 2, ["target.yaml", "1 MiB limit"]),
    ("nul-in-a-string", lambda t: ["validate", hostile(t, "nul_in_string")], 2, ["name", "NUL"]),
    ("terminal-escape-in-a-string", lambda t: ["validate", hostile(t, "escape_in_string")], 2,
     ["name", "control character"]),
    ("impossible-date", lambda t: ["validate", hostile(t, "impossible_date")], 2, ["line", "2024-02-30"]),
    ("5000-digit-integer", lambda t: ["validate", hostile(t, "huge_integer")], 2, ["line", "as int"]),
    ("second-yaml-document", lambda t: ["validate", hostile(t, "second_document")], 2, ["one document"]),
    ("undefined-alias", lambda t: ["validate", hostile(t, "undefined_alias")], 2, ["nowhere"]),
    ("python-object-tag", lambda t: ["validate", hostile(t, "python_tag")], 2, ["python/object"]),
    ("target-in-utf16", lambda t: ["validate", hostile(t, "utf16")], 2, ["not a text file"]),
    ("target-is-a-fifo", lambda t: ["validate", hostile(t, "fifo")], 2, ["target.yaml", "not a regular file"]),
    ("target-is-dev-zero", lambda t: ["validate", "/dev/zero"], 2, ["/dev/zero", "not a regular file"]),
    ("waiver-file-alias-bomb", lambda t: ["validate", with_waiver_file(t, "alias_bomb")], 2,
     ["waivers.yaml", "aliases expanded"]),
    ("waiver-file-over-1MiB", lambda t: ["run", "--target", with_waiver_file(t, "oversize")], 2,
     ["waivers.yaml", "1 MiB limit"]),
    ("baseline-nested-100000-deep", lambda t: ["run", "--baseline", hostile_json(t, "too_deep")], 2,
     ["--baseline", "64 levels"]),
    ("baseline-duplicate-key", lambda t: ["run", "--baseline", hostile_json(t, "duplicate_key")], 2,
     ["baseline.json", "duplicate key 'checks'"]),
    ("baseline-2M-values", lambda t: ["run", "--baseline", hostile_json(t, "too_many_values")], 2,
     ["baseline.json", "2,000,000 values"]),
    ("baseline-over-64MiB", lambda t: ["run", "--baseline", hostile_json(t, "oversize")], 2,
     ["baseline.json", "64 MiB limit"]),
    ("baseline-5000-digit-integer", lambda t: ["run", "--baseline", hostile_json(t, "huge_integer")], 2,
     ["baseline.json", "4300 digits"]),
    ("baseline-lone-surrogate", lambda t: ["run", "--baseline", hostile_json(t, "lone_surrogate")], 2,
     ["baseline.json", "surrogate"]),
    ("diff-of-a-deep-json", lambda t: ["diff", hostile_json(t, "too_deep", "old.json"),
                                       hostile_json(t, "too_deep", "new.json")], 2, ["old.json", "64 levels"]),
    ("topology-outside-the-project", lambda t: ["validate", target(t, setf("lab", {"topology": "/tmp/evil.yaml"}))],
     2, ["lab.topology", "fixtures/lab/"]),
    ("netns-dut-with-a-release-command", lambda t: ["validate", target(t, lambda d: d.update(
        control={"adapter": "netns", "netns": "v6gx-dut"}, extensions={"dhcpv6": {"commands": {"release": "id"}}}))],
     2, ["extensions.dhcpv6.commands.release", "as root"]),
    ("verify-bundle-binary-manifest", lambda t: ["verify", bad_bundle(t, b"\xff\xfe\x00garbage")], 2,
     ["run.tar.gz", "not a text file"]),
    ("verify-bundle-manifest-escapes", lambda t: ["verify", bad_bundle(t, b"0" * 64 + b"  ../../etc/passwd\n")], 2,
     ["run.tar.gz", "leaves the run directory"]),
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
    # -- the fleet audit's files (issue 33): inventory, exception register, plan, partial results --------
    ("audit-inventory-alias", lambda t: _fleet(t, "--inventory", "inv.yaml", "- &a {asset: x, macs: [02:00:00:00:00:01]}\n- *a\n"),
     2, ["inv.yaml", "anchors and aliases"]),
    ("audit-inventory-duplicate-key", lambda t: _fleet(t, "--inventory", "inv.json", '[{"asset": "x", "asset": "y"}]'), 2,
     ["inv.json", "duplicate key 'asset'"]),
    ("audit-inventory-over-64MiB", lambda t: _fleet(t, "--inventory", "inv.csv", None), 2, ["inv.csv", "limit"]),
    ("audit-inventory-ragged-csv", lambda t: _fleet(t, "--inventory", "inv.csv", "asset,macs\nx,02:00:00:00:00:01,9\n"),
     2, ["inv.csv: line 2"]),
    ("audit-inventory-bad-mac", lambda t: _fleet(t, "--inventory", "inv.csv", "asset,macs\nx,02:00:00:00:00\n"), 2,
     ["not a MAC address"]),
    ("audit-exception-bad-date", lambda t: _fleet(t, "--exceptions", "exc.csv",
                                                  "asset,reason,approved_by,retire_by\nx,old,CIO,soon\n"), 2,
     ["exc.csv: line 2: retire_by", "YYYY-MM-DD"]),
    ("audit-plan-alias-bomb", lambda t: _fleet(t, "--plan", "plan.yaml", "a: &a [1,1,1,1,1,1,1,1,1]\n"
                                               "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"),
     2, ["plan.yaml"]),
    ("audit-partial-damaged", lambda t: ["audit", _partial(t)], 2, ["partial.json", "signals.ipv6[0]"]),
    # -- other commands ------------------------------------------------------------------------------
    ("report-of-a-non-run", lambda t: ["report", str(t)], 2, ["records/"]),
    ("report-of-a-file", lambda t: ["report", target(t)], 2, ["records/"]),
    # -- campaign files (issue 35) ---------------------------------------------------------------------
    ("campaign-alias-bomb", lambda t: ["campaign", "validate", campaign(t, "alias_bomb")], 2,
     ["campaign.yaml", "aliases expanded", "campaign file"]),
    ("campaign-run-alias-bomb", lambda t: ["campaign", "run", campaign(t, "alias_bomb")], 2,
     ["campaign.yaml", "aliases expanded"]),
    ("campaign-duplicate-key", lambda t: ["campaign", "validate", campaign(t, "duplicate_key")], 2,
     ["campaign.yaml", "duplicate key 'name'"]),
    ("campaign-oversize", lambda t: ["campaign", "validate", campaign(t, "oversize")], 2,
     ["campaign.yaml", "limit for a campaign file"]),
    ("campaign-target-and-lab", lambda t: ["campaign", "validate", campaign(t, "target_and_lab")], 2,
     ["duts[0]", "both 'target' and 'lab'"]),
    ("campaign-same-dut-twice", lambda t: ["campaign", "run", campaign(t, "same_mac")], 2,
     ["duts[1] (b) and duts[0] (a)", "the same DUT"]),
    ("campaign-same-name-twice", lambda t: ["campaign", "validate", campaign(t, "same_name")], 2,
     ["duts[1].name", "also the name"]),
    ("campaign-unknown-area", lambda t: ["campaign", "validate", campaign(t, "unknown_area")], 2,
     ["areas", "nosuch"]),
    ("campaign-dut-target-broken", lambda t: ["campaign", "validate", campaign(t, "bad_override")], 2,
     ["duts[0] (a)", "dut.mac"]),
    ("campaign-missing-target", lambda t: ["campaign", "validate", campaign(t, "missing_target")], 2,
     ["duts[0].target", "not found"]),
    ("campaign-bad-shard", lambda t: ["campaign", "run", campaign(t, None), "--shard", "3/2"], 2, ["--shard 3/2"]),
    ("campaign-unknown-controller", lambda t: ["campaign", "run", campaign(t, None), "--shard", "ctl-z"], 2,
     ["ctl-z", "ctl-a"]),
    ("campaign-lab-too-many", lambda t: ["campaign", "run", "--lab", "9"], 2, ["--lab 9"]),
    ("campaign-resume-not-a-campaign", lambda t: ["campaign", "resume", str(t)], 2, ["campaign.json"]),
    ("campaign-merge-not-a-campaign", lambda t: ["campaign", "merge", str(t), "--out", str(t / "m")], 2,
     ["campaign.json"]),
]


def _fleet(tmp: Path, option: str, name: str, text: str | None) -> list[str]:
    """``v6gate audit CAPTURE OPTION FILE`` with FILE holding ``text`` (None: a sparse file past 64 MiB)."""
    p = tmp / name
    if text is None:
        with open(p, "wb") as f:
            f.truncate((64 << 20) + 1)
    else:
        p.write_text(text)
    return ["audit", str(FIXTURES / "captures" / _a_capture()), option, str(p)]


def _partial(tmp: Path) -> str:
    """A partial result whose host record has a negative count."""
    rec = {"frames": 1, "bytes": 1, "first_t": 0.0, "last_t": 0.0, "captures": 1, "v4": [], "v6": [],
           "signals": {"ipv6": [-1, 0.0, "a.pcap", 1, 0.0, "IPv6"]}}
    doc = {"v6gate_audit_partial": 1, "captures": {"a.pcap": {"path": "a.pcap", "frames": 1, "bytes": 1, "hosts": 1}},
           "hosts": {"02:00:00:00:00:01": rec}}
    p = tmp / "partial.json"
    p.write_text(json.dumps(doc))
    return str(p)


def campaign(tmp: Path, kind: str | None) -> str:
    """A campaign file of two DUTs (the example target file on two tester ports), made hostile or wrong."""
    tfile = Path(target(tmp))
    doc = {"name": "bad", "areas": ["rdnss"], "duts": [
        {"name": "a", "target": str(tfile), "controller": "ctl-a"},
        {"name": "b", "target": str(tfile), "controller": "ctl-a", "tester": {"interface": "enp9s0"},
         "dut": {"mac": "52:54:00:00:00:0b"}}]}
    change = {
        "target_and_lab": lambda d: d["duts"][0].update(lab={}),
        "same_mac": lambda d: d["duts"][1].pop("dut"),
        "same_name": lambda d: d["duts"][1].update(name="a"),
        "unknown_area": lambda d: d.update(areas=["rdnss", "nosuch"]),
        "bad_override": lambda d: d["duts"][0].update(dut={"mac": "zz"}),
        "missing_target": lambda d: d["duts"][0].update(target="nowhere.yaml"),
    }.get(kind)
    if change:
        change(doc)
    text = yaml.safe_dump(doc, sort_keys=False)
    laughs = 'lol0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
        f"lol{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9))
    text += {"alias_bomb": laughs, "duplicate_key": "name: again\n",
             "oversize": "# a comment line, repeated past the size limit\n" * 30_000}.get(kind, "")
    p = tmp / "campaign.yaml"
    p.write_text(text)
    return str(p)


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


@pytest.fixture(scope="module", autouse=True)
def _warm():
    """The check registry and the target schema, loaded once, so a case's time is its input's."""
    from v6gate.core.check import load_all
    from v6gate.core.target import _schema

    load_all()
    _schema()


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
    wall, cpu = time.monotonic(), time.process_time()
    rc = main(argv)
    wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"{name}: want one line on stderr, got {len(lines)}:\n{err}"
    for w in (w.format(tmp=tmp_path) for w in words):
        assert w in lines[0], f"{name}: {w!r} not in {lines[0]!r}"
    assert rc == code, f"{name}: exit {rc}, want {code}: {lines[0]}"
    assert _runs() == before, f"{name}: a run directory was created"
    # within a second of CPU (the machine is shared: wall time also counts others' work), and no hang
    assert cpu < 1.0 and wall < 10, f"{name}: {cpu:.2f} s of CPU, {wall:.2f} s wall: want under 1 s"
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


# -- hostile values in every field that reaches a command line or a shell (target_values.FIELDS) ---------
HOSTILE = {
    "leading-dash": "-oProxyCommand=touch /tmp/v6gate-pwned",
    "semicolon": "eth0;touch /tmp/v6gate-pwned",
    "dollar-paren": "$(touch /tmp/v6gate-pwned)",
    "backticks": "`touch /tmp/v6gate-pwned`",
    "newline": "eth0\ntouch /tmp/v6gate-pwned",
    "nul": "eth0\x00x",
    "10kB": "a" * 10_240,
}
#: what a template may not name: each is refused on load, not when its check runs
HOSTILE_TEMPLATES = {
    "attribute": "ping {dst.__class__}",
    "index": "ping {dst[0]}",
    "positional": "ping {0}",
    "conversion": "ping {dst!r}",
    "format-spec": "ping {dst:>99999}",
    "unknown": "ping {target}",
    "shell-looking": "awk '{print}' /proc/net/if_inet6",
    "10kB": "true " * 2_100,
}


def _place(doc: dict, pattern: str, value) -> None:
    """Put ``value`` where ``pattern`` (a target_values.FIELDS key) says, with the siblings its schema needs."""
    *parents, last = pattern.split(".")
    node = doc
    for part in parents:
        if part.endswith("[]"):
            key = part[:-2]
            node[key] = [{"name": "svc", "port": 2049}] if key == "services" else [{}]
            node = node[key][0]
        else:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
    if last == "*":
        node["iperf3"] = value
    elif last.endswith("[]"):
        node[last[:-2]] = [value]
    else:
        node[last] = value
    if pattern.startswith("lab."):
        doc["lab"]["topology"] = str(FIXTURES / "lab" / "topology.yaml")


def _field_cases():
    from v6gate.target_values import FIELDS

    for pattern, kind_of in FIELDS.items():
        is_template = hasattr(kind_of, "action")
        for kind, value in (HOSTILE_TEMPLATES if is_template else HOSTILE).items():
            yield pytest.param(pattern, value, id=f"{pattern}={kind}")


@pytest.mark.parametrize("pattern, value", list(_field_cases()))
def test_a_hostile_value_in_a_command_line_field_is_one_line_and_exit_2(pattern, value, tmp_path, capsys,
                                                                          tripwires):
    """Each field whose value reaches argv or a shell, with each hostile value: one line naming the field."""
    from v6gate.cli import main

    doc = copy.deepcopy(GOOD)
    _place(doc, pattern, value)
    path = tmp_path / "target.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    cpu = time.process_time()
    rc = main(["validate", str(path)])
    cpu = time.process_time() - cpu
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    field = pattern.replace("[]", "[0]").replace("*", "iperf3")
    assert rc == 2 and len(lines) == 1 and field in lines[0], (rc, err)
    assert "Traceback" not in err and cpu < 1.0
    assert not Path("/tmp/v6gate-pwned").exists()


def test_every_command_line_field_is_in_the_table():
    """The fields this suite knows reach a command line (grep for their readers) are all typed."""
    from v6gate.target_values import FIELDS

    for f in ("tester.interface", "tester.netns", "control.netns", "control.interface", "control.ssh.host",
              "control.ssh.user", "control.ssh.port", "control.ssh.identity_file", "control.ssh.commands.ping",
              "services[].share", "services[].export", "services[].iqn", "perf.client.netns", "perf.dut.ipv4",
              "extensions.dhcpv6.commands.release", "extensions.offload.interface",
              "extensions.storage.client.netns", "extensions.storage.client.address", "lab.tap_name"):
        assert f in FIELDS, f


# -- what the tester interface says before anything is sent (a private namespace, removed on every path) ---
@pytest.fixture
def veth_ns():
    """A namespace holding a veth pair t0 <-> t1, both down; yields (namespace, run an ip command in it)."""
    ns = f"rel31-{os.getpid()}"

    def ip(*args):
        subprocess.run(["ip", "-n", ns, *args], check=True, capture_output=True)

    subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
    try:
        ip("link", "add", "t0", "type", "veth", "peer", "name", "t1")
        yield ns, ip
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _mac_of(ns: str, ifname: str) -> str:
    cp = subprocess.run(["ip", "-n", ns, "-j", "link", "show", "dev", ifname], capture_output=True, text=True)
    return json.loads(cp.stdout)[0]["address"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a network namespace)")
@pytest.mark.parametrize("state, words", [
    ("down", ["tester.interface t0 is down", "ip link set t0 up"]),
    ("no-carrier", ["tester.interface t0 has no carrier", "the DUT is off"]),
    ("own-mac", ["is tester.interface t0's own MAC"]),
])
def test_the_tester_interface_is_checked_before_anything_runs(state, words, veth_ns, tmp_path, capsys, tripwires):
    from v6gate.cli import main

    ns, ip = veth_ns
    if state != "down":
        ip("link", "set", "t0", "up")
    if state == "own-mac":
        ip("link", "set", "t1", "up")
    doc = copy.deepcopy(GOOD)
    doc["tester"] = {"interface": "t0", "netns": ns}
    doc["link"]["prefix"] = "2001:db8:1::/64"
    if state == "own-mac":
        doc["dut"]["mac"] = _mac_of(ns, "t0")
    path = tmp_path / "target.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    rc = main(["run", "--target", str(path)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and all(w in lines[0] for w in words), lines


@pytest.mark.parametrize("mac, words", [("01:00:5e:00:00:01", "a group (multicast) address"),
                                        ("ff:ff:ff:ff:ff:ff", "a group (multicast) address"),
                                        ("00:00:00:00:00:00", "all zero")])
def test_a_mac_no_dut_can_have(mac, words, tmp_path, capsys, tripwires):
    from v6gate.cli import main

    assert main(["validate", target(tmp_path, setf("dut.mac", mac))]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "dut.mac" in lines[0] and words in lines[0], lines


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root (a private tmpfs)")
def test_an_out_dir_without_room_for_a_run(tmp_path):
    """--out on a 1 MiB file system (a tmpfs in a private mount namespace, gone with it): one line, exit 2."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = (f"mount -t tmpfs -o size=1m tmpfs {mnt} && cd {mnt} && "
              f"{sys.executable} -m v6gate.cli run --out {mnt}/run; echo rc=$?")
    cp = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], capture_output=True,
                        text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(FIXTURES.parent / "keywords")})
    lines = cp.stderr.strip().splitlines()
    assert cp.stdout.strip().endswith("rc=2") and len(lines) == 1, cp.stdout + cp.stderr
    assert f"--out {mnt}/run: only 1024 KiB free there; a run needs at least 4 MiB" in lines[0], lines
