"""External-DUT parity: the lab's Linux kernel attached as an *external* DUT
(a namespace behind the lab's TAP, never managed by the lab, with bounded
tables: max_addresses 4, a small route/max_size) gets the managed lab's
verdicts part for part, with control 'none' and with a local-exec adapter
(commands run with ``ip netns exec``, like ssh), except parts that SKIP with a
stated reason.  And a resolution-queue deviation on that DUT gives one FAIL
(v6LC.2.1.2), not a cascade: the Common Test Setup keeps the Echo / error
checks judged, and checks whose own setup needs resolution are NOT_JUDGED
naming v6LC.2.1.2's check."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from v6gate.lab import registry

from conftest import load_results, run_dir_from, v6gate
from tap_relay import NeighbourCap, QueueLoss, TapGuest

GUEST_MAC = "52:54:00:ab:cd:01"
#: a representative slice: icmpv6 (Echo, errors, minimum MTU), ipv6 (header fields, extension headers,
#: Parameter Problem), slaac and router discovery
PARITY = [
    "icmpv6.echo_request_is_answered",
    "icmpv6.port_unreachable_is_reported",
    "icmpv6.unrecognized_next_header_is_reported",
    "icmpv6.error_messages_fit_the_minimum_mtu",
    "ipv6.nonzero_traffic_class_is_accepted",
    "ipv6.nonzero_flow_label_is_accepted",
    "ipv6.options_are_processed_in_order",
    "ipv6.destination_options_are_processed_by_their_action_bits",
    # one SLAAC part: with max_addresses 4 (link-local, the link prefix, echo G's site-local address, this one)
    # the bounded DUT has room for exactly this; parts B and C would need addresses the run cannot take back
    # (an RA cannot shorten a valid lifetime under 2 h, RFC 4862 §5.5.3 e), see test_a_full_address_table below
    "slaac.global_address_is_formed_and_probed#A",
    "nd.na_completes_address_resolution",
]
RESOLUTION = "nd.packets_wait_for_address_resolution"
DEPENDANTS = ["icmpv6.echo_request_is_answered", "icmpv6.port_unreachable_is_reported",
              "nd.na_completes_address_resolution"]


def _args(ids):
    return [a for c in ids for a in ("--check", c)]


def _by_key(doc):
    return {f"{c['id']}#{c['part']}": c for c in doc["checks"]}


#: checks that need the tester to be the only router (rd, pmtu, nd, redirect, ipv6, slaac lifetimes), against the
#: external DUT on a TAP lab whose router sends no RAs (lab up --no-router); Echo B needs the link-prefix address
#: that the tester then gives the DUT itself; two_hour_rule B and D leave addresses for 2 h (they run last and fill
#: the bounded table's 2 free slots); multiple_prefixes_and_renumbering needs 3 addresses at once: SKIP on the
#: bounded DUT, with the reason
ONLY_ROUTER = [
    "icmpv6.echo_request_is_answered#B",
    "rd.offlink_destination_goes_to_default_router",
    "rd.ra_sets_is_router",
    "pmtu.packet_too_big_reduces_the_pmtu_of_an_off_link_destination",
    "nd.next_hop_follows_prefix_list",
    "redirect.redirect_to_on_link_destination_is_followed",
    "ipv6.unrecognized_routing_type_with_no_segments_left_is_ignored",
    "slaac.two_hour_rule",
    "slaac.multiple_prefixes_and_renumbering",
]


def _external(name: str, ids: list[str], *, adapter: str, fault: QueueLoss | NeighbourCap | None = None,
              no_router: bool = False,
              declare: bool = True, then: list[str] | None = None):
    """Bring up a lab with a TAP, attach a bounded Linux guest, run ``ids``
    against it through a target file with ``adapter``; returns results.json
    (with ``then``: a list of two, ``then`` run right after ``ids`` against
    the same guest) and the guest's global addresses afterwards.  ``no_router``: the lab's router sends no RAs, the tester is
    the only router on the link."""
    name = f"{name}{os.getpid() % 10000:04d}"  # two runs on one machine (worktrees, CI) bring up their own lab
    up = v6gate("lab", "up", "--name", name, "--tap", "tap0", "--dut-mac", GUEST_MAC, "--json",
                *(["--no-router"] if no_router else []), check=True)
    info = json.loads(up.stdout)
    guest = TapGuest(info["tap"]["netns"], "tap0", f"v6g{name}-guest", GUEST_MAC, bounded=True, fault=fault)
    try:
        guest.start()
        target = yaml.safe_load(open(info["target_file"]))
        if guest.max_addresses and declare:
            target["dut"]["max_addresses"] = guest.max_addresses  # the bounded table, declared as a vendor would
        if adapter == "netns":
            target["control"] = {"adapter": "netns", "netns": guest.guest_ns, "interface": "eth0"}
        path = info["target_file"].replace(".yaml", f"-{adapter}.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(target, f)
        docs = []
        for run in [ids, then] if then else [ids]:
            cp = v6gate("run", "--target", path, "-n", "0", "--no-gates", *_args(run))
            docs.append(load_results(run_dir_from(cp.stdout)))
        left = guest_globals(guest.guest_ns)
    finally:
        guest.stop()
        v6gate("lab", "down", name, check=True)
    assert not [n for n in registry.our_namespaces() if n.startswith(f"v6g{name}")]
    return (docs if then else docs[0]), left


def guest_globals(ns: str) -> list[str]:
    import subprocess

    out = subprocess.run(["ip", "-n", ns, "-6", "-o", "addr", "show", "dev", "eth0"], capture_output=True,
                         text=True).stdout
    return [line.split()[3] for line in out.splitlines() if "scope link" not in line]  # global and site-local


@pytest.fixture(scope="module")
def managed():
    cp = v6gate("run", "-n", "0", "--no-gates", *_args(PARITY))
    return _by_key(load_results(run_dir_from(cp.stdout)))


@pytest.mark.parametrize("adapter", ["none", "netns"])
def test_external_dut_gets_the_managed_labs_verdicts(managed, adapter):
    from v6gate.core.check import load_all

    unknown = [c for c in PARITY if c.split("#")[0] not in load_all()]
    assert not unknown, f"the parity slice names checks that do not exist: {unknown}"
    doc, left = _external({"none": "pno", "netns": "pns"}[adapter], PARITY, adapter=adapter)
    ext = _by_key(doc)
    assert set(ext) == set(managed)
    assert any(k.startswith("slaac.") for k in managed) and any(k.startswith("ipv6.") for k in managed)
    differ, skipped = [], []
    for key, m in managed.items():
        e = ext[key]
        if e["verdict"] == "SKIP" and m["verdict"] != "SKIP":
            assert e["reason"].strip(), key
            skipped.append(key)
        elif e["verdict"] != m["verdict"]:
            differ.append(f"{key}: managed {m['verdict']}, external {e['verdict']} ({e['reason'][:300]})")
    ran = len(managed) - len(skipped)
    both_ran = sum(1 for k in managed if managed[k]["verdict"] != "SKIP" and ext[k]["verdict"] != "SKIP")
    print(f"adapter {adapter}: {ran} parts compared ({both_ran} ran on both), {len(skipped)} SKIP on the external DUT, "
          f"{len(left)} global addresses left on it: {left}")
    assert not differ, "\n".join(differ)
    assert ran >= len(managed) // 2


def test_a_resolution_queue_deviation_is_one_fail_not_a_cascade():
    fault = QueueLoss()
    doc, _ = _external("parq", [RESOLUTION, *DEPENDANTS], adapter="none", fault=fault)
    by = _by_key(doc)
    fails = sorted(k for k, c in by.items() if c["verdict"] == "FAIL")
    assert fault.dropped > 0
    assert fails and all(k.startswith(RESOLUTION) for k in fails), fails
    not_judged = {k: c for k, c in by.items() if c["verdict"] == "NOT_JUDGED"}
    for k, c in not_judged.items():
        assert c["precondition"]["judged_by"].startswith(RESOLUTION), (k, c["precondition"])
    # the Common Test Setup gives the DUT its neighbour entry first: Echo and errors are judged on their own
    for k, c in by.items():
        if k.startswith(("icmpv6.echo_request_is_answered#A", "icmpv6.echo_request_is_answered#B")):
            assert c["verdict"] == "PASS", (k, c["reason"])
    assert any(k.startswith("nd.na_completes_address_resolution") for k in not_judged), by.keys()
    assert doc["summary"]["not_judged_by"]


#: the SLAAC check whose parts fill the bounded table: each forms an address from a fresh prefix with a 60 s lease
#: (ADDRESS_LEASE_S).  Run on its own, its three parts run back to back (an external run spreads SLAAC parts among
#: other areas' parts, core/order.py; here there are none), so with max_addresses 4 (the link-local and link-prefix
#: addresses held, 2 free) parts A and B fill the table and part C needs room a few seconds after A's RA, whatever
#: the machine's load.  Run after the parity slice in one run, the slice's parts would sit between them, and the
#: wait for the slice's own addresses (echo G's, slaac A's) falls on whichever check comes next, an icmpv6 part.
FILLING = "slaac.global_address_is_formed_and_probed"


def test_a_full_address_table_does_not_change_later_verdicts():
    """Checks that form addresses from fresh prefixes leave them on a DUT the
    run cannot reset (an RA can only deprecate them, RFC 4862 §5.5.3 e); with
    ``dut.max_addresses`` the run waits for earlier parts' addresses to run
    out before a part needs room, so every SLAAC part is judged on its own
    clause.  Without the declared bound the run discovers it (below)."""
    doc, left = _external("parf", [FILLING], adapter="none")
    ext = _by_key(doc)
    slaac = {k: v for k, v in ext.items() if k.startswith(FILLING)}
    assert len(slaac) == 3, sorted(ext)
    waited = {k: v["measurements"].get("address_room_wait_s") for k, v in slaac.items()}
    print(f"bounded DUT after the run: {len(left)} global addresses {left}; slaac parts "
          f"{ {k: v['verdict'] for k, v in slaac.items()} }; waited for room {waited}; "
          f"predicted left {doc['run']['dut_state_after']}")
    assert all(v["verdict"] == "PASS" for v in slaac.values()), {k: v["reason"][:200] for k, v in slaac.items()}
    assert any(waited.values()), "the table never needed room: the test no longer exercises the bound"
    # what the run says it left is what the DUT holds (addresses the run's prefixes made it form)
    state = doc["run"]["dut_state_after"][0]
    assert state["predicted"]["count"] <= len(left)


def test_an_address_table_nobody_declared_is_discovered_and_changes_no_verdict():
    """The same bounded DUT without ``dut.max_addresses``: when a part's
    fresh prefix forms nothing while the DUT holds the run's earlier
    addresses, the run infers the table is full, runs the part again once
    they have expired, and says so (core/room.py): every SLAAC part PASSes
    on its own clause, none FAILs "no DAD Neighbor Solicitation"."""
    doc, left = _external("pard", [*PARITY, "slaac.global_address_is_formed_and_probed"], adapter="none",
                          declare=False)
    ext = _by_key(doc)
    slaac = {k: v for k, v in ext.items() if k.startswith("slaac.global_address_is_formed_and_probed")}
    table = doc["run"]["dut_table"][0]
    retried = {k: v["measurements"]["first_attempt"] for k, v in ext.items() if v["measurements"].get("first_attempt")}
    print(f"undeclared table: discovered {table['discovered']} ({table['evidence']}); parts that needed it "
          f"{table['parts_needing_discovered_limit']} {table['by_how']}; retried {sorted(retried)}; "
          f"slaac {({k: v['verdict'] for k, v in slaac.items()})}; left {left}")
    assert all(v["verdict"] == "PASS" for v in slaac.values()), {k: v["reason"][:300] for k, v in slaac.items()}
    assert table["discovered"] is not None and table["parts_needing_discovered_limit"] >= 1, table
    assert not [k for k, v in ext.items() if v["verdict"] in ("FAIL", "ERROR")], \
        {k: v["reason"][:200] for k, v in ext.items() if v["verdict"] in ("FAIL", "ERROR")}


def test_a_run_right_after_another_knows_the_addresses_the_first_left():
    """Two runs one right after the other against the same bounded DUT, its
    table undeclared, control none: the first (SLAAC parts A and B) leaves
    two addresses of its fresh prefixes (60 s leases an RA cannot take
    back), which fill the table.  The second run learns them from the
    first's DUT state and the DUT's defence of them (core/carryover.py),
    finds the table full and waits for room, and judges every SLAAC part on
    its own clause; without them its fresh prefixes formed nothing and all
    three parts FAILed "no DAD Neighbor Solicitation" (the first run's
    state, 2026-11-27, before core/carryover.py)."""
    docs, left = _external("parb", [f"{FILLING}#A", f"{FILLING}#B"], adapter="none", declare=False,
                           then=[FILLING])
    first, second = (_by_key(d) for d in docs)
    before = docs[1]["run"].get("dut_state_before")
    waited = {k: v["measurements"].get("address_room_wait_s") for k, v in second.items()}
    print(f"second run: found {before}; waited for room {waited}; left on the DUT {left}; verdicts "
          f"{ {k: v['verdict'] for k, v in second.items()} }; first run {[v['verdict'] for v in first.values()]}")
    assert all(v["verdict"] == "PASS" for v in first.values()), {k: v["reason"][:200] for k, v in first.items()}
    assert before and before[0]["carried"], f"the second run learned nothing of the first's addresses: {before}"
    assert len(before[0]["carried"]) == 2 and all(c["addresses"] for c in before[0]["carried"]), before
    assert all(v["verdict"] == "PASS" for v in second.values()), {k: v["reason"][:300] for k, v in second.items()}
    assert any(waited.values()), "the second run never waited for room: the test no longer exercises the carry-over"


#: Neighbor Cache checks whose parts run side by side on an external DUT (core/together.py): one of REACHABLE entries
#: (18 parts) and one of STALE entries (4 parts, one batch: the short ReachableTime shared, restored once)
SIDE_BY_SIDE = ["nd.na_updates_reachable_entry", "nd.ns_updates_stale_entry"]


def _side_by_side(name: str, fault: NeighbourCap | None = None):
    doc, left = _external(name, SIDE_BY_SIDE, adapter="none", no_router=True, fault=fault)
    ext = _by_key(doc)
    assert len(ext) == 22, sorted(ext)
    pcaps = {v["evidence"]["pcap"] for v in ext.values()}
    beside = {k: v["measurements"].get("ran_beside") for k, v in ext.items()}
    took = {c: round(sum(v["duration_s"] for k, v in ext.items() if k.startswith(c)), 1) for c in SIDE_BY_SIDE}
    room = doc["run"]["neighbour_room"][0]
    print(f"side by side: {len(pcaps)} batches for {len(ext)} parts; part time by check {took}; room {room}; "
          f"left {left}")
    assert all(v["verdict"] == "PASS" for v in ext.values()), \
        {k: v["reason"][:300] for k, v in ext.items() if v["verdict"] != "PASS"}
    stale = [v for k, v in ext.items() if k.startswith("nd.ns_updates_stale_entry")]
    assert all("with the neighbours of the parts beside it" in " ".join(v["timeline"]) for v in stale)
    tn1 = {next(line for line in v["timeline"] if " TN1 is " in line).split(" TN1 is ")[1].split()[0]
           for v in ext.values()}
    assert len(tn1) == len(ext), "parts side by side shared a neighbour"
    return room, pcaps, beside


def test_parts_side_by_side_are_each_judged_on_their_own_neighbour():
    """On a DUT the run does not rebuild, the parts of the Neighbor Cache
    state checks run side by side, each with a TN1 of its own, in one
    capture: every part PASSes on its own clause as on the managed lab (where
    they run one at a time and PASS), says which parts ran beside it, and
    its timeline names its own neighbour.  The lab's Linux holds the 14
    neighbours the run's look at its Neighbor Cache makes: batches of 6."""
    room, pcaps, beside = _side_by_side("pss")
    assert (room["asked"], room["held"], room["parts_side_by_side"]) == (14, 14, 6), room
    assert len(pcaps) == 4, pcaps  # 18 parts in batches of 6 (3 captures), the 4 STALE parts in one
    assert all(b and len(b) <= 5 for b in beside.values()), beside  # each ran beside 1-5 others


