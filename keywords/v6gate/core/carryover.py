"""What a run leaves on a DUT it cannot reset, carried into the next run.

An address the run's RAs made the DUT form stays until its valid lifetime
runs out (RFC 4862 §5.5.3 e: an RA cannot take it back).  A run against a
DUT with a bounded address table knows the addresses its own RAs made the
DUT form (core/ledger.py) and waits for room; a second run started right
after the first would not know the first's, send its first fresh prefixes
into a table still full of them, and FAIL "no DAD probe" for the first
run's state.

So a run on a DUT it does not rebuild writes, when it ends, the addresses
its prefixes leave: each prefix, the address the DUT probed in it (its DAD
probe named it), and when it is gone by the RFC's arithmetic (wall clock).
The next run against the same DUT (same tester interface and DUT MAC)
reads that before its first part and asks the DUT, with a DAD probe for
each address (RFC 4862 §5.4.3: a node that holds the address defends it
with a Neighbor Advertisement), which it still holds: those take room in
its table like the run's own, until they are gone, and the DAD probes the
DUT sent for them count as its current boot's (it performs DAD, so a fresh
prefix that forms nothing is a sign of a full table).  A DUT restarted
since defends none of them, so nothing is carried over.  The file is the run's
own but read as untrusted: bounded, each field checked, anything else
disregarded with a note.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import math
import os
import time
from pathlib import Path

from scapy.layers.inet6 import ICMPv6ND_NA

from ..net import match as M
from ..net.dad import dad_ns
from ..net.nodes import EmulatedNode
from ..paths import REPORTS

#: where the state of each DUT is kept (git-ignored)
STATE_DIR = REPORTS / "dut-state"
#: a state file larger than this, or with more leases, is disregarded
MAX_BYTES = 64 * 1024
MAX_LEASES = 64
VERSION = 1


def state_path(target) -> Path:
    """The state file of the DUT behind ``target``'s tester interface."""
    key = f"{target.tester_netns or 'host'}-{target.tester_interface}-{target.dut_mac}".lower()
    return STATE_DIR / ("".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in key) + ".json")


def save(session) -> Path | None:
    """At the end of a run on a DUT it does not rebuild: write what its
    prefixes leave (none: remove the DUT's file)."""
    now_m, now_w = time.monotonic(), time.time()
    leases = [{"prefix": str(e.prefix), "addresses": list(e.addresses), "gone_at": round(now_w + e.expires - now_m, 1)}
              for e in session.ledger.live(now_m)
              if e.addresses and not e.duplicate and math.isfinite(e.expires)][:MAX_LEASES]
    path = state_path(session.target)
    if not leases:
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    doc = {"version": VERSION, "run": session.run_dir.name, "written": round(now_w, 1), "leases": leases}
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(doc, indent=1))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return None
    return path


def leases_in(path: Path, now: float) -> tuple[str | None, list[tuple[ipaddress.IPv6Network, list[str], float]], str]:
    """The earlier run's id and its leases not yet gone at wall time ``now``
    (prefix, addresses, gone_at), or why the file is disregarded."""
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return None, [], ""
    except OSError as exc:
        return None, [], f"{path} cannot be read ({exc.strerror or exc})"
    if len(raw) > MAX_BYTES:
        return None, [], f"{path} is larger than {MAX_BYTES} bytes"
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None, [], f"{path} is not JSON"
    if not isinstance(doc, dict) or doc.get("version") != VERSION or not isinstance(doc.get("leases"), list) \
            or len(doc["leases"]) > MAX_LEASES:
        return None, [], f"{path} is not a v6gate DUT state (version {VERSION})"
    run = doc.get("run") if isinstance(doc.get("run"), str) else "?"
    out = []
    for lease in doc["leases"]:
        try:
            net = ipaddress.IPv6Network(lease["prefix"])
            addrs = [str(ipaddress.IPv6Address(a)) for a in lease["addresses"]][:4]
            gone = lease["gone_at"]
            if isinstance(gone, bool) or not isinstance(gone, int | float) or not math.isfinite(gone) or not addrs \
                    or not all(ipaddress.IPv6Address(a) in net for a in addrs):
                raise ValueError
        except (KeyError, TypeError, ValueError):
            return run, [], f"{path} holds a lease that is not a prefix, its addresses and a time"
        if gone > now:
            out.append((net, addrs, float(gone)))
    return run[:64], out, ""


def carry_over(session) -> dict | None:
    """Before the run's first part: the addresses an earlier run left that
    the DUT still defends go into the run's ledger.  Returns what was found
    (for the report), or None when there was nothing to look at."""
    port, target = session.port, session.target
    now_w, now_m = time.time(), port.now()
    run, leases, why = leases_in(state_path(target), now_w)
    if why:
        return {"disregarded": why}
    if not leases:
        return None
    reply = float((session.pace.timing() if session.pace is not None else target.timing)["reply_timeout_s"])
    node = EmulatedNode.fresh("carry-over", target.link_prefix)
    since = port.now()
    for _, addrs, _ in leases:
        for a in addrs:
            port.send(dad_ns(node, a, target.dut_mac))
    asked = {a for _, addrs, _ in leases for a in addrs}

    def defends(p) -> bool:
        return ICMPv6ND_NA in p and str(ipaddress.IPv6Address(p[ICMPv6ND_NA].tgt)) in asked

    nas = port.collect(M.all_of(M.from_mac(target.dut_mac), defends), reply, since=since)
    defended = {str(ipaddress.IPv6Address(f.pkt[ICMPv6ND_NA].tgt)) for f in nas}
    carried = []
    for net, addrs, gone in leases:
        held = [a for a in addrs if a in defended]
        if held:
            session.ledger.inherit(net, now_m + gone - now_w, f"an earlier run ({run})", held)
            if session.observer is not None:  # it probed them then: the DUT performs DAD (core/observer.py)
                for a in held:
                    session.observer.earlier(a, now_m)
            carried.append({"prefix": str(net), "addresses": held, "gone_in_s": round(gone - now_w, 1)})
    return {"run": run, "asked": len(asked), "carried": carried}
