"""The C engine (``audit/engine/``, ``core.py``) gives exactly the Python
path's audit: every host's whole state (every field of ``hosts.Host``, in
order), the run's totals and sets, the option-108 values decoded, and so
the findings, on every fixture, on the benchmark's synthetic captures, on
pcapng in both byte orders with sections, interfaces of their own
resolution and offset, unknown blocks, VLAN tags and a snaplen, on the
edge-case capture the dissector is proven against tshark with, on
generated captures aimed at the rules' bounds and windows (Ethernet, Linux
cooked and raw IP), and on thousands of mutated captures; a capture it
cannot judge exactly, or a machine without a compiler, gets the Python
path with one line saying so; random and damaged frames never make it
read past a frame (AddressSanitizer, UBSan)."""

import dataclasses
import gzip
import io
import json
import os
import random
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from audit_rulegen import frames as rule_frames
from audit_rulegen import write_pcap
from test_audit_fast import edge_capture
from test_audit_fuzz import bases, mutate

from v6gate.audit import core, native
from v6gate.audit.capture import seed_frames, synthesize, synthesize_mix
from v6gate.audit.fast import Progress, read_into
from v6gate.audit.findings import judge_host
from v6gate.audit.fixtures import CAPTURES
from v6gate.audit.hosts import Audit
from v6gate.audit.pcapread import Reader
from v6gate.errors import UsageError

ENGINE = Path(core.__file__).parent / "engine"


def findings(audit: Audit) -> str:
    return json.dumps({mac: [(j.finding.id, j.verdict, j.seen, j.measurements) for j in judge_host(audit, h)]
                       for mac, h in sorted(audit.hosts.items())}, sort_keys=True, default=sorted)


def state(audit: Audit) -> str:
    """The whole audit as text: every host's every field in the hosts' order, dicts in their order (the
    report lists them so), sets sorted; the run's totals and sets."""
    def plain(x):
        if isinstance(x, dict):
            return [(repr(k), plain(v)) for k, v in x.items()]
        if isinstance(x, (set, frozenset)):
            return sorted(repr(v) for v in x)
        if isinstance(x, (list, tuple)):
            return [plain(v) for v in x]
        return x

    hosts = [(m, plain(dataclasses.asdict(h))) for m, h in audit.hosts.items()]
    return repr((hosts, audit.frames, audit.t0, audit.t_last, sorted(audit.rdnss_seen), sorted(audit.pref64_seen)))


def audited(path, **kw) -> tuple[str, dict | None]:
    """The audit of ``path`` as text (or its one-line UsageError), and the counters."""
    audit = Audit()
    try:
        counts = read_into(audit, path, **kw)
    except UsageError as exc:
        return "usage: " + str(exc), None
    return state(audit) + findings(audit), counts


def same(path) -> dict:
    """The engine's audit of ``path`` is the Python path's (or both fail with the same line)."""
    ref, python = audited(path, deep_only=True)
    got, engine = audited(path)
    assert got == ref
    if python is not None:
        assert engine["engine"] == "c" and python["engine"] == "python"
        assert engine["packets"] == python["packets"] and engine["decoded_108"] == python["decoded_108"]
    return engine


@pytest.fixture(scope="module")
def seeds():
    return seed_frames(sorted(CAPTURES.glob("*.pcapng")))


@pytest.mark.parametrize("capture", sorted(CAPTURES.glob("*.pcapng")), ids=lambda p: p.stem)
def test_every_fixture_gives_the_python_path_s_hosts(capture):
    same(capture)


@pytest.mark.parametrize("kind", ["control", "mix"])
def test_the_benchmark_captures_give_the_python_path_s_hosts(seeds, kind, tmp_path):
    cap = tmp_path / f"{kind}.pcap"
    if kind == "control":
        synthesize(cap, seeds, 12_000, hosts=15)
    else:
        synthesize_mix(cap, seeds, 20_000, hosts=15, control_percent=3)
    counts = same(cap)
    assert counts["frames_read_by_python"] < 0.01 * counts["packets"], "the engine should walk the buffers itself"


