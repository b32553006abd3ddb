"""The lab's Linux kernel as an *external* DUT, by hand: a TAP lab (``lab
up --tap [--no-router]``) with a bounded Linux guest on its TAP
(tap_relay.TapGuest), kept up until Ctrl-C, and a target file for it with
control 'none' and no ``dut.max_addresses`` (the table is the guest's own:
net.ipv6.conf.eth0.max_addresses 4).  For the long must-show runs of the
issue notes (the whole default host areas against an external DUT)::

    .venv/bin/python tests/lab/external_dut.py --name ext1 [--no-router] [--fault crash-on-pio129]
    ./v6gate run --target /tmp/v6gate-ext1.yaml --no-gates --area ...
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))

from conftest import v6gate
from tap_relay import TapGuest

GUEST_MAC = "52:54:00:ab:cd:02"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--name", default="ext1")
    ap.add_argument("--no-router", action="store_true")
    ap.add_argument("--unbounded", action="store_true", help="the guest's default address table")
    ap.add_argument("--capabilities", default="Core,SLAAC,MLDv2,PMTUD")
    ap.add_argument("--target", default=None, help="where to write the target file (default /tmp/v6gate-NAME.yaml)")
    args = ap.parse_args()
    up = v6gate("lab", "up", "--name", args.name, "--tap", "tap0", "--dut-mac", GUEST_MAC, "--json",
                *(["--no-router"] if args.no_router else []), check=True)
    info = json.loads(up.stdout)
    guest = TapGuest(info["tap"]["netns"], "tap0", f"v6g{args.name}-guest", GUEST_MAC, bounded=not args.unbounded)
    stop = {"now": False}

    def _stop(*_):
        stop["now"] = True

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    try:
        guest.start()
        target = yaml.safe_load(open(info["target_file"]))
        target["capabilities"] = args.capabilities.split(",")
        path = args.target or f"/tmp/v6gate-{args.name}.yaml"
        with open(path, "w") as f:
            yaml.safe_dump(target, f)
        print(f"guest namespace {guest.guest_ns}; target file {path}", flush=True)
        while not stop["now"]:
            time.sleep(0.5)
    finally:
        guest.stop()
        v6gate("lab", "down", args.name, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
