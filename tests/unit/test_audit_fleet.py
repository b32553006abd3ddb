"""Asset classes, partial results and the fleet report (issue 33): the
classes of the lab-made fixtures' hosts; the C engine and the Python path
give the same records (the differential tests extended to the classes'
evidence); partials merge exactly (associative, commutative) and the merge
of a capture's pieces is the audit of the whole; the inventory joins hosts
to assets; an expired exception is a finding; bad user files are one line
(exit 2); four shards on a Dask local cluster give the serial report."""

import itertools
import json
import struct
import subprocess
import sys

import pytest
from audit_rulegen import frames as rule_frames
from audit_rulegen import write_pcap

from v6gate.audit import assets, fleet, partial, shards
from v6gate.audit.assets import classify
from v6gate.audit.capture import seed_frames, synthesize
from v6gate.audit.fast import read_into
from v6gate.audit.fixtures import CAPTURES
from v6gate.audit.hosts import Audit
from v6gate.audit.pcapread import Reader
from v6gate.audit.run import FleetInputs, audit_many
from v6gate.errors import UsageError
from v6gate.paths import ROOT

DUT = "02:00:00:00:00:02"
AS_OF = "2026-11-26"
EXPECTED = {"v6only-host": "ipv6-only", "dad-skipped": "ipv6-only", "dual-stack-host": "dual-stack",
            "v6only-host-dhcpv4-without-108": "ipv6-only-capable",  # dhclient (no 108) beside dhcpcd (108)
            "v6only-host-ignores-option-108": "ipv6-only-capable"}  # asks for 108, then uses IPv4 anyway


def part_of(path, deep_only=False) -> dict:
    audit = Audit()
    counts = read_into(audit, path, deep_only=deep_only)
    return partial.from_audit(audit, path, counts["packets"])


def rec(**signals) -> dict:
    return {"frames": 10, "bytes": 0, "first_t": 0.0, "last_t": 1.0, "v4": [], "v6": [], "captures": 1,
            "signals": {k: [n, 0.0, "c", 1, 0.0, k] for k, n in signals.items()}}


def test_the_class_rules_on_their_edges():
    assert classify(rec(ipv6=2)) == ("unknown", "2 IPv6/IPv4 frames, fewer than 3", ["ipv6"])
    assert classify(rec(ipv6=2), min_frames=2)[0] == "ipv6-only"
    assert classify(rec(arp=3))[0] == "ipv4-only"
    assert classify(rec(dhcpv4_108=3))[0] == "ipv4-only"  # asks for 108, but no IPv6 on the capture
    assert classify(rec(ipv6=5, dhcpv4_108=2, offer_108=1))[0] == "ipv6-only"  # RFC 8925: allowed
    assert classify(rec(ipv6=5, dhcpv4_108=2, ipv4=1))[0] == "ipv6-only-capable"
    assert classify(rec(ipv6=5, clat=1, arp=1))[0] == "ipv6-only-capable"
    assert classify(rec(ipv6=5, clat=1))[0] == "ipv6-only"
    assert classify(rec(ipv6=5, dhcpv4=1))[0] == "dual-stack"
    assert classify(rec(ipv6=5, ipv4=1, offer_108=1))[0] == "dual-stack"  # offered 108, never asked: no sign
    _cls, why, proof = classify(rec(ipv6=5, arp=2, dhcpv4_108=1))
    assert proof == ["ipv6", "arp", "dhcpv4_108"] and "asks for option 108 (1)" in why


@pytest.mark.parametrize("capture", sorted(CAPTURES.glob("*.pcapng")), ids=lambda p: p.stem)
def test_the_lab_made_fixtures_dut_has_its_class_and_both_engines_agree(capture):
    engine, python = part_of(capture), part_of(capture, deep_only=True)
    assert engine == python
    cls, _, proof = classify(engine["hosts"][DUT])
    assert cls == EXPECTED[capture.stem]
    for s in proof:  # each proving frame is the one the host's state names
        count, _, cap, frame, _t, what = engine["hosts"][DUT]["signals"][s]
        assert count > 0 and cap == capture.name and frame >= 1 and what


@pytest.mark.parametrize("seed", range(4))
def test_the_rule_edge_captures_give_the_same_records_on_both_engines(seed, tmp_path):
    cap = tmp_path / f"rules-{seed}.pcap"
    write_pcap(cap, rule_frames(seed, 2500))
    engine, python = part_of(cap), part_of(cap, deep_only=True)
    assert engine == python
    assert any("clat" in r["signals"] for r in engine["hosts"].values())