def test_a_dut_that_does_not_hold_the_neighbours_gets_the_small_batches_and_the_same_verdicts():
    """A DUT whose Neighbor Cache does not take the look's 11th neighbour
    (no Echo Reply to it: the fault drops the guest's replies to the look's
    11th to 14th neighbours) gets batches of 4: the 18 parts in 5 batches
    (recut in the plan's order, not a remainder per unit of 6), every
    verdict as before.  The look stops at the 11th, the first not taken."""
    room, pcaps, beside = _side_by_side("psc", fault=NeighbourCap(10))
    assert (room["taken"], room["held"], room["parts_side_by_side"]) == (10, 10, 4), room
    assert len(room["dropped"]) == 1 and "no Echo Reply when it was new (neighbour 11 of 14" in room["dropped"][0], room
    assert len(pcaps) == 6, pcaps  # 18 parts in batches of 4 (5 captures), the 4 STALE parts in one
    assert all(b and len(b) <= 3 for b in beside.values()), beside


def test_with_the_tester_as_the_only_router_the_router_checks_run_and_agree():
    """``lab up --tap --no-router``: the target file says link.other_routers
    false, so the checks that need the tester to be the only router run
    against the external DUT too, and agree with the managed lab; the tester
    gives the DUT its link-prefix address (Common Test Setup); parts whose
    addresses cannot fit the bounded table SKIP with the reason, and the parts
    that leave addresses for 2 hours run last."""
    cp = v6gate("run", "-n", "0", "--no-gates", *_args(ONLY_ROUTER))
    managed = _by_key(load_results(run_dir_from(cp.stdout)))
    doc, left = _external("pnr", ONLY_ROUTER, adapter="none", no_router=True)
    ext = _by_key(doc)
    assert set(ext) == set(managed)
    differ = [f"{k}: managed {m['verdict']}, external {ext[k]['verdict']} ({ext[k]['reason'][:300]})"
              for k, m in managed.items() if ext[k]["verdict"] != m["verdict"] and ext[k]["verdict"] != "SKIP"]
    skipped = {k: ext[k]["reason"] for k, m in managed.items() if ext[k]["verdict"] == "SKIP" != m["verdict"]}
    print(f"tester as the only router: {len(managed) - len(skipped)} parts agree, SKIP only on the external DUT "
          f"{skipped}; left on it {left}; predicted {doc['run']['dut_state_after'][0]['predicted']}")
    assert not differ, "\n".join(differ)
    ran = [k for k in ext if not k.startswith("slaac.") and ext[k]["verdict"] != "SKIP"]
    assert len(ran) >= 10, ran  # the router checks ran: none SKIPs for "other routers on the link"
    assert set(skipped) == {"slaac.multiple_prefixes_and_renumbering#None"}, skipped
    assert "needs 3 address(es) at once" in skipped["slaac.multiple_prefixes_and_renumbering#None"]
    order = [c["id"] + "#" + str(c["part"]) for c in sorted(doc["checks"], key=lambda c: c["started"])]
    lasting = [order.index("slaac.two_hour_rule#B"), order.index("slaac.two_hour_rule#D")]
    assert min(lasting) > max(i for i, k in enumerate(order) if k not in ("slaac.two_hour_rule#B",
                                                                          "slaac.two_hour_rule#D")), order
    assert any(a.startswith("2001:db8:1:") for a in left), f"the tester gave the DUT no link-prefix address: {left}"