def test_the_edge_case_capture_and_its_snaplen_cut_give_the_python_path_s_hosts(tmp_path):
    edge = tmp_path / "edge.pcap"
    frames = edge_capture(edge)
    same(edge)
    cut = tmp_path / "snap70.pcap"
    with open(cut, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 70, 1))
        for i, b in enumerate(frames):
            f.write(struct.pack("<IIII", 1_700_000_000 + i, 123456789, min(70, len(b)), len(b)) + b[:70])
    same(cut)


@pytest.mark.parametrize("seed", range(12))
def test_captures_at_the_rules_edges_give_the_python_path_s_hosts(seed, tmp_path):
    """Bounds crossed (64 names, 32 addresses, 128 DAD targets, 16 resolvers, 8 lifetimes), V6ONLY_WAIT
    opened, extended, ended by a restart and outlived, SYNs to dual-stack names, ICMP errors quoting DNS,
    SYNs, RAs and DHCP, odd checksums, VLAN and QinQ, cut frames, time going back; on Ethernet, Linux
    cooked and raw IP."""
    fr = rule_frames(seed, 2500)
    for linktype in (1, 113, 101):
        cap = tmp_path / f"rules-{linktype}.pcap"
        write_pcap(cap, fr, linktype)
        same(cap)


def test_the_rule_captures_reach_the_bounds_they_are_for(tmp_path):
    """(What the previous test is worth: its captures do cross the rules' bounds and windows.)"""
    hosts = []
    pref64 = 0
    for seed in range(12):
        cap = tmp_path / f"rules-{seed}.pcap"
        write_pcap(cap, rule_frames(seed, 2500))
        audit = Audit()
        read_into(audit, cap)
        hosts += audit.hosts.values()
        pref64 = max(pref64, len(audit.pref64_seen))
    assert max(len(h.answers) for h in hosts) == 64 and max(len(h.ipv6_addrs) for h in hosts) == 32
    assert max(len(h.ipv4_addrs) for h in hosts) == 32 and max(len(h.dad) for h in hosts) == 128
    assert max(len(h.dns) for h in hosts) == 16 and max(len(h.ra_router_lifetimes) for h in hosts) == 8
    assert sum(len(h.first_choice) for h in hosts) > 10 and sum(h.after_offer_108.count for h in hosts) > 10
    assert any(h.quiet_ended_by_restart for h in hosts) and sum(len(h.dad_skipped) for h in hosts) > 5
    assert sum(h.checksum_bad.count for h in hosts) > 10 and sum(h.nd_hlim.count for h in hosts) > 5
    assert pref64 > 6 and any(h.other_frames for h in hosts) and max(len(h.offers_108) for h in hosts) == 8
    assert sum(1 for h in hosts if h.clat.count) > 3  # queries for ipv4only.arpa (in any case)
    assert all(h.ipv6.count == h.v6_frames for h in hosts)


