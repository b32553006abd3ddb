"""The fast engine on several processes (issue 16, ``audit/parallel.py``)
gives exactly the serial read's result: the whole audit state (every
field of every host, in the same order) and the audit JSON, byte for
byte, on every fixture capture, on the synthetic mix and control captures
``tools/audit-benchmark`` builds, and on mutated captures (the same
findings or the same one-line error).  Small chunks make the workers and
the merge do much of the work on small captures."""

import dataclasses
import gzip
import io
import json
import random
import struct

import pytest
from test_audit_fast import checks_json
from test_audit_fuzz import MUTANTS, SEED, bases, mutate

from v6gate.audit import parallel
from v6gate.audit.capture import seed_frames, synthesize, synthesize_mix
from v6gate.audit.fast import Progress, read_into
from v6gate.audit.fixtures import CAPTURES
from v6gate.audit.hosts import Audit, Host
from v6gate.audit.pcapread import Reader
from v6gate.audit.run import audit_capture
from v6gate.errors import UsageError

FIXTURES = sorted(CAPTURES.glob("*.pcapng"))
#: what differs between two runs of the same audit: when and how fast it ran, how many processes, their memory
RUN_ONLY = {"duration_s", "packets_per_s", "jobs", "peak_rss_mib", "peak_rss_reading_mib", "parallel",
            "dissected_frames"}


def state(audit: Audit) -> str:
    """Everything the audit knows, hosts in their order (the report lists them by it)."""
    def plain(v):
        if isinstance(v, set):
            return sorted(map(repr, v))
        if isinstance(v, dict):
            return [[repr(k), plain(x)] for k, x in v.items()]
        return repr(v)

    return json.dumps({"frames": audit.frames, "t0": audit.t0, "t_last": audit.t_last,
                       "rdnss": sorted(audit.rdnss_seen), "pref64": sorted(audit.pref64_seen),
                       "hosts": [[m, {f.name: plain(getattr(h, f.name)) for f in dataclasses.fields(Host)}]
                                 for m, h in audit.hosts.items()]})


def outcome(path, **kw) -> tuple[str, dict]:
    """(the audit's state or its one-line error, the read's counters)."""
    audit = Audit()
    try:
        counts = read_into(audit, path, **kw)
    except UsageError as exc:
        return "usage: " + str(exc), {}
    return state(audit), counts


@pytest.mark.parametrize("chunk", [256, 1024, 4096])
@pytest.mark.parametrize("capture", FIXTURES, ids=lambda p: p.stem)
def test_every_fixture_gives_the_serial_audit_in_parallel(capture, chunk):
    serial, counts = outcome(capture)
    for jobs in (2, 3):
        got, par = outcome(capture, jobs=jobs, chunk_bytes=chunk)
        assert got == serial, f"{capture.name}: {jobs} processes, {chunk}-byte chunks"
        assert par["workers"] == jobs and par["packets"] == counts["packets"]
        assert par["decoded_108"] == counts["decoded_108"]
        if capture.stat().st_size > 4 * chunk:
            assert par["chunks_merged"] >= 1, "the workers' chunks should have been merged"


@pytest.mark.parametrize("capture", FIXTURES, ids=lambda p: p.stem)
def test_the_audit_json_is_byte_identical_serial_and_parallel(capture, tmp_path):
    _, serial = audit_capture(capture, out=tmp_path / "serial", jobs=1)
    _, par = audit_capture(capture, out=tmp_path / "parallel", jobs=2, chunk_bytes=512)
    assert checks_json(par) == checks_json(serial)
    assert ({k: v for k, v in par["run"]["audit"].items() if k not in RUN_ONLY}
            == {k: v for k, v in serial["run"]["audit"].items() if k not in RUN_ONLY})
    assert par["run"]["audit"]["jobs"] == 2 and par["run"]["audit"]["parallel"]["chunks_merged"] >= 1
    assert serial["run"]["audit"]["jobs"] == 1 and "parallel" not in serial["run"]["audit"]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """The benchmark's captures (``tools/audit-benchmark``: 200 host labels, 3 % control in the mix), smaller."""
    d = tmp_path_factory.mktemp("synthetic")
    seeds = seed_frames(FIXTURES)
    synthesize(d / "control.pcap", seeds, 12_000, hosts=200)
    synthesize_mix(d / "mix.pcap", seeds, 60_000, hosts=200, control_percent=3.0)
    return d


