"""`v6gate run` end to end on the slice: schema-valid results with evidence,
the same verdicts with and without parallel labs, and ERROR (never FAIL)
when the DUT is missing."""

import json
import subprocess

import jsonschema
import pytest

from v6gate.lab import registry
from v6gate.net.capture import pcap_frame_count
from v6gate.paths import REPORTS, ROOT

from conftest import load_results, run_dir_from, slice_args, v6gate, verdicts


@pytest.fixture(scope="module")
def parallel_run():
    cp = v6gate("run", "-n", "4", "--no-gates", *slice_args())
    assert cp.returncode == 0, cp.stdout + cp.stderr
    return run_dir_from(cp.stdout)


def test_results_validate_and_every_check_has_evidence(parallel_run):
    doc = load_results(parallel_run)
    schema = json.loads((REPORTS / "schema" / "results.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert doc["summary"]["exit_code"] == 0 and not doc["summary"]["missing"]
    assert doc["run"]["lab"]["instances"], "lab timings are recorded"
    for c in doc["checks"]:
        assert c["rfc"] and c["reason"] and c["title"]
        if c["verdict"] == "SKIP":
            continue
        pcap = c["evidence"]["pcap"]
        assert pcap in c["reason"], "the reason says where the pcap is"
        assert pcap_frame_count(ROOT / pcap) >= 1, f"{c['id']}#{c['part']}: empty pcap"
    for name in ("junit.xml", "report.html"):
        assert (parallel_run / name).stat().st_size > 500


def test_pcaps_are_readable_by_tshark_and_hold_the_probe(parallel_run):
    doc = load_results(parallel_run)
    c = next(c for c in doc["checks"] if c["id"] == "icmpv6.echo_request_is_answered" and c["part"] == "A")
    out = subprocess.run(["tshark", "-r", str(ROOT / c["evidence"]["pcap"]), "-Y", "icmpv6.type == 128 || icmpv6.type == 129",
                          "-T", "fields", "-e", "icmpv6.type"], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["128", "129"]


def test_parallel_and_serial_runs_give_the_same_verdicts(parallel_run):
    cp = v6gate("run", "-n", "0", "--no-gates", *slice_args())
    assert cp.returncode == 0, cp.stdout + cp.stderr
    serial = verdicts(load_results(run_dir_from(cp.stdout)))
    parallel = verdicts(load_results(parallel_run))
    assert serial == parallel
    assert len(serial) >= 20


def test_a_missing_dut_is_one_line_not_a_fail():
    """A lab whose DUT slot is an empty TAP: nothing answers on the link, so
    the run says so in one line (exit 3) and judges nothing."""
    up = v6gate("lab", "up", "--name", "nodut", "--tap", "tap0", "--dut-mac", "52:54:00:00:00:99", "--json", check=True)
    target = json.loads(up.stdout)["target_file"]
    try:
        cp = v6gate("run", "--target", target, "-n", "0", "--no-gates", "--check", "icmpv6.echo_request_is_answered",
                    "--check", "nd.invalid_ns_is_ignored")
    finally:
        v6gate("lab", "down", "nodut", check=True)
    assert cp.returncode == 3, cp.stdout + cp.stderr
    lines = [line for line in (cp.stdout + cp.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "is not on the link" in lines[0] and "52:54:00:00:00:99" in lines[0] and "dut.mac" in lines[0], lines
    assert not [n for n in registry.our_namespaces() if n.startswith("v6gnodut")]