# -- merging ---------------------------------------------------------------------------------------------
def split(path, cuts: list[int], tmp_path) -> tuple[list, object, list[int]]:
    """``path``'s frames as pcap pieces cut at ``cuts`` and as one pcap of them all (the concatenation);
    the frame offset of each piece."""
    frames = [(ns, orig, lt, fr) for _, ns, orig, lt, fr in Reader(path)]
    bounds = [0, *cuts, len(frames)]

    def write(p, items):
        with open(p, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, items[0][2]))
            for ns, orig, _, fr in items:
                f.write(struct.pack("<IIII", ns // 10**9, ns % 10**9, len(fr), orig) + fr)
        return p

    pieces = [write(tmp_path / f"piece-{i}.pcap", frames[a:b]) for i, (a, b) in enumerate(itertools.pairwise(bounds))]
    return pieces, write(tmp_path / "whole.pcap", frames), bounds[:-1]


def comparable(doc: dict, offsets: dict) -> str:
    """The fleet document with each proving frame as its frame in the concatenation; the capture list and
    the per-capture judgements (readiness: a window does not cross captures) left out."""
    out = {k: v for k, v in doc.items() if k not in ("captures", "assets")}
    out["assets"] = []
    for r in doc["assets"]:
        r = {k: v for k, v in r.items() if k not in ("ready", "failing", "captures")}
        r["evidence"] = [{**{k: v for k, v in e.items() if k not in ("capture", "path", "frame")},
                          "frame": offsets[e["capture"]] + e["frame"]} for e in r["evidence"]]
        out["assets"].append(r)
    return json.dumps(out, sort_keys=True)


@pytest.fixture(scope="module")
def control(tmp_path_factory):
    cap = tmp_path_factory.mktemp("control") / "control.pcap"
    synthesize(cap, seed_frames(sorted(CAPTURES.glob("*.pcapng"))), 30_000, hosts=20)
    return cap


def test_merged_pieces_are_the_audit_of_their_concatenation(control, tmp_path):
    pieces, whole, offs = split(control, [7_000, 19_000], tmp_path)
    parts = [part_of(p) for p in pieces]
    plan = fleet.load_plan()
    inputs = {"plan": plan, "as_of": fleet.parse_as_of(AS_OF)}
    merged = fleet.build(partial.merge_all(parts), **inputs)
    single = fleet.build(part_of(whole), **inputs)
    assert comparable(merged, dict(zip((p.name for p in pieces), offs))) == comparable(single, {"whole.pcap": 0})
    assert merged["totals"]["assets"] >= 40 and len(merged["captures"]) == 3
    # exact in any grouping and order, the readiness and failing findings included
    a, b, c = parts
    ways = [partial.merge(partial.merge(a, b), c), partial.merge(a, partial.merge(b, c)),
            partial.merge(c, partial.merge(b, a)), partial.merge(partial.merge(c, a), b)]
    assert all(json.dumps(w, sort_keys=True) == json.dumps(ways[0], sort_keys=True) for w in ways)
    with pytest.raises(UsageError, match="counted twice"):
        partial.merge(a, partial.merge(a, b))


def test_the_cli_merges_captures_and_partials_alike(control, tmp_path):
    pieces, _, _ = split(control, [10_000, 20_000], tmp_path)
    outs = []
    for i, p in enumerate(pieces):
        d = tmp_path / f"audit-{i}"
        subprocess.run([sys.executable, "-m", "v6gate.cli", "audit", str(p), "--out", str(d), "--as-of", AS_OF],
                       cwd=ROOT, capture_output=True, check=False)
        outs.append(d / "partial.json")
    a = tmp_path / "from-captures"
    b = tmp_path / "from-partials"
    r1 = subprocess.run([sys.executable, "-m", "v6gate.cli", "audit", *map(str, pieces), "--out", str(a), "--as-of",
                         AS_OF], cwd=ROOT, capture_output=True, text=True)
    r2 = subprocess.run([sys.executable, "-m", "v6gate.cli", "audit", *map(str, reversed(outs)), "--out", str(b),
                         "--as-of", AS_OF], cwd=ROOT, capture_output=True, text=True)
    assert r1.returncode == r2.returncode and r1.returncode in (0, 1), r1.stderr + r2.stderr
    assert (a / "fleet.json").read_text() == (b / "fleet.json").read_text()
    assert (a / "partial.json").read_text() == (b / "partial.json").read_text()
    assert "fleet of" in r1.stdout and "IPv6-only" in r1.stdout
    # a damaged partial: one line, exit 2, nothing written
    bad = json.loads(outs[0].read_text())
    next(iter(bad["hosts"].values()))["signals"]["ipv6"][0] = -1
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    r3 = subprocess.run([sys.executable, "-m", "v6gate.cli", "audit", str(tmp_path / "bad.json"), str(outs[1]),
                         "--out", str(tmp_path / "bad-out")], cwd=ROOT, capture_output=True, text=True)
    assert r3.returncode == 2 and len(r3.stderr.strip().splitlines()) == 1, r3.stderr
    assert "signals.ipv6[0]: must be a non-negative integer" in r3.stderr and not (tmp_path / "bad-out").exists()


def test_four_shards_on_a_dask_local_cluster_give_the_serial_report(control, tmp_path):
    from distributed import Client, LocalCluster

    pieces, _, _ = split(control, [6_000, 14_000, 23_000], tmp_path)
    inputs = FleetInputs(as_of=AS_OF)
    audit_many(pieces, out=tmp_path / "serial", fleet_inputs=inputs)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        merged = shards.on_dask(client, pieces, fan_in=2)
        tasks = client.run(lambda: 1)
        # the command's way: --dask ADDRESS (a client of the user's scheduler)
        audit_many(pieces, out=tmp_path / "cli", fleet_inputs=inputs, dask=cluster.scheduler_address)
    assert len(tasks) == 2  # two worker processes ran the shards
    assert (tmp_path / "serial" / "fleet.json").read_text() == (tmp_path / "cli" / "fleet.json").read_text()
    sharded = audit_many([partial.dump(merged, tmp_path / "dask.json")], out=tmp_path / "dask", fleet_inputs=inputs)
    assert (tmp_path / "serial" / "fleet.json").read_text() == (tmp_path / "dask" / "fleet.json").read_text()
    assert len(sharded["fleet_doc"]["captures"]) == 4


# -- inventory, exceptions, plan ------------------------------------------------------------------------
def test_inventory_joins_hosts_to_assets_and_an_expired_exception_is_a_finding(tmp_path):
    cap = CAPTURES / "v6only-host.pcapng"
    part = part_of(cap)
    router = "02:00:00:00:00:01"
    v6 = part["hosts"][DUT]["v6"][0]
    inv = tmp_path / "inventory.csv"
    inv.write_text("asset,macs,addresses,owner,system,location\n"
                   f"host-a,,{v6},ops,web,hq\n"  # joined by an address it used
                   f"rtr-1,{router.upper().replace(':', '-')},,net,core,hq\n"
                   "ghost,02:aa:00:00:00:09,,ops,web,dc2\n")  # never seen: unknown
    exc = tmp_path / "exceptions.json"
    exc.write_text(json.dumps([
        {"asset": "rtr-1", "reason": "vendor firmware", "approved_by": "CIO", "retire_by": "2025-01-31"},
        {"asset": "host-a", "reason": "legacy", "approved_by": "CIO", "retire_by": "2024-01-01"},
        {"asset": "nobody", "reason": "x", "approved_by": "CIO", "retire_by": "2030-01-01"}]))
    inputs = FleetInputs(inventory=inv, exceptions=exc, as_of=AS_OF)
    doc = fleet.build(part, inputs.plan, inventory=inputs.inventory, exceptions=inputs.exceptions, as_of=inputs.as_of)
    by = {r["asset"]: r for r in doc["assets"]}
    assert by["host-a"]["class"] == "ipv6-only" and by["host-a"]["hosts"] == [DUT]
    assert by["rtr-1"]["class"] == "dual-stack" and by["ghost"]["class"] == "unknown"
    assert doc["totals"]["assets"] == 3 and doc["totals"]["ipv6_only"] == {"count": 1, "percent": 33.3}
    assert by["rtr-1"]["exception"]["status"] == "expired"
    assert by["host-a"]["exception"]["status"].startswith("not needed")  # expired, but the asset is IPv6-only
    kinds = {(f["finding"], f["asset"]) for f in doc["findings"]}
    assert ("exception_expired", "rtr-1") in kinds and ("exception_for_unknown_asset", "nobody") in kinds
    assert not any(f["finding"] == "exception_expired" and f["asset"] == "host-a" for f in doc["findings"])
    assert {a for k, a in kinds if k == "not_in_inventory"} == set(doc["unknown_assets"]) and doc["unknown_assets"]
    assert fleet.exit_code(doc) == 1
    groups = {g["name"]: g for g in doc["groups"]["system"]}
    assert groups["web"]["assets"] == 2 and groups["web"]["ipv6_only"]["percent"] == 50.0
    paths = fleet.write_all(doc, tmp_path / "out")
    text = paths["fleet_html"].read_text()
    assert 'href="#assets?cls=ipv6-only&amp;counted=yes">1</a>' in text and "v6only-host.pcapng</a> frame" in text
    assert paths["fleet_csv"].read_text().splitlines()[0].startswith("asset,in_inventory,class")


@pytest.mark.parametrize("name,text,message", [
    ("inv.csv", "asset,macs\nx,02:00:00:00:00:zz\n", "is not a MAC address"),
    ("inv.csv", "asset,macs\nx,02:00:00:00:00:01\nx,02:00:00:00:00:02\n", "listed twice"),
    ("inv.csv", "asset,macs\nx,02:00:00:00:00:01\ny,02:00:00:00:00:01\n", "one host, one asset"),
    ("inv.csv", "asset,macs,colour\nx,02:00:00:00:00:01,red\n", "unknown column 'colour'"),
    ("inv.csv", "asset,macs\nx,02:00:00:00:00:01,extra\n", "line 2: 3 fields, the header has 2"),
    ("inv.csv", "asset,addresses\nx,10.0.0.300\n", "is not an IPv4 or IPv6 address"),
    ("inv.csv", "asset,macs\nx,\n", "has no MAC and no address"),
    ("inv.json", '[{"asset": "x", "asset": "y"}]', "duplicate key 'asset'"),
    ("inv.yaml", "a: &a [1]\nb: [*a, *a, *a]\n", "may not use YAML anchors and aliases"),
    ("inv.csv", b"asset,macs\n\xff\n", "is not UTF-8"),
    ("inv.csv", b"asset,macs\nx,\x00\n", "a NUL byte"),
    ("inv.csv", "asset,macs\nx," + "a" * 5000 + "\n", "longer than"),
])
def test_a_bad_inventory_is_one_line(tmp_path, name, text, message):
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(UsageError, match=message) as e:
        fleet.Inventory.load(p)
    assert "\n" not in str(e.value) and str(p) in str(e.value)


def test_a_bad_register_or_plan_is_one_line(tmp_path):
    reg = tmp_path / "reg.csv"
    reg.write_text("asset,reason,approved_by,retire_by\nx,legacy,CIO,31/01/2025\n")
    with pytest.raises(UsageError, match="not a date; write it as YYYY-MM-DD"):
        fleet.load_exceptions(reg, fleet.parse_as_of(AS_OF))
    reg.write_text("asset,reason,approved_by,retire_by\nx,,CIO,2025-01-31\n")
    with pytest.raises(UsageError, match="reason is missing"):
        fleet.load_exceptions(reg, fleet.parse_as_of(AS_OF))
    plan = tmp_path / "plan.yaml"
    plan.write_text("milestones: [{by: 2030-01-01, percent: 120}]\n")
    with pytest.raises(UsageError, match="percent must be a number from 0 to 100"):
        fleet.load_plan(plan)
    plan.write_text("counts_as_ipv6_only: [ipv6-only, everything]\n")
    with pytest.raises(UsageError, match="counts_as_ipv6_only must list classes"):
        fleet.load_plan(plan)


def test_an_agency_s_own_plan_sets_the_milestones_and_what_counts(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"name": "agency plan", "counts_as_ipv6_only": ["ipv6-only", "ipv6-only-capable"],
                                "min_frames": 1, "milestones": [{"label": "Q1", "by": "2027-01-01", "percent": 30}]}))
    doc = fleet.build(part_of(CAPTURES / "v6only-host-ignores-option-108.pcapng"), fleet.load_plan(plan),
                      as_of=fleet.parse_as_of(AS_OF))
    dut = next(r for r in doc["assets"] if r["asset"] == DUT)
    assert dut["class"] == "ipv6-only-capable" and doc["milestones"][0]["due"] == "ahead"
    assert doc["totals"]["ipv6_only"]["count"] == sum(doc["totals"]["classes"][c]["count"]
                                                      for c in ("ipv6-only", "ipv6-only-capable"))
    assert fleet.load_plan().min_frames == assets.MIN_FRAMES  # the shipped plan and the default agree