@pytest.mark.parametrize("kind, chunk", [("control", 16 << 10), ("control", 200 << 10), ("mix", 64 << 10),
                                         ("mix", 1 << 20)])
def test_the_benchmark_captures_give_the_serial_audit_in_parallel(synthetic, kind, chunk):
    cap = synthetic / f"{kind}.pcap"
    serial, counts = outcome(cap)
    got, par = outcome(cap, jobs=2, chunk_bytes=chunk)
    assert got == serial
    assert par["chunks_merged"] >= 3, par
    assert par["chunks_read_again"] <= par["chunks_merged"] // 4, "the merge should rarely read a chunk again"
    if kind == "mix":  # the workers count payload frames from knowledge carried between their chunks
        assert par["deep_frames"] < 1.5 * counts["deep_frames"], (par, counts)


def test_a_gzipped_capture_is_read_serially(synthetic, tmp_path):
    gz = tmp_path / "control.pcap.gz"
    gz.write_bytes(gzip.compress((synthetic / "control.pcap").read_bytes()))
    got, counts = outcome(gz, jobs=2, chunk_bytes=4096)
    assert counts["workers"] == 1 and "chunks_merged" not in counts
    assert got == outcome(synthetic / "control.pcap")[0]


def test_mutated_captures_give_the_serial_outcome_in_parallel(tmp_path):
    """Every 8th of the fuzz test's mutants (same seed): the same state, or the same one-line error
    raised at the same frame (a worker that meets the damage leaves its chunk to the parent)."""
    seeds = bases()
    rng = random.Random(SEED)
    target = tmp_path / "mutant"
    errors = compared = 0
    for i in range(MUTANTS // 4):
        name, data, recs = seeds[i % len(seeds)]
        _, mutant = mutate(rng, data, recs, name.endswith(".pcapng"))
        if i % 8:
            continue
        target.write_bytes(mutant)
        serial, _ = outcome(target)
        got, _ = outcome(target, jobs=2, chunk_bytes=200 + i % 700)
        assert got == serial, f"mutant {i} of {name} (seed {SEED})"
        errors += serial.startswith("usage: ")
        compared += 1
    assert compared == len(range(0, MUTANTS // 4, 8)) and 0 < errors < compared, (compared, errors)


def test_a_damaged_chunk_of_a_worker_is_read_again_by_the_parent(synthetic, tmp_path):
    data = bytearray((synthetic / "mix.pcap").read_bytes())
    chunk = 64 << 10
    off = 24  # a record in the worker's second chunk (chunk 3): its length made impossible
    while off < 3 * chunk + 100:
        off += 16 + struct.unpack_from("<I", data, off + 8)[0]
    struct.pack_into("<I", data, off + 8, 0x7FFFFFFF)
    cap = tmp_path / "damaged.pcap"
    cap.write_bytes(bytes(data))
    serial, _ = outcome(cap)
    assert serial.startswith("usage: ") and f"byte {off}" in serial
    assert outcome(cap, jobs=2, chunk_bytes=chunk)[0] == serial


def test_the_reader_s_chunks_partition_the_frames(synthetic):
    """Each chunk's frames, as the process that keeps it sees them, are the serial read's, with its numbers."""
    for cap in (FIXTURES[-1], synthetic / "control.pcap"):
        every = [(off, ns, fr) for off, ns, _, _, fr in Reader(cap)]
        for chunk in (300, 5000):
            got = []
            for mine in (0, 1, 2):
                r = Reader(cap, chunk, lambda c, mine=mine: c % 3 == mine)
                got += [(r.frames, off, ns, fr) for off, ns, _, _, fr in r]
                assert r.frames == len(every)
            assert [g[1:] for g in sorted(got)] == every
            assert [g[0] for g in sorted(got)] == list(range(1, len(every) + 1))


def test_the_window_check_reads_a_straddling_chunk_again():
    """V6ONLY_WAIT: a worker's counted IPv4 frames of a host all outside the window its chunk starts with,
    all inside (counted after the offer too), or straddling it (None: the chunk is read again)."""
    audit = Audit()
    h = audit.hosts["02:00:00:00:00:01"] = Host("02:00:00:00:00:01")
    h.offers_108, h.quiet_until = [(100.0, 1, "", "", 300)], 400.0
    row = ("02:00:00:00:00:01", 5, 500, 150.0, 0, 0, 5, 5)
    assert parallel._quiet_hosts(audit, [(*row, 401.0, 450.0)]) == set()
    assert parallel._quiet_hosts(audit, [(*row, 10.0, 100.0)]) == set()
    assert parallel._quiet_hosts(audit, [(*row, 101.0, 400.0)]) is None, "nothing counted after the offer yet"
    h.after_offer_108.count = 1
    assert parallel._quiet_hosts(audit, [(*row, 101.0, 400.0)]) == {"02:00:00:00:00:01"}
    assert parallel._quiet_hosts(audit, [(*row, 90.0, 200.0)]) is None
    assert parallel._quiet_hosts(audit, [(*row, 300.0, 500.0)]) is None
    assert parallel._quiet_hosts(audit, [("02:00:00:00:00:02", 5, 500, 1.0, 0, 0, 5, 5, 101.0, 200.0)]) == set()


def test_parallel_only_when_it_pays(monkeypatch):
    assert parallel.default_jobs(parallel.PARALLEL_MIN_BYTES - 1, "pcap") == 1
    assert parallel.default_jobs(10 * parallel.PARALLEL_MIN_BYTES, "gzip") == 1
    assert parallel.default_jobs(10 * parallel.PARALLEL_MIN_BYTES, "pcapng") == 1, "the kernel reads on one core"
    monkeypatch.setattr(parallel.kernel, "load", lambda: None)  # every frame dissected: the second core pays
    assert parallel.default_jobs(10 * parallel.PARALLEL_MIN_BYTES, "pcapng") >= 1
    assert parallel.default_jobs(10 * parallel.PARALLEL_MIN_BYTES, "gzip") == 1
    assert parallel.chunk_size(10 << 30, 2) == parallel.MAX_CHUNK
    assert parallel.chunk_size(1 << 20, 2) == parallel.MIN_CHUNK


def test_the_progress_line_shows_in_parallel(synthetic):
    out = io.StringIO()
    progress = Progress((synthetic / "mix.pcap").stat().st_size, stream=out, force=True, every=0.0)
    read_into(Audit(), synthetic / "mix.pcap", jobs=2, chunk_bytes=64 << 10, progress=progress)
    assert "60,000 frames" in out.getvalue() and out.getvalue().endswith("\n")


def test_chunks_read_again_by_the_parent_give_the_serial_audit(synthetic, monkeypatch):
    """The way out when a worker's counting cannot be settled (V6ONLY_WAIT straddled): every worker's
    chunk read again by the parent, after the worker learned from it, still gives the serial audit."""
    monkeypatch.setattr(parallel, "_quiet_hosts", lambda audit, tallies: None)
    for kind in ("mix", "control"):
        cap = synthetic / f"{kind}.pcap"
        got, par = outcome(cap, jobs=2, chunk_bytes=64 << 10)
        assert got == outcome(cap)[0]
        assert par["chunks_read_again"] >= 3 and par["chunks_merged"] == 0, par
