"""Scope guard against a real link: a veth in a namespace this test makes
(not a lab namespace) stands in for a machine's NICs.  A target whose tester
interface carries the default route, or whose link prefix is not on it, is
refused (exit 2, one line, nothing run); with --i-own-this-link the run goes
ahead, and with no DUT on the link it ends in ERROR (exit 3), never in a
DUT verdict."""

import os
import subprocess

import pytest
import yaml

from conftest import v6gate

NS = f"scopeguard{os.getpid()}"


def ip(*args):
    subprocess.run(["ip", "-n", NS, *args], check=True, capture_output=True)


@pytest.fixture
def link():
    subprocess.run(["ip", "netns", "add", NS], check=True)
    try:
        ip("link", "add", "sg0", "type", "veth", "peer", "name", "sg1")
        for dev in ("lo", "sg0", "sg1"):
            ip("link", "set", dev, "up")
        yield
    finally:
        subprocess.run(["ip", "netns", "del", NS], capture_output=True)


def target_file(tmp_path, **timing):
    doc = {"name": "scope-guard-probe", "kind": "host", "capabilities": ["Core"],
           "tester": {"interface": "sg0", "netns": NS},
           "dut": {"mac": "52:54:00:00:5c:01", "link_local": "eui64"},
           "link": {"prefix": "2001:db8:1::/64", "mtu": 1500, "other_routers": False},
           "control": {"adapter": "none"},
           "timing": {"reply_timeout_s": 0.5, "silence_s": 0.5, "ready_timeout_s": 2, "retrans_timer_s": 1}}
    p = tmp_path / "target.yaml"
    p.write_text(yaml.safe_dump(doc))
    return str(p)


def one_line_refusal(cp, *words):
    assert cp.returncode == 2, cp.stdout + cp.stderr
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cp.stderr, cp.stderr
    for w in words:
        assert w in lines[0], lines[0]
    assert "v6gate run" not in cp.stdout, "a run started"


CHECK = ["--no-gates", "-n", "0", "--check", "icmpv6.echo_request_is_answered"]


def test_default_route_interface_is_refused(link, tmp_path):
    ip("addr", "add", "198.51.100.2/24", "dev", "sg0")
    ip("route", "add", "default", "via", "198.51.100.1", "dev", "sg0")
    one_line_refusal(v6gate("run", "--target", target_file(tmp_path), *CHECK), "default route", "--i-own-this-link")


def test_prefix_not_on_the_link_is_refused(link, tmp_path):
    ip("addr", "add", "2001:db8:99::1/64", "dev", "sg0", "nodad")
    one_line_refusal(v6gate("run", "--target", target_file(tmp_path), *CHECK), "2001:db8:1::/64", "not on")


def test_override_runs_and_a_silent_link_is_one_line_not_a_verdict(link, tmp_path):
    """With the override the run goes ahead; no DUT answers on the link, so
    it says so in one line (exit 3) and judges nothing (core/liveness.py)."""
    ip("addr", "add", "198.51.100.2/24", "dev", "sg0")
    ip("route", "add", "default", "via", "198.51.100.1", "dev", "sg0")
    out = tmp_path / "run"
    cp = v6gate("run", "--target", target_file(tmp_path), "--i-own-this-link", "--out", str(out), *CHECK)
    assert cp.returncode == 3, cp.stdout + cp.stderr
    lines = [line for line in (cp.stdout + cp.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and "is not on the link" in lines[0] and "Traceback" not in lines[0], lines
    assert not (out / "results.json").exists()