def _block(endian: str, btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack(endian + "II", btype, n) + body + struct.pack(endian + "I", n)


def _idb(endian: str, tsresol: int | None, tsoffset: int = 0) -> bytes:
    opts = b""
    if tsresol is not None:
        opts += struct.pack(endian + "HH", 9, 1) + bytes([tsresol]) + b"\0\0\0"
    if tsoffset:
        opts += struct.pack(endian + "HHq", 14, 8, tsoffset)
    return _block(endian, 1, struct.pack(endian + "HHI", 1, 0, 0) + opts + struct.pack(endian + "HH", 0, 0))


def write_pcapng(path, frames, endian: str, *, vlan_every: int = 0, snap: int = 0, sections: int = 2,
                 tsoffset: int = -100) -> None:
    """``frames`` (ns, frame) over ``sections`` sections, each with two Ethernet interfaces (nanoseconds;
    microseconds with an offset of ``tsoffset`` s) used alternately, an unknown block among the packets;
    every ``vlan_every``-th frame 802.1Q-tagged; frames cut to ``snap`` bytes (their original length kept)."""
    per = -(-len(frames) // sections)
    with open(path, "wb") as f:
        for s in range(sections):
            f.write(_block(endian, 0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1)))
            f.write(_idb(endian, 9))
            f.write(_idb(endian, None, tsoffset=tsoffset))
            for i, (ns, fr) in enumerate(frames[s * per:(s + 1) * per]):
                if vlan_every and i % vlan_every == 0:
                    fr = fr[:12] + struct.pack("!HH", 0x8100, 7) + fr[12:]
                orig, data = len(fr), fr[:snap] if snap else fr
                iface = i % 2
                units = ns if iface == 0 else (ns - tsoffset * 10**9) // 1000
                f.write(_block(endian, 6, struct.pack(endian + "IIIII", iface, (units >> 32) & 0xFFFFFFFF,
                                                      units & 0xFFFFFFFF, len(data), orig) + data))
                if i == 50:
                    f.write(_block(endian, 0x0BAD, b"a block the reader skips"))


@pytest.fixture(scope="module")
def mix_frames(tmp_path_factory, seeds):
    """(ns, frame) of a small realistic mix, times whole microseconds (they survive the µs interface)."""
    cap = tmp_path_factory.mktemp("engine") / "mix.pcap"
    synthesize_mix(cap, seeds, 12_000, hosts=12, control_percent=5)
    return [(ns - ns % 1000, fr) for _, ns, _, _, fr in Reader(cap)]


@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("variant", [{}, {"vlan_every": 3}, {"snap": 80}], ids=["plain", "vlan", "snaplen"])
def test_pcapng_sections_interfaces_vlan_and_snaplen_give_the_python_path_s_hosts(mix_frames, endian, variant,
                                                                                  tmp_path):
    cap = tmp_path / "mix.pcapng"
    write_pcapng(cap, mix_frames, endian, **variant)
    same(cap)


def test_times_before_1970_give_the_python_path_s_hosts(tmp_path):
    """Negative times (an interface's if_tsoffset of -2e9 s): Python's floor division in the time's text,
    and so in the float the rules compare, is the engine's too."""
    fr = rule_frames(7, 2000)
    with open(tmp_path / "old.pcapng", "wb") as f:
        f.write(_block("<", 0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))
        f.write(_idb("<", 9, tsoffset=-2_000_000_000))
        for ns, orig, data in fr:
            f.write(_block("<", 6, struct.pack("<IIIII", 0, ns >> 32, ns & 0xFFFFFFFF, len(data), orig) + data))
    audit = Audit()
    read_into(audit, tmp_path / "old.pcapng")
    assert audit.t0 < 0
    same(tmp_path / "old.pcapng")


def test_a_gzipped_capture_gives_the_audit_of_the_plain_one(mix_frames, tmp_path):
    plain = tmp_path / "mix.pcapng"
    write_pcapng(plain, mix_frames, ">", vlan_every=4)
    packed = tmp_path / "mix.pcapng.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    ref, _ = audited(plain)
    got, counts = audited(packed)
    assert got == ref and counts["engine"] == "c"
    same(packed)
    cut = tmp_path / "cut.pcapng.gz"  # the compressed stream ends early: one line, as for a plain cut file
    cut.write_bytes(packed.read_bytes()[:len(packed.read_bytes()) // 2])
    line, _ = audited(cut)
    assert line.startswith("usage: ") and "\n" not in line and str(cut) in line, line
    assert audited(cut, deep_only=True)[0] == line


def test_mutated_captures_give_the_python_path_s_audit_or_its_line(tmp_path):
    """2,000 of the fuzz test's mutants (flips, cuts, bogus record, payload, option and count lengths):
    the same audit, or the same one-line UsageError raised after the same frames."""
    rng = random.Random(16)
    captures = bases()
    kinds = {}
    for i in range(2000):
        name, data, recs = rng.choice(captures)
        kind, mutant = mutate(rng, data, recs, name.endswith(".pcapng"))
        cap = tmp_path / f"m{i % 2}{Path(name).suffix}"
        cap.write_bytes(mutant)
        ref, _ = audited(cap, deep_only=True)
        got, _ = audited(cap)
        assert got == ref, f"mutant {i} ({kind} of {name}) differs"
        kinds[kind] = kinds.get(kind, 0) + 1
    assert len(kinds) == 9  # every kind of mutation (the fuzz test draws "flip" twice as often)


def test_a_time_beyond_64_bit_nanoseconds_is_read_on_the_python_path_and_said(mix_frames, tmp_path, capsys):
    cap = tmp_path / "far.pcapng"
    write_pcapng(cap, mix_frames[:400], "<", tsoffset=10**10)  # +317 years: past 2^63 ns
    ref, _ = audited(cap, deep_only=True)
    got, counts = audited(cap)
    assert got == ref and counts["engine"] == "python"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "beyond 64-bit nanoseconds" in err[0] and "Python path" in err[0], err


def test_without_a_compiler_the_audit_runs_on_the_python_path_and_says_so_once(mix_frames, tmp_path, monkeypatch,
                                                                               capsys):
    cap = tmp_path / "mix.pcapng"
    write_pcapng(cap, mix_frames[:3000], "<")
    with_engine, _ = audited(cap)
    monkeypatch.setattr(core, "LIBRARY", native.Library("engine", core.SOURCES, core._signatures, defines=core.DEFINES))
    monkeypatch.setattr(native, "BUILD", tmp_path / "build")
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    plain, counts = audited(cap)
    again, _ = audited(cap)
    assert counts["engine"] == "python" and plain == again == with_engine
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "C engine is unavailable" in err[0] and "no C compiler" in err[0], err


def test_the_engine_keeps_the_progress_line_going(seeds, tmp_path):
    cap = tmp_path / "control.pcap"
    synthesize(cap, seeds, 140_000, hosts=20)
    out = io.StringIO()
    read_into(Audit(), cap, progress=Progress(cap.stat().st_size, stream=out, force=True, every=0))
    lines = [x for x in out.getvalue().split("\r") if x]
    assert len(lines) >= 3 and "140,000 frames" in lines[-1] and "(100%)" in lines[-1], lines[-2:]


def test_random_frames_through_the_engine_under_sanitizers(tmp_path):
    """engine_fuzz.c: 200,000 rounds of random, mutated and cut frames judged by the engine (in pcap and
    pcapng buffers that end where their records end, and one by one in allocations of their exact size),
    built with AddressSanitizer, UBSan and LeakSanitizer: no read past a frame or buffer, no undefined
    arithmetic, no leak, every path taken; 200,000 more with allocations failing at random: each such call
    says NOMEM and freeing the context frees all, nothing twice; and the checksum words against the plain
    loop.  Half the exports are the report's (v6a_report: judge.c, report.c, pyfmt.c) instead."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (tools/setup installs gcc)")
    exe = tmp_path / "engine_fuzz"
    sources = [str(ENGINE.parent / s) for s in core.SOURCES]
    built = subprocess.run([cc, "-O1", "-g", "-std=gnu11", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                            # allocations that can fail; sets indexed from their second address and a host table
                            # of 4 slots, so growing them (and failing to) happens all the time
                            "-Drealloc=fuzz_realloc", "-DASET_LINEAR=1", "-DMAC_SLOTS=4",
                            *(f"-D{k}={v}" for k, v in core.DEFINES.items()), "-I", str(ENGINE), "-o", str(exe),
                            str(Path(__file__).with_name("engine_fuzz.c")), *sources, "-lm"],
                           capture_output=True, text=True, timeout=180)
    if built.returncode and "asan" in built.stderr.lower():
        pytest.skip(f"{cc} cannot build with AddressSanitizer here: {built.stderr.strip()[-200:]}")
    assert built.returncode == 0, built.stderr
    corpus = tmp_path / "seeds.pcap"
    write_pcap(corpus, rule_frames(5, 3000) + [(ns, orig, fr) for p in sorted(CAPTURES.glob("*.pcapng"))
                                               for _, ns, orig, _, fr in Reader(p)])
    done = subprocess.run([str(exe), "200000", "16", str(corpus)], capture_output=True, text=True, timeout=600,
                          env={"ASAN_OPTIONS": "detect_leaks=1", "PATH": os.environ.get("PATH", "")})
    assert done.returncode == 0, done.stderr[-3000:]
    seen = dict(zip(*[iter(done.stdout.split())] * 2, strict=True))
    for path in ("frames", "stopped", "hosts", "offers", "restarts", "answers", "unsupported", "exported", "nomem",
                 "reported"):
        assert int(seen[path]) > 100, f"the fuzz never reached '{path}': {done.stdout}"
