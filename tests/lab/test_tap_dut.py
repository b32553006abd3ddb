"""A DUT the lab does not manage, on a TAP device bridged onto the lab link
(as a qemu VM would be), is tested with control 'none' like a real device."""

import json

import yaml

from v6gate.lab import registry

from conftest import load_results, run_dir_from, slice_args, v6gate
from tap_relay import TapGuest

GUEST_MAC = "52:54:00:ab:cd:ef"


def test_tap_attached_dut_runs_the_slice():
    up = v6gate("lab", "up", "--name", "tapt", "--tap", "tap0", "--dut-mac", GUEST_MAC, "--json", check=True)
    info = json.loads(up.stdout)
    guest = TapGuest(info["tap"]["netns"], "tap0", "v6gtapt-guest", GUEST_MAC)
    try:
        guest.start()
        target = yaml.safe_load(open(info["target_file"]))
        assert target["control"]["adapter"] == "none" and target["dut"]["mac"] == GUEST_MAC
        cp = v6gate("run", "--target", info["target_file"], "-n", "0", "--no-gates", *slice_args())
        doc = load_results(run_dir_from(cp.stdout))
    finally:
        guest.stop()
        v6gate("lab", "down", "tapt", check=True)
    assert not [n for n in registry.our_namespaces() if n.startswith("v6gtapt")]
    by = {f"{c['id']}#{c['part']}": c for c in doc["checks"]}
    assert cp.returncode == 0, cp.stdout
    # the guest got its global address from the lab's radvd through the TAP, and
    # the tester learned it from the wire (control 'none' cannot read it)
    assert by["icmpv6.echo_request_is_answered#B"]["verdict"] == "PASS"
    assert by["nd.ns_for_global_address_is_answered#unicast"]["verdict"] == "PASS"
    assert by["icmpv6.echo_request_is_answered#A"]["verdict"] == "PASS"
    assert by["nd.invalid_ns_is_ignored#D"]["verdict"] == "PASS"
    assert by["slaac.global_address_is_formed_and_probed#A"]["verdict"] == "PASS"
    reset = by["slaac.link_local_address_is_probed_before_use#None"]
    assert reset["verdict"] == "SKIP" and "cannot be reset" in reset["reason"]
